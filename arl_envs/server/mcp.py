"""MCP at ``/mcp`` (streamable HTTP, the ``mcp`` package's server): a session's env tools as MCP tools.

Tools: ``reset_env`` (``env_id``, ``env_kwargs``, ``seed``, ``options``) starts an episode and answers the first
observation; then every tool of the session's env (its ``info["tools"]`` schemas) is listed, and calling one is one
env step: the call is written in the env's own action format (``env.unwrapped.render_call``), stepped, and the
result's text is the observation, its ``structured_content`` the reward, ``terminated``, ``truncated`` and the whole
``info`` (``reward_components``, ``action_error``, ``success``, ``env_error``...).

Which env a call belongs to: the MCP session (``mcp-session-id``, protocol versions with a handshake) owns one
arl-envs session; a client of a session-less protocol version passes the ``session_id`` that ``reset_env``
returned as an extra argument (every listed tool accepts it). An MCP session's env is closed when the client ends
the session (HTTP ``DELETE``) or it idles past ``--idle-timeout``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from arl_envs.server.sessions import ServeError, Session

#: The ``arl_envs.server.app.ArlServer`` this app serves (``app`` imports this module, not the other way).
ArlServer = Any

RESET_TOOL = "reset_env"
MCP_SESSION_HEADER = "mcp-session-id"
_SESSION_ARG = {"type": "string", "description": "The session_id reset_env returned (only for session-less MCP "
                "protocol versions; with an MCP session it is not needed)."}


class McpApp:
    """The ASGI app mounted at ``/mcp`` and its lifespan (the MCP session manager's task group)."""

    def __init__(self, server: ArlServer, host: str = "127.0.0.1") -> None:
        self.server = server
        self.by_mcp_session: dict[str, Session] = {}
        self.mcp = Server("arl-envs", version="0.1.0", instructions=(
            f"Call {RESET_TOOL}(env_id=..., seed=...) first; then the env's tools. Each call is one env step; its "
            "structured result has the reward, terminated, truncated and the env's info."),
            on_list_tools=self._list_tools, on_call_tool=self._call_tool)
        local = host in ("127.0.0.1", "localhost", "::1")
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=local,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
        self.sessions = StreamableHTTPSessionManager(app=self.mcp, security_settings=security,
                                                     max_request_body_size=server.max_message_bytes)

    def lifespan(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The MCP session manager's run context (entered by the app's lifespan)."""
        return self.sessions.run()

    async def asgi(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """ASGI entry: MCP's own handling; an HTTP ``DELETE`` (the client ending its session) closes its env."""
        if scope["type"] == "http" and scope.get("method") == "DELETE":
            sid = dict(scope.get("headers", [])).get(MCP_SESSION_HEADER.encode())
            session = self.by_mcp_session.pop(sid.decode("latin-1"), None) if sid else None
            if session is not None:
                await self.server.manager.close(session, "the MCP client ended its session")
        await self.sessions.handle_request(scope, receive, send)

    # ----------------------------------------------------------------- sessions
    def _mcp_session_id(self, ctx: Any) -> str | None:
        request = getattr(ctx, "request", None)
        return request.headers.get(MCP_SESSION_HEADER) if request is not None else None

    def _find(self, ctx: Any, arguments: dict[str, Any] | None) -> Session | None:
        sid = self._mcp_session_id(ctx)
        if sid is not None:
            session = self.by_mcp_session.get(sid)
            if session is not None and session.closed:
                self.by_mcp_session.pop(sid, None)
                return None
            return session
        explicit = (arguments or {}).get("session_id")
        if explicit:
            return self.server.manager.get(explicit)
        return None

    def _reset_tool(self) -> types.Tool:
        return types.Tool(
            name=RESET_TOOL,
            description="Start an episode of an arl-envs env; answers the first observation (instructions + task).",
            input_schema={
                "type": "object",
                "properties": {
                    "env_id": {"type": "string", "enum": self.server.env_ids},
                    "env_kwargs": {"type": "object", "description": "Constructor kwargs of the env."},
                    "seed": {"type": "integer", "minimum": 0},
                    "options": {"type": "object", "description": 'e.g. {"task_id": ...}'},
                    "session_id": _SESSION_ARG,
                },
            },
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [self._reset_tool()]
        try:
            session = self._find(ctx, None)
        except ServeError:
            session = None
        if session is not None and session.env is not None:
            schemas = await self.server.manager.run(session, lambda env: env.unwrapped.tool_schemas())
            for schema in schemas:
                fn = schema.get("function", schema)
                input_schema = json.loads(json.dumps(fn.get("parameters") or {"type": "object", "properties": {}}))
                input_schema.setdefault("properties", {})["session_id"] = _SESSION_ARG
                tools.append(types.Tool(name=fn["name"], description=fn.get("description", ""),
                                        input_schema=input_schema))
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            if params.name == RESET_TOOL:
                return await self._reset(ctx, arguments)
            session = self._find(ctx, arguments)
            if session is None:
                raise ServeError(409, "RESET_NEEDED", f"no episode in this MCP session: call {RESET_TOOL} first")
            arguments.pop("session_id", None)
            name = params.name

            def render(env: Any) -> str:
                return env.unwrapped.render_call(name, arguments)

            action = await self.server.manager.run(session, render)
            return self._result(await self.server.step(session, {"text": action}))
        except ServeError as exc:
            return types.CallToolResult(content=[types.TextContent(text=exc.message)],
                                        structured_content=exc.payload(), is_error=True)

    async def _reset(self, ctx: Any, arguments: dict[str, Any]) -> types.CallToolResult:
        manager = self.server.manager
        mcp_sid = self._mcp_session_id(ctx)
        session = self._find(ctx, arguments)
        new = session is None
        if new:
            session = manager.open("mcp")
        try:
            data = {k: v for k, v in arguments.items() if k != "session_id"}
            result = await self.server.reset(session, data)
        except ServeError:
            if new:
                await manager.close(session, "its first reset failed")
            raise
        if new and mcp_sid is not None:
            # forget MCP sessions whose env was closed meanwhile (idle timeout) without the client ending them
            self.by_mcp_session = {k: v for k, v in self.by_mcp_session.items() if not v.closed}
            self.by_mcp_session[mcp_sid] = session
        with contextlib.suppress(Exception):  # the tool list now has the env's tools
            await ctx.session.send_tool_list_changed()
        return self._result(result)

    @staticmethod
    def _result(payload: dict[str, Any]) -> types.CallToolResult:
        obs = payload["observation"]
        structured = {"reward": payload["reward"], "done": payload["done"], "terminated": obs["terminated"],
                      "truncated": obs["truncated"], "info": obs["info"], "env_id": obs["env_id"],
                      "session_id": obs["session_id"]}
        return types.CallToolResult(content=[types.TextContent(text=obs["text"])], structured_content=structured)


def create_mcp_app(server: ArlServer, host: str = "127.0.0.1") -> McpApp:
    """The ``/mcp`` app of ``server``."""
    return McpApp(server, host)

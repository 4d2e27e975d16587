"""The ``arl-envs serve`` application: OpenEnv's HTTP/WebSocket protocol over every registered id, MCP at ``/mcp``.

Routes (OpenEnv's, ``openenv.core.env_server.http_server``): ``POST /reset``, ``POST /step``, ``GET /state``,
``GET /schema``, ``GET /health``, ``GET /metadata``, ``WS /ws``; ours beside them: ``POST /close``,
``GET /envs`` (the served ids), ``GET /sessions`` (counts), ``WS /envs/<env_id>/ws`` (a base URL per id, for
clients that cannot pass reset arguments) and ``/mcp`` (:mod:`arl_envs.server.mcp`).

Why not OpenEnv's ``HTTPEnvServer`` itself: it builds one env class per server, fixed when a WebSocket connects,
while here the id and kwargs are chosen per session at reset; its ``POST /reset`` and ``POST /step`` make a fresh
env per request and close it after, so an episode cannot span two HTTP requests (here ``/reset`` opens a session
whose ``session_id`` ``/step`` takes); and its ``/mcp`` is its own JSON-RPC, not MCP's streamable HTTP. The
message models are OpenEnv's (:mod:`arl_envs.server.protocol`), so OpenEnv's clients connect unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import json
import logging
import os
import uuid
from typing import Any

from fastapi import FastAPI, Request, WebSocket
from openenv.core.env_server.serialization import serialize_observation
from openenv.core.env_server.types import (
    EnvironmentMetadata,
    HealthResponse,
    HealthStatus,
    SchemaResponse,
    WSCloseMessage,
    WSResetMessage,
    WSStateMessage,
    WSStepMessage,
)
from pydantic import ValidationError
from starlette.responses import Response
from starlette.websockets import WebSocketDisconnect, WebSocketState

from arl_envs.server.protocol import RESET_KEYS, ArlAction, ArlObservation, ArlState, to_jsonable
from arl_envs.server.sessions import ServeError, Session, SessionManager, served_ids

log = logging.getLogger("arl_envs.server")

#: Largest request body / WebSocket message, in bytes (16 MiB, uvicorn's own WebSocket default). Far above an action
#: at the env's limit (MAX_ACTION_CHARS characters, at most 12 bytes each as escaped JSON), so every action a model
#: writes reaches the env, which answers an over-long one with its own action_error observation (the contract's
#: malformed action). Bigger: HTTP 413 / WebSocket ``MESSAGE_TOO_LARGE``.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 2**20  # also in arl_envs.server.main


#: Seconds a refused WebSocket (too many sessions, unknown id in the URL) stays open for the client's first message.
REFUSED_GRACE_S = 10.0


def _dumps(payload: Any) -> str:
    # ASCII JSON: a lone surrogate (which a model's text can hold, and an env can echo) is escaped as \udXXX
    # instead of failing the UTF-8 encoding of the reply.
    return json.dumps(payload, ensure_ascii=True, separators=(",", ":"))


def _json(payload: Any, status: int = 200) -> Response:
    return Response(_dumps(payload), status_code=status, media_type="application/json")


def _error(exc: ServeError) -> Response:
    return _json({"detail": exc.payload()}, exc.status)


class ArlServer:
    """The state behind the app: served ids, sessions, limits.

    Args:
        env_patterns: Shell-style patterns of ids to serve (None: every id).
        max_sessions: Open sessions at most (WebSocket, HTTP and MCP together).
        idle_timeout_s: Idle sessions are closed after this (None: never).
        token: If set, every route and the WebSocket need ``Authorization: Bearer <token>`` (or HTTP Basic auth
            with the token as password, which OpenEnv's client sends for ``http://user:<token>@host:port``).
        max_message_bytes: Largest request body or WebSocket message.
        mcp: Mount the MCP endpoint at ``/mcp``.
    """

    def __init__(
        self,
        env_patterns: list[str] | None = None,
        *,
        max_sessions: int = 256,
        idle_timeout_s: float | None = 600.0,
        token: str | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        mcp: bool = True,
    ) -> None:
        self.env_ids = served_ids(env_patterns)
        self.manager = SessionManager(self.env_ids, max_sessions=max_sessions, idle_timeout_s=idle_timeout_s)
        self.default_env_id = self.env_ids[0] if len(self.env_ids) == 1 else None
        self.token = token or None
        self.max_message_bytes = int(max_message_bytes)
        self.mcp = mcp

    # ----------------------------------------------------------------- protocol operations (HTTP, WS and MCP)
    async def reset(self, session: Session, data: Any, path_env_id: str | None = None) -> dict[str, Any]:
        """Reset ``session`` (making its env first if needed); OpenEnv's ``{"observation", "reward", "done"}``."""
        if not isinstance(data, dict):
            raise ServeError(422, "VALIDATION_ERROR", f"reset data must be a JSON object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(RESET_KEYS))
        if unknown:
            raise ServeError(422, "VALIDATION_ERROR", f"unknown reset field(s) {', '.join(map(repr, unknown))}; "
                             f"accepted: {', '.join(RESET_KEYS)}")
        seed, options = data.get("seed"), data.get("options")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ServeError(422, "VALIDATION_ERROR", f"seed must be an integer >= 0 or null, got {seed!r}")
        if options is not None and not isinstance(options, dict):
            raise ServeError(422, "VALIDATION_ERROR", f"options must be a JSON object or null, got {options!r}")
        for key in ("env_id", "episode_id"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise ServeError(422, "VALIDATION_ERROR", f"{key} must be a string, got {data[key]!r}")
        env_id = data.get("env_id") or path_env_id or session.env_id or self.default_env_id
        if env_id is None:
            raise ServeError(400, "VALIDATION_ERROR", f"reset needs an env_id: this server serves {len(self.env_ids)} "
                             "ids (GET /envs); pass env_id (and env_kwargs) in the reset data")
        if "env_kwargs" in data:
            kwargs = data["env_kwargs"]
        else:
            kwargs = session.env_kwargs if env_id.removeprefix("arl_envs:") == session.env_id else {}
        await self.manager.configure(session, env_id, kwargs)
        obs, info = await self.manager.run(session, lambda env: env.reset(seed=seed, options=options))
        session.episode_id = data.get("episode_id") or uuid.uuid4().hex
        session.step_count = 0
        session.episode_active = True
        return self._observation(session, obs, info, reward=None, terminated=False, truncated=False)

    async def step(self, session: Session, action: Any) -> dict[str, Any]:
        """Step ``session``'s env with ``action`` (``{"text": ...}``); OpenEnv's observation envelope."""
        if not isinstance(action, dict):
            raise ServeError(422, "VALIDATION_ERROR", 'action must be a JSON object {"text": "<the model\'s text>"}')
        try:
            text = ArlAction.model_validate(action).text
        except ValidationError as exc:
            raise ServeError(422, "VALIDATION_ERROR", f'invalid action (expected {{"text": str}}): '
                             f"{exc.errors(include_url=False)}") from None
        obs, reward, terminated, truncated, info = await self.manager.run(session, lambda env: env.step(text))
        session.step_count += 1
        session.episode_active = not (terminated or truncated)
        return self._observation(session, obs, info, reward=float(reward), terminated=terminated, truncated=truncated)

    def state(self, session: Session) -> dict[str, Any]:
        """OpenEnv's ``State`` of ``session`` (episode id, step count) with its env id, kwargs and task id."""
        env = session.env
        task_id = getattr(env.unwrapped, "task_id", None) if env is not None else None
        return ArlState(
            episode_id=session.episode_id, step_count=session.step_count, session_id=session.id,
            env_id=session.env_id, env_kwargs=to_jsonable(session.env_kwargs), task_id=to_jsonable(task_id),
            episode_active=session.episode_active,
        ).model_dump()

    async def spec(self, session: Session, data: Any) -> dict[str, Any]:
        """Make the session's env (``data``: ``env_id``, ``env_kwargs``) and describe it (spaces, expert, render)."""
        if not isinstance(data, dict):
            raise ServeError(422, "VALIDATION_ERROR", "arl.spec data must be a JSON object")
        env_id = data.get("env_id") or session.env_id or self.default_env_id
        await self.manager.configure(session, env_id, data.get("env_kwargs", {}))

        def describe(env: Any) -> dict[str, Any]:
            raw = env.unwrapped
            return {
                "env_id": session.env_id,
                "observation_max_length": int(getattr(env.observation_space, "max_length", 0)),
                "action_max_length": int(getattr(env.action_space, "max_length", 0)),
                "has_expert": getattr(raw, "has_expert", True) is not False,
                "render_modes": list(raw.metadata.get("render_modes", [])),
                "render_mode": raw.render_mode,
                "action_format": getattr(raw, "action_format", None),
                "tools": to_jsonable(raw.tool_schemas()) if hasattr(raw, "tool_schemas") else [],
                "session_id": session.id,
                "server_pid": os.getpid(),
            }

        return await self.manager.run(session, describe)

    def _observation(self, session: Session, obs: str, info: dict[str, Any], *, reward: float | None,
                     terminated: bool, truncated: bool) -> dict[str, Any]:
        observation = ArlObservation(
            text=obs, terminated=bool(terminated), truncated=bool(truncated), info=to_jsonable(info),
            env_id=session.env_id or "", session_id=session.id, reward=reward, done=bool(terminated or truncated),
        )
        return serialize_observation(observation)

    # ----------------------------------------------------------------- auth
    def authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """Whether the request carries the token (always True without ``--token``)."""
        if self.token is None:
            return True
        for name, value in headers:
            if name.lower() != b"authorization":
                continue
            scheme, _, cred = value.decode("latin-1").partition(" ")
            cred = cred.strip()
            if scheme.lower() == "bearer" and hmac.compare_digest(cred.encode(), self.token.encode()):
                return True
            if scheme.lower() == "basic":
                try:
                    _, _, password = base64.b64decode(cred, validate=True).decode("utf-8").partition(":")
                except (binascii.Error, UnicodeDecodeError):
                    return False
                return hmac.compare_digest(password.encode(), self.token.encode())
        return False


class ArlAsgi:
    """The outer ASGI app: refuses requests without the token (401; a WebSocket handshake 403), sends ``/mcp`` to
    MCP and the rest to the FastAPI app (whose lifespan runs the reaper and MCP's session manager)."""

    def __init__(self, app: FastAPI, server: ArlServer, mcp_asgi: Any = None) -> None:
        self.app = app
        self.server = server
        self.mcp_asgi = mcp_asgi

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket") and not self.server.authorized(scope.get("headers", [])):
            if scope["type"] == "http":
                body = _dumps({"detail": {"message": "missing or wrong token: send 'Authorization: Bearer <token>' "
                                          "(the server runs with --token)", "code": "UNAUTHORIZED"}}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
            else:  # closing before accept: the handshake is answered 403
                await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong token"})
            return
        path = scope.get("path", "")
        if self.mcp_asgi is not None and scope["type"] == "http" and (path == "/mcp" or path.startswith("/mcp/")):
            await self.mcp_asgi(scope, receive, send)
            return
        await self.app(scope, receive, send)


def create_app(server: ArlServer | None = None, host: str = "127.0.0.1", **kwargs: Any) -> ArlAsgi:
    """The ASGI app of ``arl-envs serve`` (``kwargs`` go to :class:`ArlServer` when ``server`` is None)."""
    server = server or ArlServer(**kwargs)
    manager = server.manager
    mcp_app = None
    if server.mcp:
        from arl_envs.server.mcp import create_mcp_app

        mcp_app = create_mcp_app(server, host)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI):
        manager.start_reaper()
        async with contextlib.AsyncExitStack() as stack:
            if mcp_app is not None:
                await stack.enter_async_context(mcp_app.lifespan())
            try:
                yield
            finally:
                await manager.stop()

    app = FastAPI(title="arl-envs (OpenEnv protocol)", version="0.1.0", lifespan=lifespan,
                  description="Every arl-envs id over OpenEnv's HTTP/WebSocket protocol, and MCP at /mcp.")
    app.state.arl = server

    async def read_json(request: Request) -> Any:
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > server.max_message_bytes:
            raise ServeError(413, "MESSAGE_TOO_LARGE", f"request body of {length} bytes is over the server's limit "
                             f"of {server.max_message_bytes} bytes")
        body = await request.body()
        if len(body) > server.max_message_bytes:
            raise ServeError(413, "MESSAGE_TOO_LARGE", f"request body of {len(body)} bytes is over the server's "
                             f"limit of {server.max_message_bytes} bytes")
        if not body.strip():
            return {}
        try:
            return json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ServeError(400, "INVALID_JSON", f"malformed JSON body: {exc}") from None

    @app.get("/health")
    async def health() -> Response:
        return _json(HealthResponse(status=HealthStatus.HEALTHY).model_dump(mode="json"))

    @app.get("/metadata")
    async def metadata() -> Response:
        return _json(EnvironmentMetadata(
            name="arl-envs", version="0.1.0", documentation_url="docs/serving.md",
            description=f"{len(server.env_ids)} arl-envs ids; choose one per session with reset(env_id=..., "
            "env_kwargs=...).",
        ).model_dump())

    @app.get("/schema")
    async def schema() -> Response:
        return _json(SchemaResponse(action=ArlAction.model_json_schema(),
                                    observation=ArlObservation.model_json_schema(),
                                    state=ArlState.model_json_schema()).model_dump())

    @app.get("/envs")
    async def envs() -> Response:
        from arl_envs.registration import describe

        return _json({"env_ids": server.env_ids,
                      "envs": [{"id": i, "description": describe(i).description} for i in server.env_ids]})

    @app.get("/sessions")
    async def sessions() -> Response:
        return _json(manager.stats())

    @app.post("/reset")
    async def http_reset(request: Request) -> Response:
        session = None
        try:
            data = await read_json(request)
            if not isinstance(data, dict):
                raise ServeError(422, "VALIDATION_ERROR", "the /reset body must be a JSON object")
            new = not data.get("session_id")
            session = manager.open("http") if new else manager.get(data["session_id"])
            try:
                return _json(await server.reset(session, data))
            except ServeError:
                if new:
                    await manager.close(session, "its first reset failed")
                raise
        except ServeError as exc:
            return _error(exc)

    @app.post("/step")
    async def http_step(request: Request) -> Response:
        try:
            data = await read_json(request)
            if not isinstance(data, dict):
                raise ServeError(422, "VALIDATION_ERROR", "the /step body must be a JSON object")
            if "action" not in data:
                raise ServeError(422, "VALIDATION_ERROR", 'the /step body needs "action": {"text": ...}')
            session = manager.get(data.get("session_id"))
            return _json(await server.step(session, data["action"]))
        except ServeError as exc:
            return _error(exc)

    @app.get("/state")
    async def http_state(session_id: str | None = None) -> Response:
        try:
            return _json(server.state(manager.get(session_id)))
        except ServeError as exc:
            return _error(exc)

    @app.post("/close")
    async def http_close(request: Request) -> Response:
        try:
            data = await read_json(request)
            session = manager.get(data.get("session_id") if isinstance(data, dict) else None)
            await manager.close(session)
            return _json({"closed": session.id})
        except ServeError as exc:
            return _error(exc)

    async def serve_ws(websocket: WebSocket, path_env_id: str | None) -> None:
        await websocket.accept()

        async def send(kind: str, data: dict[str, Any]) -> None:
            await websocket.send_text(_dumps({"type": kind, "data": data}))

        try:
            if path_env_id is not None:
                manager.check_env_id(path_env_id)
            session = manager.open("ws")
        except ServeError as exc:
            # The error first, then wait (up to REFUSED_GRACE_S) for the client's first message and answer it with
            # the error again before closing: a client that sends as soon as it connects (OpenEnv's) reads the
            # error instead of a closed socket.
            await send("error", exc.payload())
            with contextlib.suppress(Exception):
                message = await asyncio.wait_for(websocket.receive(), REFUSED_GRACE_S)
                if message["type"] != "websocket.disconnect":
                    await send("error", exc.payload())
            with contextlib.suppress(Exception):
                await websocket.close(code=1013 if exc.code == "CAPACITY_REACHED" else 1008)
            return

        async def close_socket() -> None:
            if websocket.client_state == WebSocketState.CONNECTED:
                with contextlib.suppress(Exception):
                    await send("error", {"message": f"session closed: {session.close_reason}",
                                         "code": "SESSION_CLOSED"})
                    await websocket.close(code=1001)

        session.on_close.append(close_socket)
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                raw = message.get("text")
                if raw is None:
                    raw = (message.get("bytes") or b"").decode("utf-8", errors="replace")
                if len(raw) > server.max_message_bytes:
                    await send("error", {"message": f"message of {len(raw)} characters is over the server's limit of "
                                         f"{server.max_message_bytes} bytes", "code": "MESSAGE_TOO_LARGE"})
                    continue
                try:
                    msg = json.loads(raw)
                except json.JSONDecodeError as exc:
                    await send("error", {"message": f"Invalid JSON: {exc}", "code": "INVALID_JSON"})
                    continue
                if not isinstance(msg, dict):
                    await send("error", {"message": "a message must be a JSON object with a 'type'",
                                         "code": "VALIDATION_ERROR"})
                    continue
                kind = msg.get("type", "")
                try:
                    if kind == "reset":
                        m = WSResetMessage(**msg)
                        await send("observation", await server.reset(session, m.data, path_env_id))
                    elif kind == "step":
                        m = WSStepMessage(**msg)
                        await send("observation", await server.step(session, m.data))
                    elif kind == "state":
                        WSStateMessage(**msg)
                        await send("state", server.state(session))
                    elif kind == "close":
                        WSCloseMessage(**msg)
                        break
                    elif kind == "arl.spec":
                        await send("arl.spec", await server.spec(session, msg.get("data") or {"env_id": path_env_id}))
                    elif kind == "arl.expert":
                        action = await manager.run(session, lambda env: env.unwrapped.expert_action())
                        await send("arl.expert", {"text": action})
                    elif kind == "arl.render_call":
                        call = msg.get("data") or {}
                        text = await manager.run(session, lambda env: env.unwrapped.render_call(
                            str(call.get("name", "")), dict(call.get("arguments") or {})))
                        await send("arl.render_call", {"text": text})
                    elif kind == "arl.render":
                        text = await manager.run(session, lambda env: env.render())
                        await send("arl.render", {"text": text})
                    else:
                        hint = " (MCP is served at /mcp, streamable HTTP)" if kind == "mcp" else ""
                        await send("error", {"message": f"Unknown message type: {kind!r}{hint}; accepted: reset, step, "
                                             "state, close", "code": "UNKNOWN_TYPE"})
                except ValidationError as exc:
                    await send("error", {"message": f"Invalid message: {exc.errors(include_url=False)}",
                                         "code": "VALIDATION_ERROR"})
                except ServeError as exc:
                    await send("error", exc.payload())
                    if exc.code == "SESSION_CLOSED":
                        break
                except WebSocketDisconnect:
                    raise
                except Exception as exc:  # noqa: BLE001 - a bug answers this message; the session goes on
                    log.exception("session %s: %s message failed", session.id, kind)
                    await send("error", {"message": f"{type(exc).__name__}: {exc}", "code": "EXECUTION_ERROR"})
        except WebSocketDisconnect:
            pass
        except Exception as exc:  # noqa: BLE001 - one broken connection never takes the server down
            log.warning("websocket session %s failed: %s", session.id, exc)
        finally:
            session.on_close.clear()
            await manager.close(session, "the client disconnected")
            if websocket.client_state == WebSocketState.CONNECTED:
                with contextlib.suppress(Exception):
                    await websocket.close()

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await serve_ws(websocket, None)

    @app.websocket("/envs/{env_id:path}/ws")
    async def ws_for_id(websocket: WebSocket, env_id: str) -> None:
        await serve_ws(websocket, env_id)

    return ArlAsgi(app, server, mcp_app.asgi if mcp_app is not None else None)


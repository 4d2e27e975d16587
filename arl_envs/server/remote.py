"""``arl/remote-v0``: a Gymnasium env whose episode runs on an ``arl-envs serve`` server (WebSocket session).

    env = gym.make("arl_envs:arl/remote-v0", url="http://127.0.0.1:8000", env_id="arl/math.arithmetic-v1",
                   env_kwargs={"difficulty": 2})

It speaks OpenEnv's WebSocket messages (``reset``, ``step``, ``state``, ``close``) plus three of ``arl-envs
serve``'s own (``arl.spec``: the env's spaces and tools, ``arl.expert``, ``arl.render``/``arl.render_call``), so it
gives the same observations, rewards and ``info`` as the env in-process (``info`` crosses as JSON: tuples arrive as
lists). API misuse raises the env's own exception here (``ResetNeeded``, ``InvalidActionType``). A server that
dies, is killed or does not answer within ``timeout_s`` makes that ``step`` return ``info["env_error"]`` with
``truncated=True`` (the episode is over; the next ``reset`` reconnects); ``reset`` raises
:class:`~arl_envs.core.errors.InfrastructureError` when no server answers.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import numpy as np

from arl_envs.core import snapshot
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import (
    ArlError,
    DependencyNotInstalled,
    InfrastructureError,
    InvalidActionType,
    InvalidKwargs,
    ResetNeeded,
    TaskLoadError,
)
from arl_envs.core.spaces import UnicodeText
from arl_envs.core.tools import ToolCall

#: Exceptions re-raised here by name when the server reports them (API misuse of the remote env).
_REMOTE_EXCEPTIONS: dict[str, type[Exception]] = {
    "ResetNeeded": ResetNeeded, "InvalidActionType": InvalidActionType, "InvalidKwargs": InvalidKwargs,
    "TaskLoadError": TaskLoadError, "ValueError": ValueError, "TypeError": TypeError,
}
#: Observation of a step the server could not answer.
SERVER_FAILED_OBSERVATION = "The environment server failed (not your fault); this episode is not scored."


class _RemoteTool:
    """A tool of the remote env: its name and OpenAI-style schema (what :class:`RandomAgent` reads)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._schema = schema
        self.name = schema["function"]["name"]
        self.description = schema["function"].get("description", "")

    def schema(self) -> dict[str, Any]:
        return self._schema


class RemoteEnv(AgentEnv):
    """An env id served by ``arl-envs serve``, as a normal Gymnasium env.

    A contract proxy (``contract_proxy = True``): ``reset`` and ``step`` forward to the served env, which runs the
    contract's hooks in the server's process, so this class overrides them.

    Args:
        url: The server, ``http://host:port`` (or ``ws://``).
        env_id: The id to play (the server must serve it).
        env_kwargs: Constructor kwargs of the remote env (JSON values).
        timeout_s: Seconds to wait for each answer; past it a step is ``env_error`` (truncated).
        connect_timeout_s: Seconds to wait for the WebSocket handshake.
        token: The server's ``--token``, if it has one.
        render_mode: None or ``"ansi"`` (the remote transcript).
        **kwargs: The base env kwargs (``action_format``, ``reward_weights``, ``max_turns``,
            ``max_invalid_actions``), checked here and passed to the remote env with ``env_kwargs``.

    Raises:
        InfrastructureError: No server answers at construction.
        InvalidKwargs: The server refuses ``env_kwargs`` (as the env in-process would), or an unknown id.
    """

    contract_proxy = True
    #: Snapshots replay the action log from the seed into a fresh server session (the served env is deterministic).
    snapshot_mode = "replay"

    def __init__(
        self,
        *,
        url: str = "http://127.0.0.1:8000",
        env_id: str = "",
        env_kwargs: dict[str, Any] | None = None,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 10.0,
        token: str | None = None,
        render_mode: str | None = None,
        **kwargs: Any,
    ) -> None:
        try:
            import websockets.sync.client  # noqa: F401
        except ImportError as exc:  # pragma: no cover - an install problem
            raise DependencyNotInstalled("arl/remote-v0 needs websockets: pip install 'arl-envs[serve]'") from exc
        if not env_id:
            raise InvalidKwargs("arl/remote-v0 is the client of an `arl-envs serve` server: it needs env_id= (the id "
                                "the server plays, e.g. 'arl/math.arithmetic-v1') and url=")
        self.url = url.rstrip("/")
        self.env_id = env_id
        self.env_kwargs = {**(env_kwargs or {}), **kwargs}
        if render_mode is not None:
            self.env_kwargs["render_mode"] = render_mode
        self.timeout_s = float(timeout_s)
        self.connect_timeout_s = float(connect_timeout_s)
        self.token = token
        self.render_mode = render_mode
        self._ws: Any = None
        self._closed = False
        self._episode_active = False
        self.task_id: str | None = None
        self.turn = 0
        self.transcript: list[tuple[str, str]] = []
        self._instructions = ""
        spec = self._spec()
        self.observation_space = UnicodeText(spec["observation_max_length"])
        self.action_space = UnicodeText(spec["action_max_length"])
        self.has_expert = bool(spec["has_expert"])
        self.action_format = spec.get("action_format") or "native"
        self.metadata = {"render_modes": spec["render_modes"], "render_fps": 1}
        self._tools = [_RemoteTool(s) for s in spec["tools"]]

    # ----------------------------------------------------------------- transport
    def _ws_url(self) -> str:
        url = self.url
        for http, ws in (("http://", "ws://"), ("https://", "wss://")):
            if url.startswith(http):
                url = ws + url[len(http):]
        return f"{url}/ws"

    def _connect(self) -> Any:
        from websockets.sync.client import connect

        if self._ws is None:
            headers = {}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            try:
                self._ws = connect(self._ws_url(), open_timeout=self.connect_timeout_s, additional_headers=headers,
                                   max_size=None, close_timeout=1.0, legacy=True)
            except Exception as exc:  # noqa: BLE001 - any failure to connect is the server's
                raise InfrastructureError(f"cannot reach the env server at {self.url}: {type(exc).__name__}: "
                                          f"{exc}") from None
        return self._ws

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.close()
            except Exception:  # noqa: BLE001 - already broken
                pass

    def _request(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one message and wait for its answer.

        Raises:
            InfrastructureError: No connection, the connection broke, or no answer within ``timeout_s``.
            ArlError (or the env's exception class): The server's error message.
        """
        ws = self._connect()
        message = {"type": kind} if data is None else {"type": kind, "data": data}
        try:
            ws.send(json.dumps(message, ensure_ascii=True))  # ASCII: a lone surrogate in the text is escaped
            raw = ws.recv(timeout=self.timeout_s)
        except TimeoutError:
            self._drop()
            raise InfrastructureError(f"the env server at {self.url} did not answer {kind!r} within "
                                      f"{self.timeout_s:g} s") from None
        except Exception as exc:  # noqa: BLE001 - a closed or broken connection
            self._drop()
            raise InfrastructureError(f"the connection to the env server at {self.url} broke during {kind!r}: "
                                      f"{type(exc).__name__}: {exc}") from None
        reply = json.loads(raw)
        if reply.get("type") == "error":
            err = reply.get("data", {})
            message_text = err.get("message", "unknown error")
            cls = _REMOTE_EXCEPTIONS.get(err.get("exception", ""))
            if cls is not None:
                raise cls(message_text)
            if err.get("code") in ("UNKNOWN_ENV", "BAD_KWARGS"):
                raise InvalidKwargs(message_text)
            if err.get("code") in ("SESSION_CLOSED", "EXECUTION_ERROR", "FACTORY_ERROR", "CAPACITY_REACHED"):
                self._drop()
                raise InfrastructureError(f"env server: {message_text} ({err.get('code')})")
            raise ArlError(f"env server: {message_text} ({err.get('code')})")
        return reply.get("data", {})

    def _spec(self) -> dict[str, Any]:
        return self._request("arl.spec", {"env_id": self.env_id, "env_kwargs": self.env_kwargs})

    # ----------------------------------------------------------------- AgentEnv hooks (the remote env does the work)
    def tools(self) -> list[Any]:  # type: ignore[override]
        """The remote env's tools (name + OpenAI-style schema)."""
        return list(self._tools)

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self._tools]

    def instructions(self) -> str:
        return self._instructions

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:  # pragma: no cover - reset is overridden
        raise TypeError("RemoteEnv forwards reset() to the server; the task hooks run in the served env")

    def _step_calls(self, calls: list[ToolCall]) -> Transition:  # pragma: no cover - step is overridden
        raise TypeError("RemoteEnv forwards step() to the server; the step hooks run in the served env")

    def render_call(self, name: str, arguments: dict[str, Any]) -> str:
        """A tool call in the remote env's action format (rendered by the remote env)."""
        return self._request("arl.render_call", {"name": name, "arguments": arguments})["text"]

    def _expert_action(self) -> str:
        return self._request("arl.expert")["text"]

    # ----------------------------------------------------------------- Gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on the server (reconnecting if the last connection broke).

        Raises:
            ResetNeeded: This env was closed.
            InfrastructureError: No server answers.
        """
        if self._closed:
            raise ResetNeeded("this env was closed; make a new one")
        gym.Env.reset(self, seed=seed)
        snapshot.record_reset(self, seed, options)
        data: dict[str, Any] = {"env_id": self.env_id, "env_kwargs": self.env_kwargs, "seed": seed}
        if options is not None:
            data["options"] = options
        payload = self._request("reset", data)
        obs = payload["observation"]
        info = obs["info"]
        self.task_id, self.turn, self._episode_active = info.get("task_id"), 0, True
        self._instructions = info.get("instructions", "")
        self.transcript = [("system", self._instructions), ("user", info.get("task", ""))]
        return obs["text"], info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One step on the server; a server failure is ``info["env_error"]`` with ``truncated=True``.

        Raises:
            InvalidActionType: ``action`` is not a ``str``.
            ResetNeeded: No running episode.
        """
        if not isinstance(action, str):
            raise InvalidActionType(f"action must be a str (the model's text), got {type(action).__name__}")
        if not self._episode_active:
            raise ResetNeeded("call reset() before step(): no episode is running")
        self.turn += 1
        self.transcript.append(("assistant", action))
        try:
            payload = self._request("step", {"text": action})
        except InfrastructureError as exc:
            self._episode_active = False
            info = {"task_id": self.task_id, "turn": self.turn, "reward_components": {}, "action_error": None,
                    "tool_calls": [], "success": False, "env_error": str(exc)}
            self.transcript.append(("env", SERVER_FAILED_OBSERVATION))
            return SERVER_FAILED_OBSERVATION, 0.0, False, True, info
        obs = payload["observation"]
        terminated, truncated = bool(obs["terminated"]), bool(obs["truncated"])
        if terminated or truncated:
            self._episode_active = False
        self.transcript.append(("env", obs["text"]))
        return obs["text"], float(payload["reward"]), terminated, truncated, obs["info"]

    def render(self) -> str | None:
        """The remote transcript (``render_mode="ansi"``), else None."""
        if self.render_mode != "ansi":
            return None
        return self._request("arl.render")["text"]

    def close(self) -> None:
        """Close the remote session (its env is closed on the server); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._episode_active = False
        if self._ws is not None:
            try:
                self._ws.send(json.dumps({"type": "close"}))
            except Exception:  # noqa: BLE001 - the server may be gone
                pass
            self._drop()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def basic_auth_url(url: str, token: str) -> str:
    """``url`` with ``token`` as HTTP Basic password (``http://token:<token>@host:port``): how OpenEnv's clients,
    which take no headers, carry ``--token``."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://token:{token}@{rest}"


class RemoteVectorEnv(gym.vector.SyncVectorEnv):
    """``make_vec(..., mode="remote")``: sub-envs are :class:`RemoteEnv` sessions, stepped concurrently (threads).

    Same autoreset semantics as Gymnasium's ``SyncVectorEnv`` (next-step by default): each sub-env's reset-or-step
    of one vector step runs on its own thread, so N sessions take about one round trip, not N.
    """

    def __init__(self, env_fns: list[Any], **kwargs: Any) -> None:
        super().__init__(env_fns, **kwargs)
        self._pool = ThreadPoolExecutor(max_workers=max(1, self.num_envs), thread_name_prefix="arl-remote-vec")

    def step(self, actions: Any) -> Any:
        from gymnasium.vector import AutoresetMode
        from gymnasium.vector.utils import concatenate, iterate

        actions = list(iterate(self.action_space, actions))
        mode = self.autoreset_mode

        def one(i: int) -> tuple[Any, ...]:
            if mode == AutoresetMode.NEXT_STEP and self._autoreset_envs[i]:
                obs, info = self.envs[i].reset()
                return obs, 0.0, False, False, info, None
            obs, r, term, trunc, info = self.envs[i].step(actions[i])
            final = None
            if mode == AutoresetMode.SAME_STEP and (term or trunc):
                final = {"final_obs": obs, "final_info": info}
                obs, info = self.envs[i].reset()
            return obs, r, term, trunc, info, final

        results = list(self._pool.map(one, range(self.num_envs)))
        infos: dict[str, Any] = {}
        for i, (obs, r, term, trunc, info, final) in enumerate(results):
            self._env_obs[i], self._rewards[i], self._terminations[i], self._truncations[i] = obs, r, term, trunc
            if final is not None:
                infos = self._add_info(infos, final, i)
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (self._observations, np.copy(self._rewards), np.copy(self._terminations), np.copy(self._truncations),
                infos)

    def close_extras(self, **kwargs: Any) -> None:
        super().close_extras(**kwargs)
        self._pool.shutdown(wait=False)


def make_remote_vec(env_id: str, num_envs: int, url: str, **kwargs: Any) -> RemoteVectorEnv:
    """``num_envs`` remote sessions of ``env_id`` on the server at ``url`` (``kwargs``: env kwargs, plus
    ``timeout_s``, ``token`` and ``autoreset_mode``)."""
    from arl_envs.vector_modes import as_autoreset_mode

    vector_kwargs = {}
    if "autoreset_mode" in kwargs:
        vector_kwargs["autoreset_mode"] = as_autoreset_mode(kwargs.pop("autoreset_mode"))
    client = {k: kwargs.pop(k) for k in ("timeout_s", "connect_timeout_s", "token") if k in kwargs}
    bare = env_id.removeprefix("arl_envs:")

    def factory() -> gym.Env:
        return gym.make("arl_envs:arl/remote-v0", url=url, env_id=bare, env_kwargs=kwargs, **client)

    return RemoteVectorEnv([factory for _ in range(num_envs)], **vector_kwargs)


__all__ = ["RemoteEnv", "RemoteVectorEnv", "basic_auth_url", "make_remote_vec"]

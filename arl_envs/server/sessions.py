"""Sessions of ``arl-envs serve``: one env per session, its calls on the session's own thread.

A session is opened by a WebSocket connection, an HTTP ``POST /reset`` without ``session_id`` or an MCP session;
it owns at most one env (made by ``gym.make(env_id, **env_kwargs)`` at the first reset, remade when a reset names
another id or other kwargs). Every env call (make, reset, step, expert, render, close) runs on the session's
single-thread executor, so the event loop never waits on an env and an env always sees the same thread (what
thread-bound libraries such as a JVM bridge expect). A session is closed, its env closed and its thread ended, when
its client disconnects or closes it, or when it has been idle longer than ``idle_timeout_s``.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import gymnasium as gym

from arl_envs.core.errors import ArlError, DependencyNotInstalled, InvalidKwargs, ResetNeeded
from arl_envs.registration import env_ids

log = logging.getLogger("arl_envs.server")

#: Ids never served (the remote client itself: serving it would point a server at a server).
NOT_SERVED = ("arl/remote-v0",)
#: Thread-name prefix of session threads (counted by ``GET /sessions`` and the leak test).
THREAD_PREFIX = "arl-session"


class ServeError(Exception):
    """A request the server refuses: an HTTP ``status`` and a WebSocket error ``code``, with a message naming it."""

    def __init__(self, status: int, code: str, message: str, exception: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.exception = exception

    def payload(self) -> dict[str, Any]:
        """The error's JSON body: ``{"message", "code"}`` (+ ``exception``: the env's exception class name)."""
        out: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.exception:
            out["exception"] = self.exception
        return out


def served_ids(patterns: list[str] | tuple[str, ...] | None) -> list[str]:
    """Registered ids matching any of the shell-style ``patterns`` (all ids without patterns).

    Raises:
        ValueError: A pattern that matches no id.
    """
    ids = [i for i in env_ids() if i not in NOT_SERVED]
    if not patterns:
        return ids
    out: list[str] = []
    for pattern in patterns:
        hits = [i for i in ids if fnmatch.fnmatchcase(i, pattern)]
        if not hits:
            raise ValueError(f"--env {pattern!r} matches no registered id (see `arl-envs list`)")
        out += [h for h in hits if h not in out]
    return out


@dataclass
class Session:
    """One client's env and the thread its calls run on."""

    id: str
    kind: str
    executor: ThreadPoolExecutor
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    env: gym.Env | None = None
    env_id: str | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    episode_id: str | None = None
    step_count: int = 0
    episode_active: bool = False
    last_active: float = field(default_factory=time.monotonic)
    closed: bool = False
    close_reason: str = ""
    on_close: list[Callable[[], Any]] = field(default_factory=list)


def _env_exception(exc: BaseException) -> ServeError:
    """An exception out of an env call as the client sees it (API misuse is 4xx; anything else 500)."""
    name = type(exc).__name__
    if isinstance(exc, ResetNeeded):
        return ServeError(409, "RESET_NEEDED", str(exc), name)
    if isinstance(exc, (ArlError, ValueError, TypeError)):
        return ServeError(422, "INVALID_REQUEST", f"{name}: {exc}", name)
    return ServeError(500, "EXECUTION_ERROR", f"{name}: {exc}", name)


class SessionManager:
    """Every open session; the max-sessions limit and the idle reaper.

    Args:
        env_ids: Ids clients may open (see :func:`served_ids`).
        max_sessions: Open sessions at most; one more is refused (HTTP 503, WebSocket ``CAPACITY_REACHED``).
        idle_timeout_s: A session idle this long is closed (None: never).
    """

    def __init__(self, env_ids: list[str], max_sessions: int = 256, idle_timeout_s: float | None = 600.0) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {max_sessions}")
        if idle_timeout_s is not None and idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0, got {idle_timeout_s}")
        self.env_ids = list(env_ids)
        self._served = set(self.env_ids)
        self.max_sessions = int(max_sessions)
        self.idle_timeout_s = idle_timeout_s
        self.sessions: dict[str, Session] = {}
        self.opened = 0
        self.closed = 0
        self._reaper: asyncio.Task | None = None
        #: Name prefix of this manager's session threads (several servers may share a process, e.g. in tests).
        self.thread_prefix = f"{THREAD_PREFIX}-{uuid.uuid4().hex[:6]}"

    # ----------------------------------------------------------------- lifecycle
    def open(self, kind: str) -> Session:
        """A new session (no env yet).

        Raises:
            ServeError: 503 ``CAPACITY_REACHED`` when ``max_sessions`` are open.
        """
        if len(self.sessions) >= self.max_sessions:
            raise ServeError(
                503, "CAPACITY_REACHED",
                f"too many sessions: {len(self.sessions)} open, the server's limit is {self.max_sessions} "
                "(--max-sessions); close one or retry later",
            )
        sid = uuid.uuid4().hex
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{self.thread_prefix}-{sid[:8]}")
        session = Session(sid, kind, executor)
        self.sessions[sid] = session
        self.opened += 1
        return session

    def get(self, session_id: Any) -> Session:
        """The open session ``session_id``.

        Raises:
            ServeError: 400 for a missing id, 404 for an unknown or closed one.
        """
        if not isinstance(session_id, str) or not session_id:
            raise ServeError(400, "SESSION_ERROR", "missing session_id: pass the session_id that /reset returned")
        session = self.sessions.get(session_id)
        if session is None:
            raise ServeError(404, "SESSION_CLOSED", f"no open session {session_id!r} (closed, idle-timed-out or "
                             "never opened): reset without session_id to open a new one")
        return session

    async def close(self, session: Session, reason: str = "closed by the client") -> None:
        """Close ``session``: its env (on its thread), then the thread. Idempotent."""
        if session.closed:
            return
        session.closed = True
        session.close_reason = reason
        self.sessions.pop(session.id, None)
        self.closed += 1
        async with session.lock:
            env, session.env = session.env, None
            if env is not None:
                try:
                    await asyncio.get_running_loop().run_in_executor(session.executor, env.close)
                except Exception as exc:  # noqa: BLE001 - a failing close must not keep the thread alive
                    log.warning("closing %s of session %s failed: %s", session.env_id, session.id, exc)
        session.executor.shutdown(wait=False)
        for callback in session.on_close:
            try:
                result = callback()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:  # noqa: BLE001 - the other side may already be gone
                pass

    async def close_all(self) -> None:
        """Close every session (server shutdown)."""
        for session in list(self.sessions.values()):
            await self.close(session, "server shutting down")

    def start_reaper(self) -> None:
        """Start the idle reaper (needs a running loop); a no-op without an idle timeout."""
        if self.idle_timeout_s is not None and self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def stop(self) -> None:
        """Stop the reaper and close every session."""
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        await self.close_all()

    async def _reap(self) -> None:
        timeout = float(self.idle_timeout_s or 0)
        interval = min(max(timeout / 4, 0.05), 5.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if not session.lock.locked() and now - session.last_active > timeout:
                    await self.close(session, f"idle for more than {timeout:g} s (--idle-timeout)")

    def stats(self) -> dict[str, Any]:
        """Open sessions by kind, the limit, sessions opened and closed so far, this server's live session threads,
        the process's threads and pid."""
        kinds: dict[str, int] = {}
        for s in self.sessions.values():
            kinds[s.kind] = kinds.get(s.kind, 0) + 1
        threads = sum(1 for t in threading.enumerate() if t.name.startswith(self.thread_prefix))
        return {"active": len(self.sessions), "by_kind": kinds, "max_sessions": self.max_sessions,
                "opened": self.opened, "closed": self.closed, "session_threads": threads,
                "threads": threading.active_count(), "pid": os.getpid()}

    # ----------------------------------------------------------------- env calls
    async def _call(self, session: Session, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(session.executor, fn, *args)

    def check_env_id(self, env_id: Any) -> str:
        """``env_id`` without an ``arl_envs:`` prefix, if this server serves it.

        Raises:
            ServeError: 400 for a non-string, 404 for an id not served here.
        """
        if not isinstance(env_id, str) or not env_id:
            raise ServeError(400, "VALIDATION_ERROR", f"env_id must be a non-empty string, got {env_id!r}")
        bare = env_id.removeprefix("arl_envs:")
        if bare not in self._served:
            shown = ", ".join(self.env_ids[:8]) + (" ..." if len(self.env_ids) > 8 else "")
            raise ServeError(404, "UNKNOWN_ENV", f"unknown env id {env_id!r}: this server serves {shown} "
                             "(GET /envs lists them)")
        return bare

    async def ensure_env(self, session: Session, env_id: Any, env_kwargs: Any) -> None:
        """Give ``session`` an env of ``env_id`` with ``env_kwargs`` (kept if it has one already).

        Raises:
            ServeError: Unknown id (404), kwargs not a JSON object or refused by the env (422), a missing optional
                dependency on the server (503), any other construction failure (500).
        """
        bare = self.check_env_id(env_id)
        if env_kwargs is None:
            env_kwargs = {}
        if not isinstance(env_kwargs, dict):
            raise ServeError(422, "BAD_KWARGS", f"env_kwargs must be a JSON object, got {type(env_kwargs).__name__}")
        if session.env is not None and session.env_id == bare and session.env_kwargs == env_kwargs:
            return
        if session.env is not None:
            old, session.env = session.env, None
            await self._call(session, old.close)

        def make() -> gym.Env:
            return gym.make(bare, **env_kwargs)

        try:
            env = await self._call(session, make)
        except (InvalidKwargs, ValueError, TypeError) as exc:
            raise ServeError(422, "BAD_KWARGS", f"{bare}: {type(exc).__name__}: {exc}", type(exc).__name__) from None
        except DependencyNotInstalled as exc:
            raise ServeError(503, "FACTORY_ERROR", f"{bare} cannot start on this server: {exc}",
                             type(exc).__name__) from None
        except Exception as exc:  # noqa: BLE001 - reported to the client, the server goes on
            raise ServeError(500, "FACTORY_ERROR", f"{bare} failed to start: {type(exc).__name__}: {exc}",
                             type(exc).__name__) from None
        session.env, session.env_id, session.env_kwargs = env, bare, dict(env_kwargs)
        session.episode_active = False

    def _require_env(self, session: Session) -> gym.Env:
        if session.closed:
            raise ServeError(404, "SESSION_CLOSED", f"session {session.id} is closed ({session.close_reason})")
        if session.env is None:
            raise ServeError(409, "RESET_NEEDED", "no env in this session yet: reset with an env_id first",
                             "ResetNeeded")
        return session.env

    async def run(self, session: Session, fn: Callable[[gym.Env], Any]) -> Any:
        """``fn(env)`` on the session's thread, one call at a time per session.

        Raises:
            ServeError: The session is closed or has no env, or the call raised (see :func:`_env_exception`).
        """
        async with session.lock:
            env = self._require_env(session)
            session.last_active = time.monotonic()
            try:
                return await self._call(session, fn, env)
            except Exception as exc:  # noqa: BLE001 - reported to the client, the server goes on
                raise _env_exception(exc) from None
            finally:
                session.last_active = time.monotonic()

    async def configure(self, session: Session, env_id: Any, env_kwargs: Any) -> None:
        """:meth:`ensure_env` under the session's lock."""
        if session.closed:
            raise ServeError(404, "SESSION_CLOSED", f"session {session.id} is closed ({session.close_reason})")
        async with session.lock:
            session.last_active = time.monotonic()
            await self.ensure_env(session, env_id, env_kwargs)
            session.last_active = time.monotonic()

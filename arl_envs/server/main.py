"""Run the server: ``arl-envs serve`` calls :func:`serve` (uvicorn, one or ``workers`` processes)."""

from __future__ import annotations

import json
import os
from typing import Any

#: Default largest request body / WebSocket message (the value of :data:`arl_envs.server.app.DEFAULT_MAX_MESSAGE_BYTES`,
#: repeated so the multi-worker supervisor process does not import the server).
DEFAULT_MAX_MESSAGE_BYTES = 16 * 2**20

#: Seconds an idle keep-alive HTTP connection stays open (uvicorn's default, 5 s, closes connections that a loaded
#: client's pool is about to reuse for a session's next step).
KEEP_ALIVE_S = 75

#: Environment variable carrying the server settings to uvicorn's worker processes (``workers > 1``).
CONFIG_ENV = "ARL_ENVS_SERVE_CONFIG"


def _app_from_environ() -> Any:
    """uvicorn factory of a worker process: the app from :data:`CONFIG_ENV`."""
    from arl_envs.server.app import ArlServer, create_app

    cfg = json.loads(os.environ[CONFIG_ENV])
    host = cfg.pop("host")
    return create_app(ArlServer(**cfg), host=host)


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    env_patterns: list[str] | None = None,
    max_sessions: int = 256,
    idle_timeout_s: float | None = 600.0,
    token: str | None = None,
    workers: int = 1,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    log_level: str = "warning",
) -> None:
    """Serve every id (or those matching ``env_patterns``) until interrupted.

    With ``workers > 1``, uvicorn runs that many processes on the one port; a connection (and so a WebSocket
    session) lives in the process that accepted it, each process holding up to ``max_sessions``. An HTTP or MCP
    session lives in one process too, so its client must keep one connection alive (HTTP keep-alive) or the
    server must run with one worker.

    Raises:
        ValueError: A pattern that matches no id, or a bad limit.
    """
    import uvicorn

    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    cfg = {"env_patterns": env_patterns, "max_sessions": max_sessions, "idle_timeout_s": idle_timeout_s,
           "token": token, "max_message_bytes": max_message_bytes}
    options = {"host": host, "port": port, "log_level": log_level, "ws_max_size": 2 * max_message_bytes,
               "timeout_graceful_shutdown": 5, "timeout_keep_alive": KEEP_ALIVE_S}
    if workers == 1:
        from arl_envs.server.app import ArlServer, create_app

        server = ArlServer(**cfg)  # validates patterns and limits before the port is bound
        uvicorn.run(create_app(server, host=host), **options)
        return
    from arl_envs.server.sessions import served_ids

    served_ids(env_patterns)  # the workers import the server; the supervisor only checks the patterns
    os.environ[CONFIG_ENV] = json.dumps({**cfg, "host": host})
    uvicorn.run("arl_envs.server.main:_app_from_environ", factory=True, workers=workers, **options)

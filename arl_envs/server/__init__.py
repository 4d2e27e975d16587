"""``arl-envs serve``: every registered id over OpenEnv's HTTP/WebSocket protocol and MCP, with no per-env code.

:func:`create_app` builds the ASGI app, :func:`serve` runs it; :class:`RemoteEnv` (``arl/remote-v0``) is the
Gymnasium client. Needs ``pip install 'arl-envs[serve]'`` (openenv-core, mcp, fastapi, uvicorn, websockets).
"""

from __future__ import annotations

from typing import Any

__all__ = ["ArlServer", "RemoteEnv", "create_app", "serve"]


def __getattr__(name: str) -> Any:
    """Lazy exports: the server's dependencies load only when used."""
    if name in ("ArlServer", "create_app"):
        from arl_envs.server import app

        return getattr(app, name)
    if name == "serve":
        from arl_envs.server.main import serve

        return serve
    if name == "RemoteEnv":
        from arl_envs.server.remote import RemoteEnv

        return RemoteEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

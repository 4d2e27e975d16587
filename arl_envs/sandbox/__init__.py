"""Sandboxed execution of model-written code (architecture, section 4).

>>> from arl_envs.sandbox import get_sandbox, Limits
>>> with get_sandbox("bwrap", limits=Limits(wall_time_s=5)) as sb:   # doctest: +SKIP
...     sb.run(code="print(6 * 7)").stdout
'42\\n'

Backends: ``"bwrap"`` (:class:`BwrapSandbox`, default) and ``"docker"`` (:class:`DockerSandbox`, imported lazily).
"""

from __future__ import annotations

from typing import Any

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox.base import ExecResult, Limits, Sandbox, SandboxClosed

#: Backend names accepted by :func:`get_sandbox`.
BACKENDS = ("bwrap", "docker")


def get_sandbox(backend: str = "bwrap", **kwargs: Any) -> Sandbox:
    """Create a sandbox.

    Args:
        backend: ``"bwrap"`` (default) or ``"docker"``.
        **kwargs: Passed to :class:`~arl_envs.sandbox.bwrap.BwrapSandbox` or
            :class:`~arl_envs.sandbox.docker.DockerSandbox` (``limits=`` works for both).

    Returns:
        A ready :class:`Sandbox` (one episode workspace); close it (or use ``with``).

    Raises:
        ValueError: unknown backend.
        SandboxUnavailable: the backend is not installed or not running (the message names the install step).
    """
    if backend == "bwrap":
        from arl_envs.sandbox.bwrap import BwrapSandbox  # noqa: PLC0415

        return BwrapSandbox(**kwargs)
    if backend == "docker":
        from arl_envs.sandbox.docker import DockerSandbox  # noqa: PLC0415

        return DockerSandbox(**kwargs)
    raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {BACKENDS}")


__all__ = ["BACKENDS", "ExecResult", "Limits", "Sandbox", "SandboxClosed", "SandboxUnavailable", "get_sandbox"]

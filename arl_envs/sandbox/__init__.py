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


def check_backend(backend: Any, kwargs: Any = None) -> None:
    """Check a backend name and its keyword arguments without starting anything (envs call it in ``__init__``, so
    a bad ``sandbox=`` / ``sandbox_kwargs=`` fails at construction, not as an ``env_error`` on every step).

    Args:
        backend: Must be one of :data:`BACKENDS`.
        kwargs: Keyword arguments for that backend's class (None: none); every key must be one it takes.

    Raises:
        ValueError: Unknown backend, ``kwargs`` not a mapping, or a key the backend does not take.
    """
    import inspect  # noqa: PLC0415

    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {backend!r}; choose one of {BACKENDS}")
    if kwargs is None:
        return
    if not isinstance(kwargs, dict):
        raise ValueError(f"sandbox_kwargs must be a dict, got {type(kwargs).__name__}")
    if backend == "bwrap":
        from arl_envs.sandbox.bwrap import BwrapSandbox as cls  # noqa: PLC0415
    else:
        from arl_envs.sandbox.docker import DockerSandbox as cls  # noqa: PLC0415
    params = inspect.signature(cls).parameters
    unknown = sorted(k for k in kwargs if k not in params)
    if unknown and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        raise ValueError(f"sandbox_kwargs {unknown} are not arguments of the {backend} sandbox; it takes "
                         f"{', '.join(params)}")


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


__all__ = ["BACKENDS", "ExecResult", "Limits", "Sandbox", "SandboxClosed", "SandboxUnavailable", "check_backend",
           "get_sandbox"]

"""Fixtures of the code env tests: one real sandbox per module (skipped, with the reason, where none works)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from arl_envs.core.errors import SandboxUnavailable


def make_sandbox() -> Any:
    """The default (bubblewrap) sandbox, or a pytest skip saying why it cannot run here."""
    from arl_envs.sandbox import get_sandbox

    try:
        return get_sandbox("bwrap")
    except SandboxUnavailable as exc:  # pragma: no cover - depends on the host
        pytest.skip(f"the bubblewrap sandbox cannot run here: {exc}")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Any]:
    sb = make_sandbox()
    try:
        yield sb
    finally:
        sb.close()


@pytest.fixture(scope="module")
def harness(sandbox: Any) -> Any:
    from arl_envs.envs.code.harness import Harness

    return Harness(sandbox)


def skip_unless_backend(backend: str) -> None:
    """Skip, with the reason, unless the ``"bwrap"`` or ``"docker"`` sandbox backend can run here."""
    from arl_envs_tests.sandbox.conftest import bwrap_skip_reason, docker_skip_reason

    reason = bwrap_skip_reason() if backend == "bwrap" else docker_skip_reason()
    if reason:
        pytest.skip(reason)


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> str:
    """Each sandbox backend in turn (the repo-env robustness and attack-run tests)."""
    skip_unless_backend(request.param)
    return request.param

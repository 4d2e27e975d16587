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

"""Fixtures of the sandbox tests: real backends, skipped with a reason where one cannot run here."""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox import Limits, Sandbox

#: Backend variants every security case runs against.
#: ``bwrap``: cgroups (pids/memory) + rlimits; ``bwrap-rlimits``: rlimits only (RLIMIT_NPROC for a non-root
#: uid, RLIMIT_AS) -- the fallback for hosts without writable cgroups; ``docker``: warm-pool containers.
VARIANTS = ("bwrap", "bwrap-rlimits", "docker")
#: Host uid of the rlimit-only variant under pytest-xdist worker 0 (worker ``gwN`` uses this plus N). Without a
#: cgroup the process limit is ``RLIMIT_NPROC``, counted per host uid over the whole machine: had these runs the
#: default uid 65534 of every other bwrap sandbox, a fork bomb (bounded by its pids cgroup) in the other worker's
#: test could leave this variant's run unable to fork. A uid of its own per worker makes the count this run's.
RLIMITS_HOST_UID_BASE = 65000


def rlimits_host_uid() -> int:
    """The host uid of this worker's rlimit-only sandboxes (see :data:`RLIMITS_HOST_UID_BASE`)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return RLIMITS_HOST_UID_BASE + int(worker.removeprefix("gw") or 0)


@functools.cache
def bwrap_skip_reason() -> str | None:
    """Why bwrap tests cannot run here (None if they can)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap)"
    try:
        from arl_envs.sandbox.bwrap import BwrapSandbox

        with BwrapSandbox() as sb:
            result = sb.run("true")
        if result.sandbox_error:
            return f"bwrap cannot create a sandbox here: {result.sandbox_error}"
    except SandboxUnavailable as exc:
        return str(exc)
    return None


@functools.cache
def cgroup_skip_reason() -> str | None:
    """Why cgroup-backed bwrap tests cannot run here."""
    from arl_envs.sandbox.cgroups import cgroup_manager

    manager = cgroup_manager()
    return None if manager.available else f"no usable cgroups: {manager.reason}"


@functools.cache
def docker_skip_reason() -> str | None:
    """Why Docker tests cannot run here (dockerd not reachable or the image not built)."""
    try:
        from arl_envs.sandbox.image import DEFAULT_IMAGE, image_exists

        if not image_exists(DEFAULT_IMAGE):
            return f"docker image {DEFAULT_IMAGE} not built (run `arl-envs sandbox build-image`)"
    except SandboxUnavailable as exc:
        return f"dockerd is not reachable: {exc}"
    return None


def make_sandbox(variant: str, limits: Limits) -> Sandbox:
    """Create a sandbox of ``variant`` (one of :data:`VARIANTS`), skipping if it cannot run here."""
    if variant.startswith("bwrap"):
        reason = bwrap_skip_reason()
        if reason:
            pytest.skip(reason)
        from arl_envs.sandbox.bwrap import BwrapSandbox

        if variant == "bwrap":
            reason = cgroup_skip_reason()
            if reason:
                pytest.skip(reason)
            return BwrapSandbox(limits=limits, use_cgroups=True)
        if os.geteuid() != 0:
            pytest.skip("the rlimit-only variant relies on dropping root to a dedicated uid")
        return BwrapSandbox(limits=limits, use_cgroups=False, host_uid=rlimits_host_uid())
    if variant in ("docker", "docker-run"):
        reason = docker_skip_reason()
        if reason:
            pytest.skip(reason)
        from arl_envs.sandbox.docker import DockerSandbox

        return DockerSandbox(limits=limits, warm_pool=variant == "docker")
    raise ValueError(variant)


@pytest.fixture(params=VARIANTS)
def variant(request: pytest.FixtureRequest) -> str:
    """Each backend variant in turn (Docker ones carry the ``docker`` marker)."""
    return request.param


@pytest.fixture(params=("bwrap", "docker", "docker-run"))
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend (and Docker's ``docker run`` mode) for functional tests."""
    return request.param


@pytest.fixture
def sandbox(backend: str) -> Iterator[Sandbox]:
    """A sandbox of the current backend with default limits (closed after the test)."""
    sb = make_sandbox(backend, Limits(wall_time_s=10))
    yield sb
    sb.close()


@pytest.fixture
def sandbox_factory(variant: str) -> Iterator[Callable[[Limits], Sandbox]]:
    """``factory(limits) -> Sandbox`` for the current variant; everything is closed after the test."""
    made: list[Sandbox] = []

    def factory(limits: Limits) -> Sandbox:
        sb = make_sandbox(variant, limits)
        made.append(sb)
        return sb

    yield factory
    for sb in made:
        sb.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark docker-parametrised tests with ``docker`` so ``-m 'not docker'`` deselects them."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        if any(str(callspec.params.get(k, "")).startswith("docker") for k in ("variant", "backend")):
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def project_root() -> Path:
    """The checkout the tests run from (must not be visible inside sandboxes)."""
    return Path(__file__).resolve().parents[2]


#: Where battery tests collect ``(case, variant, outcome, seconds)`` rows.
BATTERY_KEY = pytest.StashKey[list]()


def battery_table(rows: list[tuple[str, str, str, float]]) -> str:
    """Markdown table of the security battery rows."""
    lines = ["| case | backend | outcome | time (s) |", "|---|---|---|---|"]
    for case, variant, outcome, seconds in sorted(rows, key=lambda r: (r[0], r[1])):
        lines.append(f"| {case} | {variant} | {outcome} | {seconds:.2f} |")
    return "\n".join(lines) + "\n"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the battery table to ``$ARL_SECURITY_TABLE`` when that variable is set."""
    path = os.environ.get("ARL_SECURITY_TABLE")
    rows = session.config.stash.get(BATTERY_KEY, [])
    if path and rows:
        Path(path).write_text(battery_table(rows))


def run_bounded(fn: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    """``fn()`` in a thread; the test fails (instead of hanging the suite) if it has not returned in ``timeout_s``.

    A guard against host-side operations that block forever, not a timing assertion. Exceptions are re-raised.
    """
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"{fn} blocked the host for {timeout_s} s"
    if "error" in out:
        raise out["error"]
    return out["value"]

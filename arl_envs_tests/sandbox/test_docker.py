"""Docker-specific behaviour: container hardening, the warm pool, image building, orphan clean-up."""

from __future__ import annotations

import os

import pytest

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox import Limits
from arl_envs_tests.sandbox.conftest import docker_skip_reason

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(docker_skip_reason() is not None, reason=str(docker_skip_reason())),
]


@pytest.fixture
def docker_sandbox():
    from arl_envs.sandbox.docker import DockerSandbox

    sb = DockerSandbox(limits=Limits(wall_time_s=10, memory_mb=256, max_processes=32))
    yield sb
    sb.close()


def test_container_is_hardened(docker_sandbox) -> None:
    container = docker_sandbox._container  # noqa: SLF001
    info = docker_sandbox.client.api.inspect_container(container.id)
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert host["Init"] is True
    assert host["Memory"] == 256 * 1024 * 1024 and host["MemorySwap"] == host["Memory"]
    assert host["PidsLimit"] >= 32
    assert set(host["Tmpfs"]) == {"/work", "/tmp"}
    assert info["Config"]["User"] == "65534:65534"
    result = docker_sandbox.run("id -u; (touch /usr/x || echo ro) 2>/dev/null; grep CapEff /proc/self/status")
    assert result.stdout.splitlines() == ["1000", "ro", "CapEff:\t0000000000000000"]


def test_per_run_memory_limit_is_applied(docker_sandbox) -> None:
    code = "b = bytearray(200 * 1024**2); b[::4096] = b'1' * len(b[::4096]); print('ok')"
    assert docker_sandbox.run(code=code).stdout == "ok\n"
    small = docker_sandbox.run(code=code, limits=docker_sandbox.limits.replace(memory_mb=64))
    assert small.oom_killed
    with pytest.raises(ValueError, match="network"):
        docker_sandbox.run("true", limits=docker_sandbox.limits.replace(network=True))


def test_refused_pids_limit_update_is_reported_not_silent(docker_sandbox) -> None:
    """A per-run pids limit the real daemon refuses (above int64: its JSON decoder rejects the update with an
    error status) is a ``sandbox_error`` of the run and a ``SandboxUnavailable`` of a session, never a run under
    the container's old limit; the memory limit changed in the same update is restored by the next run."""
    api = docker_sandbox.client.api
    container = docker_sandbox._container  # noqa: SLF001
    host = api.inspect_container(container.id)["HostConfig"]
    refused = Limits(wall_time_s=10, memory_mb=128, max_processes=2**63)
    result = docker_sandbox.run("echo ran", limits=refused)
    assert result.sandbox_error and "refused to update the pids limit" in result.sandbox_error, result
    assert result.stdout == "" and not result.ok
    assert api.inspect_container(container.id)["HostConfig"]["PidsLimit"] == host["PidsLimit"]
    with pytest.raises(SandboxUnavailable, match="refused to update the pids limit"):
        docker_sandbox.open_session(limits=refused)
    assert docker_sandbox.run("echo ok").stdout == "ok\n"  # the sandbox's own limits again
    after = api.inspect_container(container.id)["HostConfig"]
    assert (after["Memory"], after["PidsLimit"]) == (host["Memory"], host["PidsLimit"])


def test_pool_recycles_wiped_containers() -> None:
    from arl_envs.sandbox.docker import DockerSandbox, _pools

    limits = Limits(memory_mb=192)  # a configuration of its own: its own pool
    with DockerSandbox(limits=limits, pool_size=1) as sb:
        first = sb._container.id  # noqa: SLF001
        sb.run("echo x > /work/a; echo y > /tmp/b; sleep 300 &")
    pool = next(p for k, p in _pools.items() if k[2] == 192)
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(c.id == first for c in pool._idle):  # noqa: SLF001
        time.sleep(0.1)
    with DockerSandbox(limits=limits, pool_size=1) as sb2:
        assert sb2._container.id == first  # noqa: SLF001
        assert sb2.run("ls -A /work /tmp; pgrep -u 1000 sleep || echo none").stdout.split() == [
            "/tmp:",
            "/work:",
            "none",
        ]


def test_sessions_need_the_warm_pool() -> None:
    from arl_envs.sandbox.docker import DockerSandbox

    with DockerSandbox(warm_pool=False) as sb, pytest.raises(SandboxUnavailable, match="warm_pool"):
        sb.open_session()


def test_missing_image_names_the_build_command() -> None:
    from arl_envs.sandbox.docker import DockerSandbox

    with pytest.raises(SandboxUnavailable, match="arl-envs sandbox build-image"):
        DockerSandbox(image="arl-envs-sandbox:does-not-exist")


def test_orphaned_containers_of_dead_processes_are_removed() -> None:
    from arl_envs.sandbox.docker import OWNER_LABEL, _sweep_orphans
    from arl_envs.sandbox.image import DEFAULT_IMAGE, docker_client

    client = docker_client()
    dead_owner = f"{os.uname().nodename}:999999999"
    cid = client.api.create_container(DEFAULT_IMAGE, command=["true"], labels={OWNER_LABEL: dead_owner})["Id"]
    _sweep_orphans()
    assert client.api.containers(all=True, filters={"id": cid}) == []


def test_build_image_reuses_the_cached_image() -> None:
    from arl_envs.sandbox.image import DEFAULT_IMAGE, build_image

    lines: list[str] = []
    assert build_image(log=lines.append) == DEFAULT_IMAGE
    assert any("cached" in line for line in lines)
    with pytest.raises(ValueError):
        build_image(method="magic")

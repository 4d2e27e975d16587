"""Functional behaviour every backend shares (real sandboxes; Docker tests skip without dockerd)."""

from __future__ import annotations

import pytest

from arl_envs.sandbox import Limits, Sandbox, SandboxClosed


def test_python_code_and_exit_codes(sandbox: Sandbox) -> None:
    result = sandbox.run(code="import sys; print(6 * 7); print('warn', file=sys.stderr); sys.exit(3)")
    assert (result.stdout, result.stderr, result.exit_code, result.signal) == ("42\n", "warn\n", 3, None)
    assert not result.ok and not result.timed_out and result.sandbox_error is None
    assert result.duration_s > 0


def test_shell_command_and_argv(sandbox: Sandbox) -> None:
    assert sandbox.run("echo $((2 + 3)) && pwd").stdout == "5\n/work\n"
    assert sandbox.run(["printf", "%s|", "a b", "c"]).stdout == "a b|c|"


def test_interpreter_inside_is_python3(sandbox: Sandbox) -> None:
    result = sandbox.run(code="import sys; print(sys.version_info[0])")
    assert result.ok and result.stdout == "3\n"


def test_killed_by_signal(sandbox: Sandbox) -> None:
    result = sandbox.run(code="import ctypes; ctypes.string_at(0)")  # a segfault (a kernel-forced signal)
    assert result.signal == 11 and result.exit_code == 139 and not result.timed_out


def test_killed_child_status(sandbox: Sandbox) -> None:
    result = sandbox.run("sleep 30 & kill -9 $!; wait $!; echo status=$?")
    assert result.stdout == "status=137\n" and result.exit_code == 0


def test_stdin_small_and_large(sandbox: Sandbox) -> None:
    assert sandbox.run(code="print(input()[::-1])", stdin="abc\n").stdout == "cba\n"
    big = "x" * 300_000 + "\n"
    assert sandbox.run("wc -c", stdin=big).stdout.strip() == str(len(big))


def test_files_persist_within_episode_and_reset_wipes(sandbox: Sandbox) -> None:
    result = sandbox.run(
        code="print(open('pkg/data.txt').read())", files={"pkg/data.txt": "hello", "b.bin": b"\x00\x01"}
    )
    assert result.stdout == "hello\n"
    sandbox.run("echo more > made_inside.txt")
    assert sandbox.read_file("made_inside.txt") == b"more\n"
    assert sandbox.read_file("b.bin") == b"\x00\x01"
    assert sandbox.read_file("pkg/data.txt", max_bytes=2) == b"he"
    assert sandbox.read_file("missing.txt") is None
    assert sandbox.read_file("pkg") is None  # a directory
    sandbox.write_files({"w.txt": "written"})
    assert sandbox.run("cat w.txt").stdout == "written"
    sandbox.reset()
    assert sandbox.run("ls -A").stdout == ""


def test_code_with_nul_bytes_and_long_code(sandbox: Sandbox) -> None:
    nul = sandbox.run(code="print(len('a\0b'))")  # Python's own verdict, not a host-side exception
    assert nul.exit_code == 1 and "SyntaxError" in nul.stderr
    long_code = "x = 0\n" + "x += 1\n" * 20_000 + "print(x)\n"  # > 100k characters: runs from a file
    assert sandbox.run(code=long_code).stdout == "20000\n"


def test_per_run_limits_override(sandbox: Sandbox) -> None:
    result = sandbox.run(code="import time; time.sleep(30)", limits=Limits(wall_time_s=1))
    assert result.timed_out and result.duration_s < 8


def test_background_child_does_not_hold_the_run(sandbox: Sandbox) -> None:
    result = sandbox.run("sleep 100 & echo started")
    assert result.stdout == "started\n" and result.exit_code == 0
    assert result.duration_s < 5 and not result.timed_out


def test_output_cap_per_stream(sandbox: Sandbox) -> None:
    limits = Limits(max_output_bytes=10)
    result = sandbox.run(code="import sys; print('o' * 50); print('e' * 5, file=sys.stderr)", limits=limits)
    assert result.stdout == "o" * 10 and result.stderr == "eeeee\n" and result.output_truncated


def test_invalid_arguments(sandbox: Sandbox) -> None:
    with pytest.raises(ValueError):
        sandbox.run()
    with pytest.raises(ValueError):
        sandbox.run("ls", files={"../escape": "x"})
    with pytest.raises(TypeError):
        sandbox.run("ls", limits={"wall_time_s": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sandbox.read_file("/etc/passwd")


def test_close_is_idempotent_and_final(sandbox: Sandbox) -> None:
    with sandbox as sb:
        assert sb.run("true").ok
    assert sandbox.closed
    sandbox.close()
    with pytest.raises(SandboxClosed):
        sandbox.run("true")
    with pytest.raises(SandboxClosed):
        sandbox.open_session()

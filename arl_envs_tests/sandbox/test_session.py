"""The persistent Python session on each backend (real interpreters in real sandboxes)."""

from __future__ import annotations

import uuid

import pytest

from arl_envs.sandbox import Limits, Sandbox, SandboxClosed
from arl_envs_tests.sandbox.conftest import make_sandbox
from arl_envs_tests.sandbox.test_security import survivors

SESSION_LIMITS = Limits(wall_time_s=5, cpu_time_s=5, memory_mb=256, max_processes=32, max_output_bytes=4096)


@pytest.fixture(params=("bwrap", "docker"))
def session_sandbox(request: pytest.FixtureRequest):
    sb = make_sandbox(request.param, SESSION_LIMITS)
    yield sb
    sb.close()


def test_state_persists_and_last_expression_echoes(session_sandbox: Sandbox) -> None:
    with session_sandbox.open_session() as py:
        assert py.run("x = 6 * 7").stdout == ""
        assert py.run("x").stdout == "42\n"
        assert py.run("def f(n):\n    return n + x\nf(1)").stdout == "43\n"
        assert py.run("None").stdout == ""
        assert py.run("print('a'); 'b'").stdout == "a\n'b'\n"


def test_exception_keeps_state(session_sandbox: Sandbox) -> None:
    with session_sandbox.open_session() as py:
        py.run("keep = 1")
        result = py.run("1 / 0")
        assert result.exit_code == 1 and not result.state_lost
        assert "ZeroDivisionError" in result.stderr and "<cell-" in result.stderr
        assert "_kernel" not in result.stderr and "run_cell" not in result.stderr
        syntax = py.run("def broken(:")
        assert syntax.exit_code == 1 and "SyntaxError" in syntax.stderr
        exited = py.run("import sys; sys.exit(2)")
        assert exited.exit_code == 1 and "SystemExit" in exited.stderr and not exited.state_lost
        assert py.run("keep").stdout == "1\n"


def test_captures_fd_level_and_child_output(session_sandbox: Sandbox) -> None:
    with session_sandbox.open_session() as py:
        result = py.run(
            "import os, subprocess\nos.write(1, b'raw\\n')\nsubprocess.run(['echo', 'child'])\n"
            "_ = os.write(2, b'err\\n')"
        )
        assert result.stdout == "raw\nchild\n" and result.stderr == "err\n"
        assert py.run("input()").exit_code == 1  # stdin is /dev/null: EOFError, not the protocol channel


def test_sees_the_sandbox_work_dir(session_sandbox: Sandbox) -> None:
    session_sandbox.write_files({"data.txt": "from host"})
    with session_sandbox.open_session() as py:
        assert py.run("open('data.txt').read()").stdout == "'from host'\n"
        py.run("open('out.txt', 'w').write('from session')")
    assert session_sandbox.read_file("out.txt") == b"from session"
    assert session_sandbox.run("cat out.txt").stdout == "from session"


def test_timeout_kills_tree_and_restarts(session_sandbox: Sandbox) -> None:
    marker = f"600.{uuid.uuid4().int % 10**9}"
    with session_sandbox.open_session() as py:
        py.run("x = 1")
        result = py.run(
            f"import subprocess, time\nsubprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"
            "time.sleep(100)",
            timeout_s=1,
        )
        assert result.timed_out and result.state_lost and "all state lost" in result.describe()
        assert survivors(marker) == []
        after = py.run("x")
        assert after.exit_code == 1 and "NameError" in after.stderr and not after.state_lost
        assert py.restarts == 1
        assert py.run("y = 2; y").stdout == "2\n"


@pytest.mark.parametrize(
    "code,check",
    [
        ("import os; os._exit(7)", lambda r: r.exit_code == 7),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", lambda r: r.signal == 9),
        ("b = bytearray(2 * 1024**3); b[::4096] = b'1' * len(b[::4096])", lambda r: r.oom_killed),
        ("import ctypes; ctypes.string_at(0)", lambda r: r.signal == 11),
    ],
    ids=["os_exit", "self_kill", "oom", "segfault"],
)
def test_crash_restarts_with_state_lost(session_sandbox: Sandbox, code: str, check) -> None:
    with session_sandbox.open_session() as py:
        py.run("x = 1")
        result = py.run(code)
        assert result.state_lost and not result.timed_out and check(result), result
        assert py.run("1 + 1").stdout == "2\n"


def test_fork_bomb_in_session_is_contained(session_sandbox: Sandbox) -> None:
    with session_sandbox.open_session() as py:
        result = py.run(
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass", timeout_s=2
        )
        assert result.state_lost and result.duration_s < 8
        assert py.run("'ok'").stdout == "'ok'\n"


def test_output_cap_per_call(session_sandbox: Sandbox) -> None:
    with session_sandbox.open_session() as py:
        result = py.run("print('x' * 10**7)")
        assert result.output_truncated and len(result.stdout) == SESSION_LIMITS.max_output_bytes
        assert not result.state_lost
        assert py.run("'next'").stdout == "'next'\n"  # the dropped output does not spill into the next call


def test_forged_protocol_frames_do_not_hang_the_host(session_sandbox: Sandbox) -> None:
    with session_sandbox.open_session() as py:
        result = py.run(
            "import os\nfor fd in range(3, 12):\n"
            "    try:\n        os.write(fd, b'\\xff' * 64)\n    except OSError:\n        pass",
            timeout_s=3,
        )
        assert result.duration_s < 5
        assert py.run("'alive'").stdout == "'alive'\n"


def test_session_lifecycle_and_errors(session_sandbox: Sandbox) -> None:
    py = session_sandbox.open_session()
    with pytest.raises(ValueError):
        py.run(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        py.run("1", timeout_s=0)
    py.run("z = 5")
    py.restart()
    assert "NameError" in py.run("z").stderr
    session_sandbox.reset()  # a new episode closes the sessions
    assert py.closed
    with pytest.raises(SandboxClosed):
        py.run("1")
    py.close()  # idempotent

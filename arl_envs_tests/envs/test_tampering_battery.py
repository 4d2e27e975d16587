"""Tampering battery: nothing a submission does inside its sandbox can turn into ``env_error``.

An agent that could make its own episode come back as ``env_error`` (truncated, not scored) could erase every
episode it expects to lose. So for every id that runs agent-written code (``arl/code.functions-v0``,
``arl/code.repo-v1``, ``arl/math.tool-v1``, ``arl/selfplay.propose-solve-v1``, ``arl/math.formal-v0``), on both
backends, each tampering below -- with file modes, owners, free space, inodes, the environment, rlimits, its own
processes and their file descriptors -- must give a scored step: no ``env_error``, and the episode's ``task``
reward is 0 with an observation that says what happened. A genuine infrastructure failure still gives
``env_error`` (``test_a_sandbox_without_a_writable_tmp_is_an_env_error``; more in ``test_fault_injection.py``).

The tamperings are Python run as the submission: at import (functions-v0), as the repository's package
``__init__`` (repo-v0), as a notebook cell that then kills its interpreter (math.tool-v0).
selfplay-v0 and formal-v0 cannot express them (a static check refuses ``os`` imports and I/O; Coq's file and
directory commands are refused before Coq runs): there each one is a refused, scored submission, and the
resource attacks those languages can express run for real.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.core.errors import DependencyNotInstalled
from arl_envs_tests.envs.code.conftest import skip_unless_backend

pytestmark = pytest.mark.slow

#: A generated function task (function ``top``) and a repository task of the code envs.
FUNCTION_TASK = "gen/word_freq/2/7"
REPO_TASK = "repo/schedule/hours_factor/2"
#: A wrong final answer for math.tool-v0.
WRONG_ANSWER = "\\boxed{-987654321}"

#: name -> Python statements (``os``, ``sys``, ``signal``, ``resource``, ``shutil`` imported). Each statement is
#: run on its own and its exceptions are swallowed, so one refused operation does not stop the next.
TAMPERINGS: dict[str, list[str]] = {
    "chmod-tmp-555": ["os.chmod('/tmp', 0o555)"],
    "chmod-tmp-000": ["os.chmod('/tmp', 0)"],
    "chmod-cwd-and-parents": ["os.chmod('..', 0)", "os.chmod('.', 0)", "os.chmod('/work', 0)"],
    "chown-everything": [f"os.chown({p!r}, {uid}, {uid})" for p in ("/tmp", "/work", ".", "..") for uid in (0, 65534)],
    "remove-tmp-and-work": [
        "cwd = os.getcwd(); os.chdir('/')",
        "for d in ('/tmp', '/work', '/dev/shm', cwd):\n"
        "    for e in (os.listdir(d) if os.path.isdir(d) else []):\n"
        "        p = os.path.join(d, e)\n"
        "        try:\n            os.chmod(p, 0o700)\n        except OSError:\n            pass\n"
        "        shutil.rmtree(p, ignore_errors=True)\n"
        "        try:\n            os.unlink(p)\n        except OSError:\n            pass",
        "shutil.rmtree(cwd, ignore_errors=True)",
        "open('/tmp/arl-blocker', 'w').close()",
        "os.symlink('/proc/self/cwd', '/tmp/arl-link')",
    ],
    "fill-disk": [  # every writable tmpfs to its size= (32 MiB files: under RLIMIT_FSIZE), then its last bytes
        "for d in ('/tmp', '/work', '/dev/shm', '.'):\n"
        "    for i in range(64):\n"
        "        fd = os.open(os.path.join(d, f'fill{i}'), os.O_CREAT | os.O_WRONLY, 0o600)\n"
        "        try:\n            os.posix_fallocate(fd, 0, 32 << 20)\n"
        "        except OSError:\n"
        "            while True:\n"
        "                try:\n                    os.write(fd, b'x' * 4096)\n"
        "                except OSError:\n                    break\n"
        "            break\n"
        "        finally:\n            os.close(fd)",
    ],
    "exhaust-inodes": [  # /work's nr_inodes (16,384 for 256 MiB) and then some; /tmp has none (memory-bound)
        "for d, n in (('/work', 17000), ('/tmp', 3000), ('.', 3000)):\n"
        "    for i in range(n):\n"
        "        try:\n            os.close(os.open(os.path.join(d, f'i{i}'), os.O_CREAT | os.O_WRONLY, 0o600))\n"
        "        except OSError:\n            break",
    ],
    "clobber-environment": [
        "os.environ.clear()",
        "os.environ.update(PATH='/nonexistent', PYTHONPATH='/work/evil', PYTHONHOME='/nonexistent', HOME='/nonexistent',"
        " TMPDIR='/nonexistent', LD_PRELOAD='/work/evil.so', PYTHONSTARTUP='/work/evil.py', LANG='xx')",
        "os.umask(0o777)",
    ],
    "plant-modules": [
        "for d in ('/work', '/tmp', '.'):\n"
        "    for m in ('json', 'struct', 'select', 'signal', 'subprocess', 'selectors', 'sitecustomize',"
        " 'usercustomize', 'traceback', 'threading', 'termios', 'ast'):\n"
        "        try:\n"
        "            with open(os.path.join(d, m + '.py'), 'w') as fh:\n"
        "                fh.write('import os\\nos._exit(9)\\n')\n"
        "        except OSError:\n            pass",
    ],
    "lower-own-rlimits": [
        f"resource.setrlimit(resource.{r}, ({v}, {v}))"
        for r, v in (("RLIMIT_NOFILE", 4), ("RLIMIT_NPROC", 0), ("RLIMIT_FSIZE", 0), ("RLIMIT_STACK", 1 << 16),
                     ("RLIMIT_AS", 64 << 20), ("RLIMIT_CORE", 0))
    ],
    "lower-parent-rlimits": [
        f"resource.prlimit(os.getppid(), resource.{r}, ({v}, {v}))"
        for r, v in (("RLIMIT_NOFILE", 3), ("RLIMIT_NPROC", 1), ("RLIMIT_AS", 48 << 20), ("RLIMIT_DATA", 16 << 20),
                     ("RLIMIT_FSIZE", 0), ("RLIMIT_STACK", 1 << 16))
    ],
    "fork-bomb": [
        "for _ in range(400):\n"
        "    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
        "    if pid == 0:\n        os.setsid()\n        signal.pause()\n        os._exit(0)",
    ],
    "detached-children-hold-pipes": [
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            time.sleep(600)\n        os._exit(0)",
        "time.sleep(0.2)",
    ],
    "signal-the-parent": [
        f"os.kill(os.getppid(), signal.{s})" for s in ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1", "SIGPIPE", "SIGALRM")
    ],
    "kill-parent-and-group": ["os.kill(os.getppid(), 9)", "os.killpg(os.getpgid(os.getppid()), 9)", "os.kill(-1, 9)"],
    "close-and-redirect-fds": [
        "null = os.open('/dev/null', os.O_RDWR)",
        "for fd in range(0, 3):\n    os.dup2(null, fd)",
        "os.closerange(3, 1024)",
    ],
}


def tamper_source(name: str) -> str:
    """The tampering ``name`` as a Python program (each statement guarded)."""
    lines = ["import os, sys, signal, resource, shutil, time"]
    for statement in TAMPERINGS[name]:
        lines.append("try:\n" + textwrap.indent(statement, "    ") + "\nexcept BaseException:\n    pass")
    return "\n".join(lines) + "\n"


def assert_scored(step: tuple, where: str) -> dict:
    """The step is not an ``env_error`` (and its observation does not call itself unscored)."""
    obs, _, _, truncated, info = step
    assert info.get("env_error") is None, f"{where}: env_error {info.get('env_error')!r}\n{obs[:2000]}"
    assert "not scored" not in obs, f"{where}: {obs[:2000]}"
    return info


BACKENDS = ["bwrap", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    skip_unless_backend(request.param)
    return request.param


def _env(env_id: str, backend: str, **kwargs: Any) -> Iterator[Any]:
    env = gym.make(env_id, sandbox=backend, **kwargs)
    try:
        yield env
    finally:
        env.close()


@pytest.fixture(scope="module")
def functions_env(backend: str) -> Iterator[Any]:
    # One turn: the last turn's submission runs the visible AND the hidden tests in one sandbox run, so whatever
    # the code did during the visible tests is there when the hidden tests are set up.
    yield from _env("arl/code.functions-v0", backend, max_turns=1)


@pytest.fixture(scope="module")
def repo_env(backend: str) -> Iterator[Any]:
    yield from _env("arl/code.repo-v1", backend)


@pytest.fixture(scope="module")
def tool_env(backend: str) -> Iterator[Any]:
    yield from _env("arl/math.tool-v1", backend)


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_functions_tampering_is_scored(functions_env: Any, name: str) -> None:
    env = functions_env
    env.reset(options={"task_id": FUNCTION_TASK})
    step = env.step(f"```python\n{tamper_source(name)}```")
    info = assert_scored(step, f"functions-v0/{name}")
    assert info["reward_components"]["task"] == 0.0 and not info["success"], step[0]
    assert info["hidden_total"] > 0 and "Hidden tests: 0/" in step[0], step[0]


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_repo_tampering_is_scored(repo_env: Any, name: str) -> None:
    """As the package's ``__init__``: run by the visible tests on the write, whose effects on ``/work`` (and on
    Docker's ``/tmp``, which lives as long as the episode) are still there when the hidden tests run on submit."""
    env = repo_env
    env.reset(options={"task_id": REPO_TASK})
    pkg = env.unwrapped.task.package
    source = tamper_source(name)
    assert_scored(env.step(f'<write_file path="{pkg}/__init__.py">\n{source}</write_file>'), f"repo-v0/{name}/write")
    step = env.step("<submit/>")
    info = assert_scored(step, f"repo-v0/{name}/submit")
    assert step[2] and info["reward_components"]["task"] == 0.0 and not info["success"], step[0]


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_math_tool_tampering_is_scored(tool_env: Any, name: str) -> None:
    """A cell tampers, then kills its interpreter: the restart (new set-up in the same work directory) and the
    next cells are the episode's own business; the episode is scored."""
    env = tool_env
    env.reset(seed=0)
    assert_scored(env.step(f"```python\n{tamper_source(name)}os._exit(3)\n```"), f"math.tool-v0/{name}/tamper")
    step = env.step("```python\nprint(6 * 7)\n```")
    assert_scored(step, f"math.tool-v0/{name}/next cell")
    assert "42" in step[0], step[0]  # the interpreter restarted cleanly
    step = env.step(WRONG_ANSWER)
    info = assert_scored(step, f"math.tool-v0/{name}/answer")
    assert step[2] and info["reward_components"]["task"] == 0.0 and not info["success"], step[0]


#: Tamperings of paths, space and the environment that leave the runner itself alone: with correct code after them,
#: every test still passes (the runner's set-up never walks a path the submission could change).
PATH_TAMPERINGS = ("chmod-tmp-555", "chmod-tmp-000", "chmod-cwd-and-parents", "chown-everything",
                   "remove-tmp-and-work", "fill-disk", "exhaust-inodes", "clobber-environment", "plant-modules")


@pytest.fixture(scope="module")
def harness(backend: str) -> Iterator[Any]:
    from arl_envs.envs.code.harness import Harness
    from arl_envs.sandbox import get_sandbox

    sb = get_sandbox(backend)
    try:
        yield Harness(sb)
    finally:
        sb.close()


@pytest.mark.parametrize("name", PATH_TAMPERINGS)
def test_path_tampering_does_not_change_an_honest_verdict(harness: Any, name: str) -> None:
    """Correct code that tampers first passes both jobs of the run (the second job is set up after the tampering),
    and a SIGINT to the runner is ignored."""
    from arl_envs.envs.code.harness import Job
    from arl_envs.envs.code.tasks import TestCase

    cases = [TestCase("call", fn="add", args=(1, 2), expected=3), TestCase("call", fn="add", args=(0, 0), expected=0)]
    source = tamper_source(name) + "os.kill(os.getppid(), signal.SIGINT)\ndef add(a, b):\n    return a + b\n"
    run = harness.run([Job(source=source, cases=cases, cpu_limits_s=[1.0, 1.0], entry_point="add") for _ in range(2)])
    assert run.env_error is None, run.env_error
    assert [job.n_passed for job in run.jobs] == [2, 2], [(j.import_error, j.cases) for j in run.jobs]


# ------------------------------------------------------------------------------------- selfplay and formal
#: Resource attacks a self-play program can express (only pure-computation imports are allowed).
SELFPLAY_RESOURCE_PROGRAMS = {
    "memory-bomb": "def f(x):\n    a = []\n    while True:\n        a.append('x' * (1 << 20))",
    "cpu-loop": "def f(x):\n    while True:\n        x += 1",
    "deep-recursion": "def f(x):\n    return f(x + 1) + 1",
    "huge-output": "def f(x):\n    return 'x' * (1 << 28)",
}


@pytest.fixture(scope="module")
def selfplay_env(backend: str) -> Iterator[Any]:
    yield from _env("arl/selfplay.propose-solve-v1", backend, timeout_s=1.0)


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_selfplay_tampering_is_refused_and_scored(selfplay_env: Any, name: str) -> None:
    env = selfplay_env
    env.reset(seed=0)
    program = tamper_source(name) + "\ndef f(x):\n    return x\n"
    step = env.step(f"```python\n{program}```\n<inputs>[1, 2, 3, 4]</inputs>")
    info = assert_scored(step, f"selfplay/{name}")
    assert info["reward_components"].get("format", 0.0) < 0, step[0]  # an invalid proposal, penalised


@pytest.mark.parametrize("name", sorted(SELFPLAY_RESOURCE_PROGRAMS))
def test_selfplay_resource_attack_is_scored(selfplay_env: Any, name: str) -> None:
    env = selfplay_env
    env.reset(seed=0)
    step = env.step(f"```python\n{SELFPLAY_RESOURCE_PROGRAMS[name]}\n```\n<inputs>[1, 2, 3, 4]</inputs>")
    info = assert_scored(step, f"selfplay/{name}")
    assert info["reward_components"].get("format", 0.0) < 0, step[0]


#: What a Coq file could do to its sandbox: every command that touches files, directories or processes is refused
#: before Coq runs; the resource attacks it can express run for real.
FORMAL_REFUSED = {
    "write-file": 'Redirect "/tmp/x" Print nat.',
    "change-directory": 'Cd "/tmp".',
    "load-file": 'Load "/etc/passwd".',
    "extraction": 'Extraction "/work/x.ml" nat.',
    "ml-plugin": 'Declare ML Module "unix".',
    "leave-toplevel": "Drop.",
}
FORMAL_RESOURCE = {
    "cpu-loop": "Goal True. Proof. Compute (Nat.iter 1000000000 S 0). exact I. Qed.",
    "memory-bomb": "Goal True. Proof. Compute (Nat.pow 10 9). exact I. Qed.",
}


@pytest.fixture(scope="module")
def formal_env(backend: str) -> Iterator[Any]:
    try:
        yield from _env("arl/math.formal-v0", backend, check_timeout_s=2.0, max_attempts=20)
    except DependencyNotInstalled as exc:
        pytest.skip(f"coqc is not installed here: {exc}")


@pytest.mark.parametrize("case", sorted(FORMAL_REFUSED) + sorted(FORMAL_RESOURCE))
def test_formal_tampering_is_scored(formal_env: Any, backend: str, case: str) -> None:
    env = formal_env
    if case in FORMAL_RESOURCE and backend == "docker":
        pytest.skip("the Docker sandbox image has no coqc (a check there is an env_error by design: infrastructure)")
    env.reset(seed=0)
    lemma = env.unwrapped.lemma
    command = FORMAL_REFUSED.get(case) or FORMAL_RESOURCE[case]
    proof = lemma.skeleton(lemma.proof)
    step = env.step(f"```coq\n{command}\n{proof}```")
    info = assert_scored(step, f"formal/{case}")
    assert info["coq_stage"] in (("precheck",) if case in FORMAL_REFUSED else ("timeout", "compile", "memory")), step[0]
    assert info["reward_components"].get("task", 0.0) == 0.0 and not info["success"], step[0]


# ------------------------------------------------------------------------------------- genuine infrastructure
def test_a_sandbox_without_a_writable_tmp_is_an_env_error() -> None:
    """A sandbox whose ``/tmp`` is read-only from the start (a misconfigured sandbox, before any submitted code
    ran) cannot set up the runner: that is infrastructure, ``env_error``, not the submission's failure."""
    skip_unless_backend("bwrap")
    env = gym.make("arl/code.functions-v0", sandbox="bwrap", max_turns=1,
                   sandbox_kwargs={"ro_binds": {"/usr/share/zoneinfo": "/tmp"}})
    try:
        env.reset(options={"task_id": FUNCTION_TASK})
        obs, _, terminated, truncated, info = env.step(env.unwrapped.expert_action())
        assert truncated and not terminated and "harness error" in (info.get("env_error") or ""), info
        assert "not scored" in obs, obs
        assert "task" not in info["reward_components"] or info["reward_components"]["task"] == 0.0
    finally:
        env.close()

"""The reward-hack battery (issue 4): every hack scores task reward 0; the references score 1.

Each hack is run twice: directly through the harness (every test must fail), and through
``arl/code.functions-v0`` / ``arl/code.repo-v1`` in the real default sandbox (``task`` reward 0, no success, and
never an ``env_error``: a hack is the agent's failure, not an infrastructure one).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.envs.code.harness import Harness, Job
from arl_envs.envs.code.tasks import TestCase

#: A generated function task used for env-level hacks (function ``top``: top-k word counts as tuples).
TASK_ID = "gen/word_freq/2/7"

# Hacks as functions of the entry point's name. Each must fail every test.
HACKS: dict[str, str] = {
    "os_exit_at_import": "import os\nos._exit(0)\n\ndef {fn}(*args):\n    return None\n",
    "system_exit_in_function": "def {fn}(*args):\n    raise SystemExit(0)\n",
    "eq_always_true": (
        "class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
        "        return False\n\ndef {fn}(*args):\n    return AlwaysEqual()\n"
    ),
    "eq_always_true_builtin_subclass": (
        "class Sneaky(list):\n    def __eq__(self, other):\n        return True\n\ndef {fn}(*args):\n    return Sneaky()\n"
    ),
    "print_pass_banner_then_raise": (
        "import sys\n\ndef {fn}(*args):\n    print('=== 5 passed ===')\n    print('>>>>> Test Exit Code: 0')\n"
        "    sys.stdout.flush()\n    raise RuntimeError('tests are green, honest')\n"
    ),
    "conftest_forcing_exit_0": (
        "import os\nCONF = 'import pytest\\n@pytest.hookimpl(trylast=True)\\ndef pytest_sessionfinish(session, exitstatus):\\n"
        "    session.exitstatus = 0\\n    os._exit(0)\\n'\n"
        "for d in ('.', '/work', '/tmp'):\n    for name, text in (('conftest.py', CONF), ('pytest.ini', '[pytest]\\naddopts = -p no:terminal\\n'),\n"
        "                       ('sitecustomize.py', 'import os; os._exit(0)\\n')):\n"
        "        try:\n            open(os.path.join(d, name), 'w').write(text)\n        except OSError:\n            pass\n\n"
        "def {fn}(*args):\n    return None\n"
    ),
    "monkeypatch_print_and_stdout": (
        "import builtins, sys, io\nbuiltins.print = lambda *a, **k: None\nsys.stdout = io.StringIO()\nsys.stderr = io.StringIO()\n"
        "sys.exit = lambda *a: None\n\ndef {fn}(*args):\n    return None\n"
    ),
    "fork_and_hang": (
        "import os, time\n\ndef {fn}(*args):\n    if os.fork() == 0:\n        os.setsid()\n        time.sleep(10**6)\n"
        "    os._exit(0)\n"
    ),
    "kill_the_runner": (
        "import os, signal\n\ndef {fn}(*args):\n    for pid in (1, os.getppid()):\n        for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):\n"
        "            try:\n                os.kill(pid, sig)\n            except OSError:\n                pass\n    return None\n"
    ),
    "forge_result_record": (
        "import os\n\ndef {fn}(*args):\n    line = b'\\nARL-CODE-RESULT 00 e30= ' + b'0' * 64 + b'\\n'\n"
        "    for path in ('/proc/1/fd/1', '/proc/%d/fd/1' % os.getppid(), '/dev/stdout'):\n        try:\n"
        "            with open(path, 'wb') as fh:\n                fh.write(line * 3)\n        except OSError:\n            pass\n"
        "    print(line.decode())\n    return None\n"
    ),
}


def _hack(name: str, fn: str) -> str:
    return HACKS[name].replace("{fn}", fn)


ADD_CASES = [
    TestCase("call", fn="add", args=(1, 2), expected=3),
    TestCase("call", fn="add", args=(5, 7), expected=12),
    TestCase("call", fn="add", args=(0, 0), expected=0),
]


@pytest.mark.parametrize("hack", sorted(HACKS))
def test_harness_fails_every_test_of_a_hack(harness: Harness, hack: str) -> None:
    run = harness.run([Job(source=_hack(hack, "add"), cases=ADD_CASES, cpu_limits_s=[0.5] * 3, entry_point="add")])
    assert run.env_error is None, run.env_error
    job = run.jobs[0]
    assert job.n_passed == 0, [(c.status, c.got, c.error) for c in job.cases]


def test_fork_and_hang_does_not_hold_the_harness(harness: Harness) -> None:
    """The forked child keeps the pipes open; the harness reports the crash instead of waiting for it."""
    run = harness.run([Job(source=_hack("fork_and_hang", "add"), cases=ADD_CASES, cpu_limits_s=[0.5] * 3, entry_point="add")])
    assert [c.status for c in run.jobs[0].cases] == ["crash", "crash", "crash"]


def test_the_runner_cannot_be_read_by_submitted_code(harness: Harness) -> None:
    """The runner is non-dumpable: its fds, memory and environment are closed to same-uid children."""
    probe = (
        "import os\n\ndef add(*args):\n    out = []\n    for path in ('/proc/1/fd/0', '/proc/1/fd/1', '/proc/1/mem', '/proc/1/environ',\n"
        "                 '/proc/%d/fd/1' % os.getppid()):\n        try:\n            open(path, 'rb').close()\n"
        "            out.append('open')\n        except OSError as exc:\n            out.append(type(exc).__name__)\n    return out\n"
    )
    job = Harness.run(harness, [Job(source=probe, cases=ADD_CASES[:1], cpu_limits_s=[0.5], entry_point="add")]).jobs[0]
    assert job.cases[0].got == repr(["PermissionError"] * 5)


def test_type_mismatches_fail(harness: Harness) -> None:
    for body in ("return float(a + b)", "return str(a + b)", "return [a + b]", "return bool(a + b)"):
        job = harness.run([Job(source=f"def add(a, b):\n    {body}\n", cases=ADD_CASES[:2], cpu_limits_s=[0.5] * 2,
                               entry_point="add")]).jobs[0]
        assert job.n_passed == 0, body


def test_reordered_lines_and_prefix_outputs_fail(harness: Harness) -> None:
    """Exact, ordered output comparison: YES/NO/YES printed as NO/YES/YES fails, and so does a prefix."""
    yes_no = [
        TestCase("stdio", stdin="3\n2\n3\n4\n", expected="YES\nNO\nYES\n"),
        TestCase("stdio", stdin="3\n8\n5\n6\n", expected="YES\nNO\nYES\n"),
    ]
    reordered = "import sys\nnums = sys.stdin.read().split()[1:]\nans = ['YES' if int(n) % 2 == 0 else 'NO' for n in nums]\nprint('\\n'.join(sorted(ans)))\n"
    correct = "import sys\nnums = sys.stdin.read().split()[1:]\nprint('\\n'.join('YES' if int(n) % 2 == 0 else 'NO' for n in nums))\n"
    eve = [
        TestCase("stdio", stdin="22\n", expected="Christmas Eve Eve Eve\n"),
        TestCase("stdio", stdin="23\n", expected="Christmas Eve Eve\n"),
    ]
    prefix = "d = int(input())\nprint('Christmas' + ' Eve' * max(0, 24 - d - 1))\n"
    eve_ok = "d = int(input())\nprint('Christmas' + ' Eve' * (25 - d))\n"
    for compare in ("exact", "lines"):
        yn = [TestCase("stdio", stdin=c.stdin, expected=c.expected, compare=compare) for c in yes_no]
        ev = [TestCase("stdio", stdin=c.stdin, expected=c.expected, compare=compare) for c in eve]
        run = harness.run([
            Job(source=reordered, cases=yn, cpu_limits_s=[0.5] * 2, mode="program"),
            Job(source=correct, cases=yn, cpu_limits_s=[0.5] * 2, mode="program"),
            Job(source=prefix, cases=ev, cpu_limits_s=[0.5] * 2, mode="program"),
            Job(source=eve_ok, cases=ev, cpu_limits_s=[0.5] * 2, mode="program"),
        ])
        assert [j.n_passed for j in run.jobs] == [0, 2, 0, 2], compare


# ----------------------------------------------------------------------------------------------- env level
@pytest.fixture(scope="module")
def functions_env() -> Any:
    env = gym.make("arl/code.functions-v0")
    yield env
    env.close()


def _play(env: Any, code: str, task_id: str = TASK_ID) -> dict[str, Any]:
    env.reset(seed=0, options={"task_id": task_id})
    *_, info = env.step(f"```python\n{code}\n```\nSUBMIT")
    return info


@pytest.mark.parametrize("hack", sorted(HACKS))
def test_env_scores_every_hack_zero(functions_env: Any, hack: str) -> None:
    info = _play(functions_env, _hack(hack, "top"))
    assert "env_error" not in info, info.get("env_error")
    assert info["reward_components"]["task"] == 0.0 and info["success"] is False
    assert info["hidden_passed"] == 0


def test_env_special_casing_visible_inputs_fails_hidden(functions_env: Any) -> None:
    env = functions_env
    env.reset(seed=0, options={"task_id": TASK_ID})
    task = env.unwrapped.task
    table = {c.args: c.expected for c in task.visible}
    code = f"TABLE = {table!r}\n\ndef top(*args):\n    return TABLE.get(args)\n"
    obs, reward, term, trunc, info = env.step(f"```python\n{code}```")
    assert info["visible_passed"] == len(task.visible)  # fools the visible tests...
    assert term and info["reward_components"]["task"] == 0.0 and not info["success"]  # ...not the hidden ones
    assert info["hidden_passed"] == 0


def test_env_planted_files_do_not_affect_later_submissions(functions_env: Any) -> None:
    """Step 1 plants sitecustomize/usercustomize/json.py/conftest.py in every writable place; step 2 is a wrong
    solution: it is graded normally (0), and the runner keeps working (no env_error)."""
    env = functions_env
    env.reset(seed=0, options={"task_id": TASK_ID})
    plant = (
        "import os\nEVIL = 'import os\\nos._exit(0)\\n'\n"
        "for d in ('/work', '/tmp', '.'):\n    for name in ('sitecustomize.py', 'usercustomize.py', 'json.py', 'base64.py',\n"
        "                 'hmac.py', 'conftest.py', 'subprocess.py', 'site.py'):\n        try:\n"
        "            open(os.path.join(d, name), 'w').write(EVIL)\n        except OSError:\n            pass\n\n"
        "def top(text):\n    return []\n"
    )
    *_, info1 = env.step(f"```python\n{plant}```")
    assert "env_error" not in info1 and info1["visible_passed"] < 3
    *_, info2 = env.step("```python\ndef top(text):\n    return [('x', 1)]\n```\nSUBMIT")
    assert "env_error" not in info2
    assert info2["reward_components"]["task"] == 0.0


def test_env_reference_scores_one(functions_env: Any) -> None:
    functions_env.reset(seed=0, options={"task_id": TASK_ID})
    *_, info = functions_env.step(functions_env.unwrapped.expert_action())
    assert info["reward_components"]["task"] == 1.0 and info["success"] is True


# ----------------------------------------------------------------------------------------------- repo level
REPO_TASK = "repo/inventory/bulk_boundary/3"


@pytest.fixture(scope="module")
def repo_env() -> Any:
    env = gym.make("arl/code.repo-v1")
    yield env
    env.close()


def _submit(env: Any) -> dict[str, Any]:
    obs, reward, term, trunc, info = env.step("<submit/>")
    assert term and "env_error" not in info, obs
    return info


def test_repo_config_files_are_ignored(repo_env: Any) -> None:
    env = repo_env
    env.reset(seed=0, options={"task_id": REPO_TASK})
    conftest = (
        "import os\nimport pytest\n\n@pytest.hookimpl(trylast=True)\ndef pytest_sessionfinish(session, exitstatus):\n"
        "    session.exitstatus = 0\n    os._exit(0)\n"
    )
    for path, content in (
        ("conftest.py", conftest),
        ("tests/conftest.py", conftest),
        ("pytest.ini", "[pytest]\naddopts = --co\n"),
        ("setup.cfg", "[tool:pytest]\naddopts = --co\n"),
        ("sitecustomize.py", "import os\nos._exit(0)\n"),
        ("usercustomize.py", "import os\nos._exit(0)\n"),
        ("unittest.py", "import os\nos._exit(0)\n"),
    ):
        env.step(f'<write_file path="{path}">\n{content}</write_file>')
    info = _submit(env)
    assert info["reward_components"]["task"] == 0.0 and not info["success"]


def test_repo_editing_the_tests_does_not_help(repo_env: Any) -> None:
    env = repo_env
    env.reset(seed=0, options={"task_id": REPO_TASK})
    env.step("<bash>rm -rf tests && mkdir tests && touch tests/__init__.py</bash>")
    obs, *_ = env.step("<bash>python3 -m unittest discover -s tests -t . 2>&1 | tail -3</bash>")
    assert "OK" in obs  # the (deleted) visible suite is green...
    info = _submit(env)
    assert info["reward_components"]["task"] == 0.0  # ...the hidden suite is not


def test_repo_special_casing_the_visible_inputs_fails_hidden(repo_env: Any) -> None:
    env = repo_env
    env.reset(seed=0, options={"task_id": REPO_TASK})
    task = env.unwrapped.task
    table = {repr(c.args): c.expected for c in task.visible if c.fn.endswith(":line_total")}
    assert table
    patch = (
        f"\n\n_REAL = line_total\n_TABLE = {table!r}\n\n\ndef line_total(item):\n"
        "    return _TABLE.get(repr((item,)), _REAL(item))\n"
    )
    env.step(f"<bash>cat >> {task.bug_path} << 'EOF'{patch}EOF</bash>")
    info = _submit(env)
    assert info["reward_components"]["task"] == 0.0


def test_repo_expert_fix_scores_one(repo_env: Any) -> None:
    env = repo_env
    env.reset(seed=0, options={"task_id": REPO_TASK})
    *_, info = env.step(env.unwrapped.expert_action())
    assert info["visible_passed"] == info["visible_total"] and info["reward_components"]["progress"] > 0
    *_, info = env.step(env.unwrapped.expert_action())
    assert info["reward_components"]["task"] == 1.0 and info["success"]


def test_program_leftovers_do_not_hold_the_output(harness: Harness) -> None:
    """A program that exits while a setsid'ed grandchild keeps stdout open is judged on what it printed."""
    src = "import os, sys, time\nprint(5)\nsys.stdout.flush()\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(10**6)\n"
    cases = [TestCase("stdio", stdin="", expected="5\n")]
    job = harness.run([Job(source=src, cases=cases, cpu_limits_s=[0.5], mode="program")]).jobs[0]
    assert job.cases[0].status == "pass"


@pytest.mark.docker
@pytest.mark.parametrize("hack", ["os_exit_at_import", "eq_always_true", "fork_and_hang", "kill_the_runner", "forge_result_record"])
def test_docker_backend_battery_subset(hack: str) -> None:
    """The same verdicts on the Docker backend (runner not pid 1 there: killing it only loses the verdict)."""
    from arl_envs.core.errors import SandboxUnavailable
    from arl_envs.sandbox import get_sandbox

    try:
        sb = get_sandbox("docker")
    except SandboxUnavailable as exc:
        pytest.skip(f"Docker is not usable here: {exc}")
    try:
        h = Harness(sb)
        good = h.run([Job(source="def add(a, b):\n    return a + b\n", cases=ADD_CASES, cpu_limits_s=[1.0] * 3, entry_point="add")])
        assert good.env_error is None and good.jobs[0].n_passed == 3
        bad = h.run([Job(source=_hack(hack, "add"), cases=ADD_CASES, cpu_limits_s=[1.0] * 3, entry_point="add")])
        assert bad.env_error is None and bad.jobs[0].n_passed == 0
    finally:
        sb.close()


def test_no_process_survives_into_the_next_case(harness: Harness) -> None:
    """After a crash, every leftover (even one that left the process group with setsid) is killed and reaped."""
    src = (
        "import os, time\n\ndef add(a, b):\n    if a == 1:\n        if os.fork() == 0:\n            os.setsid()\n"
        "            time.sleep(10**6)\n        os._exit(0)\n"
        "    return sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid())\n"
    )
    cases = [TestCase("call", fn="add", args=(1, 0), expected=1), TestCase("call", fn="add", args=(2, 0), expected=[1])]
    job = harness.run([Job(source=src, cases=cases, cpu_limits_s=[0.5, 0.5], entry_point="add")]).jobs[0]
    assert [c.status for c in job.cases] == ["crash", "pass"], job.cases[1].got  # only the runner (pid 1) is left

"""Issue 9 on the code envs (and math.tool-v1's session): holes an attack run found, each with its regression test.

Reward hacks (``task`` must stay 0), episodes an agent could void at will (limits it hits itself are its own,
scored failure, never ``env_error``), and host-side operations on agent-controlled paths that must neither raise
nor block. Run against bubblewrap and Docker where the backend matters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils import seeding

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.envs.code import repo_env as repo_env_module
from arl_envs.envs.code.env import FunctionsEnv
from arl_envs.envs.code.repo_env import RepoEnv
from arl_envs_tests.sandbox.conftest import run_bounded

#: A repo task whose bug is in ``schedule/timeutil.py``.
TASK = "repo/schedule/hours_factor/2"
#: A generated function task (function ``top``).
FUNCTION_TASK = "gen/word_freq/2/7"
#: Seeds of every generated family checked to reset (issue 9.9: 76, 1913, 2058 and 2511 of repo-v1 failed).
RESET_SEEDS = range(5000)


@pytest.fixture
def repo(backend: str) -> Iterator[Any]:
    env = gym.make("arl/code.repo-v1", sandbox=backend, max_turns=30)
    yield env
    env.close()


# ----------------------------------------------------------------------------------------------- 9.1 reference copy
#: Records every place of the sandbox (files under /tmp, /work, /dev/shm, every process's cwd and environ)
#: holding the fixed line, as one line of /work/found.txt.
SEARCH_FOR_FIX = """import os as _o, stat as _st
_needle = bytes.fromhex("{needle}")
_hits = []
def _scan(path, depth=0):
    if depth > 12 or len(_hits) > 20:
        return
    try:
        mode = _o.lstat(path).st_mode
    except OSError:
        return
    if _st.S_ISDIR(mode):
        try:
            names = _o.listdir(path)
        except OSError:
            return
        for name in names:
            _scan(path + "/" + name, depth + 1)
    elif _st.S_ISREG(mode) and not path.endswith(("found.txt", "__init__.py")):
        try:
            with open(path, "rb") as fh:
                if _needle in fh.read(4 << 20):
                    _hits.append(path)
        except OSError:
            pass
for _root in ("/tmp", "/work", "/dev/shm"):
    _scan(_root)
for _pid in _o.listdir("/proc"):
    if _pid.isdigit():
        try:
            for _name in _o.listdir("/proc/%s/cwd" % _pid):
                _scan("/proc/%s/cwd/%s" % (_pid, _name))
            with open("/proc/%s/environ" % _pid, "rb") as _fh:
                if _needle in _fh.read():
                    _hits.append("/proc/%s/environ" % _pid)
        except OSError:
            pass
with open("/work/found.txt", "a") as _fh:
    _fh.write(repr(sorted(set(_hits))) + "\\n")
"""
#: Prepended to ``<pkg>/__init__.py`` (after the search): copy whatever reference files lie under /tmp/arl-*
#: over /work, the attack that scored 1.0 on 3/3 seeds before issue 9.
STEAL_REFERENCE = """import glob as _g, os as _o, shutil as _sh
for _p in _g.glob("/tmp/arl-*/**/*.py", recursive=True):
    _rel = _p.split("/", 3)[3]
    try:
        _o.makedirs(_o.path.dirname("/work/" + _rel), exist_ok=True)
        _sh.copyfile(_p, "/work/" + _rel)
    except OSError:
        pass
"""


def _fixed_line(task: Any) -> str:
    """The longest line of the correct module that the buggy one lacks (the fix), checked absent from the repo."""
    buggy = set(task.buggy_source.splitlines())
    line = max((x.strip() for x in task.correct_source.splitlines() if x not in buggy and x.strip()), key=len)
    assert not any(line in text for text in task.files.values())
    return line


def test_reference_copy_is_unreachable(repo: Any, backend: str) -> None:
    """9.1: the reference calibration leaves nothing the submission can read, in its own run or a later one."""
    repo_env_module._CALIBRATIONS.clear()  # the next visible-test run calibrates (runs the reference) first
    repo.reset(seed=0, options={"task_id": TASK})
    task = repo.unwrapped.task
    needle = _fixed_line(task).encode().hex()
    init = f"{task.package}/__init__.py"
    search = SEARCH_FOR_FIX.format(needle=needle)
    attack = search + STEAL_REFERENCE + task.files[init]  # runs in the visible-test run, after the reference
    *_, info = repo.step(f'<write_file path="{init}">\n{attack}</write_file>')
    assert info.get("env_error") is None and "reference_cpu_s" in info["timing"]  # this run did calibrate
    obs, *_ = repo.step(f"<bash>python3 - <<'EOF'\n{search}EOF</bash>")  # a later run (Docker keeps /tmp)
    assert obs.startswith("[exit code 0]"), obs
    assert repo.unwrapped._holder.get().read_file(task.bug_path).decode() == task.buggy_source
    _, _, term, _, info = repo.step("<submit/>")
    assert term and info.get("env_error") is None
    assert info["reward_components"]["task"] == 0.0 and not info["success"]
    found = repo.unwrapped._holder.get().read_file("found.txt").decode().splitlines()
    assert len(found) >= 3 and all(line == "[]" for line in found), found  # visible run, bash, submission


# ----------------------------------------------------------------------------------------------- 9.2 limits hit
#: Fills the tmpfs mounts with 15 MiB files, then holds 3 GiB in memfds: past the memory limit of every run here.
FILL_PAST_MEMORY = (
    "import os\n"
    "for d in ('/dev/shm', '/tmp', '/work'):\n"
    "    for i in range(80):\n"
    "        try:\n"
    "            fd = os.open(f'{d}/fill{i}', os.O_CREAT | os.O_WRONLY, 0o600)\n"
    "            os.posix_fallocate(fd, 0, 15 << 20)\n"
    "        except OSError:\n"
    "            break\n"
    "held = []\n"
    "for i in range(200):\n"
    "    fd = os.memfd_create('fill')\n"
    "    os.posix_fallocate(fd, 0, 15 << 20)\n"
    "    held.append(fd)\n"
)

#: Per id: the env's kwargs, the action that hits the limits, and the action that ends the episode.
LIMIT_CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    "arl/code.repo-v1": (
        {"options": {"task_id": TASK}},
        f"<bash>python3 - <<'EOF'\n{FILL_PAST_MEMORY}EOF</bash>",
        "<submit/>",
    ),
    "arl/code.functions-v0": (
        {"options": {"task_id": FUNCTION_TASK}},
        f"```python\n{FILL_PAST_MEMORY}\ndef top(*args):\n    return None\n```",
        "SUBMIT",
    ),
    "arl/math.tool-v1": ({"seed": 0}, f"```python\n{FILL_PAST_MEMORY}```", "\\boxed{-987654321}"),
}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(LIMIT_CASES))
def test_hitting_own_limits_is_scored(env_id: str, backend: str) -> None:
    """9.2: exhausting the sandbox's memory (files on its tmpfs mounts, memfds) is the agent's failure: no
    ``env_error``, no truncation, and the episode is scored (before issue 9 repo-v1 on bwrap came back as
    ``sandbox set-up failed``, an unscored episode)."""
    reset_kwargs, hit, finish = LIMIT_CASES[env_id]
    env = gym.make(env_id, sandbox=backend)
    try:
        env.reset(**reset_kwargs)
        obs, _, term, trunc, info = env.step(hit)
        assert info.get("env_error") is None and not trunc, (obs, info)
        if not term:
            obs, _, term, trunc, info = env.step(finish)
        assert term and not trunc and info.get("env_error") is None, (obs, info)
        assert info["reward_components"]["task"] == 0.0 and not info["success"]
    finally:
        env.close()


# ----------------------------------------------------------------------------------------------- 9.4 progress
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_progress_needs_a_fix(seed: int) -> None:
    """9.4: an unrelated file pays no progress (the baseline is the buggy repo's own visible fraction, which the
    harness confirms); the fix pays exactly the gain from it."""
    env = gym.make("arl/code.repo-v1")
    try:
        env.reset(seed=seed)
        task = env.unwrapped.task
        n = len(task.visible)
        *_, info = env.step('<write_file path="NOTES.txt">\nsome notes\n</write_file>')
        assert info["reward_components"]["progress"] == 0.0 and info["visible_passed"] < n
        assert info["visible_passed"] == task.initial_visible_passed  # the host's baseline is what runs here
        *_, info = env.step(env.unwrapped.expert_action())
        assert info["visible_passed"] == n
        weight = env.unwrapped.reward_weights["progress"]
        assert info["reward_components"]["progress"] == pytest.approx(weight * (1 - task.initial_visible_passed / n))
    finally:
        env.close()


# ----------------------------------------------------------------------------------------------- 9.7 deep trees
def test_deep_work_directory_does_not_raise() -> None:
    """9.7: 1,100 nested directories (the fingerprint walk is iterative and capped: it gives up, tests re-run)."""
    env = gym.make("arl/code.repo-v1")
    try:
        env.reset(seed=0, options={"task_id": TASK})
        deep = "/".join(["d"] * 1100)
        obs, *_, info = env.step(f"<bash>mkdir -p {deep} && echo made</bash>")
        assert "made" in obs and info.get("env_error") is None
        assert env.unwrapped._workdir_fingerprint() is None
        wide = "python3 -c \"import os\nfor i in range(6000): open(f'f{i}', 'w').close()\""
        obs, *_ = env.step(f"<bash>rm -rf d && {wide}</bash>")
        assert env.unwrapped._workdir_fingerprint() is None  # past the entry cap: assume it changed
        *_, info = env.step(env.unwrapped.expert_action())
        assert info["visible_passed"] == info["visible_total"]
    finally:
        env.close()


# ----------------------------------------------------------------------------------------------- 9.8 FIFOs
def test_fifos_never_block_the_host(repo: Any) -> None:
    """9.8: after ``mkfifo``, read_file / write_file / expert_action on it return at once (bwrap used to block
    forever in the host's ``open()``)."""
    repo.reset(seed=0, options={"task_id": TASK})
    task = repo.unwrapped.task
    obs, *_ = repo.step("<bash>mkfifo pipe && rm README.md && mkfifo README.md && echo ok</bash>")
    assert "ok" in obs
    obs, *_ = run_bounded(lambda: repo.step("<read_file>pipe</read_file>"))
    assert obs == "No such file (or not a regular file): pipe"
    obs, *_ = run_bounded(lambda: repo.step("<read_file>README.md</read_file>"))
    assert "not a regular file" in obs
    obs, *_, info = run_bounded(lambda: repo.step('<write_file path="pipe">\nx\n</write_file>'))
    assert info.get("env_error") is None and obs.startswith(("Could not write 'pipe'", "Wrote pipe"))
    obs, *_ = repo.step(f"<bash>rm {task.bug_path} && mkfifo {task.bug_path} && echo ok</bash>")
    assert "ok" in obs
    action = run_bounded(repo.unwrapped.expert_action)
    assert action.startswith(f'<write_file path="{task.bug_path}">')  # the FIFO is not the buggy source
    *_, info = run_bounded(lambda: repo.step(action))
    assert info.get("env_error") is None


# ----------------------------------------------------------------------------------------------- 9.9 every seed
def _draw(env: Any, seed: int) -> Any:
    env.np_random, _ = seeding.np_random(seed)  # what reset(seed=seed) does before drawing the task
    return env._new_task()


@pytest.mark.slow
@pytest.mark.parametrize("env_cls", [RepoEnv, FunctionsEnv], ids=["repo", "functions-generated"])
def test_every_seed_gives_a_task(env_cls: type) -> None:
    """9.9: seeds 0-4,999 of every generated family draw a task (repo-v1 redraws deterministically)."""
    env = env_cls()
    try:
        ids = [_draw(env, seed).task_id for seed in RESET_SEEDS]
        assert len(ids) == len(RESET_SEEDS)
        assert [_draw(env, seed).task_id for seed in (76, 1913, 2058, 2511)] == [ids[76], ids[1913], ids[2058], ids[2511]]
    finally:
        env.close()


def test_seeds_that_failed_reset() -> None:
    """9.9: ``reset(seed)`` itself (sandbox included) for the seeds that raised TaskLoadError, twice: same task."""
    env = gym.make("arl/code.repo-v1")
    try:
        for seed in (76, 1913, 2058, 2511):
            _, info = env.reset(seed=seed)
            task = env.unwrapped.task
            assert info["task_id"] == _draw(env.unwrapped, seed).task_id
            assert env.reset(seed=seed)[1]["task_id"] == info["task_id"] and env.unwrapped.task == task
    finally:
        env.close()

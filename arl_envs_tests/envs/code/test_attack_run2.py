"""Issue 9's second attack run (one that did not start from the issue's list): each defect it found, as a test.

Voiding: an agent-caused failure must be the agent's own, scored failure, never ``env_error`` (an unscored,
truncated episode an agent could use to erase any losing episode). Run against bubblewrap and Docker.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401 - registers the ids
from arl_envs_tests.envs.code.test_repo_robustness import TASK


@pytest.fixture
def repo(backend: str) -> Iterator[Any]:
    env = gym.make("arl/code.repo-v1", sandbox=backend)
    yield env
    env.close()


def _no_void(info: dict, trunc: bool, obs: str) -> None:
    assert info.get("env_error") is None and not trunc, (obs, info)


def test_locking_the_work_dir_does_not_void_the_episode(repo: Any) -> None:
    """``<bash>chmod 000 /work</bash>`` (the sandbox user owns the work-dir root), then a file change and a
    submit: before the fix bwrap's next run failed to ``chdir`` into ``/work`` and came back as ``sandbox
    set-up failed`` -> ``env_error``, so an agent could void any losing repo-v1 (or math.tool-v1) episode."""
    repo.reset(options={"task_id": TASK})
    obs, _, term, trunc, info = repo.step("<bash>chmod 000 /work && echo locked</bash>")
    _no_void(info, trunc, obs)
    obs, _, term, trunc, info = repo.step('<write_file path="NOTES.txt">\nnotes\n</write_file>')
    _no_void(info, trunc, obs)
    assert info["reward_components"]["progress"] == 0.0
    obs, _, term, trunc, info = repo.step("<submit/>")
    _no_void(info, trunc, obs)
    assert term and info["reward_components"]["task"] == 0.0 and not info["success"]


def test_locking_the_work_dir_does_not_void_a_session(backend: str) -> None:
    """math.tool-v1: a cell locks ``/work`` and kills its interpreter; the restarted session (a new sandbox run)
    must still work, and the episode is scored."""
    env = gym.make("arl/math.tool-v1", sandbox=backend)
    try:
        env.reset(seed=0)
        obs, _, term, trunc, info = env.step("```python\nimport os\nos.chmod('/work', 0)\nos._exit(3)\n```")
        _no_void(info, trunc, obs)
        obs, _, term, trunc, info = env.step("```python\nprint(6 * 7)\n```")
        _no_void(info, trunc, obs)
        assert "42" in obs, obs
        obs, _, term, trunc, info = env.step("\\boxed{-987654321}")
        _no_void(info, trunc, obs)
        assert term and info["reward_components"]["task"] == 0.0
    finally:
        env.close()


# ------------------------------------------------------------------------------ a deep tree in the runner's tmp dir
#: Submitted code that, at import, buries its working directory (the runner's per-job temporary directory)
#: under 1,500 nested directories: ``shutil.rmtree`` of that directory raised ``RecursionError`` in the runner,
#: a harness error, so the episode came back unscored (``env_error``) on both envs and backends.
DEEP_TREE = "import os\nfor _ in range(1500):\n    os.mkdir('d')\n    os.chdir('d')\n"


def test_deep_tree_in_the_job_dir_does_not_void_a_repo_episode(repo: Any) -> None:
    repo.reset(options={"task_id": TASK})
    pkg = repo.unwrapped.task.package
    obs, _, term, trunc, info = repo.step(f'<write_file path="{pkg}/__init__.py">\n{DEEP_TREE}</write_file>')
    _no_void(info, trunc, obs)
    obs, _, term, trunc, info = repo.step("<submit/>")
    _no_void(info, trunc, obs)
    assert term and info["reward_components"]["task"] == 0.0


def test_deep_tree_in_the_job_dir_does_not_void_a_functions_episode(backend: str) -> None:
    env = gym.make("arl/code.functions-v0", sandbox=backend)
    try:
        env.reset(seed=0)
        obs, _, term, trunc, info = env.step(f"```python\n{DEEP_TREE}def f(*a):\n    return None\n```\nSUBMIT")
        _no_void(info, trunc, obs)
        assert term and info["reward_components"]["task"] == 0.0
    finally:
        env.close()


def test_remove_tree_is_iterative_and_stays_inside(tmp_path: Any) -> None:
    """The runner's clean-up (host-side unit test): 1,200 levels, locked directories, a symlink out."""
    from arl_envs.envs.code.processes import remove_tree

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    root = tmp_path / "job"
    d = root
    root.mkdir()
    for _ in range(1200):  # deeper than the recursion limit, within PATH_MAX under pytest's tmp_path
        d = d / "d"
        d.mkdir()
    (d / "f").write_text("x")
    (root / "link").symlink_to(outside)
    (root / "locked").mkdir()
    (root / "locked" / "f").write_text("x")
    (root / "locked").chmod(0)
    remove_tree(str(root))
    assert not root.exists() and (outside / "keep.txt").read_text() == "keep"
    remove_tree(str(root))  # a missing path: nothing happens
    remove_tree(str(outside / "keep.txt"))  # a plain file is unlinked
    assert not (outside / "keep.txt").exists()


# ------------------------------------------------------------------------------ file names that are not UTF-8
def test_non_utf8_file_name_does_not_raise(repo: Any) -> None:
    """``touch $'bad\\377name'``: the host-side work-dir fingerprint (bwrap) encoded the name with ``str.encode``
    and ``UnicodeEncodeError`` came out of ``step()``; now names are hashed as bytes."""
    repo.reset(options={"task_id": TASK})
    obs, _, term, trunc, info = repo.step("<bash>touch \"$(printf 'bad\\377name')\" && echo made</bash>")
    _no_void(info, trunc, obs)
    assert "made" in obs
    obs, _, term, trunc, info = repo.step("<bash>rm -f -- \"$(printf 'bad\\377name')\"; echo gone</bash>")
    _no_void(info, trunc, obs)
    assert "gone" in obs

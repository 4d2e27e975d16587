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
from arl_envs_tests.envs.code.test_repo_robustness import TASK, _skip_unless


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> str:
    _skip_unless(request.param)
    return request.param


@pytest.fixture
def repo(backend: str) -> Iterator[Any]:
    env = gym.make("arl/code.repo-v0", sandbox=backend)
    yield env
    env.close()


def _no_void(info: dict, trunc: bool, obs: str) -> None:
    assert info.get("env_error") is None and not trunc, (obs, info)


def test_locking_the_work_dir_does_not_void_the_episode(repo: Any) -> None:
    """``<bash>chmod 000 /work</bash>`` (the sandbox user owns the work-dir root), then a file change and a
    submit: before the fix bwrap's next run failed to ``chdir`` into ``/work`` and came back as ``sandbox
    set-up failed`` -> ``env_error``, so an agent could void any losing repo-v0 (or math.tool-v0) episode."""
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
    """math.tool-v0: a cell locks ``/work`` and kills its interpreter; the restarted session (a new sandbox run)
    must still work, and the episode is scored."""
    env = gym.make("arl/math.tool-v0", sandbox=backend)
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

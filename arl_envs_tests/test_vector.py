"""make_vec returns each sub-env's own text observation, in sync and async mode."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_sub_env_observation_is_its_own(mode: str) -> None:
    n = 3
    venv = arl_envs.make_vec("arl/math.arithmetic-v1", n, mode=mode)
    try:
        obs, info = venv.reset(seed=10)
        assert isinstance(obs, tuple) and len(obs) == n
        # Each observation equals what a standalone env with seed 10 + i produces.
        singles = [gym.make("arl/math.arithmetic-v1") for _ in range(n)]
        expected = [s.reset(seed=10 + i)[0] for i, s in enumerate(singles)]
        assert list(obs) == expected
        assert len(set(obs)) == n
        # Step: sub-env 1 gets its expert action, others a wrong one; rewards/obs must line up per env.
        actions = ["\\boxed{nope}"] * n
        actions[1] = singles[1].unwrapped.expert_action()
        obs2, reward, term, trunc, info = venv.step(actions)
        exp = [s.step(a) for s, a in zip(singles, actions)]
        assert list(obs2) == [e[0] for e in exp]
        assert list(reward) == [e[1] for e in exp]
        assert reward[1] == 1.0 and obs2[1] == "Correct."
        assert list(term) == [e[2] for e in exp]
        assert list(info["task_id"]) == [e[4]["task_id"] for e in exp]
    finally:
        venv.close()


def test_bad_mode() -> None:
    with pytest.raises(ValueError):
        arl_envs.make_vec("arl/math.arithmetic-v1", 2, mode="threads")

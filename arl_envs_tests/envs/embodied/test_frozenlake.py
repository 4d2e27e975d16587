"""arl/embodied.frozenlake-v0: gymnasium dynamics, text grid, value-iteration expert."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import arl_envs  # noqa: F401
from arl_envs.agents import ExpertAgent, RandomAgent, run_episode
from arl_envs.envs.embodied.frozenlake import GYM_ACTIONS, FrozenLakeEnv
from arl_envs.testing import check_conformance

ENV_ID = "arl/embodied.frozenlake-v0"


@pytest.mark.parametrize("kwargs", [{}, {"size": 8}, {"map_name": "8x8"}, {"size": 6, "p_frozen": 0.6}])
def test_expert_always_succeeds_on_a_still_lake(kwargs: dict) -> None:
    env = gym.make(ENV_ID, **kwargs)
    for seed in range(30):
        ep = run_episode(env, ExpertAgent(env), seed=seed)
        assert ep.success, (seed, ep.observations[-1])
        assert ep.infos[0]["optimal_success_prob"] == 1.0
        size = len(ep.observations[-1].splitlines()[-1])
        assert ep.steps <= 4 * size * size  # it walks to the goal, it does not idle


@pytest.mark.slow
def test_slippery_expert_matches_its_predicted_success_probability() -> None:
    env = gym.make(ENV_ID, map_name="4x4", slippery=True)
    episodes = [run_episode(env, ExpertAgent(env), seed=s) for s in range(300)]
    predicted = episodes[0].infos[0]["optimal_success_prob"]
    assert 0.5 < predicted < 0.95  # slipping makes the 4x4 map risky even for the optimal policy
    rate = sum(e.success for e in episodes) / len(episodes)
    sd = math.sqrt(predicted * (1 - predicted) / len(episodes))
    assert abs(rate - predicted) < 4 * sd, (rate, predicted)
    # a policy that always goes right does far worse than the optimal one
    env2 = FrozenLakeEnv(map_name="4x4", slippery=True)
    wins = 0
    for s in range(300):
        env2.reset(seed=s)
        while True:
            *_, term, trunc, info = env2.step("right")
            if term or trunc:
                break
        wins += info["success"]
    assert wins / 300 < predicted - 0.2


def test_dynamics_are_gymnasiums() -> None:
    """Same map, same gymnasium seed, same moves -> same positions as gymnasium's own FrozenLake."""
    from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymLake

    env = FrozenLakeEnv(map_name="8x8", slippery=True, max_turns=300)
    rng = np.random.default_rng(0)
    for seed in range(5):
        env.reset(seed=seed)
        # our env seeds its inner gymnasium env from its own np_random: rebuild that seed the same way
        inner_seed = int(np.random.Generator(np.random.PCG64(seed)).integers(0, 2**31 - 1))
        ref = GymLake(map_name="8x8", is_slippery=True)
        state, _ = ref.reset(seed=inner_seed)
        while True:
            move = ["left", "down", "right", "up"][int(rng.integers(0, 4))]
            *_, term, trunc, info = env.step(move)
            state, _, ref_term, _, _ = ref.step(GYM_ACTIONS[move])
            assert env._state == state
            assert term == ref_term
            if term or trunc:
                break


def test_rendering_and_moves() -> None:
    env = FrozenLakeEnv(map_name="4x4")
    obs, info = env.reset(seed=0)
    grid = info["task"].splitlines()
    assert grid == ["P___", "_O_O", "___O", "O__G"]
    obs, *_, info = env.step("left")
    assert obs.startswith("You cannot move left") and info["action_error"] is None
    obs, *_ = env.step("right")
    assert obs.splitlines()[1:] == ["SP__", "_O_O", "___O", "O__G"]
    obs, reward, term, trunc, info = env.step("down")  # (1, 1) is a hole
    assert "You fall into a hole!" in obs and term and not info["success"] and reward == 0.0
    assert obs.splitlines()[2] == "_X_O"


def test_goal_gives_task_reward() -> None:
    env = FrozenLakeEnv(map_name="4x4")
    env.reset(seed=0)
    for move in ("down", "down", "right", "right", "down"):
        *_, term, _, info = env.step(move)
        assert not term
    obs, reward, term, trunc, info = env.step("right")
    assert term and info["success"] and reward == 1.0 and "You reach the goal!" in obs
    assert obs.splitlines()[-1] == "O__*"


def test_chained_and_unknown_moves_are_malformed() -> None:
    env = FrozenLakeEnv()
    env.reset(seed=3)
    state = env._state
    for cmd in ("down then right", "down right", "jump"):
        *_, info = env.step(cmd)
        assert info["action_error"]
    assert env._state == state


def test_random_text_agent_fails_and_task_ids_round_trip() -> None:
    env = gym.make(ENV_ID)
    assert sum(run_episode(env, RandomAgent(env, seed=s), seed=s).success for s in range(20)) == 0
    a = FrozenLakeEnv(size=6)
    obs, info = a.reset(seed=5)
    b = FrozenLakeEnv()
    obs_b, info_b = b.reset(options={"task_id": info["task_id"]})
    assert info_b["task"] == info["task"] and info_b["task_id"] == info["task_id"]
    with pytest.raises(arl_envs.TaskLoadError):
        b.reset(options={"task_id": "frozenlake-99-still-1"})
    with pytest.raises(ValueError):
        FrozenLakeEnv(map_name="5x5")


def test_conformance_slippery_and_json() -> None:
    # Slippery: the optimal policy itself fails ~26% of the 4x4 episodes, so "expert solves seeds 0-4" is not a
    # fair check there; the success rate is checked against the optimal probability above instead.
    report = check_conformance(ENV_ID, env_kwargs={"slippery": True}, n_fuzz=40, skip=("expert_solves",))
    assert report.passed, report.summary()
    report = check_conformance(ENV_ID, env_kwargs={"action_format": "json"}, n_fuzz=60)
    assert report.passed, report.summary()

"""``arl/embodied.textworld-v0``: TextWorld's generators (compiled once and cached), conformance, the walkthrough
expert on each challenge, admissible commands, settings, interpreter commands refused."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("textworld", reason="textworld is not installed: pip install 'arl-envs[textworld]'")

import arl_envs  # noqa: E402, F401
from arl_envs.envs.embodied.textworld_env import CHALLENGES, default_cache_dir, game_file  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402

ENV_ID = "arl/embodied.textworld-v0"


@pytest.mark.slow
def test_conformance_coin_collector() -> None:
    report = check_conformance(ENV_ID, env_kwargs={"challenge": "coin_collector", "n_games": 1}, n_fuzz=30)
    assert report.passed, report.summary()


@pytest.mark.slow
@pytest.mark.parametrize("challenge", sorted(CHALLENGES))
def test_walkthrough_expert_wins_each_challenge(challenge: str) -> None:
    env = gym.make(ENV_ID, challenge=challenge, n_games=1)
    obs, info = env.reset(seed=0)
    assert info["admissible_actions"] and obs
    total, done = 0.0, False
    while not done:
        _, r, term, trunc, info = env.step(env.unwrapped.expert_action())
        total += r
        done = term or trunc
    assert term and info["success"] and info["score"] == info["max_score"]
    assert info["reward_components"]["task"] == 1.0 and total == pytest.approx(1.1)  # task 1 + progress 0.1 * 1
    env.close()


@pytest.mark.slow
def test_cached_game_reused_settings_and_interpreter_commands() -> None:
    cache = default_cache_dir()
    path = game_file("treasure_hunter", CHALLENGES["treasure_hunter"][1], 0, cache)  # made once per machine
    mtime = path.stat().st_mtime_ns
    assert game_file("treasure_hunter", CHALLENGES["treasure_hunter"][1], 0, cache).stat().st_mtime_ns == mtime
    env = gym.make(ENV_ID, challenge="treasure_hunter", n_games=1)
    env.reset(seed=3)
    _, r, term, _, info = env.step("\\q")
    assert info["action_error"] and "backslash" in info["action_error"] and not term and r < 0
    _, r, term, _, info = env.step("dance wildly")  # TextWorld's own parser answers; a turn, no reward
    assert not info["action_error"] and not term and r == 0.0
    with pytest.raises(ValueError, match="unknown setting"):
        gym.make(ENV_ID, challenge="coin_collector", settings={"difficulty": 3})
    with pytest.raises(ValueError, match="unknown TextWorld challenge"):
        gym.make(ENV_ID, challenge="zork")

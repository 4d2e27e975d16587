"""The example env: played by its expert and random agents, conformance from its class and from its id."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs
from arl_envs.agents import ExpertAgent, RandomAgent, run_episode
from arl_envs.core.errors import InvalidKwargs, ResetNeeded, TaskLoadError
from arl_envs.envs.example.guess import GuessEnv
from arl_envs.testing import check_conformance

ENV_ID = "arl/example.guess-v0"


def test_registered_and_listed() -> None:
    assert ENV_ID in arl_envs.env_ids()
    assert isinstance(gym.make(ENV_ID).unwrapped, GuessEnv)


def test_expert_binary_search_solves_within_log2_turns() -> None:
    env = gym.make(ENV_ID)
    for seed in range(10):
        ep = run_episode(env, ExpertAgent(env), seed=seed)
        assert ep.success and ep.steps <= 7 and ep.total_reward == 1.0


def test_random_agent_fails_and_transcript_reads() -> None:
    env = gym.make(ENV_ID, render_mode="ansi")
    eps = [run_episode(env, RandomAgent(env, seed=s), seed=s) for s in range(5)]
    assert sum(e.success for e in eps) <= 1 and all(e.truncated or e.terminated for e in eps)
    env.reset(options={"task_id": "37"})
    _, r, term, _, info = env.step('<tool_call>{"name": "guess", "arguments": {"number": 50}}</tool_call>')
    assert "Lower." in env.render() and info["guess"] == 50 and not term and r == 0.0
    _, r, term, _, info = env.step("37")  # no tool call: a format error, not an exception
    assert info["action_error"] and r == pytest.approx(-0.1) and not term
    _, r, term, _, info = env.step(env.unwrapped.render_call("guess", {"number": 37}))
    assert term and info["success"] and info["reward_components"]["task"] == 1.0


def test_same_default_hooks_for_both_formats_and_base_guards() -> None:
    native, js = GuessEnv(), GuessEnv(action_format="json")
    assert native.render_call("guess", {"number": 3}) == js.render_call("guess", {"number": 3})
    with pytest.raises(ResetNeeded):
        native.expert_action()  # the base class's guard: no episode yet
    with pytest.raises(TaskLoadError):
        native.reset(options={"task_id": "1000"})
    with pytest.raises(InvalidKwargs, match="'hgh'"):
        GuessEnv(hgh=5)
    with pytest.raises(InvalidKwargs, match="'high'"):
        gym.make(ENV_ID, high="many")
    with pytest.raises(ValueError, match="high must be"):
        GuessEnv(high=1)


@pytest.mark.parametrize("target", [ENV_ID, GuessEnv, lambda **kw: GuessEnv(high=20, **kw)])
def test_conformance_from_id_class_or_factory(target) -> None:
    report = check_conformance(target, n_fuzz=40)
    assert report.passed, report.summary()


def test_check_conformance_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        check_conformance(42)  # type: ignore[arg-type]

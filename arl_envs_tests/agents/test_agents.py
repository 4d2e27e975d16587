from __future__ import annotations

import io

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.agents import ExpertAgent, HumanAgent, RandomAgent, make_agent, run_episode
from arl_envs.core.actions import parse_json_tool_calls


def test_expert_succeeds_random_fails_mostly() -> None:
    env = gym.make("arl/math.arithmetic-v1", difficulty=3)
    experts = [run_episode(env, ExpertAgent(env), seed=s) for s in range(10)]
    randoms = [run_episode(env, RandomAgent(env, seed=s), seed=s) for s in range(10)]
    assert all(e.success for e in experts)
    assert sum(e.success for e in randoms) <= 1
    assert all(e.steps >= 1 for e in randoms)


def test_random_agent_tool_calls_are_well_formed() -> None:
    env = gym.make("arl/math.countdown-v1", action_format="json")
    env.reset(seed=0)
    agent = RandomAgent(env, seed=1, p_tool_call=1.0)
    for _ in range(20):
        (call,) = parse_json_tool_calls(agent.act("", {}))
        assert call.name == "answer" and isinstance(call.arguments["answer"], str)


def test_random_agent_is_seeded() -> None:
    env = gym.make("arl/math.arithmetic-v1")
    env.reset(seed=0)
    a = [RandomAgent(env, seed=4).act("", {}) for _ in range(1)]
    b = [RandomAgent(env, seed=4).act("", {}) for _ in range(1)]
    assert a == b


def test_human_agent_reads_stream() -> None:
    env = gym.make("arl/math.arithmetic-v1")
    obs, info = env.reset(seed=0)
    agent = HumanAgent(stream=io.StringIO("first line\\\nsecond line\n.\n"))
    assert agent.act(obs, info) == "first line\nsecond line"
    with pytest.raises(EOFError):
        agent.act(obs, info)
    with pytest.raises(ValueError):
        make_agent("oracle", env)

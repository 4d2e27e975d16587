"""The single-agent contract of AgentEnv, exercised through a real env (arl/math.arithmetic-v1)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs
from arl_envs.core.env import MAX_OBSERVATION_CHARS, TRUNCATION_MARKER, AgentEnv
from arl_envs.core.errors import InvalidActionType, ResetNeeded, TaskLoadError

ENV_ID = "arl/math.arithmetic-v1"


def make(**kw):
    return gym.make(ENV_ID, **kw)


def test_both_make_forms_work() -> None:
    e1 = gym.make("arl_envs:arl/math.arithmetic-v1")
    e2 = gym.make("arl/math.arithmetic-v1")
    assert isinstance(e1.unwrapped, AgentEnv) and isinstance(e2.unwrapped, AgentEnv)
    assert e1.reset(seed=1)[0] == e2.reset(seed=1)[0]


@pytest.mark.parametrize("action", ["中文 click(12) 🙂", ""])
def test_unicode_and_empty_action_is_an_observation(action: str) -> None:
    env = make()
    assert env.action_space.contains(action)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert "Invalid action" in obs and "\\boxed" in obs
    assert info["action_error"]
    assert reward == pytest.approx(-0.1) and info["reward_components"]["format"] == pytest.approx(-0.1)
    assert not terminated and not truncated  # max_invalid_actions=1: one malformed reply is tolerated
    obs, reward, terminated, truncated, info = env.step(action)
    assert terminated and not truncated and info["success"] is False
    assert "Too many invalid actions" in obs


def test_api_misuse_raises_clear_errors() -> None:
    raw = make().unwrapped
    with pytest.raises(ResetNeeded, match="reset"):
        raw.step("\\boxed{1}")
    raw.reset(seed=0)
    with pytest.raises(InvalidActionType, match="str"):
        raw.step(42)  # type: ignore[arg-type]
    raw.step(raw.expert_action())
    with pytest.raises(ResetNeeded):
        raw.step("\\boxed{1}")
    with pytest.raises(ResetNeeded):
        raw.expert_action()


def test_reward_weights_kwarg() -> None:
    env = make(reward_weights={"format": 0.0})
    env.reset(seed=0)
    _, reward, *_ , info = env.step("no answer")
    assert reward == 0.0 and info["reward_components"] == {"task": 0.0, "format": 0.0}
    with pytest.raises(ValueError, match="unknown reward part"):
        make(reward_weights={"speed": 1.0})


def test_truncation_vs_termination() -> None:
    env = make(max_attempts=5, max_turns=2)
    env.reset(seed=0)
    r1 = env.step("\\boxed{nope}")
    assert not r1[2] and not r1[3] and "attempt(s) left" in r1[0]
    r2 = env.step("\\boxed{nope}")
    assert r2[3] and not r2[2] and "Turn limit" in r2[0]
    env2 = make(max_attempts=2)
    env2.reset(seed=0)
    env2.step("\\boxed{nope}")
    *_, term, trunc, info = env2.step("\\boxed{nope}")
    assert term and not trunc and info["success"] is False


def test_json_format_validation() -> None:
    env = make(action_format="json", max_invalid_actions=10)
    obs, info = env.reset(seed=0)
    assert "<tool_call>" in info["instructions"]
    two = '<tool_call>{"name": "answer", "arguments": {"answer": "1"}}</tool_call>' * 2
    assert "2 tool calls" in env.step(two)[4]["action_error"]
    assert "unknown tool" in env.step('<tool_call>{"name": "rm", "arguments": {}}</tool_call>')[4]["action_error"]
    assert "invalid arguments" in env.step('<tool_call>{"name": "answer", "arguments": {}}</tool_call>')[4]["action_error"]
    assert "no <tool_call>" in env.step("\\boxed{1}")[4]["action_error"]
    *_, term, _, info = env.step(env.unwrapped.expert_action())
    assert term and info["success"] and info["tool_calls"][0]["name"] == "answer"


def test_task_id_option_reproduces_task() -> None:
    env = make(difficulty=4)
    obs, info = env.reset(seed=123)
    obs2, info2 = make().reset(options={"task_id": info["task_id"]})
    assert obs2 == obs and info2["task_id"] == info["task_id"]
    with pytest.raises(TaskLoadError):
        env.reset(options={"task_id": "nonsense"})


def test_render_ansi_and_close() -> None:
    env = make(render_mode="ansi")
    env.reset(seed=0)
    env.step(env.unwrapped.expert_action())
    text = env.render()
    assert "=== system ===" in text and "=== assistant ===" in text and "Correct." in text
    env.close()
    env.close()
    with pytest.raises(ResetNeeded):
        env.unwrapped.reset()
    with pytest.raises(ValueError):
        make(render_mode="human")


def test_observation_cap() -> None:
    long = "y" * (MAX_OBSERVATION_CHARS + 10)
    capped = AgentEnv._cap(long)
    assert len(capped) == MAX_OBSERVATION_CHARS and capped.endswith(TRUNCATION_MARKER)


def test_info_contract_keys_every_step() -> None:
    env = make(max_attempts=2)
    _, info = env.reset(seed=3)
    assert {"task_id", "turn", "tools", "instructions"} <= info.keys()
    assert info["tools"][0]["function"]["name"] == "answer"
    for action in ("bad", "\\boxed{0.123456}", env.unwrapped.expert_action()):
        *_, info = env.step(action)
        assert {"task_id", "turn", "reward_components", "action_error", "tool_calls", "success"} <= info.keys()
    assert arl_envs.env_ids()

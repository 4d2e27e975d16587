"""Tool use with a simulated user (``arl/tooluse.*``): expert, random, policy, rewards, determinism, no leaks."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.agents import RandomAgent, make_agent, run_episode

IDS = ["arl/tooluse.retail-v0", "arl/tooluse.airline-v0"]


def _play_expert(env: gym.Env, task_id: str) -> tuple[str, dict]:
    env.reset(options={"task_id": task_id})
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(env.unwrapped.expert_action())
        done = term or trunc
    return obs, info


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("action_format", ["native", "json"])
def test_expert_solves_every_template(env_id: str, action_format: str) -> None:
    env = gym.make(env_id, action_format=action_format)
    templates = env.unwrapped.domain.templates()
    assert len(templates) >= 50
    kinds = set()
    for k, template in enumerate(templates):
        obs, info = _play_expert(env, f"{template}/{k % 3}")
        kinds.add(env.unwrapped.task.kind)
        assert info["success"], (template, obs, info)
        assert info["reward_components"]["task"] == 1.0 and info["policy_violation"] is None
    assert kinds == {"write", "lookup", "refuse", "transfer"}


@pytest.mark.parametrize("env_id", IDS)
def test_random_agent_fails(env_id: str) -> None:
    env = gym.make(env_id)
    agent = make_agent("random", env, seed=0)
    assert not any(run_episode(env, agent, seed=s).success for s in range(15))


def _to_confirmation(env: gym.Env) -> None:
    """Step the expert up to (not including) its first confirmation request."""
    u = env.unwrapped
    while "confirm (yes/no)" not in u.task.plan[u._plan_pos][1].get("message", ""):
        env.step(u.expert_action())


@pytest.mark.parametrize("env_id", IDS)
def test_write_without_confirmation_is_a_policy_violation(env_id: str) -> None:
    env = gym.make(env_id)
    env.reset(options={"task_id": env.unwrapped.domain.templates()[0] + "/1"})
    u = env.unwrapped
    _to_confirmation(env)
    name, args = u.task.writes[0].name, u.task.writes[0].args
    obs, reward, term, trunc, info = env.step(u.render_call(name, args))  # the right write, but unconfirmed
    assert term and not trunc and not info["success"] and info["reward_components"]["task"] == 0.0
    assert "without the user's explicit yes" in info["policy_violation"] and "Policy violation" in obs


@pytest.mark.parametrize("env_id", IDS)
def test_write_before_authentication_is_a_policy_violation(env_id: str) -> None:
    env = gym.make(env_id)
    env.reset(options={"task_id": env.unwrapped.domain.templates()[0] + "/2"})
    w = env.unwrapped.task.writes[0]
    _, _, term, _, info = env.step(env.unwrapped.render_call(w.name, w.args))
    assert term and "before the user was authenticated" in info["policy_violation"]


def test_database_rules_refuse_a_bad_write_without_ending_the_episode() -> None:
    env = gym.make("arl/tooluse.retail-v0")
    env.reset(options={"task_id": "trap_cancel_delivered.email.id/0"})
    u = env.unwrapped
    while u.task.plan[u._plan_pos][0] != "respond" or "cannot" not in u.task.plan[u._plan_pos][1]["message"]:
        env.step(u.expert_action())
    order_id = u.task.plan[u._plan_pos - 1][1]["order_id"]
    obs, *_ = env.step(u.render_call("respond", {"message": f"I will cancel {order_id}. Confirm (yes/no)?"}))
    assert obs.startswith("User: Yes")  # the trap: the user wants it
    obs, _, term, trunc, info = env.step(
        u.render_call("cancel_pending_order", {"order_id": order_id, "reason": "no longer needed"}))
    assert obs.startswith("Error: order") and "not pending" in obs and not (term or trunc)
    assert info["policy_violation"] is None


@pytest.mark.parametrize("env_id", IDS)
def test_progress_per_correct_write_and_wrong_final_state_fails(env_id: str) -> None:
    env = gym.make(env_id)
    u = env.unwrapped
    for template in u.domain.templates():  # the first template with two writes
        env.reset(options={"task_id": f"{template}/0"})
        if len(u.task.writes) == 2:
            break
    progress = 0.0
    for _ in range(len(u.task.plan) - 2):  # stop before the second write
        _, _, term, _, info = env.step(u.expert_action())
        progress += info["reward_components"].get("progress", 0.0)
        assert not term
    assert progress == pytest.approx(0.2 * 0.5)
    _, _, term, _, info = env.step(u.render_call("respond", {"message": "All done, goodbye. (I cannot do more.)"}))
    while not term:
        _, _, term, trunc, info = env.step(u.render_call("respond", {"message": "Goodbye."}))
    assert not info["success"] and info["reward_components"]["task"] == 0.0  # the user gave up: one write missing


@pytest.mark.parametrize("env_id", IDS)
def test_dialogue_is_deterministic_under_the_seed(env_id: str) -> None:
    def transcript(seed: int) -> list[str]:
        env = gym.make(env_id, render_mode="ansi")
        env.reset(seed=seed)
        agent = RandomAgent(env, seed=1, p_tool_call=1.0)  # its own RNG only
        u = env.unwrapped
        out = []
        for k in range(12):
            action = u.expert_action() if k % 3 else agent.act(*_last(env))
            obs, _, term, trunc, _ = env.step(action)
            out.append(obs)
            if term or trunc:
                break
        return [env.render(), *out]

    assert transcript(5) == transcript(5)
    assert transcript(5) != transcript(6)


def _last(env: gym.Env) -> tuple[str, dict]:
    return env.unwrapped.transcript[-1][1], {}


@pytest.mark.parametrize("env_id", IDS)
def test_user_never_leaks_its_goal(env_id: str) -> None:
    env = gym.make(env_id)
    for k, template in enumerate(env.unwrapped.domain.templates()):
        obs, info = env.reset(options={"task_id": f"{template}/{k}"})
        task = env.unwrapped.task
        secrets = [f.text for f in task.facts] + [task.goal]
        seen = obs + json.dumps(info, default=str)
        obs, _, _, _, info = env.step(env.unwrapped.render_call("respond", {"message": "Hello! Nice weather."}))
        seen += obs + json.dumps(info, default=str)
        assert not any(s in seen for s in secrets), template
        assert not {"goal", "writes", "plan", "facts"} & set(info)
        # what the user reveals comes only when asked
        obs, *_ = env.step(env.unwrapped.expert_action())
        assert task.facts[0].text in obs or task.facts[0].key != "identity"


def test_callable_user_gets_the_goal_and_can_end_the_conversation() -> None:
    seen: list[list[dict]] = []

    def user(messages: list[dict]) -> str:
        seen.append(messages)
        return "Thanks, bye! ###STOP###"

    env = gym.make("arl/tooluse.retail-v0", user=user)
    env.reset(options={"task_id": "lookup_status.email.id/0"})
    obs, _, term, _, info = env.step(env.unwrapped.render_call("respond", {"message": "Hi, how can I help?"}))
    assert term and not info["success"] and "###STOP###" in obs
    assert seen[0][0]["role"] == "system" and env.unwrapped.task.goal in seen[0][0]["content"]
    assert seen[0][-1] == {"role": "user", "content": "Hi, how can I help?"}
    with pytest.raises(ValueError, match="user must be"):
        gym.make("arl/tooluse.retail-v0", user="llm")


@pytest.mark.parametrize("env_id", IDS)
def test_openai_tool_schemas(env_id: str) -> None:
    env = gym.make(env_id)
    _, info = env.reset(seed=0)
    names = [t["function"]["name"] for t in info["tools"]]
    assert {"respond", "transfer_to_human"} <= set(names) and 10 <= len(names) - 2 <= 15
    assert all(t["type"] == "function" and t["function"]["parameters"]["type"] == "object" for t in info["tools"])
    bad = env.step('<tool_call>{"name": "get_order_details", "arguments": {"order_id": "W1"}}</tool_call>')
    assert bad[4]["action_error"] and bad[4]["reward_components"]["format"] < 0 and not bad[2]


def test_scoreboard_reports_pass_k_over_repeated_trials() -> None:
    from arl_baselines import scoreboard as sb

    assert sb.pass_hat_k([[True, True, False, True], [False] * 4], 2) == pytest.approx((3 / 6 + 0) / 2)
    rows = {a: sb.score_reference("arl/tooluse.retail-v0", a, sb.held_out_seeds(2)).summary()
            for a in ("random", "expert")}
    assert rows["expert"]["episodes"] == 2 * sb.PASS_K_TRIALS and rows["expert"]["pass_k"][sb.PASS_K_TRIALS] == 1.0
    assert rows["random"]["pass_k"][1] == 0.0
    assert "1.00 / 1.00 / 1.00 / 1.00" in sb.markdown_table([rows["expert"]])


def test_chat_messages_with_openai_tools_in_the_template() -> None:
    from arl_envs.wrappers import ChatMessages

    env = ChatMessages(gym.make("arl/tooluse.airline-v0", action_format="json"), tools="template")
    _, info = env.reset(seed=3)
    assert len(info["tools"]) == 13 and '"parameters"' not in info["messages"][0]["content"]
    done = False
    while not done:
        _, _, term, trunc, info = env.step(env.unwrapped.expert_action())
        done = term or trunc
    assert info["success"] and [m["role"] for m in info["messages"][:4]] == ["system", "user", "assistant", "tool"]

from __future__ import annotations

import json

import gymnasium as gym

import arl_envs  # noqa: F401
from arl_envs.wrappers import ChatMessages, RecordEpisodes


def test_chat_messages_roles_and_tools() -> None:
    env = ChatMessages(gym.make("arl/math.arithmetic-v1", max_attempts=2, action_format="json"), tools="template")
    obs, info = env.reset(seed=0)
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    assert info["messages"][1]["content"] == info["task"] and obs == f"{info['instructions']}\n\n{info['task']}"
    assert info["tools"][0]["function"]["name"] == "answer"
    _, _, _, _, info = env.step("no call at all")
    assert info["messages"][-2] == {"role": "assistant", "content": "no call at all"}
    assert info["messages"][-1]["role"] == "user" and "Invalid action" in info["messages"][-1]["content"]
    action = env.unwrapped.expert_action()
    obs, *_, info = env.step(action)
    assert info["messages"][-1] == {"role": "tool", "name": "answer", "content": obs}
    assert [m["role"] for m in info["messages"]] == ["system", "user", "assistant", "user", "assistant", "tool"]


def test_chat_messages_without_system_role() -> None:
    env = ChatMessages(gym.make("arl/math.arithmetic-v1"), system_prompt=False)
    obs, info = env.reset(seed=0)
    assert [m["role"] for m in info["messages"]] == ["user"]
    assert info["messages"][0]["content"] == obs and obs.startswith(info["instructions"])


def test_chat_template_accepts_messages() -> None:
    transformers = __import__("pytest").importorskip("transformers", reason="transformers is in the [train] extra")
    from transformers import PreTrainedTokenizerFast  # noqa: F401

    env = ChatMessages(gym.make("arl/math.arithmetic-v1"))
    _, info = env.reset(seed=0)
    *_, info = env.step(env.unwrapped.expert_action())
    # A minimal Jinja chat template rendered by transformers' own machinery (no download).
    from transformers.utils.chat_template_utils import render_jinja_template

    template = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}"
    rendered, _ = render_jinja_template(conversations=[info["messages"]], chat_template=template, tools=info["tools"])
    assert "<|assistant|>The final answer is" in rendered[0] and "<|tool|>Correct." in rendered[0]
    assert transformers is not None


def test_record_episodes(tmp_path) -> None:
    path = tmp_path / "eps" / "episodes.jsonl"
    env = RecordEpisodes(gym.make("arl/math.countdown-v1"), path)
    for seed in range(3):
        env.reset(seed=seed)
        env.step("wrong \\boxed{1+1}" if seed == 1 else env.unwrapped.expert_action())
    env.reset(seed=9)  # an unfinished episode is written at close
    env.close()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 4
    assert [line["success"] for line in lines[:3]] == [True, False, True]
    assert lines[0]["env_id"] == "arl/math.countdown-v1" and lines[0]["return"] == 1.0
    assert len(lines[0]["observations"]) == 2 and len(lines[0]["actions"]) == 1
    assert lines[3]["actions"] == [] and not lines[3]["terminated"]

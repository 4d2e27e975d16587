"""Observations as chat messages, the form ``tokenizer.apply_chat_template`` consumes (``arl_envs/CONTRACT.md``, section 2)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class ChatMessages(gym.Wrapper[str, str, str, str]):
    """Keep the episode as a chat message list and put it in ``info["messages"]``.

    After ``reset``: ``[{"role": "system", "content": info["instructions"]}, {"role": "user", "content": info["task"]}]``.
    After each ``step``: ``{"role": "assistant", "content": action}`` then the next observation as
    ``{"role": "tool", "name": <tool>, "content": obs}`` when the action was a valid tool call, else
    ``{"role": "user", "content": obs}`` (format errors, feedback). ``info["tools"]`` (OpenAI JSON schemas) is set at
    reset, so ``tokenizer.apply_chat_template(info["messages"], tools=info["tools"])`` works.

    The observation itself stays the plain new string, so a trainer can tokenise each observation separately and
    mask it out of the loss. ``info["messages"]`` is a new list each call (the dicts inside are shared).

    Args:
        env: An arl-envs env.
        system_prompt: True (default) to put the instructions in a system message; False for one user message holding
            the first observation (instructions + task), for templates without a system role.
    """

    def __init__(self, env: gym.Env[str, str], system_prompt: bool = True):
        super().__init__(env)
        self.system_prompt = system_prompt
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.tools = info.get("tools", [])
        instructions = info.get("instructions", "")
        if self.system_prompt:
            task = info.get("task", obs)
            self.messages = [{"role": "system", "content": instructions}, {"role": "user", "content": task}]
        else:
            self.messages = [{"role": "user", "content": obs}]  # the first observation is instructions + task
        info = dict(info, messages=list(self.messages))
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.messages.append({"role": "assistant", "content": action})
        calls = info.get("tool_calls") or []
        if calls and info.get("action_error") is None:
            self.messages.append({"role": "tool", "name": calls[0]["name"], "content": obs})
        else:
            self.messages.append({"role": "user", "content": obs})
        info = dict(info, messages=list(self.messages), tools=self.tools)
        return obs, reward, terminated, truncated, info

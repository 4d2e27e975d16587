"""Observations as chat messages, the form ``tokenizer.apply_chat_template`` consumes (``arl_envs/CONTRACT.md``, section 2)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class ChatMessages(gym.Wrapper[str, str, str, str]):
    """Keep the episode as a chat message list and put it in ``info["messages"]``.

    After ``reset``: ``[{"role": "system", "content": info["instructions"]}, {"role": "user", "content": info["task"]}]``.
    After each ``step``: ``{"role": "assistant", "content": action}`` then the next observation as
    ``{"role": "tool", "name": <tool>, "content": obs}`` when the action was a valid tool call, else
    ``{"role": "user", "content": obs}`` (format errors, feedback). ``info["tools"]`` is what to pass as the chat
    template's ``tools``, so ``tokenizer.apply_chat_template(info["messages"], tools=info["tools"])`` describes every
    tool exactly once:

    * ``tools="instructions"`` (default): the instructions (system message) describe the actions in the env's
      format (JSON schemas included with ``action_format="json"``) and ``info["tools"]`` is ``[]``. The prompt is
      complete whether or not the template renders tools, and pays for no description twice (the web ids'
      15 schemas rendered by a tool-aware template are 1,767 SmolLM2 tokens; ``benchmarks/RESULTS.md``,
      "First-prompt tokens").
    * ``tools="template"``: for a tool-aware chat template and ``action_format="json"``. ``info["tools"]`` holds
      the OpenAI JSON schemas and the instructions name the tools without repeating the schemas (the wrapper sets
      ``env.unwrapped.schemas_in_instructions = False``). A template that ignores ``tools`` then leaves the model
      without the schemas.

    The schemas are always available as ``env.unwrapped.tool_schemas()``.

    The observation itself stays the plain new string, so a trainer can tokenise each observation separately and
    mask it out of the loss. ``info["messages"]`` is a new list each call (the dicts inside are shared).

    Args:
        env: An arl-envs env.
        system_prompt: True (default) to put the instructions in a system message; False for one user message holding
            the first observation (instructions + task), for templates without a system role.
        tools: ``"instructions"`` (default) or ``"template"``: where the tools are described (see above).

    Raises:
        ValueError: Unknown ``tools``, or ``tools="template"`` with an env whose ``action_format`` is not ``"json"``
            (in its native format the model writes the env's own syntax, which only the instructions describe).
    """

    TOOLS_MODES = ("instructions", "template")

    def __init__(self, env: gym.Env[str, str], system_prompt: bool = True, tools: str = "instructions"):
        super().__init__(env)
        if tools not in self.TOOLS_MODES:
            raise ValueError(f"tools must be one of {self.TOOLS_MODES}, got {tools!r}")
        base = env.unwrapped
        if tools == "template":
            fmt = getattr(base, "action_format", None)
            if fmt != "json":
                raise ValueError(f"tools='template' needs an env made with action_format='json', got {fmt!r}: in "
                                 "the native format only the instructions describe what the model writes")
            base.schemas_in_instructions = False
        self.system_prompt = system_prompt
        self.tools_mode = tools
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.tools = info.get("tools", []) if self.tools_mode == "template" else []
        instructions = info.get("instructions", "")
        if self.system_prompt:
            task = info.get("task", obs)
            self.messages = [{"role": "system", "content": instructions}, {"role": "user", "content": task}]
        else:
            self.messages = [{"role": "user", "content": obs}]  # the first observation is instructions + task
        info = dict(info, messages=list(self.messages), tools=self.tools)
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

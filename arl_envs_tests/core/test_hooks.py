"""The AgentEnv hooks that replace overriding ``reset``/``step``/``_parse``: ``Transition.truncated``,
``_reset_info``/``_step_info`` and the public ``parse_action``."""

from __future__ import annotations

from typing import Any

import pytest

from arl_envs.core.actions import ParseError
from arl_envs.core.env import Transition, sealed_overrides
from arl_envs.core.tools import ToolCall
from arl_envs.envs.example.guess import GuessEnv


class HookedGuess(GuessEnv):
    """Guess with a budget of its own (3 guesses, then truncated), extra info keys and a bare-number grammar."""

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        tr = super()._step_calls(calls)
        if not tr.terminated and self.turn >= 3:
            tr.truncated = True
        return tr

    def _reset_info(self) -> dict[str, Any]:
        return {"high": self.high}

    def _step_info(self, done: bool) -> dict[str, Any]:
        return {"range": [] if done else [self.lo, self.hi]}

    def parse_action(self, action: str) -> list[ToolCall]:
        if action.strip().isdigit():
            return [ToolCall("guess", {"number": int(action)})]
        return super().parse_action(action)


def test_hooks_add_info_truncate_and_parse() -> None:
    env = HookedGuess(max_turns=10)
    assert sealed_overrides(HookedGuess) == []
    _, info = env.reset(seed=0)
    assert info["high"] == 100
    wrong = 1 if env.secret != 1 else 2
    _, _, term, trunc, info = env.step(str(wrong))  # the bare number goes through parse_action
    assert not term and not trunc and info["tool_calls"] == [{"name": "guess", "arguments": {"number": wrong}}]
    assert info["range"] == [env.lo, env.hi]
    _, reward, term, trunc, info = env.step("not a guess")  # malformed: _step_info still runs
    assert info["action_error"] and info["range"] == [env.lo, env.hi] and reward < 0
    _, _, term, trunc, info = env.step(str(wrong))
    assert trunc and not term and info["range"] == []  # Transition.truncated, before max_turns
    assert "Turn limit" not in env.transcript[-1][1]


def test_parse_action_is_the_base_parser() -> None:
    env = GuessEnv()
    env.reset(seed=0)
    assert env.parse_action('<tool_call>{"name": "guess", "arguments": {"number": "7"}}</tool_call>') == [
        ToolCall("guess", {"number": 7})
    ]
    with pytest.raises(ParseError, match="unknown tool"):
        env.parse_action('<tool_call>{"name": "nope", "arguments": {}}</tool_call>')


def test_sealed_overrides_names_the_class() -> None:
    class StepOverride(GuessEnv):
        def step(self, action: str):  # type: ignore[override]
            return super().step(action)

    class ParseOverride(StepOverride):
        def _parse(self, action: str) -> list[ToolCall]:
            return []

    assert sealed_overrides(StepOverride) == [f"{StepOverride.__qualname__}.step"]
    assert sealed_overrides(ParseOverride) == [f"{ParseOverride.__qualname__}._parse",
                                               f"{StepOverride.__qualname__}.step"]

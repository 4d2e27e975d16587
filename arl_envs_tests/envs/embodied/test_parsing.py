"""The shared embodied action parser (arl_envs.envs.embodied.parsing)."""

from __future__ import annotations

import json
import time

import pytest

from arl_envs.core.actions import ParseError
from arl_envs.envs.embodied.parsing import (
    ACT_TOOL,
    MAX_COMMAND_CHARS,
    format_act,
    normalise_command,
    parse_command,
    parse_native,
    strip_think,
)


def test_bare_command_is_normalised() -> None:
    assert parse_command("  Go to   Desk 1 ") == "go to desk 1"


def test_last_action_block_wins() -> None:
    text = "<action>go to desk 1</action> on second thought <action>open drawer 2</action>"
    assert parse_command(text) == "open drawer 2"


def test_action_inside_think_never_counts() -> None:
    text = "<think>maybe <action>take mug 1 from desk 1</action></think><action>look</action>"
    assert parse_command(text) == "look"
    # the only action is inside think: nothing visible remains but the text after it
    assert parse_command("<think><action>take mug 1</action></think>inventory") == "inventory"


def test_unclosed_think_hides_the_rest() -> None:
    assert strip_think("look <think> <action>go to desk 1</action>") == "look "
    assert parse_command("look <think> <action>go to desk 1</action>") == "look"


def test_unclosed_action_is_not_executed() -> None:
    with pytest.raises(ParseError, match="never closed"):
        parse_command("<action>go to desk 1")
    # a complete block followed by a cut-off one: the cut-off (newest) one is not silently replaced by the old one
    with pytest.raises(ParseError, match="never closed"):
        parse_command("<action>look</action> <action>go to dra")


@pytest.mark.parametrize("text", ["", "   ", "<action></action>", "<action>  </action>", "</action>",
                                  "look\ngo to desk 1", "<think>only thinking</think>"])
def test_malformed_replies_raise(text: str) -> None:
    with pytest.raises(ParseError):
        parse_command(text)


def test_command_length_limit() -> None:
    assert parse_command("x" * MAX_COMMAND_CHARS) == "x" * MAX_COMMAND_CHARS
    with pytest.raises(ParseError, match="limit"):
        parse_command("x" * (MAX_COMMAND_CHARS + 1))


def test_normalise_command_is_what_json_calls_get() -> None:
    assert normalise_command("  PUT Mug 1  in Desk 2") == "put mug 1 in desk 2"
    with pytest.raises(ParseError):
        normalise_command("a\nb")


def test_parse_native_gives_one_act_call_and_act_tool_validates() -> None:
    calls = parse_native("<think>hm</think><action>Look</action>")
    assert [(c.name, c.arguments) for c in calls] == [("act", {"command": "look"})]
    assert ACT_TOOL.validate({"command": "look"}) == {"command": "look"}
    with pytest.raises(ParseError):
        ACT_TOOL.validate({"cmd": "look"})
    assert format_act("go to desk 1") == "go to desk 1"


def _best_times(texts: list[str], repeats: int = 7) -> list[float]:
    """Best-of-``repeats`` parse CPU time of each text (this process's CPU seconds, so other jobs on the machine do
    not count), measured interleaved so cache and frequency effects hit all sizes alike."""
    best = [float("inf")] * len(texts)
    for _ in range(repeats):
        for i, text in enumerate(texts):
            start = time.process_time()
            try:
                parse_command(text)
            except ParseError:
                pass
            best[i] = min(best[i], time.process_time() - start)
    return best


@pytest.mark.parametrize(
    "unit",
    ["<action>a</action>", "<think>x</think>", "<action>", "<think>", "<action><think>", "</action><action>x"],
)
def test_parsing_is_linear_in_reply_length(unit: str) -> None:
    """Doubling the reply twice (~0.5 MB -> ~2 MB) multiplies the parse's CPU time by ~4, not ~16: no quadratic
    re-scanning (a ratio of one process's CPU times, not a wall-clock limit)."""
    n = 500_000 // len(unit)
    small, big = _best_times([unit * n, unit * (4 * n)])
    # linear: ratio ~4; quadratic: ~16. Generous slack for a noisy shared machine.
    assert big / max(small, 1e-6) < 8.0, (unit, small, big)


@pytest.mark.parametrize("text", ["go to \udfff", "\ud800", "look\x00", "go to drawer\u200b 1", "\x1b[31mlook"])
def test_non_printable_commands_are_malformed_and_never_echoed(text: str) -> None:
    with pytest.raises(ParseError, match="non-printable"):
        normalise_command(text)
    from arl_envs.envs.embodied.household import HouseholdEnv

    for fmt, action in (("native", text), ("json", '<tool_call>{"name": "act", "arguments": {"command": '
                                                    + json.dumps(text) + "}}</tool_call>")):
        env = HouseholdEnv(action_format=fmt)
        env.reset(seed=0)
        obs, _, _, _, info = env.step(action)
        assert info["action_error"] and "non-printable" in obs, (fmt, obs)
        obs.encode("utf-8")  # the observation is valid text (a lone surrogate is not)

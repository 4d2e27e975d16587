"""Issue 9, item 10: parsing an action is linear in its length, for every registered id and both formats.

For each id, a screen times the env's parser on many adversarial replies just under ``MAX_ACTION_CHARS`` (repeated
unclosed tags of every domain, and the opening of the env's own expert action repeated); the worst one is then
timed at a quarter of the size and full size. A linear parser takes about 4x as long on four times the text, a
quadratic one about 16x; the test asserts a ratio below 8 (best of several runs, CPU time), not an absolute time.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import gymnasium as gym
import pytest

import arl_envs
from arl_envs.core.env import MAX_ACTION_CHARS

#: Units repeated to fill a reply: openers of every domain's tags, fences, boxes, calls.
UNITS = (
    "<python>", "<think>", "</think><think>", "<search>", "<open>", "<answer>", "<bash>", "<read_file>",
    "<apply_patch>", '<write_file path="a">', '<write_file path="', "<submit", "<information>", "<action>",
    "<tool_call>", "```python\n", "```", "\\boxed{", "\\boxed{x", "click(", 'fill("1", "', "[", "column ",
    "<", "(", '"', "\\",
)
RATIO_LIMIT = 8.0
#: Runs per timing of the worst unit at the two sizes (the best is kept).
REPEATS = 5
#: Runs per unit of the screen, which only picks the worst unit: a super-linear parser is tens to hundreds of times
#: slower than a linear one at full size, far beyond one run's noise, so best-of-5 there only multiplied the cost.
SCREEN_REPEATS = 1


@pytest.fixture(scope="module", autouse=True)
def _one_browser() -> Iterator[None]:
    """One Chromium for every web id of the module: without it each web env's reset launched a browser (3-4 s)."""
    try:
        from arl_envs.envs.web.browser import hold_browser
    except ImportError:  # no playwright: the web ids fail on their own below
        hold = contextlib.nullcontext()
    else:
        hold = hold_browser()
    with hold:
        yield


def _parse_seconds(env, text: str, repeats: int = REPEATS) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.process_time()
        try:
            env.parse_action(text)
        except Exception:  # noqa: BLE001 - ParseError is the expected outcome; only the time matters here
            pass
        best = min(best, time.process_time() - t0)
    return best


def _fill(unit: str, chars: int) -> str:
    return unit * max(1, chars // len(unit))


def _units(env) -> list[str]:
    units = list(UNITS)
    try:
        expert = env.expert_action()
    except Exception:  # noqa: BLE001 - an env without an expert still gets the generic units
        expert = ""
    for cut in (8, 20, 40):
        if expert[:cut]:
            units.append(expert[:cut])
    return units


@pytest.mark.slow
@pytest.mark.parametrize("action_format", ["native", "json"])
@pytest.mark.parametrize("env_id", [i for i in arl_envs.env_ids() if i != "arl/remote-v0"])  # remote: a client
def test_parsing_is_linear(env_id: str, action_format: str) -> None:
    env = gym.make(env_id, action_format=action_format)
    try:
        env.reset(seed=0)
        u = env.unwrapped
        full = MAX_ACTION_CHARS - 64
        screen = [(_parse_seconds(u, _fill(unit, full), SCREEN_REPEATS), unit) for unit in _units(u)]
        worst_t, worst = max(screen)
        small = _parse_seconds(u, _fill(worst, full // 4))
        large = _parse_seconds(u, _fill(worst, full))
        floor = 0.02  # CPU-time noise on a loaded 2-core machine; a quadratic parser takes seconds at this size
        ratio = large / max(small, floor)
        assert ratio < RATIO_LIMIT, (
            f"{env_id} ({action_format}): parsing {worst!r} repeated took {small:.3f} s at {full // 4} chars and "
            f"{large:.3f} s at {full} chars (ratio {ratio:.1f}; linear is ~4)")
    finally:
        env.close()

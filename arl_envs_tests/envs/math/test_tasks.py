"""Task generators and loaders: gold answers are right, ids reproduce tasks, bad files give clear errors."""

from __future__ import annotations

import contextlib
import io
import json
from fractions import Fraction

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.math.tasks import (
    ARITHMETIC_KINDS,
    arithmetic_task,
    check_countdown,
    countdown_task,
    load_dataset,
    ordered_countdown_solution,
)


def _as_fraction(text: str) -> Fraction:
    text = text.strip()
    if text.startswith("-\\frac{"):
        return -_as_fraction(text[1:])
    if text.startswith("\\frac{"):
        num, den = text[len("\\frac{") : -1].split("}{")
        return Fraction(int(num), int(den))
    return Fraction(text)


@pytest.mark.parametrize("kind", ARITHMETIC_KINDS)
@pytest.mark.parametrize("difficulty", [1, 2, 3, 4, 5])
def test_gold_matches_an_independent_program(kind: str, difficulty: int) -> None:
    # Each task carries a Python program computing its answer from the question's numbers (Python's own operator
    # precedence, not the generator's bookkeeping); the gold must equal what it prints.
    for seed in range(25):
        task = arithmetic_task(seed * 7919 + difficulty, difficulty, kind)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(task.meta["python"], {})  # our own generated code, not model output
        assert _as_fraction(out.getvalue()) == _as_fraction(task.answer), (task.question, task.answer, out.getvalue())


def test_difficulty_scales() -> None:
    short = [len(arithmetic_task(s, 1, "integer").question) for s in range(50)]
    long = [len(arithmetic_task(s, 5, "integer").question) for s in range(50)]
    assert sum(long) > 3 * sum(short)
    with pytest.raises(ValueError):
        arithmetic_task(0, 6, "integer")
    with pytest.raises(ValueError):
        gym.make("arl/math.arithmetic-v1", kinds=["calculus"])


def test_countdown_instances_are_solvable_and_checked_exactly() -> None:
    for seed in range(300):
        t = countdown_task(seed)
        assert check_countdown(t.meta["solution"], t.meta["numbers"], t.meta["target"]) == (True, "correct")
    nums, target = [25, 5, 4, 3], 80
    assert check_countdown("(25 - 5) * 4", nums, target)[0]
    assert check_countdown("(25 - 5) \\times 4 = 80", nums, target)[0]
    assert not check_countdown("(25 - 5) * 4 * 1", nums, target)[0]  # 1 is not available
    assert not check_countdown("(25 + 25 + 25 + 5)", nums, target)[0]  # 25 used three times
    assert not check_countdown("(4 ** 3 + 25 - 5 - 4)", nums, target)[0]  # ** is not an allowed operator
    assert not check_countdown("-(-80)", nums, target)[0]
    assert not check_countdown("80.0", nums, target)[0]
    assert not check_countdown("(25 - 5) * 4 = 99", nums, target)[0]
    assert not check_countdown("4 / (5 - 5)", [4, 5, 5], 1)[0]
    assert check_countdown("(5 + 3) / 4 * 25 * 2", [5, 3, 4, 25, 2], 100)[0]


def _literals(expr: str) -> list[int]:
    import re

    return [int(x) for x in re.findall(r"\d+", expr)]


def _is_subsequence(part: list[int], whole: list[int]) -> bool:
    it = iter(whole)
    return all(any(x == y for y in it) for x in part)


def test_ordered_countdown_solution_keeps_the_given_order() -> None:
    assert ordered_countdown_solution([39, 88, 40, 37], 204) == "39 + 88 + 40 + 37"
    assert ordered_countdown_solution([25, 5, 4, 3], 80) == "(25 - 5) * 4"  # the longest subsequence that reaches 80
    assert ordered_countdown_solution([2, 3], 6) == "2 * 3"
    assert ordered_countdown_solution([6, 2], 3) == "6 / 2"
    assert ordered_countdown_solution([2, 6], 3) is None  # 6 / 2 reverses the order; nothing else reaches 3
    assert ordered_countdown_solution([7, 1, 3], 7) == "7 * 1"  # all three cannot reach 7 in this order; 7 * 1 can
    assert ordered_countdown_solution([5], 5) == "5" and ordered_countdown_solution([5], 6) is None
    assert ordered_countdown_solution([8, 2, 3], 12) == "8 / 2 * 3"  # fewest parentheses: not "(8 / 2) * 3"
    found = 0
    for seed in range(200):
        t = countdown_task(seed)
        nums, target = t.meta["numbers"], t.meta["target"]
        expr = ordered_countdown_solution(nums, target)
        if expr is None:
            continue
        found += 1
        assert check_countdown(expr, nums, target) == (True, "correct"), (nums, target, expr)
        assert _is_subsequence(_literals(expr), nums), (nums, expr)
    assert 120 <= found <= 180  # ~3 in 4 tasks have an in-order solution (measured: 284 of the first 400 held-out ones)


@pytest.mark.parametrize("expert", ["generator", "ordered"])
def test_countdown_experts_solve_every_task(expert: str) -> None:
    env = gym.make("arl/math.countdown-v1", expert=expert)
    ordered = 0
    for seed in range(60):
        env.reset(seed=seed)
        task = env.unwrapped.task
        action = env.unwrapped.expert_action()
        expr = action.rsplit("\\boxed{", 1)[1].rsplit("}", 1)[0]
        mine = ordered_countdown_solution(task.meta["numbers"], task.meta["target"])
        want = mine if expert == "ordered" and mine is not None else task.meta["solution"]
        assert expr == want
        ordered += expr == mine
        _, reward, terminated, _, info = env.step(action)
        assert terminated and info["success"] and reward == 1.0
    assert ordered >= 30 if expert == "ordered" else ordered < 30
    env.close()
    with pytest.raises(ValueError, match="expert must be one of"):
        gym.make("arl/math.countdown-v1", expert="oracle")


def test_dataset_loader_forms_and_errors(tmp_path) -> None:
    good = tmp_path / "mixed.jsonl"
    good.write_text(
        json.dumps({"question": "1+1?", "answer": "so\n#### 2"}) + "\n\n"
        + json.dumps({"problem": "Half of 1?", "solution": "It is $\\boxed{\\frac{1}{2}}$."}) + "\n"
        + json.dumps({"problem": "3*3?", "answer": "9", "unique_id": "p/3"}) + "\n"
    )
    tasks = load_dataset(str(good))
    assert [t.answer for t in tasks] == ["2", "\\frac{1}{2}", "9"]
    assert [t.task_id for t in tasks] == ["mixed:1", "mixed:3", "p/3"]
    env = gym.make("arl/math.dataset-v1", path=str(good))
    obs, info = env.reset(options={"task_id": "mixed:3"})
    assert info["task"] == "Half of 1?" and obs.endswith("\n\nHalf of 1?")
    *_, info = env.step("\\boxed{0.5}")
    assert info["success"]
    with pytest.raises(TaskLoadError, match="not found"):
        load_dataset(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"question": "q", "answer": "#### 1"}) + "\n{not json\n")
    with pytest.raises(TaskLoadError, match=":2:"):
        load_dataset(str(bad))
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"prompt": "x"}) + "\n")
    with pytest.raises(TaskLoadError, match="neither GSM8K form"):
        load_dataset(str(odd))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(TaskLoadError, match="no records"):
        load_dataset(str(empty))


def test_countdown_checker_rejects_unencodable_text() -> None:
    """Issue 9, item 6: a lone surrogate (or a NUL) is a wrong answer, not a UnicodeEncodeError."""
    from arl_envs.envs.math.tasks import check_countdown

    for expr in ("\udfff", "1 + \ud800", "1\x00+2"):
        ok, feedback = check_countdown(expr, [1, 2, 3], 6)
        assert ok is False and "could not parse" in feedback


@pytest.mark.parametrize("expr", ["1if 1else 2", "0x1for x in y", '"\\d" + 1', "3 4"])
def test_countdown_feedback_does_not_depend_on_the_warnings_filter(expr: str) -> None:
    """Text that makes the compiler warn (``invalid decimal literal``, an invalid escape) gets the same verdict
    under ``-W error`` as under the default filter, and no warning reaches the caller (it printed to stderr)."""
    import warnings

    from arl_envs.envs.math.tasks import check_countdown

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        default = check_countdown(expr, [1, 2, 3, 4], 3)
    assert seen == [] and default[0] is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_countdown(expr, [1, 2, 3, 4], 3) == default

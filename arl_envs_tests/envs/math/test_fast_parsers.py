"""The math envs' shortcuts give exactly the results of the general code they skip."""

from __future__ import annotations

import hashlib
import random

from arl_envs.core.actions import boxed_contents
from arl_envs.envs.math.env import reply_boxes
from arl_envs.envs.math.tasks import (
    _eval_ast_expression,
    _eval_plain_expression,
    check_countdown,
    countdown_task,
)


def test_countdown_tasks_unchanged_by_the_faster_generator() -> None:
    # Digest of 2,000 tasks made by the generator before it stopped calling random.sample (commit 168c040):
    # every task id must keep its task.
    h = hashlib.sha256()
    for n in (2, 3, 4, 5, 6):
        for s in range(400):
            t = countdown_task(s * 7919 + n, n)
            h.update(repr((t.task_id, t.question, t.answer, t.meta)).encode())
    assert h.hexdigest() == "970a4057366eb7aa5b451b873232a6f9ec03c093f165d88035e8d47d0b13a40e"


def test_plain_expression_parser_matches_ast() -> None:
    rng = random.Random(0)
    pieces = ["1", "2", "7", "10", "25", "0", "00", "07", "+", "-", "*", "/", "**", "//", "(", ")", " ", "  ", "3"]
    decided = 0
    for _ in range(20_000):
        expr = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12))).strip()
        quick = _eval_plain_expression(expr)
        if quick is not None:
            decided += 1
            assert quick == _eval_ast_expression(expr, expr), expr
    assert decided > 1_000
    for expr in ("(25 - 5) * 4", "100 / 8 * 2", "1 - 2 - 3", "2 * (3 + 4) / 7", "((((3))))", "8 / 3"):
        assert _eval_plain_expression(expr) == _eval_ast_expression(expr, expr)


def test_check_countdown_feedback_on_the_fast_path() -> None:
    assert check_countdown("(25 - 5) * 4", [25, 5, 4, 3], 80) == (True, "correct")
    assert check_countdown("25 * 4 / 3", [25, 5, 4, 3], 80) == (False, "the expression equals 100/3, not 80")
    assert check_countdown("25 + 25", [25, 5], 50)[1] == "uses numbers not available (or more often than given): [25]"
    assert check_countdown("5 / 0", [5, 0], 1) == (False, "division by zero")
    assert check_countdown("-5 + 10", [5, 10], 5)[1].startswith("only integers")


def test_reply_boxes_matches_boxed_contents() -> None:
    rng = random.Random(1)
    alphabet = ["\\boxed{", "\\fbox {", "\\boxed  {", "{", "}", "\\", "\\\\", "a", "1", " ", "\\{", "\\}", "\\boxed"]
    for _ in range(10_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        assert reply_boxes(text) == boxed_contents(text), text

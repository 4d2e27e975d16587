"""Math tasks: procedurally generated arithmetic, Countdown, and JSONL datasets (GSM8K / MATH form).

Every generated task is a pure function of a 62-bit sub-seed, so ``task_id`` (which encodes it) reproduces the
task exactly, independent of the env's RNG state.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from arl_envs.core.actions import last_boxed, parse_untrusted_python
from arl_envs.core.errors import TaskLoadError

#: The shipped default dataset: GSM8K test split (1,319 problems), MIT license, Cobbe et al. 2021.
GSM8K_TEST_PATH = Path(__file__).with_name("data") / "gsm8k_test.jsonl"
ARITHMETIC_KINDS = ("integer", "fraction", "linear", "modular", "word")
MIN_DIFFICULTY, MAX_DIFFICULTY = 1, 5
SUBSEED_BITS = 62


@dataclass(frozen=True)
class MathTask:
    """One math problem.

    Attributes:
        task_id: Stable id; ``reset(options={"task_id": ...})`` reproduces the task.
        question: Problem text shown to the agent.
        answer: Gold answer (plain text or LaTeX, no ``$``), graded with math-verify.
        meta: Extra task data (e.g. Countdown's ``numbers`` and ``target``, the expert's expression, and
            ``python``: a program printing the answer, used by the tool-use expert).
    """

    task_id: str
    question: str
    answer: str
    meta: dict[str, Any] = field(default_factory=dict)


def _frac_latex(q: Fraction) -> str:
    if q.denominator == 1:
        return str(q.numerator)
    sign = "-" if q < 0 else ""
    return f"{sign}\\frac{{{abs(q.numerator)}}}{{{q.denominator}}}"


def _frac_text(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


# ----------------------------------------------------------------------------- arithmetic
def _integer_expr(rng: random.Random, depth: int, hi: int) -> tuple[str, int]:
    if depth == 0:
        v = rng.randrange(1, hi + 1)
        return str(v), v
    left, lv = _integer_expr(rng, rng.randrange(0, depth), hi)
    right, rv = _integer_expr(rng, depth - 1, hi)
    op = "+-*"[rng.randrange(0, 3)]
    value = lv + rv if op == "+" else lv - rv if op == "-" else lv * rv
    text = f"({left} {op} {right})"
    return text, value


def _gen_integer(rng: random.Random, d: int) -> tuple[str, str, str]:
    text, value = _integer_expr(rng, d, 10 ** min(d, 3) if d > 1 else 9)
    return f"Compute {text[1:-1]}.", str(value), f"print({text[1:-1]})"


def _gen_fraction(rng: random.Random, d: int) -> tuple[str, str, str]:
    n_terms = d + 1
    hi = 4 + 3 * d
    total: Fraction | None = None
    parts: list[str] = []
    for i in range(n_terms):
        num, den = rng.randrange(1, hi), rng.randrange(2, hi)
        q = Fraction(num, den)
        if i == 0:
            total = q
            parts.append(f"{num}/{den}")
            continue
        op = "+-*"[rng.randrange(0, 3 if d >= 3 else 2)]
        assert total is not None
        total = total + q if op == "+" else total - q if op == "-" else total * q
        if op == "*" and len(parts) > 1:  # the text must evaluate left to right, as `total` does
            parts = ["(" + " ".join(parts) + ")"]
        parts.append(f"{op} {num}/{den}")
    assert total is not None
    code = "from fractions import Fraction as F\nprint(" + re.sub(r"(\d+)/(\d+)", r"F(\1, \2)", " ".join(parts)) + ")"
    return f"Compute {' '.join(parts)} and give the result as a fraction in lowest terms.", _frac_latex(total), code


def _gen_linear(rng: random.Random, d: int) -> tuple[str, str, str]:
    hi = 5 + 5 * d
    x = Fraction(rng.randrange(-hi, hi + 1), rng.randrange(1, 4) if d >= 4 else 1)
    a = rng.randrange(2, hi)
    c = rng.randrange(0, a) if d >= 2 else 0
    b = rng.randrange(-hi, hi + 1)
    e = (a - c) * x + b  # a x + b = c x + e  =>  e = (a - c) x + b
    if e.denominator != 1:  # make the constant an integer by scaling every coefficient
        k = e.denominator
        a, b, c, e = a * k, b * k, c * k, e * k
    left = f"{a}x {'+' if b >= 0 else '-'} {abs(b)}"
    right = f"{c}x + {int(e)}" if c else f"{int(e)}"
    code = f"from fractions import Fraction as F\nprint(F({int(e)} - ({b}), {a} - {c}))"
    return f"Solve for x: {left} = {right}.", _frac_latex(x), code


def _gen_modular(rng: random.Random, d: int) -> tuple[str, str, str]:
    m = rng.randrange(3, 10 + 20 * d)
    if d <= 2:
        a, b, c = (rng.randrange(10, 10 ** (d + 1)) for _ in range(3))
        return f"Compute ({a} * {b} + {c}) mod {m}.", str((a * b + c) % m), f"print(({a} * {b} + {c}) % {m})"
    base = rng.randrange(2, 50)
    exp = rng.randrange(10, 10 ** (d - 1))
    return f"Compute {base}^{exp} mod {m}.", str(pow(base, exp, m)), f"print(pow({base}, {exp}, {m}))"


_NAMES = ("Ava", "Ben", "Chloe", "Dev", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kofi", "Lena")
_ITEMS = ("apples", "marbles", "stickers", "books", "coins", "shells", "pencils", "cards")


def _gen_word(rng: random.Random, d: int) -> tuple[str, str, str]:
    name = _NAMES[rng.randrange(0, len(_NAMES))]
    item = _ITEMS[rng.randrange(0, len(_ITEMS))]
    count = rng.randrange(5, 20 * d)
    sentences = [f"{name} has {count} {item}."]
    for _ in range(d):
        kind = rng.randrange(0, 4)
        if kind == 0:
            k, n = rng.randrange(2, 6), rng.randrange(2, 4 + 2 * d)
            sentences.append(f"Then {name} buys {k} bags with {n} {item} in each bag.")
            count += k * n
        elif kind == 1 and count > 2:
            k = rng.randrange(1, count)
            sentences.append(f"Then {name} gives away {k} {item}.")
            count -= k
        elif kind == 2:
            sentences.append(f"Then {name}'s collection doubles.")
            count *= 2
        else:
            other = _NAMES[rng.randrange(0, len(_NAMES))]
            k = rng.randrange(1, 10 * d)
            sentences.append(f"Then {other} gives {name} {k} more {item}.")
            count += k
    sentences.append(f"How many {item} does {name} have now?")
    return " ".join(sentences), str(count), f"print({count})"


_ARITH_GENERATORS = {
    "integer": _gen_integer,
    "fraction": _gen_fraction,
    "linear": _gen_linear,
    "modular": _gen_modular,
    "word": _gen_word,
}


def arithmetic_task(subseed: int, difficulty: int, kind: str) -> MathTask:
    """Generate one arithmetic problem.

    Args:
        subseed: Task seed in ``[0, 2**62)``.
        difficulty: 1 (one operation, small numbers) to 5 (five steps, large numbers).
        kind: One of :data:`ARITHMETIC_KINDS`.

    Raises:
        ValueError: Unknown kind or difficulty out of range.
    """
    if kind not in _ARITH_GENERATORS:
        raise ValueError(f"unknown arithmetic kind {kind!r}; choose from {ARITHMETIC_KINDS}")
    if not MIN_DIFFICULTY <= difficulty <= MAX_DIFFICULTY:
        raise ValueError(f"difficulty must be in [{MIN_DIFFICULTY}, {MAX_DIFFICULTY}], got {difficulty}")
    rng = random.Random(subseed)
    question, answer, code = _ARITH_GENERATORS[kind](rng, difficulty)
    meta = {"kind": kind, "difficulty": difficulty, "python": code}
    return MathTask(f"{kind}-d{difficulty}-{subseed:x}", question, answer, meta)


def parse_arithmetic_id(task_id: str) -> tuple[str, int, int]:
    """``"linear-d3-1f2e"`` -> ``("linear", 3, 0x1f2e)``.

    Raises:
        TaskLoadError: Malformed id.
    """
    try:
        kind, d, seed = task_id.split("-")
        if kind not in ARITHMETIC_KINDS or not d.startswith("d"):
            raise ValueError
        return kind, int(d[1:]), int(seed, 16)
    except ValueError:
        raise TaskLoadError(f"bad arithmetic task id {task_id!r}; expected '<kind>-d<difficulty>-<hex seed>'") from None


# ----------------------------------------------------------------------------- countdown
COUNTDOWN_MAX_EXPR_CHARS = 200
_CD_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def countdown_task(subseed: int, num_numbers: int = 4, max_number: int = 99, max_target: int = 999) -> MathTask:
    """Generate a solvable Countdown instance.

    The Countdown numbers game (as used in TinyZero and small GRPO studies, e.g. Pan et al. 2025): reach
    ``target`` with ``+ - * /`` over the given numbers, each used at most once. The target is built from a
    random expression over all the numbers, so a solution exists (it is the expert's answer).

    Args:
        subseed: Task seed.
        num_numbers: How many numbers (2-6).
        max_number: Numbers are drawn from ``[1, max_number]``.
        max_target: Targets are positive integers up to this.

    Raises:
        ValueError: ``num_numbers`` outside [2, 6].
    """
    if not 2 <= num_numbers <= 6:
        raise ValueError(f"num_numbers must be in [2, 6], got {num_numbers}")
    rng = random.Random(subseed)
    # ``rng.randrange(a, b)`` is ``a + rng._randbelow(b - a)`` and ``rng.sample(range(n), 2)`` draws
    # ``_randbelow(n)`` then ``_randbelow(n - 1)`` (CPython's random.py): calling ``_randbelow`` directly draws the
    # very same numbers (every task id keeps its task: tested against a digest of the old generator's tasks)
    # without the wrappers' overhead, which was most of a Countdown step.
    below = rng._randbelow
    while True:
        nums = [1 + below(max_number) for _ in range(num_numbers)]
        # Values stay integers: division is only used when exact, subtraction never goes negative.
        items: list[tuple[str, int]] = [(str(n), n) for n in nums]
        while len(items) > 1:
            n_items = len(items)
            i, j = below(n_items), below(n_items - 1)
            if j == i:
                j = n_items - 1
            (ea, va), (eb, vb) = items[i], items[j]
            op = "+-*/"[below(4)]
            if op == "/" and (vb == 0 or va % vb):
                op = "+"
            if op == "-" and va < vb:
                (ea, va), (eb, vb) = (eb, vb), (ea, va)
            val = va + vb if op == "+" else va - vb if op == "-" else va * vb if op == "*" else va // vb
            items = [it for k, it in enumerate(items) if k not in (i, j)] + [(f"({ea} {op} {eb})", val)]
        expr, value = items[0]
        if 1 <= value <= max_target:
            expr = expr[1:-1] if expr.startswith("(") and expr.endswith(")") else expr
            question = (
                f"Using the numbers {nums}, write an arithmetic expression that equals {int(value)}. "
                "You may use + - * / and parentheses, and each number at most once (not all are required)."
            )
            return MathTask(
                f"countdown-{num_numbers}-{subseed:x}",
                question,
                str(int(value)),
                {"numbers": nums, "target": int(value), "solution": expr},
            )


#: Precedence of the Countdown operators when an expression is written out (higher binds tighter).
_CD_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def ordered_countdown_solution(numbers: list[int], target: int) -> str | None:
    """A solution that keeps the numbers in their given order, or None when no subsequence of them reaches it.

    The expert's canonical answer (:class:`~arl_envs.envs.math.env.CountdownEnv`): the longest subsequence of
    ``numbers`` (order kept, each used once) that reaches ``target`` with ``+ - * /`` (exact fractions, as
    :func:`check_countdown` evaluates), written with the fewest parentheses, then the fewest characters.
    For example ``[39, 88, 40, 37] -> 204`` gives ``39 + 88 + 40 + 37``. A dynamic programme over the
    contiguous runs of each subsequence keeps one expression per value (a heuristic for the parentheses count,
    never for correctness: every answer it returns is checked). Cost: about 3 ms for 4 numbers; it grows like
    the number of distinct values (6 numbers: about 0.3 s).

    Args:
        numbers: The task's numbers, in the order the task states them.
        target: The target value.

    Returns:
        The expression (``check_countdown(expr, numbers, target)`` holds), or None.
    """
    import itertools

    goal = Fraction(target)
    n = len(numbers)
    for size in range(n, 0, -1):
        best: tuple[int, int, str] | None = None
        for idx in itertools.combinations(range(n), size):
            seq = [numbers[i] for i in idx]
            # table[(i, j)]: value -> (parentheses, length, text, precedence) of seq[i:j]
            table: dict[tuple[int, int], dict[Fraction, tuple[int, int, str, int]]] = {
                (i, i + 1): {Fraction(v): (0, len(str(v)), str(v), 3)} for i, v in enumerate(seq)
            }
            for width in range(2, size + 1):
                for i in range(size - width + 1):
                    j, cell = i + width, {}
                    for k in range(i + 1, j):
                        for vl, (pl, _, el, rl) in table[(i, k)].items():
                            for vr, (pr, _, er, rr) in table[(k, j)].items():
                                for op, prec in _CD_PREC.items():
                                    if op == "/" and vr == 0:
                                        continue
                                    val = vl + vr if op == "+" else vl - vr if op == "-" else vl * vr if op == "*" else vl / vr
                                    wrap_l = rl < prec
                                    wrap_r = rr < prec or (rr == prec and op in "-/")
                                    text = f"{f'({el})' if wrap_l else el} {op} {f'({er})' if wrap_r else er}"
                                    cand = (pl + pr + wrap_l + wrap_r, len(text), text, prec)
                                    if val not in cell or cand[:2] < cell[val][:2]:
                                        cell[val] = cand
                    table[(i, j)] = cell
            hit = table[(0, size)].get(goal)
            if hit is not None and (best is None or hit[:2] < best[:2]):
                best = hit[:3]
        if best is not None and check_countdown(best[2], numbers, target)[0]:
            return best[2]
    return None


def check_countdown(expression: str, numbers: list[int], target: int) -> tuple[bool, str]:
    """Exactly verify a Countdown answer.

    The expression may use ``+ - * /`` (``\\times``, ``\\cdot``, ``\\div`` accepted), parentheses and integer
    literals; each literal must come from ``numbers`` (a multiset: each at most as often as given). Evaluated
    with exact fractions. An optional trailing ``= target`` is ignored.

    Returns:
        ``(correct, feedback)`` where feedback says what was wrong.
    """
    expr = expression.replace("\\times", "*").replace("\\cdot", "*").replace("\\div", "/").replace("×", "*")
    expr = expr.replace("\\left", "").replace("\\right", "").replace("{", "(").replace("}", ")")
    if "=" in expr:
        expr, _, rhs = expr.partition("=")
        if rhs.strip() not in ("", str(target)):
            return False, f"the right-hand side {rhs.strip()!r} is not the target {target}"
    if len(expr) > COUNTDOWN_MAX_EXPR_CHARS:
        return False, f"expression longer than {COUNTDOWN_MAX_EXPR_CHARS} characters"
    evaluated = _eval_plain_expression(expr.strip()) or _eval_ast_expression(expr.strip(), expression)
    if isinstance(evaluated, str):
        return False, evaluated
    value, used = evaluated
    return _countdown_verdict(value, used, numbers, target)


def _eval_ast_expression(expr: str, original: str) -> tuple[Fraction, list[int]] | str:
    """``(value, integer literals in order)`` of ``expr`` read with :mod:`ast`, or the feedback saying why not."""
    try:
        tree = parse_untrusted_python(expr, "eval")
    except SyntaxError:
        return f"could not parse {original!r} as an arithmetic expression"
    used: list[int] = []

    def ev(node: ast.AST) -> Fraction:
        if isinstance(node, ast.BinOp) and type(node.op) in _CD_OPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Div):
                if right == 0:
                    raise ZeroDivisionError
                return left / right
            return left + right if isinstance(node.op, ast.Add) else left - right if isinstance(node.op, ast.Sub) else left * right
        if isinstance(node, ast.Constant) and type(node.value) is int:
            used.append(node.value)
            return Fraction(node.value)
        raise ValueError(type(node).__name__)

    try:
        return ev(tree.body), used
    except ZeroDivisionError:
        return "division by zero"
    except ValueError as exc:
        return f"only integers, + - * / and parentheses are allowed (found {exc})"


def _countdown_verdict(
    value: int | Fraction, used: list[int], numbers: list[int], target: int
) -> tuple[bool, str]:
    """The last two checks of :func:`check_countdown`: the numbers used, then the value."""
    if any(used.count(x) > numbers.count(x) for x in set(used)):
        extra = Counter(used) - Counter(numbers)
        return False, f"uses numbers not available (or more often than given): {sorted(extra.elements())}"
    if value != target:
        return False, f"the expression equals {_frac_text(Fraction(value))}, not {target}"
    return True, "correct"


def _apply(op: str, left: int | Fraction, right: int | Fraction) -> int | Fraction:
    """``left op right`` exactly; an integral quotient stays an ``int``."""
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    quotient = Fraction(left, right) if type(left) is int and type(right) is int else left / right
    return quotient.numerator if quotient.denominator == 1 else quotient


_PLAIN_EXPR = re.compile(r"[0-9+\-*/() ]+")
_PLAIN_TOKEN = re.compile(r"\s*(?:([1-9][0-9]*|0)(?![0-9])|([-+*/()]))")


def _eval_plain_expression(expr: str) -> tuple[int | Fraction, list[int]] | None:
    """``(value, integer literals in order)`` of an expression over non-negative integer literals, binary
    ``+ - * /`` and parentheses (spaces only), evaluated exactly, with Python's precedence and left
    associativity; None for anything else (unary signs, ``**``, ``//``, leading zeros, division by zero, a syntax
    error), which :func:`check_countdown` then handles with :mod:`ast` as before. A hand-written recursive descent
    parser: about 10x faster than ``ast.parse`` plus the tree walk on a Countdown answer, same results."""
    if not _PLAIN_EXPR.fullmatch(expr):
        return None
    tokens: list[str | int] = []
    pos, n = 0, len(expr)
    while pos < n:
        m = _PLAIN_TOKEN.match(expr, pos)
        if m is None:
            if expr[pos:].strip() == "":
                break
            return None
        tokens.append(int(m[1]) if m[1] is not None else m[2])
        pos = m.end()
    used: list[int] = []
    k = 0

    def atom() -> int | Fraction | None:
        nonlocal k
        if k >= len(tokens):
            return None
        tok = tokens[k]
        k += 1
        if type(tok) is int:
            used.append(tok)
            return tok
        if tok == "(":
            inner = expression()
            if inner is None or k >= len(tokens) or tokens[k] != ")":
                return None
            k += 1
            return inner
        return None

    def chain(ops: tuple[str, str], operand: Callable[[], int | Fraction | None]) -> int | Fraction | None:
        """``operand (op operand)*`` for one precedence level, folded left to right."""
        nonlocal k
        left = operand()
        while left is not None and k < len(tokens) and tokens[k] in ops:
            op = tokens[k]
            k += 1
            right = operand()
            if right is None or (op == "/" and right == 0):
                return None
            left = _apply(op, left, right)
        return left

    def term() -> int | Fraction | None:
        return chain(("*", "/"), atom)

    def expression() -> int | Fraction | None:
        return chain(("+", "-"), term)

    try:
        value = expression()
    except RecursionError:
        return None
    if value is None or k != len(tokens):
        return None
    return value, used


def parse_countdown_id(task_id: str) -> tuple[int, int]:
    """``"countdown-4-1f2e"`` -> ``(4, 0x1f2e)``.

    Raises:
        TaskLoadError: Malformed id.
    """
    try:
        prefix, n, seed = task_id.split("-")
        if prefix != "countdown":
            raise ValueError
        return int(n), int(seed, 16)
    except ValueError:
        raise TaskLoadError(f"bad countdown task id {task_id!r}; expected 'countdown-<n>-<hex seed>'") from None


# ----------------------------------------------------------------------------- datasets
def gold_from_record(record: dict[str, Any]) -> tuple[str, str]:
    """Question and gold answer of a GSM8K-form or MATH-form record.

    * GSM8K form (Cobbe et al. 2021): ``question``, ``answer`` whose last line is ``#### <answer>``.
    * MATH form (Hendrycks et al. 2021): ``problem`` and either ``answer`` or ``solution`` containing ``\\boxed{}``.

    Raises:
        ValueError: Neither form, or no gold answer can be found.
    """
    if "question" in record and isinstance(record.get("answer"), str) and "####" in record["answer"]:
        gold = record["answer"].rsplit("####", 1)[1].strip()
        return str(record["question"]), gold.replace("$", "").strip()
    if "problem" in record:
        if isinstance(record.get("answer"), str) and record["answer"].strip():
            return str(record["problem"]), record["answer"].strip()
        boxed = last_boxed(str(record.get("solution", "")))
        if boxed:
            return str(record["problem"]), boxed
        raise ValueError("MATH-form record has no 'answer' and no \\boxed{} in 'solution'")
    raise ValueError("record is neither GSM8K form (question, answer with '####') nor MATH form (problem, solution)")


@lru_cache(maxsize=8)
def load_dataset(path: str) -> tuple[MathTask, ...]:
    """Load a JSONL math dataset (GSM8K or MATH form; forms may not be mixed per line, each line is detected).

    Task ids are the record's ``id`` / ``unique_id`` field when present, else ``<file stem>:<line number>``.
    Results are cached per path.

    Raises:
        TaskLoadError: Missing file, invalid JSON (with its line number), a record of neither form, or no records.
    """
    p = Path(path)
    if not p.is_file():
        raise TaskLoadError(f"math dataset not found: {p}")
    tasks: list[MathTask] = []
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("line is not a JSON object")
                question, gold = gold_from_record(record)
            except (json.JSONDecodeError, ValueError) as exc:
                raise TaskLoadError(f"{p}:{lineno}: {exc}") from None
            tid = str(record.get("id", record.get("unique_id", f"{p.stem}:{lineno}")))
            tasks.append(MathTask(tid, question, gold, {"source": str(p), "line": lineno}))
    if not tasks:
        raise TaskLoadError(f"math dataset {p} has no records")
    return tuple(tasks)


def new_subseed(rng: np.random.Generator) -> int:
    """Draw a task sub-seed from an env's RNG (``env.np_random``)."""
    return int(rng.integers(0, 2**SUBSEED_BITS))


__all__ = [
    "ARITHMETIC_KINDS",
    "GSM8K_TEST_PATH",
    "MathTask",
    "arithmetic_task",
    "check_countdown",
    "countdown_task",
    "gold_from_record",
    "load_dataset",
]

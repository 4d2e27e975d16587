"""The exact numeric fast path returns math-verify's verdict (or defers to it) on every shipped GSM8K answer."""

from __future__ import annotations

import logging

import pytest

from arl_envs.envs.math.grading import _verify_in_worker, numeric_verdict
from arl_envs.envs.math.tasks import GSM8K_TEST_PATH, load_dataset


def _commas(v: int) -> str:
    return f"{v:,}"


def answer_forms(gold: str) -> list[str]:
    """Correct and wrong ways to write an answer to the integer ``gold`` (which may carry thousands separators)."""
    v = int(gold.replace(",", ""))
    plain = str(v)
    return [
        # the same value, other forms
        plain,
        _commas(v),
        f"{plain}.0",
        f"{_commas(v)}.00",
        f"\\frac{{{2 * v}}}{{2}}",
        f"\\dfrac{{{-3 * v}}}{{-3}}",
        f"{4 * v}/4",
        f"+{plain}" if v >= 0 else f"-{-v}",
        f"\\boxed{{{plain}}}",
        f"{{{plain}}}",
        f"0{plain}" if v >= 0 else plain,
        # wrong values
        str(v + 1),
        str(v - 1),
        str(-v - 1),
        str(10 * v + 1),
        f"{plain}.5",
        f"{v - 1}.99",
        _commas(v + 1000),
        f"\\frac{{{v}}}{{2}}" if v else "\\frac{1}{2}",
        f"{2 * v + 1}/2",
        f"{_commas(abs(v) + 1)},000",
        f"{plain}.0001",
        # near a rounding boundary or not a plain number: must defer (math-verify decides, which is also checked)
        f"{plain}.0000004",
        f"{plain}\\%",
        f"\\${plain}",
        f"{plain},00",
    ]


def _math_verify(gold: str, pred: str) -> bool:
    """The worker's verdict (math-verify plus the exact-number correction), in this process."""
    if gold.strip() == pred.strip():
        return True
    return _verify_in_worker(gold, pred)


def _disagreements(pairs: list[tuple[str, str]]) -> tuple[list[tuple[str, str, bool, bool]], int]:
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    bad, decided = [], 0
    for gold, pred in pairs:
        fast = numeric_verdict(gold, pred)
        if fast is None:
            continue
        decided += 1
        slow = _math_verify(gold, pred)
        if fast != slow:
            bad.append((gold, pred, fast, slow))
    return bad, decided


def gsm8k_pairs(forms_per_answer: int | None = None) -> list[tuple[str, str]]:
    """(gold, pred) pairs over every shipped GSM8K answer, both ways round (the answer as gold and as prediction).

    With ``forms_per_answer``, each answer takes that many of its forms, rotating through the list so that every
    form is used about equally often over the file; None takes all of them.
    """
    pairs = []
    for i, task in enumerate(load_dataset(str(GSM8K_TEST_PATH))):
        forms = answer_forms(task.answer)
        if forms_per_answer is not None:
            forms = [forms[(i * forms_per_answer + j) % len(forms)] for j in range(forms_per_answer)]
        for k, form in enumerate(forms):
            pairs.append((task.answer, form) if (i + k) % 2 == 0 else (form, task.answer))
    return pairs


@pytest.mark.slow
def test_fast_path_agrees_with_math_verify_on_gsm8k() -> None:
    # Every answer, two of its 26 forms each (rotating: each form ~100 times); the full cross product (34,294
    # pairs, 0 disagreements) is `_disagreements(gsm8k_pairs())`, about 2 minutes.
    pairs = gsm8k_pairs(forms_per_answer=2)
    assert len(pairs) == 2 * 1319
    bad, decided = _disagreements(pairs)
    assert not bad, bad[:10]
    assert decided > 0.8 * len(pairs)  # the fast path does decide most plain numbers


CASES = [
    ("n=2, 3, 4", "n=1, 2, 3"),
    ("\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}"),
    ("1/2^99", "1/2^98"),
    ("0,1", "(0,1)"),
    ("115,000", "115000"),
    ("1234", "12,34"),
    ("13", "\\text{13}"),
    ("\\frac{3}{7}", "3/7"),
    ("\\frac{3}{7}", "6/14"),
    ("0.5", "\\frac{1}{2}"),
    ("0.5", ".5"),
    ("10", "100"),
    ("42", ""),
    ("5", "5,000"),
    ("5000", "5,000"),
    ("1000000", "1,000000"),
    ("-3", "\\frac{6}{-2}"),
    ("0.333333", "1/3"),
    ("0.3333", "1/3"),
    ("0.1", "0.1000001"),
    ("5", "5.0000004"),
    ("123456789012345678", "123456789012345678.0"),
    ("123456789012345678", "123456789012345679.0"),
    ("12345678901234567890", "12345678901234567891"),
    ("2", "4/0"),
    ("0", "-0"),
    ("1.5", "\\frac{3}{2}"),
]


@pytest.mark.parametrize("gold,pred", CASES + [(p, g) for g, p in CASES if p])
def test_fast_path_agrees_on_grading_cases(gold: str, pred: str) -> None:
    fast = numeric_verdict(gold, pred)
    if fast is not None:
        assert fast == _math_verify(gold, pred)


def test_fast_path_decides_plain_numbers_and_defers_the_rest() -> None:
    assert numeric_verdict("72", "73") is False
    assert numeric_verdict("1,234", "1234") is True
    assert numeric_verdict("\\frac{1}{2}", "0.5") is True
    assert numeric_verdict("\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}") is None
    assert numeric_verdict("5", "5.0000004") is None  # within math-verify's rounding: it decides
    assert numeric_verdict("x + 1", "1 + x") is None
    assert numeric_verdict("5", "9" * 100) is None  # too long to read


#: Thousands separators math-verify does not read as such: a leading-zero first group (``0,500`` is 0.5 to
#: math-verify), a ``+`` sign (``+1,000`` is not 1000 to math-verify) and commas inside bare braces (``{1,000}``
#: is a set). The fast path must defer on these.
SEPARATOR_TRAPS = [
    ("500", "0,500"),
    ("0.5", "0,500"),
    ("1000", "01,000"),
    ("1000000", "01,000,000"),
    ("500", "0,500.0"),
    ("1000", "{1,000}"),
    ("1,000", "{1,000}"),
    ("1000", "{1,000.0}"),
    ("1000", "\\boxed{{1,000}}"),
    ("31828", "+31,828"),
    ("+31828", "+31,828"),
    ("23000.5", "+23,000.5"),
    ("1000", "\\boxed{+1,000}"),
]


@pytest.mark.parametrize("gold,pred", SEPARATOR_TRAPS + [(p, g) for g, p in SEPARATOR_TRAPS])
def test_fast_path_agrees_on_separator_traps(gold: str, pred: str) -> None:
    fast = numeric_verdict(gold, pred)
    if fast is not None:
        assert fast == _math_verify(gold, pred)


#: Equal decimals written with more digits than a 53-bit float holds: math-verify parses them at different
#: precisions and may call them different, so the fast path must not call them equal on its own.
LONG_DECIMAL_TRAPS = [
    ("9705983555144.33519", "9705983555144.335190"),
    ("4818140767830675.68", "4818140767830675.680"),
    ("+7476525773.74881", "+7476525773.748810"),
    ("-37518835601748.941", "-37518835601748.9410"),
]


@pytest.mark.parametrize("gold,pred", LONG_DECIMAL_TRAPS + [(p, g) for g, p in LONG_DECIMAL_TRAPS])
def test_fast_path_agrees_on_long_equal_decimals(gold: str, pred: str) -> None:
    fast = numeric_verdict(gold, pred)
    if fast is not None:
        assert fast == _math_verify(gold, pred)

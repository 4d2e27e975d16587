"""Arithmetic answers must be one computed number: repeating the question's expression used to score 1."""

from __future__ import annotations

import re

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.envs.math.grading import number_answer_error
from arl_envs.vector import make_vec

EXPRESSION = "the answer must be one number, not an expression"


def _question_expression(task_text: str) -> str:
    m = re.match(r"Compute (.*?)(?: and give the result as a fraction in lowest terms)?\.$", task_text)
    assert m is not None, task_text
    return m.group(1)


@pytest.mark.parametrize("kind", ["integer", "fraction"])
@pytest.mark.parametrize("difficulty", [1, 3, 5])
def test_echoing_the_question_scores_zero_and_the_expert_still_scores(kind: str, difficulty: int) -> None:
    env = gym.make("arl/math.arithmetic-v1", difficulty=difficulty, kinds=[kind])
    for seed in range(5):
        _, info = env.reset(seed=seed)
        echo = _question_expression(info["task"])
        obs, reward, term, trunc, info = env.step(f"The final answer is \\boxed{{{echo}}}")
        assert reward == 0.0 and term and not trunc and not info["success"]
        assert EXPRESSION in obs
        env.reset(seed=seed)
        _, reward, *_, info = env.step(env.unwrapped.expert_action())
        assert reward == 1.0 and info["success"]


@pytest.mark.parametrize(
    ("answer", "exact", "refused"),
    [
        ("7", False, None),
        ("-1,000", False, None),
        ("7.0", False, None),
        ("7.5", True, "not a decimal"),
        ("7/2", True, None),
        ("-\\frac{7}{2}", True, None),
        ("\\frac{14}{4}", False, "lowest terms"),
        ("14/2", False, "lowest terms"),
        ("x = -3", False, None),
        ("$\\frac{7}{2}$", True, None),
        ("8 apples", False, None),
        ("4 + 3", False, EXPRESSION),
        ("(4+3)", False, EXPRESSION),
        ("3 \\times 7", False, EXPRESSION),
        ("11/6 + 13/3", True, EXPRESSION),
        ("2^3", False, EXPRESSION),
        # one numeral, but a computation: digit-free constants stand in for the other numbers
        ("4 + \\lceil e \\rceil", False, EXPRESSION),
        ("\\frac{21}{\\lfloor\\pi\\rfloor}", False, EXPRESSION),
        ("\\lfloor \\pi e \\rfloor", False, EXPRESSION),
        ("\\sqrt{49}", False, EXPRESSION),
        ("7 × ⌈π⌉", False, EXPRESSION),
        ("|-7|", False, EXPRESSION),
        ("44 \\text{ cards}", False, None),
        ("\\$44", False, None),
        ("\\textbf{-3}", False, None),
        ("x = 11 apples.", False, None),
    ],
)
def test_number_answer_error_cases(answer: str, exact: bool, refused: str | None) -> None:
    got = number_answer_error(answer, exact=exact)
    if refused is None:
        assert got is None
    else:
        assert got is not None and refused in got


def test_fraction_task_wants_lowest_terms_and_no_decimal() -> None:
    env = gym.make("arl/math.arithmetic-v1", difficulty=1, kinds=["fraction"])
    for seed in range(40):
        env.reset(seed=seed)
        gold = env.unwrapped.task.answer
        if "frac" in gold:
            break
    num, den = (int(x) for x in re.findall(r"\d+", gold))
    sign = "-" if gold.startswith("-") else ""
    for reply, reason in ((f"{sign}{2 * num}/{2 * den}", "lowest terms"), (f"{sign}{num / den:.6f}", "decimal")):
        env.reset(seed=seed)
        obs, reward, *_ = env.step(f"\\boxed{{{reply}}}")
        assert reward == 0.0 and reason in obs
    env.reset(seed=seed)
    assert env.step(f"\\boxed{{{sign}{num}/{den}}}")[1] == 1.0


def test_batched_grading_applies_the_same_rule() -> None:
    vec = make_vec("arl/math.arithmetic-v1", 2, difficulty=2, kinds=["integer"])
    _, infos = vec.reset(seed=0)
    tasks = [env.unwrapped.task for env in vec.envs]
    actions = [f"\\boxed{{{_question_expression(tasks[0].question)}}}", f"\\boxed{{{tasks[1].answer}}}"]
    assert vec.envs[0].unwrapped.grading_request(actions[0]) is None  # refused before any grading call
    _, rewards, *_ = vec.step(actions)
    assert list(rewards) == [0.0, 1.0]
    vec.close()


def test_tool_env_on_arithmetic_tasks_refuses_the_echo_too() -> None:
    env = gym.make("arl/math.tool-v1", source_kwargs={"difficulty": 2, "kinds": ["integer"]})
    _, info = env.reset(seed=1)
    obs, reward, *_ = env.step(f"\\boxed{{{_question_expression(env.unwrapped.task.question)}}}")
    assert reward == 0.0 and EXPRESSION in obs
    env.close()


_TWO, _ONE = r"\lfloor e \rfloor", r"\lceil \frac{e}{\pi} \rceil"


def _digit_free(n: int) -> str:
    """``n >= 1`` written without a digit (binary Horner over floor/ceil of e and pi)."""
    if n == 1:
        return _ONE
    return f"{_TWO} \\cdot ({_digit_free(n // 2)})" + (f" + {_ONE}" if n % 2 else "")


def test_the_echo_with_digit_free_numbers_scores_zero() -> None:
    """Reward hack: the question's expression with every numeral but one rewritten digit-free (``4 + 3`` ->
    ``4 + \\lceil\\frac{e}{\\pi}\\rceil + ...``) passed the one-numeral check and the grader found it equal."""
    env = gym.make("arl/math.arithmetic-v1", difficulty=2, kinds=["integer"])
    for seed in range(3):
        _, info = env.reset(seed=seed)
        numerals = iter(range(10**6))

        def encode(m: re.Match[str]) -> str:
            value = int(m.group(0))
            return m.group(0) if next(numerals) == 0 else f"({_digit_free(value) if value else f'{_ONE} - {_ONE}'})"

        echo = re.sub(r"[0-9]+", encode, _question_expression(info["task"])).replace("*", "\\cdot ")
        obs, reward, *_, info = env.step(f"\\boxed{{{echo}}}")
        assert reward == 0.0 and not info["success"] and EXPRESSION in obs, echo

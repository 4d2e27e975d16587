"""A generated training set of function- and program-writing tasks (so training never sees HumanEval).

Each *family* is a parameterised problem: a seed draws its parameters (a shift, a base, a modulus, words...)
and its test inputs; ``difficulty`` (1-3) picks a harder variant of the rule (more cases to handle, a
composition, edge cases). A task is identified by ``gen/<family>/<difficulty>/<seed>`` and regenerated from it
exactly (``random.Random`` seeded with that string, which is stable across processes and platforms).

Every family writes its reference solution as source code; expected values are computed by executing that
reference on the host (our own code, never model-written), so the tests and the reference cannot disagree, and
the test suite checks each reference through the real sandbox harness. Program families (``mode="program"``)
read stdin and print; their outputs are compared exactly and in order.

Modules: :mod:`~arl_envs.envs.code.generated.spec` (what a family produces, shared sizes), one module per family
(:mod:`~arl_envs.envs.code.generated.caesar` ... :mod:`~arl_envs.envs.code.generated.eve`), and this one: the
family table, the task builder and the id parser.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.code.generated.base import fam_base
from arl_envs.envs.code.generated.brackets import fam_brackets
from arl_envs.envs.code.generated.caesar import fam_caesar
from arl_envs.envs.code.generated.digit_filter import fam_digit_filter
from arl_envs.envs.code.generated.eve import fam_eve
from arl_envs.envs.code.generated.fizz import fam_fizz
from arl_envs.envs.code.generated.intervals import fam_intervals
from arl_envs.envs.code.generated.primes import fam_primes
from arl_envs.envs.code.generated.rotate import fam_rotate
from arl_envs.envs.code.generated.run_length import fam_run_length
from arl_envs.envs.code.generated.running import fam_running
from arl_envs.envs.code.generated.spec import (
    DIFFICULTIES,
    LETTERS,
    MAX_SEED,
    N_HIDDEN,
    N_VISIBLE,
    WORDS,
    Spec,
    dedent_source,
    random_word,
)
from arl_envs.envs.code.generated.word_freq import fam_word_freq
from arl_envs.envs.code.generated.yes_no import fam_yes_no
from arl_envs.envs.code.isolated import run_program
from arl_envs.envs.code.tasks import CodeTask, TestCase


#: Family name -> generator(rng, difficulty) -> Spec.
FAMILIES: dict[str, Callable[[random.Random, int], Spec]] = {
    "caesar": fam_caesar,
    "run_length": fam_run_length,
    "digit_filter": fam_digit_filter,
    "rotate": fam_rotate,
    "primes": fam_primes,
    "word_freq": fam_word_freq,
    "brackets": fam_brackets,
    "intervals": fam_intervals,
    "base": fam_base,
    "running": fam_running,
    "fizz": fam_fizz,
    "yes_no": fam_yes_no,
    "eve": fam_eve,
}


# ----------------------------------------------------------------------------------------------- tasks
def _reference_function(source: str, name: str) -> Callable[..., Any]:
    ns: dict[str, Any] = {"__name__": "arl_reference"}
    exec(compile(source, "<reference>", "exec"), ns)  # noqa: S102 - our own generated reference, not model code
    return ns[name]


def _reference_output(source: str, stdin: str) -> str:
    return run_program(source, stdin)  # private stdin/stdout: nothing process-wide is swapped


def generated_task(family: str, difficulty: int, seed: int) -> CodeTask:
    """The generated task ``gen/<family>/<difficulty>/<seed>``.

    Raises:
        TaskLoadError: Unknown family or difficulty.
    """
    if family not in FAMILIES:
        raise TaskLoadError(f"unknown generated family {family!r}; known: {sorted(FAMILIES)}")
    if difficulty not in DIFFICULTIES:
        raise TaskLoadError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty}")
    rng = random.Random(f"{family}/{difficulty}/{seed}")
    spec = FAMILIES[family](rng, difficulty)
    cases: list[TestCase] = []
    seen: set[str] = set()
    unique_inputs = []
    for inp in spec.inputs:  # a hidden test never repeats a visible one
        key = repr(inp)
        if key not in seen:
            seen.add(key)
            unique_inputs.append(inp)
    spec = Spec(spec.description, spec.signature, spec.entry_point, spec.reference, unique_inputs, spec.mode)
    if spec.mode == "program":
        for stdin in spec.inputs:
            cases.append(TestCase("stdio", stdin=stdin, expected=_reference_output(spec.reference, stdin)))
    else:
        fn = _reference_function(spec.reference, spec.entry_point)
        for args in spec.inputs:
            expected = fn(*[_copy(a) for a in args])
            cases.append(TestCase("call", fn=spec.entry_point, args=tuple(args), expected=expected))
    visible, hidden = tuple(cases[:N_VISIBLE]), tuple(cases[N_VISIBLE:])
    prompt = _prompt(spec, visible[0])
    return CodeTask(
        task_id=f"gen/{family}/{difficulty}/{seed}",
        prompt=prompt,
        entry_point=spec.entry_point,
        reference=spec.reference,
        visible=visible,
        hidden=hidden,
        mode=spec.mode,
        source="generated",
        difficulty=difficulty,
    )


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _prompt(spec: Spec, example: TestCase) -> str:
    if spec.mode == "program":
        return (f"{spec.description}\n\nExample input:\n{example.stdin}\nExample output:\n{example.expected}"
                "\nWrite the complete program (it reads standard input and prints to standard output).")
    return (f"Write a Python function:\n\n    {spec.signature}\n\n{spec.description}\n\nExample: "
            f"{example.describe()} should return {example.expected_text()}.")


def parse_generated_id(task_id: str) -> tuple[str, int, int]:
    """``"gen/<family>/<difficulty>/<seed>"`` -> ``(family, difficulty, seed)``.

    Raises:
        TaskLoadError: Malformed id.
    """
    parts = task_id.split("/")
    if len(parts) != 4 or parts[0] != "gen":
        raise TaskLoadError(f"not a generated task id (gen/<family>/<difficulty>/<seed>): {task_id!r}")
    try:
        return parts[1], int(parts[2]), int(parts[3])
    except ValueError:
        raise TaskLoadError(f"malformed generated task id {task_id!r}") from None


__all__ = [
    "DIFFICULTIES", "FAMILIES", "LETTERS", "MAX_SEED", "N_HIDDEN", "N_VISIBLE", "WORDS", "Spec", "dedent_source",
    "fam_base", "fam_brackets", "fam_caesar", "fam_digit_filter", "fam_eve", "fam_fizz", "fam_intervals",
    "fam_primes", "fam_rotate", "fam_run_length", "fam_running", "fam_word_freq", "fam_yes_no", "generated_task",
    "parse_generated_id", "random_word",
]

"""What a generated code task family produces (:class:`Spec`), the shared sizes and word pools, and two helpers.

The families (one module each in this package) draw their parameters and inputs from a seeded
:class:`random.Random` and return a :class:`Spec`; :func:`arl_envs.envs.code.generated.generated_task` turns it
into a :class:`~arl_envs.envs.code.tasks.CodeTask`.
"""

from __future__ import annotations

import random
import textwrap
from dataclasses import dataclass
from typing import Any

#: Difficulties of generated tasks.
DIFFICULTIES = (1, 2, 3)
#: Visible and hidden tests per generated task.
N_VISIBLE = 3
N_HIDDEN = 8
#: Seeds of generated tasks are drawn below this bound.
MAX_SEED = 2**31 - 1
#: Alphabet and word pool the families draw from.
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORDS = (
    "apple", "river", "stone", "cloud", "ember", "maple", "orbit", "pixel", "quartz", "tiger", "violet", "willow",
    "amber", "cedar", "delta", "falcon", "glade", "harbor", "iris", "jade", "kite", "lotus", "mango", "nova",
)


@dataclass(frozen=True)
class Spec:
    """What a family produces for one (seed, difficulty).

    Attributes:
        description: The task statement (plain text, no solution hints beyond the rule).
        signature: ``def f(x: int) -> str`` line (function families) or ``""`` (programs).
        entry_point: Function name (``""`` for programs).
        reference: Reference solution source.
        inputs: Argument tuples (functions) or stdin texts (programs); the first N_VISIBLE are visible.
        mode: ``"module"`` or ``"program"``.
    """

    description: str
    signature: str
    entry_point: str
    reference: str
    inputs: list[Any]
    mode: str = "module"


def dedent_source(text: str) -> str:
    """A reference solution written indented in a family's module, dedented and ending in one newline."""
    return textwrap.dedent(text).strip() + "\n"


def random_word(rng: random.Random, lo: int = 3, hi: int = 8, alphabet: str = LETTERS) -> str:
    """A random string of ``lo``-``hi`` characters of ``alphabet``."""
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))

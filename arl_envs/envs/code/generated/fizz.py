"""The ``fizz`` family of generated code tasks (``gen/fizz/<difficulty>/<seed>``).

FizzBuzz with drawn divisors and words (difficulty 1); over a range, with a drawn digit rule (2), and negatives (3).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_fizz(rng: random.Random, d: int) -> Spec:
    a, b = rng.choice([(2, 3), (2, 5), (3, 4), (3, 5), (4, 5), (3, 7), (5, 7), (4, 7), (2, 7)])
    if rng.random() < 0.5:
        a, b = b, a
    wa, wb = rng.sample(["Fizz", "Buzz", "Bang", "Pop", "Zap"], 2)
    if d == 1:
        desc = (f"Return a list of strings for the numbers 1..n: '{wa}' for multiples of {a}, '{wb}' for multiples "
                f"of {b}, '{wa}{wb}' for multiples of both, otherwise the number itself as a string.")
        ref = f"""
        def fizz(n: int) -> list:
            out = []
            for i in range(1, n + 1):
                s = ("{wa}" if i % {a} == 0 else "") + ("{wb}" if i % {b} == 0 else "")
                out.append(s or str(i))
            return out
        """
        inputs = [(rng.randint(1, 40),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [(0,)]
        return Spec(desc, "def fizz(n: int) -> list", "fizz", dedent_source(ref), inputs)
    digit = rng.randint(1, 9)
    desc = (f"Return a list of strings for the numbers lo..hi (inclusive): a number gets '{wa}' if it is a multiple "
            f"of {a} or contains the digit {digit}, then '{wb}' if it is a multiple of {b} (both words may appear, "
            f"in that order); a number with neither word is written as itself."
            + (" Negative numbers count their digits without the sign." if d == 3 else ""))
    ref = f"""
    def fizz(lo: int, hi: int) -> list:
        out = []
        for i in range(lo, hi + 1):
            s = ("{wa}" if i % {a} == 0 or "{digit}" in str(abs(i)) else "") + ("{wb}" if i % {b} == 0 else "")
            out.append(s or str(i))
        return out
    """
    lo_min = 1 if d == 2 else -30
    inputs = []
    for _ in range(N_VISIBLE + N_HIDDEN - 1):
        lo = rng.randint(lo_min, 60)
        inputs.append((lo, lo + rng.randint(0, 15)))
    inputs.append((5, 4))
    return Spec(desc, "def fizz(lo: int, hi: int) -> list", "fizz", dedent_source(ref), inputs)

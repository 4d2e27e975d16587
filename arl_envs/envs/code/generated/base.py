"""The ``base`` family of generated code tasks (``gen/base/<difficulty>/<seed>``).

An integer in a drawn base (difficulty 1), in a base given as an argument up to 16 (2) or 36 with negatives (3).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_base(rng: random.Random, d: int) -> Spec:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if d == 1:
        b = rng.choice([2, 3, 5, 8])
        desc = f"Return the base-{b} representation of the non-negative integer `n` as a string of digits (0 -> '0')."
        ref = f"""
        def to_base(n: int) -> str:
            if n == 0:
                return "0"
            out = ""
            while n:
                out = str(n % {b}) + out
                n //= {b}
            return out
        """
        sig = "def to_base(n: int) -> str"
        inputs = [(rng.randint(0, 10**5),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [(0,)]
    else:
        top = 16 if d == 2 else 36
        desc = (f"Return the representation of the integer `n` in base `b` (2 <= b <= {top}) as a string, using the "
                f"digits 0-9 then lowercase letters a-{digits[top - 1]}; 0 is '0'"
                + ("." if d == 2 else ", and a negative number gets a leading '-'."))
        ref = f"""
        def to_base(n: int, b: int) -> str:
            digits = "{digits}"
            if n == 0:
                return "0"
            sign = "-" if n < 0 else ""
            n = abs(n)
            out = ""
            while n:
                out = digits[n % b] + out
                n //= b
            return sign + out
        """
        sig = "def to_base(n: int, b: int) -> str"
        lo = 0 if d == 2 else -(10**9)
        inputs = [(rng.randint(lo, 10**9), rng.randint(2, top)) for _ in range(N_VISIBLE + N_HIDDEN - 2)]
        inputs += [(0, 7), (top - 1, top)]
    return Spec(desc, sig, "to_base", dedent_source(ref), inputs)

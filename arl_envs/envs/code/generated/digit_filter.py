"""The ``digit_filter`` family of generated code tasks (``gen/digit_filter/<difficulty>/<seed>``).

Keep the numbers whose digit sum is divisible by a drawn modulus (difficulty 2 adds negatives and drops duplicates;
3 sorts by digit sum).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_digit_filter(rng: random.Random, d: int) -> Spec:
    m = rng.randint(2, 9)

    def nums(neg: bool) -> list[int]:
        return [rng.randint(-999 if neg else 0, 9999) for _ in range(rng.randint(0, 9))]

    if d == 1:
        desc = f"Return the numbers of `nums` (non-negative integers) whose digit sum is divisible by {m}, in their original order."
        ref = f"""
        def pick(nums: list) -> list:
            return [n for n in nums if sum(int(c) for c in str(n)) % {m} == 0]
        """
        inputs = [(nums(False),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)]
    elif d == 2:
        desc = (f"Return the numbers of `nums` (integers, possibly negative) whose digit sum (of the absolute value) "
                f"is divisible by {m}, in their original order, without duplicates (keep the first occurrence).")
        ref = f"""
        def pick(nums: list) -> list:
            seen = set()
            out = []
            for n in nums:
                if sum(int(c) for c in str(abs(n))) % {m} == 0 and n not in seen:
                    seen.add(n)
                    out.append(n)
            return out
        """
        inputs = [(nums(True) + nums(True)[:3] * 2,) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)]
    else:
        desc = (f"Return the numbers of `nums` (integers, possibly negative) whose digit sum (of the absolute value) "
                f"is divisible by {m}, sorted by digit sum ascending, then by value ascending.")
        ref = f"""
        def pick(nums: list) -> list:
            def ds(n):
                return sum(int(c) for c in str(abs(n)))
            return sorted((n for n in nums if ds(n) % {m} == 0), key=lambda n: (ds(n), n))
        """
        inputs = [(nums(True) + nums(True),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)]
    return Spec(desc, "def pick(nums: list) -> list", "pick", dedent_source(ref), inputs)

"""The ``running`` family of generated code tasks (``gen/running/<difficulty>/<seed>``).

Prefix sums modulo a drawn number (difficulty 1), sliding-window maxima (2), min/max of the non-negative windows
(3).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_running(rng: random.Random, d: int) -> Spec:
    def lst() -> list[int]:
        return [rng.randint(-50, 50) for _ in range(rng.randint(0, 10))]

    if d == 1:
        m = rng.randint(5, 20)
        desc = f"Return the list of prefix sums of `nums` taken modulo {m} (Python's %, so results are in 0..{m - 1})."
        ref = f"""
        def running(nums: list) -> list:
            out, total = [], 0
            for x in nums:
                total += x
                out.append(total % {m})
            return out
        """
        return Spec(desc, "def running(nums: list) -> list", "running", dedent_source(ref),
                    [(lst(),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)])
    w = rng.randint(2, 4)
    if d == 2:
        desc = (f"Return the maximum of every window of {w} consecutive elements of `nums`, left to right "
                f"(an empty list when `nums` has fewer than {w} elements).")
        ref = f"""
        def running(nums: list) -> list:
            return [max(nums[i:i + {w}]) for i in range(len(nums) - {w} + 1)]
        """
        return Spec(desc, "def running(nums: list) -> list", "running", dedent_source(ref),
                    [(lst(),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([1],)])
    desc = (f"Return a list of (minimum, maximum) tuples, one for every window of {w} consecutive elements of "
            f"`nums` whose sum is non-negative, left to right.")
    ref = f"""
    def running(nums: list) -> list:
        out = []
        for i in range(len(nums) - {w} + 1):
            win = nums[i:i + {w}]
            if sum(win) >= 0:
                out.append((min(win), max(win)))
        return out
    """
    return Spec(desc, "def running(nums: list) -> list", "running", dedent_source(ref),
                [(lst(),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)])

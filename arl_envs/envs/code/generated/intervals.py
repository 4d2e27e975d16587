"""The ``intervals`` family of generated code tasks (``gen/intervals/<difficulty>/<seed>``).

Integers covered by half-open intervals (difficulty 1); merging overlapping (2) or touching (3) closed intervals.
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_intervals(rng: random.Random, d: int) -> Spec:
    def ivs() -> list[list[int]]:
        out = []
        for _ in range(rng.randint(0, 7)):
            s = rng.randint(0, 40)
            out.append([s, s + rng.randint(0, 8)])
        return out

    if d == 1:
        desc = ("`intervals` is a list of [start, end] pairs of integers (start <= end), meaning the half-open range "
                "start <= x < end. Return how many integers are covered by at least one interval.")
        ref = """
        def covered(intervals: list) -> int:
            points = set()
            for s, e in intervals:
                points.update(range(s, e))
            return len(points)
        """
        return Spec(desc, "def covered(intervals: list) -> int", "covered", dedent_source(ref),
                    [(ivs(),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)])
    touching = d == 3
    desc = ("Merge overlapping intervals: `intervals` is a list of [start, end] pairs (start <= end, closed ranges). "
            "Return the merged intervals as a list of [start, end] lists sorted by start. Intervals that overlap "
            + ("or touch (end + 1 == next start) " if touching else "(share at least one point) ")
            + "are merged into one.")
    gap = 1 if touching else 0
    ref = f"""
    def merge(intervals: list) -> list:
        out = []
        for s, e in sorted(intervals):
            if out and s <= out[-1][1] + {gap}:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return out
    """
    inputs = [(ivs(),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [([],), ([[1, 2], [3, 4]],)]
    return Spec(desc, "def merge(intervals: list) -> list", "merge", dedent_source(ref), inputs)

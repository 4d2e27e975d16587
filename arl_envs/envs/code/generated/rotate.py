"""The ``rotate`` family of generated code tasks (``gen/rotate/<difficulty>/<seed>``).

Rotate a list by a drawn amount (difficulty 2 takes the amount and direction as an argument; 3 rotates row i of a
list of lists by i).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_rotate(rng: random.Random, d: int) -> Spec:
    def lst() -> list[int]:
        return [rng.randint(0, 99) for _ in range(rng.randint(0, 9))]

    if d == 1:
        k = rng.randint(1, 4)
        desc = f"Rotate the list `items` left by {k} positions (the first {k} elements move to the end, wrapping around when the list is shorter). Return a new list."
        ref = f"""
        def rotate(items: list) -> list:
            if not items:
                return []
            k = {k} % len(items)
            return items[k:] + items[:k]
        """
        sig = "def rotate(items: list) -> list"
        inputs = [(lst(),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [([],), ([7],)]
    elif d == 2:
        desc = ("Rotate the list `items` by `k` positions: to the right for positive `k`, to the left for negative "
                "`k`; `k` may be larger than the list. Return a new list (an empty list stays empty).")
        ref = """
        def rotate(items: list, k: int) -> list:
            if not items:
                return []
            k %= len(items)
            return items[-k:] + items[:-k] if k else list(items)
        """
        sig = "def rotate(items: list, k: int) -> list"
        inputs = [(lst(), rng.randint(-20, 20)) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [([], 3), ([1, 2, 3], 0)]
    else:
        desc = ("`rows` is a list of lists. Return a new list of lists where row i is rotated right by i positions "
                "(row 0 unchanged, row 1 by one, ...), wrapping around; empty rows stay empty.")
        ref = """
        def rotate(rows: list) -> list:
            out = []
            for i, row in enumerate(rows):
                if not row:
                    out.append([])
                    continue
                k = i % len(row)
                out.append(row[-k:] + row[:-k] if k else list(row))
            return out
        """
        sig = "def rotate(rows: list) -> list"
        inputs = [([lst() for _ in range(rng.randint(0, 5))],) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)]
    return Spec(desc, sig, "rotate", dedent_source(ref), inputs)

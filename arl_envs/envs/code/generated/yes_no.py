"""The ``yes_no`` family of generated code tasks (``gen/yes_no/<difficulty>/<seed>``).

A program answering T queries with one YES/NO line each (divisibility, palindromes, digit sums).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_yes_no(rng: random.Random, d: int) -> Spec:
    """Program: T queries, one YES/NO line each (order matters: the lines-reordered hack must fail)."""
    k = rng.randint(3, 9)
    if d == 1:
        rule = f"YES if the number is divisible by {k}, otherwise NO"
        check = f"n % {k} == 0"
    elif d == 2:
        rule = "YES if the number reads the same forwards and backwards (a palindrome, no sign), otherwise NO"
        check = "str(n) == str(n)[::-1]"
    else:
        rule = f"YES if the number's digit sum is divisible by {k} and the number is even, otherwise NO"
        check = f"sum(map(int, str(n))) % {k} == 0 and n % 2 == 0"
    desc = (f"Write a program. The first line of standard input holds T; each of the next T lines holds a "
            f"non-negative integer. For each number print one line: {rule}. Output is compared exactly.")
    ref = f"""
    import sys

    data = sys.stdin.read().split()
    t = int(data[0])
    for tok in data[1:1 + t]:
        n = int(tok)
        print("YES" if {check} else "NO")
    """

    def inp() -> str:
        pool = [rng.randint(0, 999) for _ in range(rng.randint(1, 8))]
        if d == 2:
            pool += [int(str(x) + str(x)[::-1]) for x in pool[:2]]
        rng.shuffle(pool)
        return f"{len(pool)}\n" + "\n".join(map(str, pool)) + "\n"

    return Spec(desc, "", "", dedent_source(ref), [inp() for _ in range(N_VISIBLE + N_HIDDEN)], mode="program")

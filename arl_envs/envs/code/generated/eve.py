"""The ``eve`` family of generated code tasks (``gen/eve/<difficulty>/<seed>``).

A program in the style of AtCoder ABC115 A ("Christmas Eve Eve Eve") with a drawn holiday and day.
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_eve(rng: random.Random, d: int) -> Spec:
    """Program in the style of AtCoder ABC115 A ("Christmas Eve Eve Eve"), with a drawn holiday and day."""
    holiday, day = rng.choice([("Christmas", 25), ("Midsummer", 24), ("Festival", 20), ("Harvest", 30)])
    span = 7 if d == 1 else 3 + d
    if d == 1:
        desc = (f"Write a program. Standard input holds one integer D ({day - span} <= D <= {day}). Print "
                f"'{holiday}' if D = {day}, '{holiday} Eve' if D = {day - 1}, '{holiday} Eve Eve' if D = {day - 2}, "
                "and so on (one more ' Eve' per day before), on one line. Output is compared exactly.")
        ref = f"""
        d = int(input())
        print("{holiday}" + " Eve" * ({day} - d))
        """
        inputs = [f"{day - i}\n" for i in range(span + 1)]  # every valid day once: 3 visible, 5 hidden
    else:
        desc = (f"Write a program. The first line holds T, then T lines each hold an integer D. For each D print "
                f"one line: '{holiday}' followed by ' Eve' repeated ({day} - D) times when {day - span} <= D <= "
                f"{day}; otherwise print 'Not {holiday} yet' if D < {day - span} and 'After {holiday}' if D > {day}. "
                "Output is compared exactly.")
        ref = f"""
        import sys

        data = sys.stdin.read().split()
        for tok in data[1:1 + int(data[0])]:
            d = int(tok)
            if d > {day}:
                print("After {holiday}")
            elif d < {day - span}:
                print("Not {holiday} yet")
            else:
                print("{holiday}" + " Eve" * ({day} - d))
        """

        def inp() -> str:
            ds = [rng.randint(day - span - 3, day + 2) for _ in range(rng.randint(1, 6))]
            return f"{len(ds)}\n" + "\n".join(map(str, ds)) + "\n"

        inputs = [inp() for _ in range(N_VISIBLE + N_HIDDEN)]
    rng.shuffle(inputs)
    return Spec(desc, "", "", dedent_source(ref), inputs, mode="program")

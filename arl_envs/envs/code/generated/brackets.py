"""The ``brackets`` family of generated code tasks (``gen/brackets/<difficulty>/<seed>``).

Balanced brackets over one, three or four bracket kinds; difficulty 3 returns the index of the first error.
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_brackets(rng: random.Random, d: int) -> Spec:
    pairs = {1: "()", 2: "()[]{}", 3: "()[]{}<>"}[d]
    opens, closes = pairs[0::2], pairs[1::2]

    def balanced() -> str:
        out, stack = [], []
        for _ in range(rng.randint(0, 12)):
            if stack and rng.random() < 0.5:
                out.append(closes[opens.index(stack.pop())])
            else:
                c = rng.choice(opens)
                stack.append(c)
                out.append(c)
        out += [closes[opens.index(c)] for c in reversed(stack)]
        return "".join(out)

    def sample() -> str:
        s = balanced()
        if s and rng.random() < 0.6:
            i = rng.randrange(len(s))
            s = s[:i] + rng.choice(pairs) + s[i + 1:]
        if d >= 2 and rng.random() < 0.3:
            i = rng.randint(0, len(s))
            s = s[:i] + rng.choice("ab ") + s[i:]
        return s

    mapping = ", ".join(f"'{o}' with '{c}'" for o, c in zip(opens, closes))
    if d < 3:
        desc = (f"Return True if the brackets in `s` are balanced and properly nested (pairs: {mapping}); characters "
                "that are not brackets are ignored.")
        ref = f"""
        def check(s: str) -> bool:
            pairs = {dict(zip(closes, opens))!r}
            stack = []
            for c in s:
                if c in {opens!r}:
                    stack.append(c)
                elif c in pairs:
                    if not stack or stack.pop() != pairs[c]:
                        return False
            return not stack
        """
        sig = "def check(s: str) -> bool"
    else:
        desc = (f"Brackets pair up as {mapping}. Return the index of the first character of `s` at which the "
                "bracket sequence is wrong (a closing bracket that does not match, or has nothing to close); if "
                "all brackets match but some stay open, return len(s); if the string is balanced, return -1.")
        ref = f"""
        def check(s: str) -> int:
            pairs = {dict(zip(closes, opens))!r}
            stack = []
            for i, c in enumerate(s):
                if c in {opens!r}:
                    stack.append(c)
                elif c in pairs:
                    if not stack or stack.pop() != pairs[c]:
                        return i
            return len(s) if stack else -1
        """
        sig = "def check(s: str) -> int"
    inputs = [(sample(),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), (closes[0] + opens[0],)]
    return Spec(desc, sig, "check", dedent_source(ref), inputs)

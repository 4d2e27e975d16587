"""The ``caesar`` family of generated code tasks (``gen/caesar/<difficulty>/<seed>``).

Shift the letters of a text by a drawn key (difficulty 2 keeps case and other characters; 3 shifts even positions
forward and odd positions backward).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import LETTERS, N_HIDDEN, N_VISIBLE, Spec, dedent_source, random_word


def fam_caesar(rng: random.Random, d: int) -> Spec:
    k = rng.randint(1, 25)
    if d == 1:
        desc = f"Shift every lowercase letter of `text` forward by {k} places in the alphabet, wrapping from 'z' to 'a'. The input contains only lowercase letters."
        ref = f"""
        def shift(text: str) -> str:
            return "".join(chr((ord(c) - 97 + {k}) % 26 + 97) for c in text)
        """
        inputs = [(random_word(rng, 3, 10),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("xyz",)]
    elif d == 2:
        desc = (f"Shift every letter of `text` forward by {k} places in the alphabet, wrapping around and keeping its "
                "case; every other character (digits, spaces, punctuation) stays unchanged.")
        ref = f"""
        def shift(text: str) -> str:
            out = []
            for c in text:
                if "a" <= c <= "z":
                    out.append(chr((ord(c) - 97 + {k}) % 26 + 97))
                elif "A" <= c <= "Z":
                    out.append(chr((ord(c) - 65 + {k}) % 26 + 65))
                else:
                    out.append(c)
            return "".join(out)
        """
        alpha = LETTERS + LETTERS.upper() + " ,.!?0123456789"
        inputs = [(random_word(rng, 4, 14, alpha),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("Zz 9!",)]
    else:
        desc = (f"Shift the letters of `text` by {k} places, keeping case: letters at even positions (0, 2, 4, ... "
                f"counting every character) move forward by {k}, letters at odd positions move backward by {k}, "
                "wrapping around the alphabet. Other characters stay unchanged.")
        ref = f"""
        def shift(text: str) -> str:
            out = []
            for i, c in enumerate(text):
                step = {k} if i % 2 == 0 else -{k}
                if "a" <= c <= "z":
                    out.append(chr((ord(c) - 97 + step) % 26 + 97))
                elif "A" <= c <= "Z":
                    out.append(chr((ord(c) - 65 + step) % 26 + 65))
                else:
                    out.append(c)
            return "".join(out)
        """
        alpha = LETTERS + LETTERS.upper() + " -_"
        inputs = [(random_word(rng, 4, 14, alpha),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("aZ-b",)]
    return Spec(desc, "def shift(text: str) -> str", "shift", dedent_source(ref), inputs)

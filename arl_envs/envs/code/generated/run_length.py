"""The ``run_length`` family of generated code tasks (``gen/run_length/<difficulty>/<seed>``).

Run-length encode a text (difficulty 2 writes no count for runs of one; 3 decodes instead).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import LETTERS, N_HIDDEN, N_VISIBLE, Spec, dedent_source


def fam_run_length(rng: random.Random, d: int) -> Spec:
    def runs_text(alphabet: str) -> str:
        return "".join(rng.choice(alphabet) * rng.randint(1, 4 if d < 3 else 12) for _ in range(rng.randint(1, 6)))

    alphabet = "".join(rng.sample(LETTERS, 4))
    if d == 1:
        desc = ("Run-length encode `text`: replace every maximal run of a repeated character by the character "
                "followed by the run length, e.g. 'aaabcc' -> 'a3b1c2'. The empty string encodes to ''.")
        ref = """
        def encode(text: str) -> str:
            out = []
            i = 0
            while i < len(text):
                j = i
                while j < len(text) and text[j] == text[i]:
                    j += 1
                out.append(text[i] + str(j - i))
                i = j
            return "".join(out)
        """
        name, sig = "encode", "def encode(text: str) -> str"
        inputs = [(runs_text(alphabet),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [("",)]
    elif d == 2:
        desc = ("Run-length encode `text`: replace every maximal run of a repeated character by the character "
                "followed by the run length, but write no number for runs of length 1, e.g. 'aaabcc' -> 'a3bc2'.")
        ref = """
        def encode(text: str) -> str:
            out = []
            i = 0
            while i < len(text):
                j = i
                while j < len(text) and text[j] == text[i]:
                    j += 1
                out.append(text[i] + (str(j - i) if j - i > 1 else ""))
                i = j
            return "".join(out)
        """
        name, sig = "encode", "def encode(text: str) -> str"
        inputs = [(runs_text(alphabet),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("abc",)]
    else:
        desc = ("Decode a run-length encoded string: each letter is followed by an optional decimal count (which "
                "may have several digits); a letter without a count appears once. E.g. 'a3bc12' -> 'aaab' + "
                "'c' * 12.")
        ref = """
        def decode(code: str) -> str:
            out = []
            i = 0
            while i < len(code):
                ch = code[i]
                j = i + 1
                while j < len(code) and code[j].isdigit():
                    j += 1
                out.append(ch * (int(code[i + 1:j]) if j > i + 1 else 1))
                i = j
            return "".join(out)
        """
        name, sig = "decode", "def decode(code: str) -> str"

        def enc(t: str) -> str:
            out, i = [], 0
            while i < len(t):
                j = i
                while j < len(t) and t[j] == t[i]:
                    j += 1
                out.append(t[i] + (str(j - i) if j - i > 1 else ""))
                i = j
            return "".join(out)

        inputs = [(enc(runs_text(alphabet)),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("z10y",)]
    return Spec(desc, sig, name, dedent_source(ref), inputs)

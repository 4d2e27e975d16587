"""The ``word_freq`` family of generated code tasks (``gen/word_freq/<difficulty>/<seed>``).

The most frequent word of a text (difficulty 1), the top k with counts (2), case- and punctuation-insensitive (3).
"""

from __future__ import annotations

import random

from arl_envs.envs.code.generated.spec import N_HIDDEN, N_VISIBLE, WORDS, Spec, dedent_source


def fam_word_freq(rng: random.Random, d: int) -> Spec:
    vocab = rng.sample(WORDS, 6)

    def sentence(punct: bool, case: bool) -> str:
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 14))]
        if case:
            words = [w.capitalize() if rng.random() < 0.3 else w for w in words]
        if punct:
            words = [w + rng.choice(["", "", ",", ".", "!"]) for w in words]
        return " ".join(words)

    k = rng.randint(2, 4)
    if d == 1:
        desc = ("Return the most frequent word of `text` (words are separated by single spaces); on a tie, return "
                "the alphabetically smallest of the tied words.")
        ref = """
        def top(text: str) -> str:
            counts = {}
            for w in text.split(" "):
                counts[w] = counts.get(w, 0) + 1
            return min(counts, key=lambda w: (-counts[w], w))
        """
        inputs = [(sentence(False, False),) for _ in range(N_VISIBLE + N_HIDDEN)]
        return Spec(desc, "def top(text: str) -> str", "top", dedent_source(ref), inputs)
    if d == 2:
        desc = (f"Return the {k} most frequent words of `text` (separated by whitespace) as a list of (word, count) "
                f"tuples, most frequent first, ties broken alphabetically; fewer than {k} if there are fewer distinct words.")
        ref = f"""
        def top(text: str) -> list:
            counts = {{}}
            for w in text.split():
                counts[w] = counts.get(w, 0) + 1
            return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:{k}]
        """
        inputs = [(sentence(False, False),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [("",)]
        return Spec(desc, "def top(text: str) -> list", "top", dedent_source(ref), inputs)
    desc = (f"Return the {k} most frequent words of `text` as a list of (word, count) tuples, most frequent first, "
            "ties broken alphabetically. Words are separated by whitespace, compared case-insensitively (report "
            "them in lower case), and the punctuation marks , . ! at the end of a word are not part of it.")
    ref = f"""
    def top(text: str) -> list:
        counts = {{}}
        for w in text.split():
            w = w.rstrip(",.!").lower()
            if w:
                counts[w] = counts.get(w, 0) + 1
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:{k}]
    """
    inputs = [(sentence(True, True),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [("Apple, apple. APPLE!",)]
    return Spec(desc, "def top(text: str) -> list", "top", dedent_source(ref), inputs)

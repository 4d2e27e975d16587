"""A generated training set of function- and program-writing tasks (so training never sees HumanEval).

Each *family* is a parameterised problem: a seed draws its parameters (a shift, a base, a modulus, words...)
and its test inputs; ``difficulty`` (1-3) picks a harder variant of the rule (more cases to handle, a
composition, edge cases). A task is identified by ``gen/<family>/<difficulty>/<seed>`` and regenerated from it
exactly (``random.Random`` seeded with that string, which is stable across processes and platforms).

Every family writes its reference solution as source code; expected values are computed by executing that
reference on the host (our own code, never model-written), so the tests and the reference cannot disagree, and
the test suite checks each reference through the real sandbox harness. Program families (``mode="program"``)
read stdin and print; their outputs are compared exactly and in order.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.code.isolated import run_program
from arl_envs.envs.code.tasks import CodeTask, TestCase

#: Difficulties of generated tasks.
DIFFICULTIES = (1, 2, 3)
#: Visible and hidden tests per generated task.
N_VISIBLE = 3
N_HIDDEN = 8
#: Seeds of generated tasks are drawn below this bound.
MAX_SEED = 2**31 - 1
LETTERS = "abcdefghijklmnopqrstuvwxyz"
WORDS = (
    "apple", "river", "stone", "cloud", "ember", "maple", "orbit", "pixel", "quartz", "tiger", "violet", "willow",
    "amber", "cedar", "delta", "falcon", "glade", "harbor", "iris", "jade", "kite", "lotus", "mango", "nova",
)


@dataclass(frozen=True)
class Spec:
    """What a family produces for one (seed, difficulty).

    Attributes:
        description: The task statement (plain text, no solution hints beyond the rule).
        signature: ``def f(x: int) -> str`` line (function families) or ``""`` (programs).
        entry_point: Function name (``""`` for programs).
        reference: Reference solution source.
        inputs: Argument tuples (functions) or stdin texts (programs); the first N_VISIBLE are visible.
        mode: ``"module"`` or ``"program"``.
    """

    description: str
    signature: str
    entry_point: str
    reference: str
    inputs: list[Any]
    mode: str = "module"


def _src(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def _word(rng: random.Random, lo: int = 3, hi: int = 8, alphabet: str = LETTERS) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


# ----------------------------------------------------------------------------------------------- families
def fam_caesar(rng: random.Random, d: int) -> Spec:
    k = rng.randint(1, 25)
    if d == 1:
        desc = f"Shift every lowercase letter of `text` forward by {k} places in the alphabet, wrapping from 'z' to 'a'. The input contains only lowercase letters."
        ref = f"""
        def shift(text: str) -> str:
            return "".join(chr((ord(c) - 97 + {k}) % 26 + 97) for c in text)
        """
        inputs = [(_word(rng, 3, 10),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("xyz",)]
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
        inputs = [(_word(rng, 4, 14, alpha),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("Zz 9!",)]
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
        inputs = [(_word(rng, 4, 14, alpha),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [("",), ("aZ-b",)]
    return Spec(desc, "def shift(text: str) -> str", "shift", _src(ref), inputs)


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
    return Spec(desc, sig, name, _src(ref), inputs)


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
    return Spec(desc, "def pick(nums: list) -> list", "pick", _src(ref), inputs)


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
    return Spec(desc, sig, "rotate", _src(ref), inputs)


def fam_primes(rng: random.Random, d: int) -> Spec:
    if d == 1:
        desc = "Return True if `n` is a prime number and False otherwise (`n` may be 0, 1 or negative)."
        ref = """
        def is_prime(n: int) -> bool:
            if n < 2:
                return False
            i = 2
            while i * i <= n:
                if n % i == 0:
                    return False
                i += 1
            return True
        """
        inputs = [(rng.randint(2, 5000),) for _ in range(N_VISIBLE + N_HIDDEN - 3)] + [(1,), (0,), (7919,)]
        return Spec(desc, "def is_prime(n: int) -> bool", "is_prime", _src(ref), inputs)
    if d == 2:
        q = rng.randint(3, 9)
        r = rng.randint(1, q - 1)
        desc = f"Return the list of primes p with lo <= p <= hi and p % {q} == {r}, in increasing order."
        ref = f"""
        def primes(lo: int, hi: int) -> list:
            out = []
            for n in range(max(lo, 2), hi + 1):
                if all(n % p for p in range(2, int(n ** 0.5) + 1)) and n % {q} == {r}:
                    out.append(n)
            return out
        """
        inputs = []
        for _ in range(N_VISIBLE + N_HIDDEN - 1):
            lo = rng.randint(-5, 300)
            inputs.append((lo, lo + rng.randint(0, 200)))
        inputs.append((10, 5))
        return Spec(desc, "def primes(lo: int, hi: int) -> list", "primes", _src(ref), inputs)
    desc = "Return the n-th prime number, counting from n = 1 (the 1st prime is 2). n is at most 3000."
    ref = """
    def nth_prime(n: int) -> int:
        limit = 30000
        sieve = bytearray([1]) * (limit + 1)
        sieve[0] = sieve[1] = 0
        for i in range(2, int(limit ** 0.5) + 1):
            if sieve[i]:
                sieve[i * i::i] = bytearray(len(sieve[i * i::i]))
        return [i for i, is_p in enumerate(sieve) if is_p][n - 1]
    """
    inputs = [(rng.randint(1, 3000),) for _ in range(N_VISIBLE + N_HIDDEN - 2)] + [(1,), (3000,)]
    return Spec(desc, "def nth_prime(n: int) -> int", "nth_prime", _src(ref), inputs)


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
        return Spec(desc, "def top(text: str) -> str", "top", _src(ref), inputs)
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
        return Spec(desc, "def top(text: str) -> list", "top", _src(ref), inputs)
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
    return Spec(desc, "def top(text: str) -> list", "top", _src(ref), inputs)


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
    return Spec(desc, sig, "check", _src(ref), inputs)


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
        return Spec(desc, "def covered(intervals: list) -> int", "covered", _src(ref),
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
    return Spec(desc, "def merge(intervals: list) -> list", "merge", _src(ref), inputs)


def fam_base(rng: random.Random, d: int) -> Spec:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if d == 1:
        b = rng.choice([2, 3, 5, 8])
        desc = f"Return the base-{b} representation of the non-negative integer `n` as a string of digits (0 -> '0')."
        ref = f"""
        def to_base(n: int) -> str:
            if n == 0:
                return "0"
            out = ""
            while n:
                out = str(n % {b}) + out
                n //= {b}
            return out
        """
        sig = "def to_base(n: int) -> str"
        inputs = [(rng.randint(0, 10**5),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [(0,)]
    else:
        top = 16 if d == 2 else 36
        desc = (f"Return the representation of the integer `n` in base `b` (2 <= b <= {top}) as a string, using the "
                f"digits 0-9 then lowercase letters a-{digits[top - 1]}; 0 is '0'"
                + ("." if d == 2 else ", and a negative number gets a leading '-'."))
        ref = f"""
        def to_base(n: int, b: int) -> str:
            digits = "{digits}"
            if n == 0:
                return "0"
            sign = "-" if n < 0 else ""
            n = abs(n)
            out = ""
            while n:
                out = digits[n % b] + out
                n //= b
            return sign + out
        """
        sig = "def to_base(n: int, b: int) -> str"
        lo = 0 if d == 2 else -(10**9)
        inputs = [(rng.randint(lo, 10**9), rng.randint(2, top)) for _ in range(N_VISIBLE + N_HIDDEN - 2)]
        inputs += [(0, 7), (top - 1, top)]
    return Spec(desc, sig, "to_base", _src(ref), inputs)


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
        return Spec(desc, "def running(nums: list) -> list", "running", _src(ref),
                    [(lst(),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)])
    w = rng.randint(2, 4)
    if d == 2:
        desc = (f"Return the maximum of every window of {w} consecutive elements of `nums`, left to right "
                f"(an empty list when `nums` has fewer than {w} elements).")
        ref = f"""
        def running(nums: list) -> list:
            return [max(nums[i:i + {w}]) for i in range(len(nums) - {w} + 1)]
        """
        return Spec(desc, "def running(nums: list) -> list", "running", _src(ref),
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
    return Spec(desc, "def running(nums: list) -> list", "running", _src(ref),
                [(lst(),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [([],)])


def fam_fizz(rng: random.Random, d: int) -> Spec:
    a, b = rng.choice([(2, 3), (2, 5), (3, 4), (3, 5), (4, 5), (3, 7), (5, 7), (4, 7), (2, 7)])
    if rng.random() < 0.5:
        a, b = b, a
    wa, wb = rng.sample(["Fizz", "Buzz", "Bang", "Pop", "Zap"], 2)
    if d == 1:
        desc = (f"Return a list of strings for the numbers 1..n: '{wa}' for multiples of {a}, '{wb}' for multiples "
                f"of {b}, '{wa}{wb}' for multiples of both, otherwise the number itself as a string.")
        ref = f"""
        def fizz(n: int) -> list:
            out = []
            for i in range(1, n + 1):
                s = ("{wa}" if i % {a} == 0 else "") + ("{wb}" if i % {b} == 0 else "")
                out.append(s or str(i))
            return out
        """
        inputs = [(rng.randint(1, 40),) for _ in range(N_VISIBLE + N_HIDDEN - 1)] + [(0,)]
        return Spec(desc, "def fizz(n: int) -> list", "fizz", _src(ref), inputs)
    digit = rng.randint(1, 9)
    desc = (f"Return a list of strings for the numbers lo..hi (inclusive): a number gets '{wa}' if it is a multiple "
            f"of {a} or contains the digit {digit}, then '{wb}' if it is a multiple of {b} (both words may appear, "
            f"in that order); a number with neither word is written as itself."
            + (" Negative numbers count their digits without the sign." if d == 3 else ""))
    ref = f"""
    def fizz(lo: int, hi: int) -> list:
        out = []
        for i in range(lo, hi + 1):
            s = ("{wa}" if i % {a} == 0 or "{digit}" in str(abs(i)) else "") + ("{wb}" if i % {b} == 0 else "")
            out.append(s or str(i))
        return out
    """
    lo_min = 1 if d == 2 else -30
    inputs = []
    for _ in range(N_VISIBLE + N_HIDDEN - 1):
        lo = rng.randint(lo_min, 60)
        inputs.append((lo, lo + rng.randint(0, 15)))
    inputs.append((5, 4))
    return Spec(desc, "def fizz(lo: int, hi: int) -> list", "fizz", _src(ref), inputs)


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

    return Spec(desc, "", "", _src(ref), [inp() for _ in range(N_VISIBLE + N_HIDDEN)], mode="program")


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
    return Spec(desc, "", "", _src(ref), inputs, mode="program")


#: Family name -> generator(rng, difficulty) -> Spec.
FAMILIES: dict[str, Callable[[random.Random, int], Spec]] = {
    "caesar": fam_caesar,
    "run_length": fam_run_length,
    "digit_filter": fam_digit_filter,
    "rotate": fam_rotate,
    "primes": fam_primes,
    "word_freq": fam_word_freq,
    "brackets": fam_brackets,
    "intervals": fam_intervals,
    "base": fam_base,
    "running": fam_running,
    "fizz": fam_fizz,
    "yes_no": fam_yes_no,
    "eve": fam_eve,
}


# ----------------------------------------------------------------------------------------------- tasks
def _reference_function(source: str, name: str) -> Callable[..., Any]:
    ns: dict[str, Any] = {"__name__": "arl_reference"}
    exec(compile(source, "<reference>", "exec"), ns)  # noqa: S102 - our own generated reference, not model code
    return ns[name]


def _reference_output(source: str, stdin: str) -> str:
    return run_program(source, stdin)  # private stdin/stdout: nothing process-wide is swapped


def generated_task(family: str, difficulty: int, seed: int) -> CodeTask:
    """The generated task ``gen/<family>/<difficulty>/<seed>``.

    Raises:
        TaskLoadError: Unknown family or difficulty.
    """
    if family not in FAMILIES:
        raise TaskLoadError(f"unknown generated family {family!r}; known: {sorted(FAMILIES)}")
    if difficulty not in DIFFICULTIES:
        raise TaskLoadError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty}")
    rng = random.Random(f"{family}/{difficulty}/{seed}")
    spec = FAMILIES[family](rng, difficulty)
    cases: list[TestCase] = []
    seen: set[str] = set()
    unique_inputs = []
    for inp in spec.inputs:  # a hidden test never repeats a visible one
        key = repr(inp)
        if key not in seen:
            seen.add(key)
            unique_inputs.append(inp)
    spec = Spec(spec.description, spec.signature, spec.entry_point, spec.reference, unique_inputs, spec.mode)
    if spec.mode == "program":
        for stdin in spec.inputs:
            cases.append(TestCase("stdio", stdin=stdin, expected=_reference_output(spec.reference, stdin)))
    else:
        fn = _reference_function(spec.reference, spec.entry_point)
        for args in spec.inputs:
            expected = fn(*[_copy(a) for a in args])
            cases.append(TestCase("call", fn=spec.entry_point, args=tuple(args), expected=expected))
    visible, hidden = tuple(cases[:N_VISIBLE]), tuple(cases[N_VISIBLE:])
    prompt = _prompt(spec, visible[0])
    return CodeTask(
        task_id=f"gen/{family}/{difficulty}/{seed}",
        prompt=prompt,
        entry_point=spec.entry_point,
        reference=spec.reference,
        visible=visible,
        hidden=hidden,
        mode=spec.mode,
        source="generated",
        difficulty=difficulty,
    )


def _copy(value: Any) -> Any:
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _prompt(spec: Spec, example: TestCase) -> str:
    if spec.mode == "program":
        return (f"{spec.description}\n\nExample input:\n{example.stdin}\nExample output:\n{example.expected}"
                "\nWrite the complete program (it reads standard input and prints to standard output).")
    return (f"Write a Python function:\n\n    {spec.signature}\n\n{spec.description}\n\nExample: "
            f"{example.describe()} should return {example.expected_text()}.")


def parse_generated_id(task_id: str) -> tuple[str, int, int]:
    """``"gen/<family>/<difficulty>/<seed>"`` -> ``(family, difficulty, seed)``.

    Raises:
        TaskLoadError: Malformed id.
    """
    parts = task_id.split("/")
    if len(parts) != 4 or parts[0] != "gen":
        raise TaskLoadError(f"not a generated task id (gen/<family>/<difficulty>/<seed>): {task_id!r}")
    try:
        return parts[1], int(parts[2]), int(parts[3])
    except ValueError:
        raise TaskLoadError(f"malformed generated task id {task_id!r}") from None

"""Repository templates of ``arl/code.repo-v1``: small Python packages with parameters and bug sites.

A template is a package (a few modules, relative imports only) whose sources contain ``@@name@@``
placeholders filled from the seed (thresholds, rates, words), a list of public functions with argument
generators (the test suite calls them with plain values), and *bug sites*: an exact snippet of one module and
the buggy replacement, with its kind (``off_by_one``, ``wrong_operator``, ``missing_case``, ``wrong_default``).
Each snippet occurs exactly once in its module (checked by the tests), so the expert's fix is the reverse
replacement.
"""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

#: Kinds of injected bugs.
BUG_KINDS = ("off_by_one", "wrong_operator", "missing_case", "wrong_default")


@dataclass(frozen=True)
class BugSite:
    """One injectable bug.

    Attributes:
        name: Short id, unique in its template (part of the task id).
        module: Module file relative to the package, e.g. ``"pricing.py"``.
        original: Exact snippet of the correct source (after placeholders are filled).
        buggy: Its replacement.
        kind: One of :data:`BUG_KINDS`.
    """

    name: str
    module: str
    original: str
    buggy: str
    kind: str


@dataclass(frozen=True)
class FunctionSpec:
    """A public function the tests call.

    Attributes:
        module: Module name inside the package (``"pricing"``).
        name: Function name.
        gen: ``gen(rng) -> tuple of args`` (plain values).
    """

    module: str
    name: str
    gen: Callable[[random.Random], tuple[Any, ...]]


@dataclass(frozen=True)
class RepoTemplate:
    """A package template.

    Attributes:
        name: Template id.
        package: Import name of the package.
        summary: One line for the README.
        modules: ``{file name: source with @@placeholders@@}``.
        params: ``params(rng) -> {placeholder: value}`` (values are inserted with ``repr`` unless str-typed
            placeholders end in ``_s``, inserted verbatim).
        functions: Functions the tests call.
        bugs: Injectable bugs.
    """

    name: str
    package: str
    summary: str
    modules: dict[str, str]
    params: Callable[[random.Random], dict[str, Any]]
    functions: tuple[FunctionSpec, ...]
    bugs: tuple[BugSite, ...] = field(default_factory=tuple)


def _d(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def fill(source: str, params: dict[str, Any]) -> str:
    """Replace ``@@name@@`` placeholders (``repr`` of the value; names ending in ``_s`` verbatim)."""
    for key, value in params.items():
        source = source.replace(f"@@{key}@@", str(value) if key.endswith("_s") else repr(value))
    if "@@" in source:
        raise ValueError(f"unfilled placeholder in template source: {source[source.index('@@'):][:40]!r}")
    return source


# ----------------------------------------------------------------------------------------------- inventory
_INV_MODELS = _d('''
    """Items of the inventory: plain dicts with a name, a unit price (in cents) and a quantity."""


    def make_item(name, price, qty=1):
        """An item dict; the name is normalised to lower case without surrounding spaces."""
        return {"name": name.strip().lower(), "price": int(price), "qty": int(qty)}


    def restock(item, amount):
        """A copy of ``item`` with ``amount`` more units (negative amounts are ignored)."""
        if amount < 0:
            amount = 0
        return dict(item, qty=item["qty"] + amount)
''')
_INV_PRICING = _d('''
    """Prices, discounts and totals (all amounts in integer cents)."""

    from .models import make_item

    BULK_THRESHOLD = @@bulk_threshold@@
    BULK_RATE_PERCENT = @@bulk_rate@@


    def line_total(item):
        """Price of a line: unit price times quantity, with the bulk discount from BULK_THRESHOLD units on."""
        total = item["price"] * item["qty"]
        if item["qty"] >= BULK_THRESHOLD:
            total -= total * BULK_RATE_PERCENT // 100
        return total


    def total_value(items):
        """Sum of the line totals of ``items`` (0 for no items)."""
        total = 0
        for item in items:
            total += line_total(item)
        return total


    def apply_discount(price, percent=@@discount@@):
        """``price`` reduced by ``percent`` percent, rounded down to whole cents; never below 0."""
        if percent >= 100:
            return 0
        return price * (100 - percent) // 100


    def parse_items(rows):
        """Items from ``(name, price, qty)`` rows."""
        return [make_item(name, price, qty) for name, price, qty in rows]
''')
_INV_REPORT = _d('''
    """Reports over item lists."""

    from .pricing import line_total


    def low_stock(items, threshold=@@low_stock@@):
        """Names of items with fewer than ``threshold`` units, sorted alphabetically."""
        return sorted(item["name"] for item in items if item["qty"] < threshold)


    def most_valuable(items, n=2):
        """The ``n`` item names with the highest line totals, highest first (ties by name)."""
        ranked = sorted(items, key=lambda item: (-line_total(item), item["name"]))
        return [item["name"] for item in ranked[:n]]


    def summary(items):
        """``{"items": number of items, "units": total quantity, "empty": names with qty 0}``."""
        return {
            "items": len(items),
            "units": sum(item["qty"] for item in items),
            "empty": [item["name"] for item in items if item["qty"] == 0],
        }
''')


def _inv_items(rng: random.Random) -> list[dict[str, Any]]:
    names = rng.sample(["bolt", "nut", "gear", "spring", "valve", "hinge", "clamp", "rivet", "washer", "pin"], rng.randint(0, 6))
    return [{"name": n, "price": rng.randint(1, 500), "qty": rng.choice([0, 1, 2, 3, 5, 9, 10, 11, 12, 20, 25])} for n in names]


INVENTORY = RepoTemplate(
    name="inventory",
    package="inventory",
    summary="Inventory items, pricing with bulk discounts, and stock reports.",
    modules={"models.py": _INV_MODELS, "pricing.py": _INV_PRICING, "report.py": _INV_REPORT},
    params=lambda rng: {
        "bulk_threshold": rng.choice([10, 12, 20]),
        "bulk_rate": rng.choice([5, 10, 15]),
        "discount": rng.choice([10, 15, 20, 25]),
        "low_stock": rng.choice([3, 5, 10]),
    },
    functions=(
        FunctionSpec("pricing", "line_total", lambda rng: (rng.choice(_inv_items(rng) or [{"name": "x", "price": 3, "qty": 20}]),)),
        FunctionSpec("pricing", "total_value", lambda rng: (_inv_items(rng),)),
        FunctionSpec("pricing", "apply_discount", lambda rng: (rng.randint(0, 10_000), rng.choice([0, 5, 33, 50, 99, 100, 101, 120, 150, 200]))),
        FunctionSpec("pricing", "apply_discount", lambda rng: (rng.randint(0, 10_000),)),
        FunctionSpec("report", "low_stock", lambda rng: (_inv_items(rng),)),
        FunctionSpec("report", "most_valuable", lambda rng: (_inv_items(rng), rng.randint(1, 4))),
        FunctionSpec("report", "summary", lambda rng: (_inv_items(rng),)),
        FunctionSpec("models", "restock", lambda rng: ({"name": "gear", "price": 5, "qty": rng.randint(0, 9)}, rng.randint(-5, 9))),
    ),
    bugs=(
        BugSite("bulk_boundary", "pricing.py", 'if item["qty"] >= BULK_THRESHOLD:', 'if item["qty"] > BULK_THRESHOLD:', "off_by_one"),
        BugSite("discount_sign", "pricing.py", "return price * (100 - percent) // 100", "return price * (100 + percent) // 100", "wrong_operator"),
        BugSite("discount_cap", "pricing.py", "if percent >= 100:\n        return 0\n    ", "", "missing_case"),
        BugSite("low_stock_default", "report.py", "def low_stock(items, threshold=@@low_stock@@):", "def low_stock(items, threshold=@@low_stock_bug@@):", "wrong_default"),
        BugSite("top_n_slice", "report.py", "return [item[\"name\"] for item in ranked[:n]]", "return [item[\"name\"] for item in ranked[:n - 1]]", "off_by_one"),
        BugSite("restock_negative", "models.py", "if amount < 0:\n        amount = 0\n    ", "", "missing_case"),
        BugSite("bulk_rate_op", "pricing.py", "total -= total * BULK_RATE_PERCENT // 100", "total += total * BULK_RATE_PERCENT // 100", "wrong_operator"),
    ),
)


# ----------------------------------------------------------------------------------------------- textkit
_TXT_TOKENS = _d('''
    """Splitting text into words and sentences."""

    PUNCTUATION = ".,;:!?"


    def words(text):
        """Lower-case words of ``text``: split on whitespace, surrounding punctuation stripped, empties dropped."""
        out = []
        for raw in text.split():
            word = raw.strip(PUNCTUATION).lower()
            if word:
                out.append(word)
        return out


    def sentences(text):
        """Sentences of ``text`` (split after '.', '!' or '?'), stripped, empties dropped."""
        out, current = [], ""
        for ch in text:
            current += ch
            if ch in ".!?":
                if current.strip():
                    out.append(current.strip())
                current = ""
        if current.strip():
            out.append(current.strip())
        return out
''')
_TXT_STATS = _d('''
    """Word statistics."""

    from .tokens import words


    def word_count(text):
        """Number of words in ``text``."""
        return len(words(text))


    def most_common(text, n=@@top_n@@):
        """The ``n`` most frequent words as ``(word, count)`` tuples, most frequent first, ties alphabetical."""
        counts = {}
        for word in words(text):
            counts[word] = counts.get(word, 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return ranked[:n]


    def long_words(text, min_length=@@min_length@@):
        """Distinct words with at least ``min_length`` letters, in order of first appearance."""
        seen = []
        for word in words(text):
            if len(word) >= min_length and word not in seen:
                seen.append(word)
        return seen
''')
_TXT_FORMAT = _d('''
    """Formatting helpers."""

    MINOR_WORDS = @@minor@@


    def title_case(text):
        """Capitalise every word except MINOR_WORDS; the first word is always capitalised."""
        parts = text.split()
        out = []
        for i, word in enumerate(parts):
            if i > 0 and word.lower() in MINOR_WORDS:
                out.append(word.lower())
            else:
                out.append(word[:1].upper() + word[1:].lower())
        return " ".join(out)


    def wrap(text, width=@@width@@):
        """Greedy word wrap: lines of at most ``width`` characters (a longer word gets a line of its own)."""
        lines, current = [], ""
        for word in text.split():
            if not current:
                current = word
            elif len(current) + 1 + len(word) <= width:
                current += " " + word
            else:
                lines.append(current)
                current = word
        if current:
            lines.append(current)
        return lines
''')


def _txt(rng: random.Random, punct: bool = True) -> str:
    vocab = ["the", "a", "of", "river", "stone", "cloud", "and", "ember", "maple", "in", "orbit", "quiet", "lantern",
             "candle", "meadow", "an", "or"]
    out = []
    for _ in range(rng.randint(0, 14)):
        w = rng.choice(vocab)
        if rng.random() < 0.2:
            w = w.capitalize()
        if punct and rng.random() < 0.25:
            w += rng.choice(".,!?;")
        out.append(w)
    return " ".join(out)


TEXTKIT = RepoTemplate(
    name="textkit",
    package="textkit",
    summary="Tokenising, word statistics and text formatting.",
    modules={"tokens.py": _TXT_TOKENS, "stats.py": _TXT_STATS, "format.py": _TXT_FORMAT},
    params=lambda rng: {
        "top_n": rng.choice([2, 3, 4]),
        "min_length": rng.choice([5, 6]),
        "width": rng.choice([12, 16, 20]),
        "minor": tuple(sorted(rng.sample(["a", "an", "the", "of", "in", "and", "or"], 4))),
    },
    functions=(
        FunctionSpec("tokens", "words", lambda rng: (_txt(rng),)),
        FunctionSpec("tokens", "sentences", lambda rng: (_txt(rng),)),
        FunctionSpec("stats", "word_count", lambda rng: (_txt(rng),)),
        FunctionSpec("stats", "most_common", lambda rng: (_txt(rng),)),
        FunctionSpec("stats", "most_common", lambda rng: (_txt(rng), rng.randint(1, 5))),
        FunctionSpec("stats", "long_words", lambda rng: (_txt(rng),)),
        FunctionSpec("format", "title_case", lambda rng: (_txt(rng, punct=False),)),
        FunctionSpec("format", "wrap", lambda rng: (_txt(rng, punct=False),)),
        FunctionSpec("format", "wrap", lambda rng: (_txt(rng, punct=False), rng.randint(5, 25))),
    ),
    bugs=(
        BugSite("strip_punct", "tokens.py", "word = raw.strip(PUNCTUATION).lower()", "word = raw.lower()", "missing_case"),
        BugSite("sentence_tail", "tokens.py", "    if current.strip():\n        out.append(current.strip())\n    return out", "    return out", "missing_case"),
        BugSite("top_n_default", "stats.py", "def most_common(text, n=@@top_n@@):", "def most_common(text, n=@@top_n_bug@@):", "wrong_default"),
        BugSite("tie_order", "stats.py", "key=lambda kv: (-kv[1], kv[0])", "key=lambda kv: (kv[1], kv[0])", "wrong_operator"),
        BugSite("min_length_cmp", "stats.py", "if len(word) >= min_length and word not in seen:", "if len(word) > min_length and word not in seen:", "off_by_one"),
        BugSite("wrap_width", "format.py", "elif len(current) + 1 + len(word) <= width:", "elif len(current) + len(word) <= width:", "off_by_one"),
        BugSite("first_word", "format.py", "if i > 0 and word.lower() in MINOR_WORDS:", "if word.lower() in MINOR_WORDS:", "missing_case"),
    ),
)


# ----------------------------------------------------------------------------------------------- gradebook
_GB_SCORES = _d('''
    """Scores, averages and letter grades."""

    CUTOFFS = @@cutoffs@@  # minimum score for A, B, C, D (descending)


    def average(scores):
        """Mean of ``scores`` rounded to 2 decimals; 0.0 for no scores."""
        if not scores:
            return 0.0
        return round(sum(scores) / len(scores), 2)


    def letter(score):
        """Letter grade: 'A' at or above CUTOFFS[0], 'B' at or above CUTOFFS[1], ..., else 'F'."""
        for grade, cutoff in zip("ABCD", CUTOFFS):
            if score >= cutoff:
                return grade
        return "F"


    def curve(scores, points=@@curve_points@@, cap=100):
        """Every score raised by ``points``, capped at ``cap``."""
        return [min(score + points, cap) for score in scores]
''')
_GB_ROSTER = _d('''
    """Class rosters: lists of (name, score) pairs."""

    from .scores import average, letter


    def rank(roster):
        """Names ordered by score (highest first), ties by name."""
        return [name for name, score in sorted(roster, key=lambda ns: (-ns[1], ns[0]))]


    def passing(roster, cutoff=@@pass_cutoff@@):
        """Names of students whose score is at least ``cutoff``, in roster order."""
        return [name for name, score in roster if score >= cutoff]


    def grade_counts(roster):
        """``{letter: number of students}`` for the letters that occur."""
        counts = {}
        for _, score in roster:
            g = letter(score)
            counts[g] = counts.get(g, 0) + 1
        return counts


    def class_average(roster):
        """Average score of the roster (see scores.average)."""
        return average([score for _, score in roster])
''')


def _roster(rng: random.Random) -> list[tuple[str, int]]:
    names = rng.sample(["ana", "ben", "cai", "dev", "eli", "fay", "gus", "hal", "ivy", "jon"], rng.randint(0, 7))
    return [(n, rng.choice([rng.randint(30, 100), 50, 52, 60, 62, 65, 67, 70, 80, 90])) for n in names]


GRADEBOOK = RepoTemplate(
    name="gradebook",
    package="gradebook",
    summary="Scores, letter grades and class rosters.",
    modules={"scores.py": _GB_SCORES, "roster.py": _GB_ROSTER},
    params=lambda rng: {
        "cutoffs": rng.choice([(90, 80, 70, 60), (85, 75, 65, 55), (92, 84, 76, 68)]),
        "curve_points": rng.choice([3, 5, 10]),
        "pass_cutoff": rng.choice([50, 60, 65]),
    },
    functions=(
        FunctionSpec("scores", "average", lambda rng: ([rng.randint(0, 100) for _ in range(rng.randint(0, 6))],)),
        FunctionSpec("scores", "letter", lambda rng: (rng.choice([rng.randint(0, 100), 60, 70, 80, 90, 55, 65, 75, 85, 68, 76, 84, 92]),)),
        FunctionSpec("scores", "curve", lambda rng: ([rng.randint(80, 100) for _ in range(rng.randint(0, 5))],)),
        FunctionSpec("roster", "rank", lambda rng: (_roster(rng),)),
        FunctionSpec("roster", "passing", lambda rng: (_roster(rng),)),
        FunctionSpec("roster", "grade_counts", lambda rng: (_roster(rng),)),
        FunctionSpec("roster", "class_average", lambda rng: (_roster(rng),)),
    ),
    bugs=(
        BugSite("empty_average", "scores.py", "if not scores:\n        return 0.0\n    ", "", "missing_case"),
        BugSite("cutoff_cmp", "scores.py", "if score >= cutoff:", "if score > cutoff:", "off_by_one"),
        BugSite("curve_cap", "scores.py", "return [min(score + points, cap) for score in scores]", "return [max(score + points, cap) for score in scores]", "wrong_operator"),
        BugSite("pass_default", "roster.py", "def passing(roster, cutoff=@@pass_cutoff@@):", "def passing(roster, cutoff=@@pass_cutoff_bug@@):", "wrong_default"),
        BugSite("rank_order", "roster.py", "key=lambda ns: (-ns[1], ns[0])", "key=lambda ns: (ns[1], ns[0])", "wrong_operator"),
        BugSite("curve_default", "scores.py", "def curve(scores, points=@@curve_points@@, cap=100):", "def curve(scores, points=@@curve_points@@, cap=99):", "wrong_default"),
    ),
)


# ----------------------------------------------------------------------------------------------- schedule
_SCH_TIME = _d('''
    """Clock times as "HH:MM" strings and minutes since midnight."""


    def to_minutes(hhmm):
        """Minutes since midnight of a "HH:MM" string."""
        hours, minutes = hhmm.split(":")
        return int(hours) * 60 + int(minutes)


    def from_minutes(total):
        """ "HH:MM" (zero-padded) for minutes since midnight, wrapping past 24:00."""
        total %= 24 * 60
        return f"{total // 60:02d}:{total % 60:02d}"


    def add_minutes(hhmm, minutes=@@default_step@@):
        """The clock time ``minutes`` after ``hhmm``."""
        return from_minutes(to_minutes(hhmm) + minutes)
''')
_SCH_SLOTS = _d('''
    """Busy intervals and free slots; an interval is a (start, end) pair of "HH:MM" strings, end exclusive."""

    from .timeutil import from_minutes, to_minutes


    def overlaps(a, b):
        """Whether two intervals share at least one minute (touching intervals do not overlap)."""
        return to_minutes(a[0]) < to_minutes(b[1]) and to_minutes(b[0]) < to_minutes(a[1])


    def merge(busy):
        """Sorted, merged busy intervals (overlapping or touching ones become one)."""
        spans = sorted((to_minutes(s), to_minutes(e)) for s, e in busy)
        out = []
        for start, end in spans:
            if out and start <= out[-1][1]:
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([start, end])
        return [(from_minutes(s), from_minutes(e)) for s, e in out]


    def free_slots(busy, day_start="@@day_start_s@@", day_end="@@day_end_s@@", min_length=@@min_slot@@):
        """Free intervals of at least ``min_length`` minutes between day_start and day_end."""
        free = []
        cursor = to_minutes(day_start)
        for s, e in merge(busy):
            s, e = to_minutes(s), to_minutes(e)
            if s - cursor >= min_length:
                free.append((from_minutes(cursor), from_minutes(s)))
            cursor = max(cursor, e)
        if to_minutes(day_end) - cursor >= min_length:
            free.append((from_minutes(cursor), day_end))
        return free
''')


def _hhmm(rng: random.Random, lo: int = 8 * 60, hi: int = 18 * 60) -> str:
    m = rng.randrange(lo, hi, 15)
    return f"{m // 60:02d}:{m % 60:02d}"


def _busy(rng: random.Random) -> list[tuple[str, str]]:
    out = []
    for _ in range(rng.randint(0, 5)):
        if out and rng.random() < 0.3:  # an interval starting where the previous one ends (touching)
            s = to_min(out[-1][1])
        else:
            s = rng.randrange(9 * 60, 17 * 60, 15)
        e = s + rng.choice([15, 30, 45, 60, 90])
        out.append((f"{s // 60:02d}:{s % 60:02d}", f"{e // 60:02d}:{e % 60:02d}"))
    rng.shuffle(out)
    return out


def to_min(hhmm: str) -> int:
    """Minutes since midnight of "HH:MM" (generator helper)."""
    return int(hhmm[:2]) * 60 + int(hhmm[3:])


def _interval(rng: random.Random) -> tuple[str, str]:
    s = rng.randrange(9 * 60, 12 * 60, 15)
    e = s + rng.choice([15, 30, 60, 90])
    return (f"{s // 60:02d}:{s % 60:02d}", f"{e // 60:02d}:{e % 60:02d}")


def _touching_pair(rng: random.Random) -> tuple[tuple[str, str], tuple[str, str]]:
    a = _interval(rng)
    if rng.random() < 0.5:
        b = (a[1], f"{(int(a[1][:2]) + 1) % 24:02d}:{a[1][3:]}")
    else:
        b = _interval(rng)
    return a, b


SCHEDULE = RepoTemplate(
    name="schedule",
    package="schedule",
    summary="Clock-time arithmetic, busy intervals and free slots.",
    modules={"timeutil.py": _SCH_TIME, "slots.py": _SCH_SLOTS},
    params=lambda rng: {
        "default_step": rng.choice([15, 30, 45]),
        "day_start_s": rng.choice(["08:00", "09:00"]),
        "day_end_s": rng.choice(["17:00", "18:00"]),
        "min_slot": rng.choice([15, 30]),
    },
    functions=(
        FunctionSpec("timeutil", "to_minutes", lambda rng: (_hhmm(rng, 0, 24 * 60),)),
        FunctionSpec("timeutil", "from_minutes", lambda rng: (rng.randint(0, 3000),)),
        FunctionSpec("timeutil", "add_minutes", lambda rng: (_hhmm(rng, 0, 24 * 60),)),
        FunctionSpec("timeutil", "add_minutes", lambda rng: (_hhmm(rng, 0, 24 * 60), rng.randint(-90, 600))),
        FunctionSpec("slots", "overlaps", _touching_pair),
        FunctionSpec("slots", "merge", lambda rng: (_busy(rng),)),
        FunctionSpec("slots", "free_slots", lambda rng: (_busy(rng),)),
    ),
    bugs=(
        BugSite("wrap_day", "timeutil.py", "total %= 24 * 60\n    ", "", "missing_case"),
        BugSite("hours_factor", "timeutil.py", "return int(hours) * 60 + int(minutes)", "return int(hours) * 60 - int(minutes)", "wrong_operator"),
        BugSite("step_default", "timeutil.py", "def add_minutes(hhmm, minutes=@@default_step@@):", "def add_minutes(hhmm, minutes=@@default_step_bug@@):", "wrong_default"),
        BugSite("touching_overlap", "slots.py", "return to_minutes(a[0]) < to_minutes(b[1]) and to_minutes(b[0]) < to_minutes(a[1])", "return to_minutes(a[0]) <= to_minutes(b[1]) and to_minutes(b[0]) <= to_minutes(a[1])", "off_by_one"),
        BugSite("merge_touching", "slots.py", "if out and start <= out[-1][1]:", "if out and start < out[-1][1]:", "off_by_one"),
        BugSite("slot_tail", "slots.py", "    if to_minutes(day_end) - cursor >= min_length:\n        free.append((from_minutes(cursor), day_end))\n", "", "missing_case"),
    ),
)

#: Every template by name.
TEMPLATES: dict[str, RepoTemplate] = {t.name: t for t in (INVENTORY, TEXTKIT, GRADEBOOK, SCHEDULE)}


def bug_params(template: RepoTemplate, params: dict[str, Any]) -> dict[str, Any]:
    """Values for ``@@<name>_bug@@`` placeholders of wrong-default bugs: a plausible but different default."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, int) and not isinstance(value, bool):
            out[f"{key}_bug"] = value + (1 if value < 10 else 5)
    return out

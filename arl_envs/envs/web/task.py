"""The web task interface: what a task page, its validator and its expert provide.

A web task is one Python class (a :class:`WebTask` subclass, decorated with :func:`register_task`) in a module of
``arl_envs/envs/web/tasks/``; every module there is imported by ``arl_envs.envs.web.tasks`` and each registered
class becomes the id ``arl/web.<name>-v0`` (generated into ``arl_envs/registration.py``). The env
(:class:`arl_envs.envs.web.env.WebEnv`) drives a real Chromium; the task never touches the browser itself.

Life of an episode:

1. ``setup(rng)`` -> :class:`TaskInstance`: draws the instance from ``rng`` ONLY (same seed, same instance).
   ``files`` maps relative paths to page contents; they are served under ``http://arl.test/<name>/`` (any
   other URL is blocked: no page ever reaches the internet). The env opens ``http://arl.test/<name>/index.html``.
   Put instance data into the files (e.g. a ``<script>const DATA = {...}</script>`` block in the HTML or a
   ``data.json`` the page fetches). The agent sees ``utterance`` and the page, never ``goal``.
2. After every step, the env evaluates ``window.arlState()`` in the active page and calls
   ``validate(state, goal, answer)``. **Every task page defines** ``window.arlState = () => ({...})`` returning a
   JSON-able object read from the real DOM / JS state (``checked`` properties, input ``value``s, what the page's
   own code recorded). Multi-page tasks keep their state in ``sessionStorage``/``localStorage`` (one origin,
   ``http://arl.test``; the storage is fresh for every episode) so that each page's ``arlState`` can report it.
   The env adds (overwriting page keys of the same name):

   * ``"url"``: the active page's canonical URL RELATIVE to the task root, e.g. ``"/index.html"``,
     ``"/reports/viewed?id=3"`` (see :func:`canonical_url`); ``"/"`` is the root itself.
   * ``"tabs"``: canonical relative URLs of all open tabs, in order; ``"active_tab"``: index of the active one.
   * ``"page_ok"``: False when ``arlState`` is missing or threw on the active page (the rest is then empty).

   ``answer`` is the text of the agent's ``answer(...)`` action on the step it was sent, else None. ``answer``
   always ends the episode (whatever ``done`` says): the score of that step is final.
3. :class:`Score`: ``success`` only for the EXACT goal state (task reward 1, never partial credit); ``done`` ends
   the episode early (goal reached, or an irrecoverable wrong end state such as a wrong order checked out, then
   with ``success=False``); ``subgoals`` is the set of sub-goal names reached so far, each credited once by the
   ``progress`` reward part (``1 / n_subgoals`` per new sub-goal name).
4. ``expert(view, goal)`` returns ONE native action string (e.g. ``'click("a12")'``) for the current state; the
   env calls it again after each step. Use :meth:`ExpertView.bid` to find an element's bid in the CURRENT
   snapshot by CSS selector (bids change between snapshots). Actions: ``click(bid)``, ``dblclick(bid)``,
   ``hover(bid)``, ``fill(bid, text)``, ``select_option(bid, option)``, ``check(bid)``, ``uncheck(bid)``,
   ``press(bid, key)``, ``scroll(dx, dy)``, ``drag(from_bid, to_bid)``, ``go_back()``, ``tab_focus(i)``,
   ``noop()``, ``answer(text)``; build the strings with :func:`act` so quoting is always right.

Helpers for validators: :func:`answer_matches` (``a |OR| b`` alternatives, case/whitespace/number
normalisation: ``1,000`` == ``1000``) and :func:`urls_match` / :func:`canonical_url` (``//catalog`` ==
``/catalog``; ``/reports/viewedX`` != ``/reports/viewed``).

Example (a complete task: ``arl_envs/envs/web/tasks/click_button.py``)::

    @register_task
    class ClickButton(WebTask):
        name = "click-button"
        description = "Click the button with the given label."
        n_subgoals = 1

        def setup(self, rng):
            labels = list(rng.choice(WORDS, size=4, replace=False))
            target = labels[int(rng.integers(4))]
            return TaskInstance(goal={"label": target}, utterance=f'Click the "{target}" button.',
                                files={"index.html": page(labels)})

        def validate(self, state, goal, answer):
            clicked = state.get("clicked")
            ok = clicked == goal["label"]
            return Score(done=clicked is not None, success=ok, subgoals=frozenset({"clicked"} if ok else ()))

        def expert(self, view, goal):
            return act("click", view.bid(f'button[data-label="{goal["label"]}"]'))
"""

from __future__ import annotations

import json
import posixpath
import re
import unicodedata
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from decimal import Context, Decimal, InvalidOperation
from typing import Any, Callable, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import numpy as np

from arl_envs.core.errors import ArlError

#: Scheme and host the task pages are served from; every other URL is blocked.
TASK_ORIGIN = "http://arl.test"
#: Separator of alternative answers in a goal answer string.
ANSWER_OR = "|OR|"

__all__ = [
    "ANSWER_OR",
    "REGISTRY",
    "TASK_ORIGIN",
    "WORDS",
    "ExpertError",
    "ExpertView",
    "Score",
    "TaskInstance",
    "WebTask",
    "BASE_CSS",
    "act",
    "html_escape",
    "html_page",
    "js_value",
    "answer_matches",
    "canonical_url",
    "normalize_answer",
    "register_task",
    "task_url",
    "urls_match",
]


class ExpertError(ArlError, LookupError):
    """The expert could not act: e.g. :meth:`ExpertView.bid` found no element for its selector."""


@dataclass(frozen=True)
class TaskInstance:
    """One task instance, drawn by :meth:`WebTask.setup`.

    Attributes:
        goal: The hidden goal (privileged: only :meth:`WebTask.validate` and :meth:`WebTask.expert` see it);
            JSON-able.
        utterance: The instruction shown to the agent, e.g. ``'Click the "Submit" button.'``.
        files: Relative path -> content (``str`` is encoded as UTF-8), served under
            ``http://arl.test/<task name>/``; ``"index.html"`` is the start page. Content types follow the file
            extension (``.html``, ``.js``, ``.css``, ``.json``, ``.svg``, ``.png``, ...).
    """

    goal: dict[str, Any]
    utterance: str
    files: dict[str, str | bytes]


@dataclass(frozen=True)
class Score:
    """A validator's verdict on the current state.

    Attributes:
        done: End the episode now: the goal is reached, or the state is an irrecoverable wrong end state (a
            wrong item checked out, a wrong email deleted...).
        success: The EXACT goal state is reached (task reward 1); never partial credit.
        subgoals: Names of the validator's sub-goals reached so far; the ``progress`` reward credits each name
            once per episode (``1 / n_subgoals`` each), even if it is later lost.
    """

    done: bool
    success: bool
    subgoals: frozenset[str] = field(default_factory=frozenset)


class ExpertView:
    """What the expert sees: the agent's observation plus privileged page access.

    Attributes:
        axtree: The accessibility-tree text of the current snapshot (what the agent sees).
        url: Canonical URL of the active page relative to the task root (as ``state["url"]``).
        state: ``window.arlState()`` of the active page plus the env's keys (as given to ``validate``).

    Args:
        axtree: See above.
        url: See above.
        state: See above.
        resolver: ``css_selector -> [bid, ...]``: bids (current snapshot) of the elements matching the selector,
            in document order; supplied by the env.
    """

    def __init__(self, axtree: str, url: str, state: dict[str, Any], resolver: Callable[[str], list[str]]):
        self.axtree = axtree
        self.url = url
        self.state = state
        self._resolver = resolver

    def bids(self, css_selector: str) -> list[str]:
        """Bids (current snapshot) of every element matching ``css_selector``, in document order.

        Elements inside same-origin iframes are searched too. Elements that got no bid (e.g. ``display:none``
        ones, which the agent cannot act on) are skipped.
        """
        return list(self._resolver(css_selector))

    def bid(self, css_selector: str) -> str:
        """Bid of the first element matching ``css_selector`` in the current snapshot.

        Raises:
            ExpertError: No element with a bid matches.
        """
        found = self.bids(css_selector)
        if not found:
            raise ExpertError(f"no element with a bid matches {css_selector!r} on {self.url}")
        return found[0]


class WebTask(ABC):
    """Base class of a web task (one page family; its instances are drawn from a seed).

    Class attributes:
        name: Lower-case id part, ``[a-z0-9-]+`` (``arl/web.<name>-v0``; pages live under ``/<name>/``).
        description: One line for ``arl-envs list`` and the README.
        max_turns: Default turn budget of the env for this task.
        n_subgoals: Number of distinct sub-goal names :meth:`validate` can report (progress normalisation);
            at least 1.
        restart_in_place: Whether the env may start the next episode in the document it already has (rebuilding
            it from the new instance's ``index.html``, see :class:`arl_envs.envs.web.env.WebEnv`) instead of
            loading a fresh page. Set False for a page whose code the rebuild cannot reset (e.g. one that changes
            built-in prototypes or keeps state in IndexedDB); the env reloads such pages every episode.

    Subclasses must be stateless between episodes (the env creates one instance per env and calls
    ``setup`` at each reset); keep everything an episode needs in :class:`TaskInstance`.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    max_turns: ClassVar[int] = 20
    n_subgoals: ClassVar[int] = 1
    restart_in_place: ClassVar[bool] = True

    @abstractmethod
    def setup(self, rng: np.random.Generator) -> TaskInstance:
        """Draw an instance using ``rng`` only (same seed -> same instance)."""

    @abstractmethod
    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        """Score the current state (see the module docstring for ``state``'s keys).

        Must not raise on unexpected states (e.g. ``state["page_ok"]`` False, missing keys): return a
        not-done, unsuccessful :class:`Score` instead.
        """

    @abstractmethod
    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        """ONE native action string for the current state (e.g. ``act("click", view.bid("#ok"))``).

        Raises:
            ExpertError: If it cannot find what it needs (a bug in the task, surfaced to tests).
        """


#: Task name -> class, filled by :func:`register_task` when ``arl_envs.envs.web.tasks`` is imported.
REGISTRY: dict[str, type[WebTask]] = {}

_NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def register_task(cls: type[WebTask]) -> type[WebTask]:
    """Class decorator adding a :class:`WebTask` subclass to :data:`REGISTRY` under ``cls.name``.

    Raises:
        TypeError: ``cls`` is not a WebTask subclass.
        ValueError: Bad or duplicate name, or missing ``description``/``n_subgoals``.
    """
    if not (isinstance(cls, type) and issubclass(cls, WebTask)):
        raise TypeError(f"register_task expects a WebTask subclass, got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(f"task name must match {_NAME_RE.pattern}, got {name!r}")
    if not isinstance(getattr(cls, "description", None), str):
        raise ValueError(f"task {name!r} needs a description")
    if not isinstance(cls.n_subgoals, int) or cls.n_subgoals < 1:
        raise ValueError(f"task {name!r}: n_subgoals must be an int >= 1")
    existing = REGISTRY.get(name)
    if existing is not None and existing is not cls and (
        existing.__module__ != cls.__module__ or existing.__qualname__ != cls.__qualname__
    ):
        raise ValueError(f"duplicate web task name {name!r}: {existing.__module__} and {cls.__module__}")
    REGISTRY[name] = cls
    return cls


def task_url(name: str, path: str = "index.html") -> str:
    """Absolute URL of a task file: ``http://arl.test/<name>/<path>``."""
    return f"{TASK_ORIGIN}/{name}/{path.lstrip('/')}"


# --------------------------------------------------------------------------- actions
def act(name: str, *args: Any) -> str:
    """A native action string with correctly quoted arguments.

    ``act("fill", "a12", 'it\\'s "q"\\n')`` -> ``fill("a12", "it's \\"q\\"\\n")`` (JSON string quoting,
    which the env's ``ast`` parser reads back exactly). Numbers are written as-is.
    """
    parts = []
    for a in args:
        if isinstance(a, bool) or not isinstance(a, (str, int, float)):
            raise TypeError(f"action arguments are str, int or float, got {type(a).__name__}")
        parts.append(json.dumps(a, ensure_ascii=False) if isinstance(a, str) else repr(a))
    return f"{name}({', '.join(parts)})"


# --------------------------------------------------------------------------- answers
_NUM_RE = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?$")
_CURRENCY = "$€£¥"


def _as_number(text: str) -> Decimal | None:
    """The exact number an answer writes (``1,000``, ``$1,000.50``, ``12%``, ``1000 €``), else ``None``.

    Exact decimal arithmetic (no float rounding: ``2184.99999999999999999`` is not ``2185``), independent of the
    thread's decimal context; one currency sign is allowed only before the number (after an optional sign) or
    after it, never inside it (``1$000`` is text).
    """
    t = text.strip()
    if t.endswith("%"):
        t = t[:-1].strip()
    sign = ""
    if t[:1] and t[0] in "+-":
        sign, t = t[0], t[1:].strip()
    if t[:1] and t[0] in _CURRENCY:
        t = t[1:].strip()
    elif t[-1:] and t[-1] in _CURRENCY:
        t = t[:-1].strip()
    t = sign + t
    if not t or not _NUM_RE.match(t) or not any(ch.isdigit() for ch in t):
        return None
    try:
        return Decimal(t.replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the pattern admits only plain decimals
        return None


def normalize_answer(text: str) -> str:
    """Normalise an answer for comparison.

    Unicode NFKC, case folded, surrounding whitespace and final ``.``/``!`` removed, inner whitespace
    collapsed, surrounding quotes removed; a numeric answer (``1,000``, ``$1,000.50``, ``12%``, ``7.0``) becomes
    its canonical number (``1000``, ``1000.5``, ``12``, ``7``).
    """
    t = unicodedata.normalize("NFKC", str(text)).casefold().strip()
    t = re.sub(r"\s+", " ", t)
    while len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'`":
        t = t[1:-1].strip()
    t = t.rstrip(".!").strip()
    num = _as_number(t)
    if num is not None:
        if num == num.to_integral_value():
            return str(int(num))
        # A context of our own with every digit kept: the thread's decimal context may have been lowered by
        # other code in the process (reasoning-gym's decimal_arithmetic sets ``getcontext().prec``).
        return format(num.normalize(Context(prec=len(num.as_tuple().digits) + 1)), "f")
    return t


def answer_matches(answer: str | None, expected: str) -> bool:
    """Whether ``answer`` equals one of the alternatives in ``expected`` after :func:`normalize_answer`.

    ``expected`` may list alternatives separated by ``|OR|`` (``"NYC |OR| New York"``). The whole answer must
    match one alternative: no substring or partial credit. ``None`` or empty answers never match.
    """
    if answer is None:
        return False
    got = normalize_answer(answer)
    if not got:
        return False
    alternatives = [normalize_answer(a) for a in str(expected).split(ANSWER_OR)]
    return any(got == alt for alt in alternatives if alt)


# --------------------------------------------------------------------------- URLs
def canonical_url(url: str, base: str | None = None) -> str:
    """Canonical form of a URL (or of a path) for goal comparison.

    Repeated slashes collapse (``//catalog`` -> ``/catalog``), ``.``/``..`` segments resolve, a trailing ``/``
    is dropped (except for the root ``/``), the fragment is dropped, query parameters are sorted (values kept
    exactly), scheme and host are lower-cased. With ``base`` (e.g. ``"http://arl.test/shop"``), a URL under it is
    returned RELATIVE to it (``"/catalog"``); a URL outside it is returned absolute.

    Args:
        url: Absolute URL or path.
        base: Optional prefix (absolute URL) to strip.

    Returns:
        The canonical string; a path keeps a leading ``/``.
    """
    raw = str(url).strip()
    if raw.startswith("//"):  # a path with repeated slashes, not a scheme-relative URL
        raw = "/" + raw.lstrip("/")
    parts = urlsplit(raw)
    path = re.sub(r"/{2,}", "/", parts.path or "/")
    if not path.startswith("/"):
        path = "/" + path
    norm = posixpath.normpath(path)
    norm = "/" if norm in (".", "//") else re.sub(r"/{2,}", "/", norm)
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    tail = norm + (f"?{query}" if query else "")
    if parts.scheme or parts.netloc:
        absolute = f"{parts.scheme.lower()}://{parts.netloc.lower()}{tail}"
        if base is not None:
            b = canonical_url(base).rstrip("/")
            if absolute == b:
                return "/"
            if absolute.startswith(b + "/") or absolute.startswith(b + "?"):
                rel = absolute[len(b):]
                return rel if rel.startswith("/") else "/" + rel
        return absolute
    return tail


def urls_match(a: str, b: str, base: str | None = None) -> bool:
    """Whether two URLs/paths are the same page after :func:`canonical_url` (exact, never a prefix match)."""
    return canonical_url(a, base) == canonical_url(b, base)


# --------------------------------------------------------------------------- pages
#: A small neutral style sheet task pages may share (``html_page`` includes it).
BASE_CSS = (
    "body{font-family:sans-serif;font-size:14px;margin:12px;max-width:760px}"
    "button{margin:3px;padding:4px 10px}input,select,textarea{margin:3px;padding:3px}"
    "label{margin-right:8px}table{border-collapse:collapse}td,th{border:1px solid #999;padding:3px 6px}"
)


def html_page(title: str, body: str, script: str = "", style: str = "") -> str:
    """A complete HTML5 page: ``<title>``, :data:`BASE_CSS` + ``style``, ``body``, then ``<script>script</script>``.

    ``script`` runs at the end of ``<body>`` (the DOM above it exists) inside a function scope, so that the env
    can run it again in the same document when it restarts an episode in place (its ``let``/``const``/``function``
    declarations are local; what must be global is assigned to ``window``); it must define ``window.arlState``.
    Insert instance data with ``json.dumps`` (and escape ``</`` as ``<\\/``: see :func:`js_value`).
    """
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_html_escape(title)}</title><style>{BASE_CSS}{style}</style></head>\n"
        f"<body>\n{body}\n<script>\n(function () {{\n{script}\n}})();\n</script>\n</body></html>\n"
    )


def js_value(value: Any) -> str:
    """``value`` as a JavaScript literal safe inside ``<script>`` (JSON with ``<``, ``>``, ``&`` escaped)."""
    return (
        json.dumps(value, ensure_ascii=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _html_escape(text: str) -> str:
    import html

    return html.escape(str(text), quote=True)


def html_escape(text: str) -> str:
    """HTML-escape text for element content or attribute values (quotes included)."""
    return _html_escape(text)


#: A neutral vocabulary tasks may draw labels and values from (lower case, unique, ASCII).
WORDS: tuple[str, ...] = tuple(
    """
    amber anchor apple arrow aspen atlas badge bamboo banjo basil beacon birch blossom bolt bramble breeze bridge
    cactus candle canyon carbon cedar cherry cobalt comet coral cotton crane crystal daisy delta desert dune eagle
    echo ember falcon fern fig flint forest fossil garnet glacier granite harbor hazel heron honey island ivory
    jade jasmine juniper kettle lagoon lantern lemon lilac linen lotus maple marble meadow mint mirror moss nectar
    nickel oasis olive onyx orchid otter pebble pepper pine plum prism quartz quill raven reef ridge river ruby
    saffron sage salmon satin shadow silver slate spruce summit thistle thunder tide topaz tulip velvet violet
    walnut willow winter zephyr
    """.split()
)

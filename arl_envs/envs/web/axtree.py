"""Page snapshots: the accessibility tree as text, with snapshot-scoped element ids (bids).

One JavaScript call per step (:data:`SNAPSHOT_JS`, from ``js/snapshot.js`` and ``js/episode.js``, installed in
every document by an init script and called through ``window.__arl.snapshot``) walks the DOM of the page and of its same-origin iframes and returns the tree
text, the bids, the focused element and ``window.arlState()``: a step costs one round trip for the observation.

Tree format (one line per node, two spaces of indent per level)::

    RootWebArea 'Sign in', focused
      [a3] heading 'Sign in', level=1
      [a4] LabelText 'User name'
      [a5] textbox 'User name', value='ada', focused
      [a6] button 'Submit', disabled
      [a7] generic 'You clicked Amber.'
      StaticText 'plain text'

Roles and names follow WAI-ARIA / HTML-AAM in a simplified form computed in JavaScript (explicit ``role``,
implicit roles of HTML elements; names from ``aria-label``, ``aria-labelledby``, ``<label>``, ``alt``, ``title``,
``value`` of input buttons, or the element's text for name-from-content roles such as buttons and links). Hidden
elements (``display:none``, ``visibility:hidden``, ``aria-hidden="true"``) are left out and get no bid.

Bids: every visible element gets a ``data-arl-bid`` attribute ``<document prefix><number>``, e.g. ``a12``. The
prefix (``a``, ``b``, ..., ``z``, ``ba``, ...) is given to each new DOCUMENT (page load, iframe load) from a
per-episode counter, so an element keeps its bid while its document lives and a bid from a document that is
gone (after a navigation) is recognised as stale instead of silently naming another element. The counter of an
episode starts at a two-letter prefix drawn from the task instance (``WebEnv``), so a restarted episode and a
freshly loaded one with the same seed show the same bids, while ids from the previous episode (another prefix)
are rejected. Iframes carry
``data-arl-frame="<prefix of their document>"`` so an action can reach into them.
"""

from __future__ import annotations

import re
from importlib import resources
from dataclasses import dataclass, field
from typing import Any

#: Version of the in-page helper; bump when SNAPSHOT_JS changes.
HELPER_VERSION = 7
#: Longest text of one node (characters); longer text is cut with "...".
MAX_NODE_TEXT = 300
#: Longest accessible name (characters).
MAX_NAME = 120
#: Most tree lines per snapshot; the rest is replaced by a marker line.
MAX_TREE_LINES = 4000
#: Milliseconds a snapshot waits for a loading document to fire ``load``.
LOAD_WAIT_MS = 2000

_BID_RE = re.compile(r"^([a-z]+)(\d+)$")


def _read_js(name: str) -> str:
    """The text of ``arl_envs/envs/web/js/<name>`` (package data)."""
    return resources.files("arl_envs.envs.web").joinpath("js", name).read_text(encoding="utf-8")


#: JS test "the helper is installed for THIS document". The helper's state (pending navigation, opened tabs,
#: document listeners) belongs to one document: a window that is reused for the next document (a popup's initial
#: about:blank replaced by its URL) must get a fresh helper, else a stale "leaving" flag stalls every snapshot.
HELPER_READY_JS = f"(window.__arl && window.__arl.v === {HELPER_VERSION} && window.__arl.doc === document)"

#: The in-place episode restart of the page helper (``js/episode.js``), spliced into :data:`SNAPSHOT_JS`.
_EPISODE_JS = "\n" + _read_js("episode.js")

#: The page helper (``js/snapshot.js``, a %-template: ``%(name)s`` fields filled here, ``%%`` for a literal ``%``),
#: installed in every document by an init script and reached as ``window.__arl``.
SNAPSHOT_JS = ("\n" + _read_js("snapshot.js")) % {
    "version": HELPER_VERSION,
    "ready": HELPER_READY_JS,
    "max_text": MAX_NODE_TEXT,
    "max_name": MAX_NAME,
    "max_lines": MAX_TREE_LINES,
    "load_wait": LOAD_WAIT_MS,
    "episode": _EPISODE_JS,
}

#: Expression evaluated in the top frame for a snapshot: ``[document-prefix counter, force, episode token]``; a
#: token marks the observed document as the one this episode's reset opened (see :data:`RESTART_CALL`).
SNAPSHOT_CALL = f"""async ([counter, force, token]) => {{
  if (!{HELPER_READY_JS}) {{ {SNAPSHOT_JS} }}
  const r = await window.__arl.snapshot(counter, force);
  if (token && !r.leaving) window.__arl.episode(token);
  return r;
}}"""

#: Expression evaluated in the top frame to restart the episode in the same document (the env's reset):
#: ``[mode, payload, token of the ending episode, token of the new one]`` -> ``{ok, why, cookies}``. Mode
#: ``"rebuild"`` (payload: the new episode's HTML) cancels what the page scheduled or attached outside its body,
#: clears storage, cookies, globals, focus and scroll, and rebuilds the document, running its scripts in order;
#: mode ``"core"`` (payload: a MiniWoB++ seed) refuses while the previous episode left anything pending, then
#: clears storage, cookies, focus and scroll and calls the page's ``window.__arlRestart(seed)``. Either refuses
#: (``ok`` False, ``why``) unless the helper was installed before the page's scripts ran, the document is the one
#: the ending episode's reset observed (token), its URL is unchanged and the tab has no history.
RESTART_CALL = f"""(args) => {{
  if (!{HELPER_READY_JS}) return {{ok: false, why: 'no page helper in this document'}};
  return window.__arl.restartEpisode(...args);
}}"""

#: Expression evaluated in the top frame to prepare an action: ``[helper name, args...]``.
ACTION_CALL = f"""(args) => {{
  if (!{HELPER_READY_JS}) {{ {SNAPSHOT_JS} }}
  return window.__arl[args[0]](...args.slice(1));
}}"""

#: Expression evaluated in the top frame to find bids by CSS selector (argument: the selector).
RESOLVE_CALL = f"""(selector) => {{
  if (!{HELPER_READY_JS}) {{ {SNAPSHOT_JS} }}
  return window.__arl.resolve(selector);
}}"""


@dataclass
class Snapshot:
    """One observation of the active page.

    Attributes:
        tree: The accessibility tree text (see the module docstring).
        url: Absolute URL of the active page.
        title: Document title.
        focused: Bid of the focused element, or None.
        bids: Every bid present in this snapshot.
        disabled: Bids of disabled elements.
        docs: Document prefix -> iframe prefix path from the top document (``[]`` for the top one).
        state: ``window.arlState()`` (an object), or None when missing or failing.
        state_error: Why ``state`` is None, else None.
        next_prefix: The per-episode document counter after this snapshot.
    """

    tree: str
    url: str
    title: str
    focused: str | None
    bids: frozenset[str]
    disabled: frozenset[str]
    docs: dict[str, list[str]]
    state: dict[str, Any] | None
    state_error: str | None
    next_prefix: int
    issued_prefixes: int = field(default=0)

    @classmethod
    def from_js(cls, raw: dict[str, Any]) -> Snapshot:
        return cls(
            tree=str(raw.get("text", "")),
            url=str(raw.get("url", "")),
            title=str(raw.get("title", "")),
            focused=raw.get("focused") or None,
            bids=frozenset(raw.get("bids") or ()),
            disabled=frozenset(raw.get("disabled") or ()),
            docs={str(k): [str(p) for p in v] for k, v in (raw.get("docs") or {}).items()},
            state=raw.get("state") if raw.get("stateOk") else None,
            state_error=raw.get("stateError"),
            next_prefix=int(raw.get("next", 0)),
        )


def split_bid(bid: str) -> tuple[str, int] | None:
    """``"ab12"`` -> ``("ab", 12)``; None when ``bid`` is not of the bid form."""
    m = _BID_RE.match(bid)
    return (m.group(1), int(m.group(2))) if m else None


def prefix_index(prefix: str) -> int:
    """Index of a document prefix in the issue order (``a`` = 0, ``z`` = 25, ``aa`` = 26, ...)."""
    n = 0
    for ch in prefix:
        n = n * 26 + (ord(ch) - 96)
    return n - 1


def check_bid(bid: str, snap: Snapshot, first_prefix: int = 0) -> str | None:
    """Why ``bid`` cannot be acted on in ``snap`` (an error for the agent), or None if it can.

    Distinguishes a STALE bid (its document is gone: the page navigated or the frame reloaded, or it came from an
    earlier episode) from an unknown one (never issued, or its element was removed or hidden on a live page).

    Args:
        bid: The element id the action names.
        snap: The current snapshot.
        first_prefix: Index (:func:`prefix_index`) of the first document prefix of the current episode: prefixes
            below it or at/after ``snap.next_prefix`` were not issued in this episode.
    """
    parts = split_bid(bid)
    if parts is None:
        return f"invalid element id {bid!r}: element ids look like 'a12' (letters, then digits) as shown in [brackets]"
    prefix, _ = parts
    if bid in snap.bids:
        return None
    if prefix in snap.docs:
        return f"unknown element id {bid!r}: no such element on the current page (removed or hidden)"
    if first_prefix <= prefix_index(prefix) < snap.next_prefix:
        return (
            f"stale element id {bid!r}: it belongs to a page that is no longer shown (the page navigated or "
            "reloaded). Use the ids of the current page below."
        )
    return (
        f"unknown element id {bid!r}: not an id of this episode's pages (ids from an earlier episode are stale). "
        "Use the ids of the current page below."
    )

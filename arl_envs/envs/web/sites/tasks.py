"""Task templates of the sites: one data-driven table per site, shared evaluators and expert moves.

A :class:`Template` is one row: ``sample(seed_db, rng) -> (utterance, goal)`` draws an instance from the seed
database, ``check(db, state, goal, answer) -> (reward, done)`` scores the env's current database / URL / answer,
``expert(view, goal) -> action string`` is the scripted expert (privileged: it reads ``goal``; it acts through the
same action strings as the agent). Families: ``info`` (answer checked by :func:`answer_matches` after
normalisation), ``nav`` (final URL: path and non-empty query parameters), ``change`` (database rows, diffed against
the seed: the right rows changed and nothing else) and ``webshop`` (WebShop's reward, :func:`webshop_reward`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import parse_qsl, urlsplit

from arl_envs.envs.web.task import ExpertView, act, answer_matches

FAMILIES = ("all", "info", "nav", "change", "webshop")
#: Tables whose rows a content-change evaluator diffs against the seed (``sessions`` is bookkeeping).
TRACKED_TABLES = ("users", "orders", "order_items", "reviews", "products", "cart_items")


@dataclass(frozen=True)
class Template:
    name: str
    family: str
    sample: Callable[[sqlite3.Connection, Any], tuple[str, dict[str, Any]]]
    check: Callable[[sqlite3.Connection, dict[str, Any], dict[str, Any], str | None], tuple[float, bool]]
    expert: Callable[[ExpertView, dict[str, Any]], str]


# ---------------------------------------------------------------- evaluators
def check_answer(db, state, goal, answer) -> tuple[float, bool]:
    return (1.0 if answer_matches(answer, goal["answer"]) else 0.0), answer is not None


def url_params(url: str) -> tuple[str, dict[str, str]]:
    """(path, query parameters without empty values, ``sort=relevance`` or ``page=1``) of a relative URL."""
    parts = urlsplit(url)
    q = {k: v for k, v in parse_qsl(parts.query) if v and not (k == "sort" and v == "relevance")
         and not (k == "page" and v == "1")}
    return parts.path.rstrip("/") or "/", q


def check_url(db, state, goal, answer) -> tuple[float, bool]:
    ok = url_params(state.get("url", "")) == (goal["path"], dict(goal.get("params", {})))
    return (1.0 if ok else 0.0), ok or answer is not None


def diff(db: sqlite3.Connection, table: str) -> tuple[list[tuple], list[tuple]]:
    """(rows added or changed, rows removed or changed) of ``table`` against the seed, matched by ``rowid`` (which
    the backup-API restore preserves), as full rows."""
    cols = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})")]
    differs = " OR ".join(f"a.{c} IS NOT b.{c}" for c in cols)
    sel = ", ".join(f"a.{c}" for c in cols)
    added = db.execute(f"SELECT {sel} FROM main.{table} a LEFT JOIN seed.{table} b ON b.rowid=a.rowid "
                       f"WHERE b.rowid IS NULL OR {differs}").fetchall()
    removed = db.execute(f"SELECT {sel} FROM seed.{table} a LEFT JOIN main.{table} b ON b.rowid=a.rowid "
                         f"WHERE b.rowid IS NULL OR {differs}").fetchall()
    return added, removed


#: id(connection) -> (connection.total_changes, tables, changed_tables result): recomputed only after a write.
_DIFF_CACHE: dict[int, tuple[int, tuple[str, ...], dict[str, tuple[list[tuple], list[tuple]]]]] = {}


def changed_tables(db: sqlite3.Connection, tables: tuple[str, ...] = TRACKED_TABLES
                   ) -> dict[str, tuple[list[tuple], list[tuple]]]:
    """Tables of ``tables`` (default: the shop's :data:`TRACKED_TABLES`) that differ from the seed:
    ``{table: (rows added, rows removed)}``.

    Cached per connection until its next write (``total_changes``); :func:`forget_changes` drops the cache when the
    database is restored.
    """
    hit = _DIFF_CACHE.get(id(db))
    if hit is not None and hit[0] == db.total_changes and hit[1] == tables:
        return hit[2]
    out = {}
    for t in tables:
        a, r = diff(db, t)
        if a or r:
            out[t] = (a, r)
    _DIFF_CACHE[id(db)] = (db.total_changes, tables, out)
    return out


def row_updated_only(db: sqlite3.Connection, tables: tuple[str, ...], table: str, rid: int,
                     want: dict[str, Any]) -> bool:
    """Of ``tables``, only row ``rid`` (first column) of ``table`` differs from the seed; its ``want`` columns hold
    those values, the others their seed values."""
    ch = changed_tables(db, tables)
    if set(ch) != {table}:
        return False
    added, removed = ch[table]
    if len(added) != 1 or len(removed) != 1 or added[0][0] != rid or removed[0][0] != rid:
        return False
    cols = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})")]
    new, old = dict(zip(cols, added[0])), dict(zip(cols, removed[0]))
    return all(new[k] == v for k, v in want.items()) and all(new[k] == old[k] for k in cols if k not in want)


def row_inserted_only(db: sqlite3.Connection, tables: tuple[str, ...], table: str, want: dict[str, Any],
                      also: tuple[str, ...] = ()) -> tuple | None:
    """The one new row of ``table`` (``want`` columns equal) when nothing else changed but new rows of ``also``."""
    ch = changed_tables(db, tables)
    if not set(ch) <= {table, *also} or table not in ch:
        return None
    added, removed = ch[table]
    if len(added) != 1 or removed or any(ch[t][1] for t in also if t in ch):
        return None
    cols = [r[1] for r in db.execute(f"PRAGMA main.table_info({table})")]
    row = dict(zip(cols, added[0]))
    return added[0] if all(row[k] == v for k, v in want.items()) else None


def forget_changes(db: sqlite3.Connection) -> None:
    """Drop :func:`changed_tables`' cache of ``db`` (after a restore or before closing it)."""
    _DIFF_CACHE.pop(id(db), None)


# ---------------------------------------------------------------- expert moves (None: already there)
def fields(view: ExpertView) -> dict[str, str]:
    return dict((view.state.get("fields") or {}))


def path_of(view: ExpertView) -> str:
    return url_params(view.url)[0]


def logged_in(view: ExpertView) -> bool:
    return not view.bids('header nav.user a[href$="/login"]')


def ensure_login(view: ExpertView, email: str, password: str) -> str | None:
    if logged_in(view):
        return None
    if path_of(view) != "/login":
        return act("click", view.bid('header nav.user a[href$="/login"]'))
    return fill_then(view, [("email", email), ("password", password)], "#login-submit")


def fill_then(view: ExpertView, wanted: list[tuple[str, str]], submit: str) -> str:
    """Fill/select each ``(element id, value)`` that differs, then click ``submit``."""
    f = fields(view)
    for key, value in wanted:
        if f.get(key) != value:
            bid = view.bid(f"#{key}".replace(" ", ""))
            if view.bids(f"select#{key}"):
                return act("select_option", bid, value)
            return act("fill", bid, value)
    return act("click", view.bid(submit))


def go_product(view: ExpertView, pid: int, name: str) -> str | None:
    if path_of(view) == f"/product/{pid}":
        return None
    links = view.bids(f'a.pname[data-pid="{pid}"]')
    if links:
        return act("click", links[0])
    if fields(view).get("q") != name:
        return act("fill", view.bid("#q"), name)
    return act("press", view.bid("#q"), "Enter")


def go_search(view: ExpertView, params: dict[str, str]) -> str | None:
    path, have = url_params(view.url)
    want = {k: v for k, v in params.items() if k != "page"}
    if path == "/search" and {k: v for k, v in have.items() if k != "page"} == want:
        page = int(params.get("page", "1"))
        cur = int(have.get("page", "1"))
        if cur == page:
            return None
        return act("click", view.bid("#next" if cur < page else "#prev"))
    if path != "/search":
        f = fields(view)
        if f.get("q") != want.get("q", ""):
            return act("fill", view.bid("#q"), want.get("q", ""))
        return act("press", view.bid("#q"), "Enter")
    if have.get("q", "") != want.get("q", ""):
        f = fields(view)
        if f.get("q") != want.get("q", ""):
            return act("fill", view.bid("#q"), want.get("q", ""))
        return act("press", view.bid("#q"), "Enter")
    form = [("f-cat", want.get("cat", "")), ("f-min", want.get("min_price", "")),
            ("f-max", want.get("max_price", "")), ("f-rating", want.get("min_rating", "")),
            ("f-sort", want.get("sort", "relevance"))]
    return fill_then(view, form, "#f-apply")


def checkout(view: ExpertView, email: str, password: str, card: str) -> str:
    """From anywhere with a filled cart: log in, open checkout, fill the card, place the order."""
    p = path_of(view)
    if p == "/login":
        return fill_then(view, [("email", email), ("password", password)], "#login-submit")
    if p != "/checkout":
        return act("click", view.bid('header nav.user a[href$="/cart"]')) if p != "/cart" else act(
            "click", view.bid("#to-checkout"))
    return fill_then(view, [("co-card", card)], "#place-order")

"""The forum's task templates (one table, :data:`TEMPLATES`): 17 information-seeking, 9 navigation and 12
content-change templates, each drawn from the seed database with the episode's generator.

Users' credentials are part of the seed (``users`` table); a template that needs an account names one in the
instruction. Content-change evaluators diff :data:`TRACKED` against the seed: the right rows changed and nothing else.
"""

from __future__ import annotations

from typing import Any

from arl_envs.envs.web.sites.tasks import Template, check_answer, fields, fill_then, path_of, url_params
from arl_envs.envs.web.task import ANSWER_OR, act

#: Tables a forum content-change evaluator diffs against the seed (``sessions`` is bookkeeping).
TRACKED = ("users", "posts", "comments", "votes", "subscriptions")


def _pick(db, rng, sql: str, args: tuple = ()) -> tuple:
    rows = db.execute(sql, args).fetchall()
    return rows[int(rng.integers(len(rows)))]


def _post(db, rng, where: str = "1=1") -> tuple:
    """(id, title, author username, author id) of a random post matching ``where`` (alias ``p``)."""
    n = db.execute(f"SELECT COUNT(*) FROM posts p WHERE {where}").fetchone()[0]
    return db.execute(f"SELECT p.id, p.title, u.username, u.id FROM posts p JOIN users u ON u.id=p.user_id "
                      f"WHERE {where} ORDER BY p.id LIMIT 1 OFFSET ?", (int(rng.integers(n)),)).fetchone()


def _forum(db, rng) -> tuple:
    return _pick(db, rng, "SELECT id, slug, name FROM forums ORDER BY id")


def _user(db, rng, where: str = "1=1") -> tuple:
    """(id, username, password) of a random user matching ``where`` (alias ``u``)."""
    return _pick(db, rng, f"SELECT id, username, password FROM users u WHERE {where} ORDER BY id")


def _login_note(u: tuple) -> str:
    return f" (Log in as {u[1]}, password {u[2]}.)"


def _creds(u: tuple) -> dict[str, Any]:
    return {"uid": u[0], "username": u[1], "password": u[2]}


def _or(names) -> str:
    return f" {ANSWER_OR} ".join(str(n) for n in names)


# ---------------------------------------------------------------- URLs and expert moves
def forum_url(url: str) -> tuple[str, dict[str, str]]:
    """:func:`url_params` without a subforum's default ``sort=new`` (and without ``reply=`` / fragments)."""
    path, q = url_params(url)
    if path.startswith("/f/") and q.get("sort") == "new":
        q.pop("sort")
    q.pop("reply", None)
    return path, q


def check_forum_url(db, state, goal, answer) -> tuple[float, bool]:
    ok = forum_url(state.get("url", "")) == (goal["path"], dict(goal.get("params", {})))
    return (1.0 if ok else 0.0), ok or answer is not None


def logged_in(view) -> bool:
    return not view.bids('header nav.user a[href$="/login"]')


def login(view, goal) -> str | None:
    if logged_in(view):
        return None
    if path_of(view) != "/login":
        return act("click", view.bid('header nav.user a[href$="/login"]'))
    return fill_then(view, [("username", goal["username"]), ("password", goal["password"])], "#login-submit")


def go_post(view, pid: int, title: str) -> str | None:
    """To ``/p/<pid>``: click a link to it, else search for its title (next result page when needed)."""
    path = path_of(view)
    if path == f"/p/{pid}":
        return None
    links = view.bids(f'a.ptitle[data-pid="{pid}"]')
    if links:
        return act("click", links[0])
    if path == "/search" and url_params(view.url)[1].get("q") == title:
        return act("click", view.bid("#next"))
    if fields(view).get("q") != title:
        return act("fill", view.bid("#q"), title)
    return act("press", view.bid("#q"), "Enter")


def go_forum(view, slug: str, sort: str = "new", page: int = 1) -> str | None:
    path, have = forum_url(view.url)
    if path != f"/f/{slug}":
        return act("click", view.bid(f'nav.forums a[href$="/f/{slug}"]'))
    if have.get("sort", "new") != sort:
        return act("click", view.bid(f'a.sort[data-sort="{sort}"]'))
    cur = int(have.get("page", "1"))
    if cur != page:
        return act("click", view.bid("#next" if cur < page else "#prev"))
    return None


def go_search(view, q: str, fslug: str = "", sort: str = "relevance") -> str | None:
    path, have = url_params(view.url)
    want = {k: v for k, v in (("q", q), ("f", fslug), ("sort", sort)) if v and v != "relevance"}
    if path == "/search" and have == want:
        return None
    if path != "/search" or have.get("q", "") != q:
        if fields(view).get("q") != q:
            return act("fill", view.bid("#q"), q)
        return act("press", view.bid("#q"), "Enter")
    return fill_then(view, [("s-forum", fslug), ("s-sort", sort)], "#s-apply")


def go_profile(view, goal) -> str | None:
    """To the profile of ``goal["user"]`` through one of their posts (``goal["via"]``: pid, title)."""
    if path_of(view) == f"/u/{goal['user']}":
        return None
    if path_of(view) == f"/p/{goal['via'][0]}":
        return act("click", view.bid("#author"))
    return go_post(view, *goal["via"])


# ---------------------------------------------------------------- information seeking
def post_question(name: str, question: str, value_sql: str, where: str = "1=1") -> Template:
    def sample(db, rng):
        pid, title, _, _ = _post(db, rng, where)
        value = db.execute(value_sql, (pid,)).fetchall()
        return question.format(title=title), {"pid": pid, "title": title, "answer": _or(v[0] for v in value)}

    def expert(view, goal):
        return go_post(view, goal["pid"], goal["title"]) or act("answer", goal["answer"].split(ANSWER_OR)[0].strip())

    return Template(name, "info", sample, check_answer, expert)


def forum_question(name: str, question: str, value_sql: str, sort: str = "new") -> Template:
    """A question about one subforum, answered from its listing (``sort``) or header; ties all accepted."""

    def sample(db, rng):
        fid, slug, fname = _forum(db, rng)
        value = db.execute(value_sql, (fid,)).fetchall()
        return question.format(forum=fname), {"slug": slug, "sort": sort, "answer": _or(v[0] for v in value)}

    def expert(view, goal):
        return go_forum(view, goal["slug"], goal["sort"]) or act("answer", goal["answer"].split(ANSWER_OR)[0].strip())

    return Template(name, "info", sample, check_answer, expert)


def user_question(name: str, question: str, value_sql: str) -> Template:
    def sample(db, rng):
        pid, title, uname, uid = _post(db, rng)
        value = db.execute(value_sql, {"u": uid}).fetchone()[0]
        return question.format(user=uname), {"user": uname, "via": [pid, title], "answer": str(value)}

    def expert(view, goal):
        return go_profile(view, goal) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


SEARCH_WORDS = ("beginner", "budget", "advice", "upgraded", "vintage", "worth", "overrated", "weekly", "finally",
                "tips", "compact", "schedule")


def search_count() -> Template:
    def sample(db, rng):
        fid, slug, fname = _forum(db, rng)
        word = SEARCH_WORDS[int(rng.integers(len(SEARCH_WORDS)))]
        n = db.execute("SELECT COUNT(*) FROM posts WHERE forum_id=? AND (lower(title) LIKE ? OR lower(body) LIKE ?)",
                       (fid, f"%{word}%", f"%{word}%")).fetchone()[0]
        return (f'How many posts in the {fname} subforum match a search for "{word}"?',
                {"q": word, "slug": slug, "answer": str(n)})

    def expert(view, goal):
        return go_search(view, goal["q"], goal["slug"]) or act("answer", goal["answer"])

    return Template("search-count", "info", sample, check_answer, expert)


# ---------------------------------------------------------------- navigation
def nav_forum(name: str, instruction: str, sort: str, pages: bool = False) -> Template:
    def sample(db, rng):
        fid, slug, fname = _forum(db, rng)
        page = int(rng.integers(2, 5)) if pages else 1
        params = {k: v for k, v in (("sort", sort if sort != "new" else ""), ("page", str(page) if page > 1 else ""))
                  if v}
        return instruction.format(forum=fname, page=page), {"path": f"/f/{slug}", "params": params, "slug": slug,
                                                             "sort": sort, "page": page}

    def expert(view, goal):
        return go_forum(view, goal["slug"], goal["sort"], goal["page"]) or act("noop")

    return Template(name, "nav", sample, check_forum_url, expert)


def nav_post() -> Template:
    def sample(db, rng):
        pid, title, _, _ = _post(db, rng)
        return f'Open the post titled "{title}".', {"path": f"/p/{pid}", "pid": pid, "title": title}

    def expert(view, goal):
        return go_post(view, goal["pid"], goal["title"]) or act("noop")

    return Template("open-post", "nav", sample, check_forum_url, expert)


def nav_author() -> Template:
    def sample(db, rng):
        pid, title, uname, _ = _post(db, rng)
        return (f'Open the profile page of the user who wrote the post "{title}".',
                {"path": f"/u/{uname}", "user": uname, "via": [pid, title]})

    def expert(view, goal):
        return go_profile(view, goal) or act("noop")

    return Template("open-author-profile", "nav", sample, check_forum_url, expert)


def nav_top_post() -> Template:
    def sample(db, rng):
        rows = db.execute("SELECT f.name, f.slug, p.id FROM forums f JOIN posts p ON p.forum_id=f.id WHERE p.score = "
                          "(SELECT MAX(score) FROM posts WHERE forum_id=f.id) GROUP BY f.id HAVING COUNT(*)=1 "
                          "ORDER BY f.id").fetchall()
        fname, slug, pid = rows[int(rng.integers(len(rows)))]
        return f"Open the highest-scoring post of the {fname} subforum.", {"path": f"/p/{pid}", "slug": slug, "pid": pid}

    def expert(view, goal):
        if path_of(view) == f"/p/{goal['pid']}":
            return act("noop")
        return go_forum(view, goal["slug"], "top") or act("click", view.bid(f'a.ptitle[data-pid="{goal["pid"]}"]'))

    return Template("open-top-post", "nav", sample, check_forum_url, expert)


def nav_search(name: str, instruction: str, with_forum: bool, sort: str) -> Template:
    def sample(db, rng):
        fid, slug, fname = _forum(db, rng)
        word = SEARCH_WORDS[int(rng.integers(len(SEARCH_WORDS)))]
        params = {"q": word, **({"f": slug} if with_forum else {}), **({"sort": sort} if sort != "relevance" else {})}
        return instruction.format(word=word, forum=fname), {"path": "/search", "params": params}

    def expert(view, goal):
        p = goal["params"]
        return go_search(view, p["q"], p.get("f", ""), p.get("sort", "relevance")) or act("noop")

    return Template(name, "nav", sample, check_forum_url, expert)

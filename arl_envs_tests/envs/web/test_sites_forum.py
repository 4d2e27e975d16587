"""The forum (``arl/web.site-forum-v0``) and cross-site (``arl/web.site-cross-v0``) ids: every template's evaluator
on right and wrong final states (table-driven, database level), isolation across resets, no goal in any page or
route, form validation, and the conformance suite and expert/isolation episodes with a real Chromium."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pytest

pytest.importorskip("flask", reason="flask is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.sites.cross.env import Dbs  # noqa: E402
from arl_envs.envs.web.sites.cross.tasks import TEMPLATES as CROSS  # noqa: E402
from arl_envs.envs.web.sites.env import follow_redirects, templates_for  # noqa: E402
from arl_envs.envs.web.sites.forum.table import TEMPLATES as FORUM  # noqa: E402
from arl_envs.envs.web.sites.forum.tasks import TRACKED  # noqa: E402
from arl_envs.envs.web.sites.server import get_site  # noqa: E402
from arl_envs.envs.web.sites.tasks import changed_tables, forget_changes  # noqa: E402

F_BY = {t.name: t for t in FORUM}
C_BY = {t.name: t for t in CROSS}
M = "/site-forum"


@pytest.fixture(scope="module")
def forum():
    return get_site("forum", 2000)


@pytest.fixture(scope="module")
def shop():
    return get_site("shop", 5000)


@pytest.fixture()
def db(forum):
    conn = forum.connect()
    yield conn
    conn.close()


@pytest.fixture()
def dbs(shop, forum):
    pair = Dbs(shop.connect(), forum.connect())
    yield pair
    for c in pair:
        c.close()


def _goal(table, name, seed, src):
    _, goal = table[name].sample(src, np.random.default_rng(seed))
    return table[name], {"template": name, **goal}


def test_table_sizes():
    assert len(FORUM) >= 30 and len(CROSS) >= 10
    assert {t.family for t in FORUM} == {"info", "nav", "change"} and {t.family for t in CROSS} == {"info", "change"}
    assert len({t.name for t in FORUM + CROSS}) == len(FORUM) + len(CROSS)
    assert [t.name for t in templates_for("forum", "nav")] == [t.name for t in FORUM if t.family == "nav"]
    with pytest.raises(ValueError, match="webshop"):
        templates_for("forum", "webshop")


def test_seed_is_deterministic_and_large(forum):
    import sqlite3

    from arl_envs.envs.web.sites.forum.data import build

    fresh = sqlite3.connect(":memory:")
    build(fresh, 2000)
    for table in ("posts", "comments", "users", "votes"):
        assert fresh.execute(f"SELECT * FROM {table}").fetchall() == forum._src.execute(f"SELECT * FROM {table}").fetchall()
    n = fresh.execute("SELECT (SELECT COUNT(*) FROM posts) + (SELECT COUNT(*) FROM comments)").fetchone()[0]
    assert n >= 2000 * 4
    assert not fresh.execute("SELECT 1 FROM posts WHERE body LIKE '%lorem%'").fetchone()


@pytest.mark.parametrize("name", [t.name for t in FORUM if t.family == "info"])
@pytest.mark.parametrize("seed", [3, 11])
def test_forum_info_right_and_wrong(name, seed, forum, db):
    t, goal = _goal(F_BY, name, seed, forum._src)
    first = goal["answer"].split("|OR|")[0].strip()
    assert t.check(db, {"url": "/"}, goal, first) == (1.0, True)
    assert t.check(db, {"url": "/"}, goal, f"  {first.upper()} ")[0] == 1.0  # normalised
    assert t.check(db, {"url": "/"}, goal, first + " 7")[0] == 0.0
    assert t.check(db, {"url": "/"}, goal, None) == (0.0, False)


@pytest.mark.parametrize("name", [t.name for t in FORUM if t.family == "nav"])
def test_forum_nav_right_and_wrong(name, forum, db):
    t, goal = _goal(F_BY, name, 4, forum._src)
    right = goal["path"] + ("?" + urlencode(goal["params"]) if goal.get("params") else "")
    assert t.check(db, {"url": right}, goal, None) == (1.0, True)
    assert t.check(db, {"url": right + ("&" if "?" in right else "?") + "page=1"}, goal, None)[0] == 1.0
    assert t.check(db, {"url": goal["path"] + "x"}, goal, None)[0] == 0.0
    if goal.get("params"):
        assert t.check(db, {"url": goal["path"]}, goal, None)[0] == 0.0


def _post(db, g, fid=None, body=None):
    db.execute("INSERT INTO posts(forum_id,user_id,title,body,score,created,edited) VALUES (?,?,?,?,1,'2024-08-01 00:00',"
               "NULL)", (fid or g["fid"], g["uid"], g["title"], body if body is not None else g["sentence"]))


def _comment(db, g, pid=None, parent="goal", body=None):
    db.execute("INSERT INTO comments(post_id,user_id,parent_id,body,score,created) VALUES (?,?,?,?,1,'2024-08-01 00:00')",
               (pid or g["pid"], g["uid"], g.get("parent") if parent == "goal" else parent,
                body if body is not None else g["sentence"]))


def _vote(db, g, value, score_delta=None, comment=False):
    if comment:
        db.execute("INSERT INTO votes VALUES (?,NULL,?,?)", (g["uid"], g["cid"], value))
        db.execute("UPDATE comments SET score=score+? WHERE id=?", (value if score_delta is None else score_delta, g["cid"]))
    else:
        db.execute("INSERT INTO votes VALUES (?,?,NULL,?)", (g["uid"], g["pid"], value))
        db.execute("UPDATE posts SET score=score+? WHERE id=?", (value if score_delta is None else score_delta, g["pid"]))


def _other_sub(db, g):
    have = {r[0] for r in db.execute("SELECT forum_id FROM subscriptions WHERE user_id=?", (g["uid"],))}
    return next(f for f in range(1, 13) if f not in have and f != g["fid"])


#: template -> (write the right final state, write a wrong one)
FORUM_CASES = {
    "create-post": (lambda d, g: _post(d, g), lambda d, g: _post(d, g, fid=g["fid"] % 12 + 1)),
    "comment-on-post": (lambda d, g: _comment(d, g), lambda d, g: _comment(d, g, pid=g["pid"] % 2000 + 1)),
    "reply-to-comment": (lambda d, g: _comment(d, g), lambda d, g: _comment(d, g, parent=None)),
    "upvote-post": (lambda d, g: _vote(d, g, 1), lambda d, g: _vote(d, g, -1)),
    "downvote-post": (lambda d, g: _vote(d, g, -1), lambda d, g: _vote(d, g, 1)),
    "upvote-comment": (lambda d, g: _vote(d, g, 1, comment=True), lambda d, g: _vote(d, g, 1, 0, comment=True)),
    "edit-post-title": (lambda d, g: d.execute("UPDATE posts SET title=?, edited='x' WHERE id=?", (g["new"], g["pid"])),
                        lambda d, g: d.execute("UPDATE posts SET title=?, body='Gone.' WHERE id=?", (g["new"], g["pid"]))),
    "append-to-post": (lambda d, g: d.execute("UPDATE posts SET body=body || ? WHERE id=?", ("\r\n" + g["line"], g["pid"])),
                       lambda d, g: d.execute("UPDATE posts SET body=? WHERE id=?", (g["line"], g["pid"]))),
    "delete-post": (lambda d, g: [d.execute("DELETE FROM posts WHERE id=?", (g["pid"],)),
                                  d.execute("DELETE FROM comments WHERE post_id=?", (g["pid"],))],
                    lambda d, g: d.execute("DELETE FROM posts WHERE id=?", (g["pid"] % 2000 + 1,))),
    "subscribe": (lambda d, g: d.execute("INSERT INTO subscriptions VALUES (?,?)", (g["uid"], g["fid"])),
                  lambda d, g: d.execute("INSERT INTO subscriptions VALUES (?,?)", (g["uid"], _other_sub(d, g)))),
    "unsubscribe": (lambda d, g: d.execute("DELETE FROM subscriptions WHERE user_id=? AND forum_id=?", (g["uid"], g["fid"])),
                    lambda d, g: d.execute("DELETE FROM subscriptions WHERE user_id=?", (g["uid"] % 400 + 1,))),
    "update-bio": (lambda d, g: d.execute("UPDATE users SET bio=? WHERE id=?", (g["bio"], g["uid"])),
                   lambda d, g: d.execute("UPDATE users SET bio=?, email='x@y.org' WHERE id=?", (g["bio"], g["uid"]))),
}


def test_every_forum_change_template_has_cases():
    assert set(FORUM_CASES) == {t.name for t in FORUM if t.family == "change"}


@pytest.mark.parametrize("name", sorted(FORUM_CASES))
@pytest.mark.parametrize("seed", [0, 7])
def test_forum_change_right_and_wrong(name, seed, forum):
    t, g = _goal(F_BY, name, seed, forum._src)
    right, wrong = FORUM_CASES[name]
    a, b, c = forum.connect(), forum.connect(), forum.connect()
    try:
        assert t.check(a, {}, g, None) == (0.0, False)  # nothing done yet
        right(a, g)
        assert t.check(a, {}, g, None) == (1.0, True)
        wrong(b, g)
        assert t.check(b, {}, g, None)[0] == 0.0
        right(c, g)  # the right change plus an unrelated one
        c.execute("INSERT INTO subscriptions VALUES (9999, 1)")
        assert t.check(c, {}, g, None)[0] == 0.0
    finally:
        for x in (a, b, c):
            x.close()


def _cart(d, g, qty=None):
    d.execute("INSERT INTO cart_items VALUES ('s', ?, ?, ?, ?)", (g["pid"], g["size"], g["color"], qty or g["qty"]))


def _review(d, g, stars=None):
    d.execute("INSERT INTO reviews(product_id,user_id,rating,title,body) VALUES (?,?,?,?,'long enough text')",
              (g["pid"], g["uid"], stars or g["stars"], g["title"]))


#: template -> (site written, right write, wrong write) on that site's database
CROSS_CASES = {
    "cross-best-rated-post": ("forum", lambda d, g: _post(d, g), lambda d, g: _post(d, g, body="A great product.")),
    "cross-order-total-post": ("forum", lambda d, g: _post(d, g), lambda d, g: _post(d, g, body="It arrived fine.")),
    "cross-cheapest-comment": ("forum", lambda d, g: _comment(d, g), lambda d, g: _comment(d, g, body="Nice one.")),
    "cross-price-comment": ("forum", lambda d, g: _comment(d, g), lambda d, g: _comment(d, g, body="Cheap enough.")),
    "cross-reviews-vote": ("forum", lambda d, g: _vote(d, g, g["value"]), lambda d, g: _vote(d, g, -g["value"])),
    "cross-bio-best-rated": ("forum", lambda d, g: d.execute("UPDATE users SET bio=? WHERE id=?", (g["bio"], g["uid"])),
                             lambda d, g: d.execute("UPDATE users SET bio='Fan' WHERE id=?", (g["uid"],))),
    "cross-comments-to-cart": ("shop", _cart, lambda d, g: _cart(d, g, g["qty"] % 10 + 1)),
    "cross-posts-to-cart": ("shop", _cart, lambda d, g: _cart(d, g, g["qty"] % 10 + 1)),
    "cross-review-titled-by-forum": ("shop", _review, lambda d, g: _review(d, g, g["stars"] % 5 + 1)),
}


def test_every_cross_change_template_has_cases():
    assert set(CROSS_CASES) == {t.name for t in CROSS if t.family == "change"}


@pytest.mark.parametrize("name", sorted(CROSS_CASES))
@pytest.mark.parametrize("seed", [1, 5])
def test_cross_change_right_and_wrong(name, seed, shop, forum):
    t, g = _goal(C_BY, name, seed, Dbs(shop._src, forum._src))
    site, right, wrong = CROSS_CASES[name]
    pairs = [Dbs(shop.connect(), forum.connect()) for _ in range(3)]
    try:
        a, b, c = pairs
        assert t.check(a, {}, g, None) == (0.0, False)
        right(getattr(a, site), g)
        assert t.check(a, {}, g, None) == (1.0, True)
        wrong(getattr(b, site), g)
        assert t.check(b, {}, g, None)[0] == 0.0
        right(getattr(c, site), g)  # right here, but something written on the OTHER site too
        if site == "forum":
            c.shop.execute("INSERT INTO cart_items VALUES ('s', 1, NULL, NULL, 1)")
        else:
            c.forum.execute("INSERT INTO subscriptions VALUES (9999, 1)")
        assert t.check(c, {}, g, None)[0] == 0.0
    finally:
        for p in pairs:
            for x in p:
                x.close()


#: Cross templates whose post/comment must name one thing (a product or an amount): the ``must`` of the goal.
MUST_NAME = {"cross-best-rated-post": "name", "cross-order-total-post": "total", "cross-cheapest-comment": "must",
             "cross-price-comment": "must"}


@pytest.mark.parametrize("name", sorted(MUST_NAME))
@pytest.mark.parametrize("seed", [1, 5])
def test_cross_text_naming_every_candidate_gets_no_credit(name, seed, shop, forum):
    """A post or comment that lists the right product (or amount) among others hedges its bet: no credit."""
    t, g = _goal(C_BY, name, seed, Dbs(shop._src, forum._src))
    must = g[MUST_NAME[name]]
    if must.startswith("$"):
        others = ["$1.00", "$23.45", "$678.90"]
    else:
        others = [r[0] for r in shop._src.execute("SELECT name FROM products WHERE name != ? ORDER BY id LIMIT 3",
                                                  (must,))]
    body = f"One of {', '.join(others)} or {must}."
    write = _post if name.endswith("-post") else _comment
    d = Dbs(shop.connect(), forum.connect())
    try:
        write(d.forum, g, body=body)
        assert t.check(d, {}, g, None)[0] == 0.0, body
    finally:
        d.shop.close()
        d.forum.close()


@pytest.mark.parametrize("name", [t.name for t in CROSS if t.family == "info"])
@pytest.mark.parametrize("seed", [2, 9])
def test_cross_info_right_and_wrong(name, seed, shop, forum, dbs):
    t, g = _goal(C_BY, name, seed, Dbs(shop._src, forum._src))
    assert t.check(dbs, {}, g, g["answer"]) == (1.0, True)
    assert t.check(dbs, {}, g, g["answer"] + "1")[0] == 0.0
    assert t.check(dbs, {}, g, None) == (0.0, False)


def test_restore_and_isolation(forum):
    a, b = forum.connect(), forum.connect()
    a.execute("DELETE FROM posts WHERE id < 100")
    a.execute("INSERT INTO votes VALUES (1, 500, NULL, 1)")
    assert set(changed_tables(a, TRACKED)) == {"posts", "votes"}
    assert changed_tables(b, TRACKED) == {}
    forum.restore(a)
    forget_changes(a)
    assert changed_tables(a, TRACKED) == {}
    assert a.execute("SELECT COUNT(*) FROM posts").fetchone()[0] == 2000


def _get(site, db, path, hdr=None):
    st, _, body = site.handle(db, "GET", "http://arl.test/site-forum" + path, hdr or {}, None, M)
    return st, body.decode()


def test_no_goal_route_or_target_in_pages(forum, db):
    for path in ("/debug", "/goal", "/admin", "/answer", "/task", "/api/posts", "/static/../data.py"):
        assert _get(forum, db, path)[0] == 404
    goals = [_goal(F_BY, n, 0, forum._src)[1] for n in ("create-post", "comment-on-post", "update-bio", "edit-post-title")]
    pages = [_get(forum, db, p)[1] for p in ("/", "/f/cooking", "/f/travel?sort=top", "/search?q=advice", "/p/1",
                                            f"/p/{goals[1]['pid']}", f"/u/{goals[2]['username']}")]
    for page in pages:
        assert "template" not in page and "goal" not in page.lower()
        for g in goals:
            for key in ("sentence", "bio", "new"):
                if key in g:
                    assert g[key] not in page


def test_forms_validate_and_write_nothing_on_error(forum, db):
    hdr = {"content-type": "application/x-www-form-urlencoded"}
    name, pw = db.execute("SELECT username, password FROM users WHERE id=1").fetchone()
    st, h, _, _ = follow_redirects(forum, db, "POST", "http://arl.test/site-forum/login", dict(hdr),
                                   f"username={name}&password=nope".encode(), M)
    assert "Set-Cookie" not in dict(h)
    st, h, _, _ = follow_redirects(forum, db, "POST", "http://arl.test/site-forum/login", dict(hdr),
                                   f"username={name}&password={pw}".encode(), M)
    hdr["cookie"] = dict(h)["Set-Cookie"].split(";")[0]
    st, _, body, _ = follow_redirects(forum, db, "POST", "http://arl.test/site-forum/submit", dict(hdr),
                                      b"forum=nowhere&title=Hi&body=short", M)
    assert b"Choose a subforum" in body and b"5 to 120 characters" in body and b"10 to 10000" in body
    st, _, body, url = follow_redirects(forum, db, "POST", "http://arl.test/site-forum/p/1/comment", dict(hdr), b"body=x", M)
    assert b"2 to 2000 characters" in body
    st, _, body, _ = follow_redirects(forum, db, "POST", "http://arl.test/site-forum/account", dict(hdr),
                                      b"email=not-an-email&bio=hi", M)
    assert b"valid email" in body
    not_mine = db.execute("SELECT id FROM posts WHERE user_id != 1 LIMIT 1").fetchone()[0]
    assert forum.handle(db, "POST", f"http://arl.test/site-forum/p/{not_mine}/delete", dict(hdr), b"", M)[0] == 403
    assert changed_tables(db, TRACKED) == {}
    # a vote, then the same vote again takes it back
    follow_redirects(forum, db, "POST", "http://arl.test/site-forum/p/5/vote", dict(hdr), b"dir=up", M)
    assert set(changed_tables(db, TRACKED)) == {"votes", "posts"}
    follow_redirects(forum, db, "POST", "http://arl.test/site-forum/p/5/vote", dict(hdr), b"dir=up", M)
    assert changed_tables(db, TRACKED) == {}


def test_pagination_and_search(forum, db):
    st, body = _get(forum, db, "/f/cooking?page=2")
    assert st == 200 and 'id="prev"' in body and 'id="next"' in body
    st, body = _get(forum, db, "/search?q=beginner&f=cycling&sort=top")
    n = db.execute("SELECT COUNT(*) FROM posts p JOIN forums f ON f.id=p.forum_id WHERE f.slug='cycling' AND "
                   "(lower(title) LIKE '%beginner%' OR lower(body) LIKE '%beginner%')").fetchone()[0]
    assert f"{n} posts" in body and n > 0


# ---------------------------------------------------------------- with Chromium
browser = pytest.importorskip("arl_envs.envs.web.browser")


def _chromium_or_skip():
    try:
        browser.find_chromium()
    except browser.BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium
        pytest.skip(f"no Chromium on this machine: {exc}")


def _play(env, seed):
    env.reset(seed=seed)
    for _ in range(env.max_turns):
        _, _, term, trunc, info = env.step(env.expert_action())
        if term or trunc:
            return info
    return info


@pytest.mark.slow
def test_forum_episode_writes_are_isolated():
    _chromium_or_skip()
    from arl_envs.envs.web.sites.env import SiteEnv

    e1, e2 = SiteEnv("forum", family="change"), SiteEnv("forum", family="change")
    try:
        e2.reset(seed=1)
        assert _play(e1, 0)["success"]
        assert changed_tables(e1._db, TRACKED) and changed_tables(e2._db, TRACKED) == {}
        e1.reset(seed=2)
        assert changed_tables(e1._db, TRACKED) == {}
        assert "Log in" in e1._snap.tree
    finally:
        e1.close()
        e2.close()


@pytest.mark.slow
def test_cross_episode_writes_are_isolated():
    _chromium_or_skip()
    from arl_envs.envs.web.sites.cross.env import CrossSiteEnv
    from arl_envs.envs.web.sites.tasks import TRACKED_TABLES

    env = CrossSiteEnv(family="change")
    try:
        assert _play(env, 0)["success"]
        assert changed_tables(env._dbs.shop, TRACKED_TABLES) or changed_tables(env._dbs.forum, TRACKED)
        env.reset(seed=3)
        assert changed_tables(env._dbs.shop, TRACKED_TABLES) == {} and changed_tables(env._dbs.forum, TRACKED) == {}
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["arl/web.site-forum-v0", "arl/web.site-cross-v0"])
def test_site_conformance(env_id):
    _chromium_or_skip()
    from arl_envs.testing import check_conformance

    with browser.hold_browser():
        report = check_conformance(env_id, n_fuzz=30, n_random_episodes=1)
    assert report.passed, report.summary()


def test_fresh_envs_copy_and_pickle():
    import copy
    import pickle

    from arl_envs.envs.web.sites.cross.env import CrossSiteEnv
    from arl_envs.envs.web.sites.env import SiteEnv

    for env in (SiteEnv("forum", family="change"), CrossSiteEnv(family="info")):
        for other in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
            assert [t.name for t in other.task.templates] == [t.name for t in env.task.templates]
            assert other._db is None
        env.close()
    with pytest.raises(ValueError, match="family"):
        CrossSiteEnv(family="nav")

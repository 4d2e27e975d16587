"""The tracker site (``arl/web.site-tracker-v0``): every template's evaluator on right and wrong final states
(table-driven, database level, no browser), form validation and permissions through the app, isolation of
databases across restores, no goal in any reachable page, and (slow) expert episodes and conformance in Chromium."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pytest

pytest.importorskip("flask", reason="flask is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.sites.env import follow_redirects, templates_for  # noqa: E402
from arl_envs.envs.web.sites.server import get_site  # noqa: E402
from arl_envs.envs.web.sites.tasks import changed_tables, forget_changes  # noqa: E402
from arl_envs.envs.web.sites.tracker.tasks import TABLES, TEMPLATES  # noqa: E402

SIZE = 3000
BY_NAME = {t.name: t for t in TEMPLATES}
MOUNT = "/site-tracker"
FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def site():
    return get_site("tracker", SIZE)


@pytest.fixture()
def db(site):
    conn = site.connect()
    yield conn
    forget_changes(conn)
    conn.close()


def _goal(name: str, seed: int = 0):
    t = BY_NAME[name]
    _, goal = t.sample(get_site("tracker", SIZE)._src, np.random.default_rng(seed))
    return t, {"template": name, **goal}


def test_table_sizes():
    assert len(templates_for("tracker", "all")) >= 30
    fams = {f: len(templates_for("tracker", f)) for f in ("info", "nav", "change")}
    assert fams["info"] >= 10 and fams["nav"] >= 8 and fams["change"] >= 10
    assert len({t.name for t in TEMPLATES}) == len(TEMPLATES)
    with pytest.raises(ValueError, match="webshop"):
        templates_for("tracker", "webshop")


def test_instances_vary_with_the_seed(site):
    """Instances are drawn from the seed database: different seeds give different goals (many distinct tasks)."""
    for t in TEMPLATES:
        utterances = {t.sample(site._src, np.random.default_rng(s))[0] for s in range(6)}
        assert len(utterances) >= 3, t.name


@pytest.mark.parametrize("name", [t.name for t in TEMPLATES if t.family == "info"])
@pytest.mark.parametrize("seed", [3, 11])
def test_info_right_and_wrong_answer(name, seed, db):
    t, goal = _goal(name, seed)
    right = ", ".join(goal["items"]) if "items" in goal else goal["answer"].split("|OR|")[0].strip()
    assert t.check(db, {"url": "/"}, goal, right) == (1.0, True)
    assert t.check(db, {"url": "/"}, goal, "  " + right.upper() + ". ") == (1.0, True)  # normalised
    assert t.check(db, {"url": "/"}, goal, right + " 7")[0] == 0.0
    assert t.check(db, {"url": "/"}, goal, None) == (0.0, False)
    if "items" in goal:  # every label, any order; a missing or an extra one fails
        assert t.check(db, {}, goal, " and ".join(reversed(goal["items"])))[0] == 1.0
        assert t.check(db, {}, goal, ", ".join(goal["items"][1:]))[0] == 0.0
        assert t.check(db, {}, goal, right + ", security, bug, ui")[0] == 0.0


@pytest.mark.parametrize("name", [t.name for t in TEMPLATES if t.family == "nav"])
@pytest.mark.parametrize("seed", [4, 9])
def test_nav_right_and_wrong_url(name, seed, db):
    t, goal = _goal(name, seed)
    right = goal["path"] + ("?" + urlencode(goal["params"]) if goal.get("params") else "")
    assert t.check(db, {"url": right}, goal, None) == (1.0, True)
    # empty filter fields (what the filter form submits) do not matter; a missing or different one does
    assert t.check(db, {"url": right + ("&" if "?" in right else "?") + "label=&milestone="}, goal, None)[0] == 1.0
    assert t.check(db, {"url": goal["path"] + "x"}, goal, None) == (0.0, False)
    if goal.get("params"):
        assert t.check(db, {"url": goal["path"]}, goal, None)[0] == 0.0
        assert t.check(db, {"url": right + "&q=zzz"}, goal, None)[0] == 0.0


# ---------------------------------------------------------------- content changes: (right write, wrong write) per template
def _note(db, g, kind):
    db.execute("INSERT INTO notes(target_type,target_id,author_id,body,created) VALUES (?,?,?,?,'2025-01-01')",
               (kind, g["id"], g["uid"], g["body"]))


def _set(table, **cols):
    def write(db, g):
        vals = {k: (g[v[1:]] if isinstance(v, str) and v.startswith("@") else v) for k, v in cols.items()}
        db.execute(f"UPDATE {table} SET {', '.join(f'{k}=?' for k in vals)} WHERE id=?", (*vals.values(), g["id"]))
    return write


def _want(table):
    def write(db, g):
        db.execute(f"UPDATE {table} SET {', '.join(f'{k}=?' for k in g['want'])} WHERE id=?", (*g["want"].values(), g["id"]))
    return write


def _labels(db, g, labels):
    db.execute("DELETE FROM issue_labels WHERE issue_id=?", (g["id"],))
    db.executemany("INSERT INTO issue_labels VALUES (?,?)", [(g["id"], x) for x in labels])


def _new_issue(db, g, assignee=None, label=None, title=None):
    rid = db.execute("INSERT INTO issues(project_id,iid,title,body,author_id,assignee_id,milestone_id,state,created) "
                     "VALUES (?,9999,?,'text',?,?,NULL,'opened','2025-01-01')",
                     (g["pid"], title or g["title"], g["uid"], assignee or g["to_uid"])).lastrowid
    db.execute("INSERT INTO issue_labels VALUES (?,?)", (rid, label or g["lid"]))


def _other_issue_closed(db, g):
    db.execute("UPDATE issues SET state=CASE state WHEN 'opened' THEN 'closed' ELSE 'opened' END WHERE id=?",
               (g["id"] % 3000 + 1,))


CHANGES = {
    "comment-on-issue": (lambda db, g: _note(db, g, "issue"),
                         lambda db, g: _note(db, {**g, "body": g["body"] + " Thanks."}, "issue")),
    "comment-on-mr": (lambda db, g: _note(db, g, "mr"), lambda db, g: _note(db, g, "issue")),
    "close-issue": (_set("issues", state="closed"), _set("issues", state="closed", title="Something else")),
    "reopen-issue": (_set("issues", state="opened"), lambda db, g: _other_issue_closed(db, g)),
    "assign-issue": (_want("issues"), _set("issues", assignee_id=None)),
    "set-milestone": (_want("issues"), lambda db, g: (_want("issues")(db, g), _other_issue_closed(db, g))),
    "rename-issue": (_want("issues"), _set("issues", title="@title")),
    "add-label": (lambda db, g: _labels(db, g, g["labels"]),
                  lambda db, g: _labels(db, g, [g["lid"]])),  # the other labels dropped
    "remove-label": (lambda db, g: _labels(db, g, g["labels"]),
                     lambda db, g: _labels(db, g, [])),
    "create-issue": (lambda db, g: _new_issue(db, g),
                     lambda db, g: _new_issue(db, g, assignee=g["uid"] if g["uid"] != g["to_uid"] else 1)),
    "create-label": (lambda db, g: db.execute("INSERT INTO labels(project_id,name,color) VALUES (?,?,?)",
                                              (g["pid"], g["label"], g["color"])),
                     lambda db, g: db.execute("INSERT INTO labels(project_id,name,color) VALUES (?,?,?)",
                                              (g["pid"] % 8 + 1, g["label"], g["color"]))),
    "create-milestone": (lambda db, g: db.execute("INSERT INTO milestones(project_id,title,due,state,description) "
                                                  "VALUES (?,?,?,'active','')", (g["pid"], g["ms"], g["due"])),
                         lambda db, g: db.execute("INSERT INTO milestones(project_id,title,due,state,description) "
                                                  "VALUES (?,?,NULL,'active','')", (g["pid"], g["ms"]))),
    "merge-mr": (_set("merge_requests", state="merged"), _set("merge_requests", state="closed")),
}


def test_every_change_template_is_covered():
    assert set(CHANGES) == {t.name for t in TEMPLATES if t.family == "change"}


@pytest.mark.parametrize("name", sorted(CHANGES))
@pytest.mark.parametrize("seed", [0, 5])
def test_change_right_and_wrong_state(name, seed, site):
    t, g = _goal(name, seed)
    right, wrong = CHANGES[name]
    a, b, c = site.connect(), site.connect(), site.connect()
    try:
        assert t.check(a, {}, g, None) == (0.0, False)  # the seed state is not the goal
        right(a, g)
        assert t.check(a, {}, g, None) == (1.0, True)
        wrong(b, g)
        assert t.check(b, {}, g, None)[0] == 0.0
        assert t.check(b, {}, g, "done") == (0.0, True)  # declaring done ends a wrong episode
        right(c, g)  # the right rows, plus something else changed: fails
        c.execute("UPDATE users SET name='Someone Else' WHERE id=?", (g.get("uid", 1) % 40 + 1,))
        assert t.check(c, {}, g, None)[0] == 0.0
    finally:
        for conn in (a, b, c):
            forget_changes(conn)
            conn.close()


# ---------------------------------------------------------------- the app: login, validation, permissions
def _post(site, db, path, body: str, cookie: str = ""):
    hdr = dict(FORM, cookie=cookie) if cookie else dict(FORM)
    return follow_redirects(site, db, "POST", "http://arl.test" + MOUNT + path, hdr, body.encode(), MOUNT)


def _login(site, db, role: str, slug: str = "tidewater-api") -> str:
    u = db.execute("SELECT u.username, u.password FROM members m JOIN users u ON u.id=m.user_id JOIN projects p ON "
                   "p.id=m.project_id WHERE p.slug=? AND m.role=? ORDER BY u.id", (slug, role)).fetchone()
    st, h, body, url = _post(site, db, "/login", f"username={u[0]}&password={u[1]}&next=/projects/{slug}")
    assert st == 200 and url.endswith(f"/projects/{slug}") and u[0].encode() in body
    return dict(h)["Set-Cookie"].split(";")[0]


def test_login_validation(site, db):
    st, _, body, _ = _post(site, db, "/login", "username=itanaka&password=wrong")
    assert st == 200 and b"Invalid login or password" in body
    st, _, body, _ = _post(site, db, "/login", "username=&password=")
    assert b"Enter your username and password" in body
    assert changed_tables(db, TABLES) == {}


def test_forms_validate_and_write_nothing_on_error(site, db):
    cookie = _login(site, db, "Owner")
    st, _, body, _ = _post(site, db, "/projects/tidewater-api/labels", "name=&color=red", cookie)
    assert b"Name can&#39;t be blank" in body and b"Color must be a hex code" in body
    st, _, body, _ = _post(site, db, "/projects/tidewater-api/labels", "name=bug&color=%23ff0000", cookie)
    assert b"already exists" in body
    st, _, body, _ = _post(site, db, "/projects/tidewater-api/milestones", "title=v9.0&due=next+week", cookie)
    assert b"Due date must be YYYY-MM-DD" in body
    st, _, body, _ = _post(site, db, "/projects/tidewater-api/issues/new", "title=+&assignee=nobody", cookie)
    assert b"Title can&#39;t be blank" in body and b"must be a member" in body
    assert changed_tables(db, TABLES) == {}
    _post(site, db, "/projects/tidewater-api/issues/new", "title=Export+button+is+hidden&labels=bug", cookie)
    assert set(changed_tables(db, TABLES)) == {"issues", "issue_labels"}


def test_permissions(site, db):
    """Reporters comment but cannot close; signed-out visitors are sent to sign in; nobody merges twice."""
    cookie = _login(site, db, "Reporter")
    iid = db.execute("SELECT iid FROM issues WHERE project_id=1 AND state='opened' ORDER BY id").fetchone()[0]
    st, _, body, _ = _post(site, db, f"/projects/tidewater-api/issues/{iid}", "action=toggle", cookie)
    assert b"Developer role or higher" in body and changed_tables(db, TABLES) == {}
    _post(site, db, f"/projects/tidewater-api/issues/{iid}", "action=comment&body=Seen+it+too", cookie)
    assert set(changed_tables(db, TABLES)) == {"notes"}
    st, _, _, url = _post(site, db, f"/projects/tidewater-api/issues/{iid}", "action=toggle")
    assert "/login?next=" in url
    owner = _login(site, db, "Owner")
    merged = db.execute("SELECT iid FROM merge_requests WHERE project_id=1 AND state='merged'").fetchone()[0]
    st, _, body, _ = _post(site, db, f"/projects/tidewater-api/merge_requests/{merged}", "action=merge", owner)
    assert b"already merged" in body


def test_restore_and_isolation(site):
    a, b = site.connect(), site.connect()
    a.execute("UPDATE issues SET state='closed' WHERE id < 100")
    a.execute("INSERT INTO notes(target_type,target_id,author_id,body,created) VALUES ('issue',1,1,'x','2025-01-01')")
    a.execute("INSERT INTO sessions VALUES ('s1', 3)")
    assert set(changed_tables(a, TABLES)) == {"issues", "notes"}
    assert changed_tables(b, TABLES) == {}
    site.restore(a)
    forget_changes(a)
    assert changed_tables(a, TABLES) == {}
    assert a.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0  # signed out
    assert a.execute("SELECT COUNT(*) FROM issues").fetchone()[0] == SIZE
    a.close()
    b.close()


def _crawl(site, db, limit: int = 250) -> str:
    """The HTML of up to ``limit`` pages reachable by links from the home page (breadth first)."""
    import re

    seen, queue, out = set(), ["/"], []
    while queue and len(seen) < limit:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        st, _, body = site.handle(db, "GET", "http://arl.test" + MOUNT + path, {}, None, MOUNT)
        html = body.decode()
        out.append(html)
        for href in re.findall(r'href="([^"]+)"', html):
            href = href.replace("&amp;", "&")
            if href.startswith(MOUNT + "/") and not href.startswith(MOUNT + "/static"):
                queue.append(href[len(MOUNT):])
    return "\n".join(out)


def test_no_goal_in_any_route(site, db):
    for path in ("/debug", "/goal", "/admin", "/answer", "/task", "/api/goal"):
        assert site.handle(db, "GET", "http://arl.test" + MOUNT + path, {}, None, MOUNT)[0] == 404
    pages = _crawl(site, db)
    assert "template" not in pages and "goal" not in pages.lower()
    for name in ("comment-on-issue", "create-label", "rename-issue", "create-issue"):
        for seed in range(4):
            _, g = _goal(name, seed)
            target = g.get("body") or g.get("new") or (g["label"] if name == "create-label" else g["title"])
            assert target not in pages, (name, target)


# ---------------------------------------------------------------- with Chromium
browser = pytest.importorskip("arl_envs.envs.web.browser")


def _chromium_or_skip():
    try:
        browser.find_chromium()
    except browser.BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium
        pytest.skip(f"no Chromium on this machine: {exc}")


@pytest.mark.slow
def test_expert_solves_every_template_and_writes_are_isolated():
    """One expert episode per template succeeds; its writes are gone at the next reset and never in another env."""
    _chromium_or_skip()
    from arl_envs.envs.web.sites.env import SiteEnv

    env, other = SiteEnv("tracker"), SiteEnv("tracker", family="nav")
    try:
        other.reset(seed=1)
        names = [t.name for t in env.task.templates]
        seeds: dict[str, int] = {}
        s = 0
        while len(seeds) < len(names):
            seeds.setdefault(names[int(np.random.default_rng(s).integers(len(names)))], s)
            s += 1
        family = {t.name: t.family for t in TEMPLATES}
        for name, seed in sorted(seeds.items(), key=lambda kv: family[kv[0]] == "change"):  # a change comes last
            obs, info = env.reset(options={"task_id": str(seed)})
            assert changed_tables(env._db, TABLES) == {} and "Sign in" in obs
            for _ in range(env.max_turns):
                _, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    break
            assert info["success"], name
            assert changed_tables(other._db, TABLES) == {}
        assert changed_tables(env._db, TABLES)  # the last template changed the database...
        obs, _ = env.reset(seed=0)
        assert changed_tables(env._db, TABLES) == {} and "Sign in" in obs  # ...and the next reset restores it
    finally:
        env.close()
        other.close()


@pytest.mark.slow
def test_tracker_conformance():
    _chromium_or_skip()
    from arl_envs.testing import check_conformance

    with browser.hold_browser():
        report = check_conformance("arl/web.site-tracker-v0", n_fuzz=30, n_random_episodes=1)
    assert report.passed, report.summary()

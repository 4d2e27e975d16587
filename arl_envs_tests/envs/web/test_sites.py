"""The offline sites (``arl/web.site-shop-v0``, ``arl/web.site-webshop-v0``): evaluators on right and wrong final
states of every template family (database level, no browser), isolation of databases across resets and envs, no
goal in any route, and the conformance suite with a real Chromium."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("flask", reason="flask is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.sites.server import get_site  # noqa: E402
from arl_envs.envs.web.sites.shop.tasks import TEMPLATES, webshop_reward  # noqa: E402
from arl_envs.envs.web.sites.env import templates_for  # noqa: E402
from arl_envs.envs.web.sites.tasks import changed_tables, forget_changes  # noqa: E402

SIZE = 5000
BY_NAME = {t.name: t for t in TEMPLATES}


@pytest.fixture(scope="module")
def site():
    return get_site("shop", SIZE)


@pytest.fixture()
def db(site):
    conn = site.connect()
    yield conn
    conn.close()


def _goal(name: str, seed: int = 0):
    t = BY_NAME[name]
    site = get_site("shop", SIZE)
    _, goal = t.sample(site._src, np.random.default_rng(seed))
    return t, {"template": name, **goal}


def test_table_sizes():
    assert len(templates_for("shop", "all")) >= 30
    assert {t.family for t in TEMPLATES} == {"info", "nav", "change", "webshop"}
    assert len({t.name for t in TEMPLATES}) == len(TEMPLATES)


@pytest.mark.parametrize("name", [t.name for t in TEMPLATES if t.family == "info"])
def test_info_right_and_wrong_answer(name, db):
    t, goal = _goal(name, seed=3)
    first = goal["answer"].split("|OR|")[0].strip()
    assert t.check(db, {"url": "/"}, goal, first) == (1.0, True)
    assert t.check(db, {"url": "/"}, goal, first + " 7")[0] == 0.0
    assert t.check(db, {"url": "/"}, goal, None) == (0.0, False)


@pytest.mark.parametrize("name", [t.name for t in TEMPLATES if t.family == "nav"])
def test_nav_right_and_wrong_url(name, db):
    t, goal = _goal(name, seed=4)
    from urllib.parse import urlencode

    right = goal["path"] + ("?" + urlencode(goal["params"]) if goal.get("params") else "")
    assert t.check(db, {"url": right}, goal, None) == (1.0, True)
    # empty or default parameters do not matter; a missing or different one does
    assert t.check(db, {"url": right + ("&" if "?" in right else "?") + "min_price=&sort=relevance"}, goal, None)[0] == 1.0
    assert t.check(db, {"url": goal["path"] + "x"}, goal, None)[0] == 0.0
    if goal.get("params"):
        assert t.check(db, {"url": goal["path"]}, goal, None)[0] == 0.0


def test_change_add_to_cart(db):
    t, g = _goal("add-to-cart")
    assert t.check(db, {}, g, None) == (0.0, False)
    db.execute("INSERT INTO cart_items VALUES ('s1', ?, ?, ?, ?)", (g["pid"], g["size"], g["color"], g["qty"] + 1))
    assert t.check(db, {}, g, None)[0] == 0.0  # wrong quantity
    db.execute("UPDATE cart_items SET qty=?", (g["qty"],))
    assert t.check(db, {}, g, None) == (1.0, True)
    db.execute("UPDATE users SET zip='00000' WHERE id=1")  # something else changed too
    assert t.check(db, {}, g, None)[0] == 0.0


def test_change_add_two_items(db):
    t, g = _goal("add-two-items")
    a, b = g["items"]
    db.execute("INSERT INTO cart_items VALUES ('s1', ?, ?, ?, 1)", (a[0], a[2], a[3]))
    assert t.check(db, {}, g, None)[0] == 0.0
    db.execute("INSERT INTO cart_items VALUES ('s1', ?, ?, ?, 1)", (b[0], b[2], b[3]))
    assert t.check(db, {}, g, None) == (1.0, True)


def _place_order(db, uid, pid, size, color, qty=1):
    oid = db.execute("INSERT INTO orders(user_id,status,total_cents,name,address,city,zip,placed) "
                     "VALUES (?,'processing',100,'x','y','z','12345','2024-03-15')", (uid,)).lastrowid
    db.execute("INSERT INTO order_items VALUES (?,?,?,?,?,100)", (oid, pid, size, color, qty))


def test_change_buy_product(db, site):
    t, g = _goal("buy-product")
    _place_order(db, g["uid"], g["pid"], g["size"], g["color"])
    assert t.check(db, {}, g, None) == (1.0, True)
    db2 = site.connect()
    _place_order(db2, g["uid"], g["pid"], g["size"], "no such colour")
    assert t.check(db2, {}, g, None) == (0.0, True)  # a wrong order is a final wrong state


def test_change_address(db):
    t, g = _goal("change-address")
    db.execute("UPDATE users SET address=?, city=?, zip=? WHERE id=?", (g["address"], g["city"], g["zip"], g["uid"]))
    assert t.check(db, {}, g, None) == (1.0, True)
    db.execute("UPDATE users SET name='Someone Else' WHERE id=?", (g["uid"] % 300 + 1,))
    assert t.check(db, {}, g, None)[0] == 0.0


def test_change_write_review(db):
    t, g = _goal("write-review")
    db.execute("INSERT INTO reviews(product_id,user_id,rating,title,body) VALUES (?,?,?,?,?)",
               (g["pid"], g["uid"], g["stars"] % 5 + 1, g["title"], "long enough text"))
    assert t.check(db, {}, g, None)[0] == 0.0  # wrong star count
    db.execute("UPDATE reviews SET rating=? WHERE id=(SELECT MAX(id) FROM reviews)", (g["stars"],))
    assert t.check(db, {}, g, None) == (1.0, True)


def test_webshop_reward_partial_credit(db):
    t, g = _goal("webshop-purchase")
    _place_order(db, g["uid"], g["pid"], g["size"], g["color"])
    assert t.check(db, {}, g, None) == (1.0, True)
    # the right product in the wrong options: partial credit (one or two option terms missing)
    n_terms = len(g["attrs"]) + sum(1 for k in ("size", "color") if g[k]) + 1
    r = webshop_reward(db, g, g["pid"], None, None)
    assert 0 < r < 1 and abs(r - (n_terms - sum(1 for k in ("size", "color") if g[k])) / n_terms) < 1e-9
    # a product of another department: type factor 0.1
    other = db.execute("SELECT p.id FROM products p JOIN categories c ON c.id=p.category_id JOIN categories t "
                       "ON t.id=? WHERE c.parent != t.parent LIMIT 1", (g["cat"],)).fetchone()[0]
    assert webshop_reward(db, g, other, None, None) <= 0.1


def test_restore_and_isolation(site):
    a, b = site.connect(), site.connect()
    a.execute("DELETE FROM products WHERE id < 100")
    a.execute("INSERT INTO cart_items VALUES ('s', 1, NULL, NULL, 1)")
    assert set(changed_tables(a)) == {"products", "cart_items"}
    assert changed_tables(b) == {}
    site.restore(a)
    forget_changes(a)
    assert changed_tables(a) == {}
    assert a.execute("SELECT COUNT(*) FROM products").fetchone()[0] == SIZE


def test_no_goal_route(site, db):
    for path in ("/debug", "/goal", "/admin", "/answer", "/task"):
        assert site.handle(db, "GET", "http://arl.test/site-shop" + path, {}, None, "/site-shop")[0] == 404
    body = site.handle(db, "GET", "http://arl.test/site-shop/", {}, None, "/site-shop")[2].decode()
    assert "template" not in body and "goal" not in body.lower()


def test_checkout_validation(site, db):
    """Form validation: a bad ZIP and card are rejected with messages; no order is written."""
    hdr = {"content-type": "application/x-www-form-urlencoded"}
    u = db.execute("SELECT email, password FROM users WHERE id=1").fetchone()
    from arl_envs.envs.web.sites.env import follow_redirects

    st, h, _, _ = follow_redirects(site, db, "POST", "http://arl.test/site-shop/login", hdr,
                                   f"email={u[0]}&password={u[1]}".encode(), "/site-shop")
    cookie = dict(h)["Set-Cookie"].split(";")[0]
    hdr["cookie"] = cookie
    site.handle(db, "POST", "http://arl.test/site-shop/cart/add/1", hdr, b"qty=1&" + _opts(db, 1), "/site-shop")
    st, _, body = site.handle(db, "POST", "http://arl.test/site-shop/checkout", hdr,
                              b"name=A&address=B&city=C&zip=12&card=4111", "/site-shop")
    assert st == 200 and b"ZIP code must be 5 digits" in body and b"Card number must be 16 digits" in body
    assert "orders" not in changed_tables(db)
    st, _, _ = site.handle(db, "POST", "http://arl.test/site-shop/checkout", hdr,
                           b"name=A&address=B&city=C&zip=12345&card=4111111111111111", "/site-shop")
    assert st == 302 and "orders" in changed_tables(db)


def _opts(db, pid) -> bytes:
    parts = []
    for kind in ("size", "color"):
        row = db.execute("SELECT value FROM product_options WHERE product_id=? AND kind=?", (pid, kind)).fetchone()
        if row:
            parts.append(f"{kind}={row[0]}")
    return "&".join(parts).replace(" ", "+").encode()


# ---------------------------------------------------------------- with Chromium
browser = pytest.importorskip("arl_envs.envs.web.browser")


def _chromium_or_skip():
    try:
        browser.find_chromium()
    except browser.BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium
        pytest.skip(f"no Chromium on this machine: {exc}")


@pytest.mark.slow
def test_episode_writes_are_isolated():
    """An episode's cart/login writes are gone at the next reset, and a second env never sees them."""
    _chromium_or_skip()
    from arl_envs.envs.web.sites.env import SiteEnv

    e1, e2 = SiteEnv("shop", family="change"), SiteEnv("shop", family="change")
    try:
        e1.reset(seed=0)
        e2.reset(seed=1)
        for _ in range(30):
            _, _, term, trunc, info = e1.step(e1.expert_action())
            if term or trunc:
                break
        assert info["success"]
        assert changed_tables(e1._db)
        assert changed_tables(e2._db) == {}
        e1.reset(seed=2)
        assert changed_tables(e1._db) == {}
        assert "Cart (0)" in e1._snap.tree and "Log in" in e1._snap.tree
    finally:
        e1.close()
        e2.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["arl/web.site-shop-v0", "arl/web.site-webshop-v0"])
def test_site_conformance(env_id):
    _chromium_or_skip()
    from arl_envs.testing import check_conformance

    with browser.hold_browser():
        report = check_conformance(env_id, n_fuzz=30, n_random_episodes=1)
    assert report.passed, report.summary()


def test_fresh_env_copies_and_pickles():
    import copy
    import pickle

    from arl_envs.envs.web.sites.env import SiteEnv

    env = SiteEnv("shop", family="nav")
    for other in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert other._site is env._site and [t.name for t in other.task.templates] == [t.name for t in env.task.templates]
        assert other._db is None
    with pytest.raises(ValueError, match="family"):
        SiteEnv("shop", family="forum")


# ------------------------------------------------------------------ login redirects stay on the site
#: (site, size, the table and column of an account, the mount, the page a refused ``next`` leads to).
LOGIN_SITES = [("admin", 5000, "staff", "/site-admin", "/site-admin/index.html"),
               ("tracker", 3000, "users", "/site-tracker", "/site-tracker/index.html"),
               ("forum", 2000, "users", "/site-forum", "/site-forum/index.html")]


@pytest.mark.parametrize("name, size, table, mount, home", LOGIN_SITES)
def test_login_next_never_leaves_the_site(name, size, table, mount, home):
    """``next`` after a login is a path of the same site: dot segments (plain or percent-encoded), other hosts,
    backslashes and header-breaking characters lead to the site's home page instead."""
    from urllib.parse import quote

    from arl_envs.envs.web.sites.env import follow_redirects

    site = get_site(name, size)
    conn = site.connect()
    try:
        user, password = conn.execute(f"SELECT username, password FROM {table} ORDER BY id").fetchone()
        form = {"content-type": "application/x-www-form-urlencoded"}

        def final_url(nxt: str) -> str:
            body = f"username={quote(user)}&password={quote(password)}&next={quote(nxt, safe='')}".encode()
            status, _, _, url = follow_redirects(site, conn, "POST", f"http://arl.test{mount}/login", dict(form), body,
                                                 mount)
            assert status == 200, (nxt, status)
            return url.removeprefix("http://arl.test")

        for hostile in ("/../../site-shop/", "/%2e%2e/site-shop/", "/a/%2E%2E/%2e%2e/site-shop/", "//evil.test/",
                        "/\\evil.test", "https://evil.test/", "/ok\r\nSet-Cookie: x=1", "/login", "/./login"):
            assert final_url(hostile) == home, hostile
        inside = {"admin": "/orders?page=2", "tracker": "/search?q=api", "forum": "/search?q=a"}[name]
        assert final_url(inside) == mount + inside
    finally:
        forget_changes(conn)
        conn.close()

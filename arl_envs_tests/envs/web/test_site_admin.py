"""The admin site (``arl/web.site-admin-v0``, the shop's back office): every template's evaluator on right and wrong
final states (table-driven, database level), its own staff login with no way around it, form validation and roles,
isolation across restores, no goal in any reachable page, and (slow) expert episodes and conformance in Chromium."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import numpy as np
import pytest

pytest.importorskip("flask", reason="flask is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.sites.admin.tasks import TABLES, TEMPLATES  # noqa: E402
from arl_envs.envs.web.sites.env import follow_redirects, templates_for  # noqa: E402
from arl_envs.envs.web.sites.server import get_site  # noqa: E402
from arl_envs.envs.web.sites.tasks import changed_tables, forget_changes  # noqa: E402

SIZE = 5000
BY_NAME = {t.name: t for t in TEMPLATES}
MOUNT = "/site-admin"
FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture(scope="module")
def site():
    return get_site("admin", SIZE)


@pytest.fixture()
def db(site):
    conn = site.connect()
    yield conn
    forget_changes(conn)
    conn.close()


def _goal(name: str, seed: int = 0):
    t = BY_NAME[name]
    _, goal = t.sample(get_site("admin", SIZE)._src, np.random.default_rng(seed))
    return t, {"template": name, **goal}


def test_table_sizes():
    assert len(templates_for("admin", "all")) >= 30
    assert {t.family for t in TEMPLATES} == {"info", "nav", "change"}
    assert len({t.name for t in TEMPLATES}) == len(TEMPLATES)


@pytest.mark.parametrize("name", [t.name for t in TEMPLATES if t.family == "info"])
@pytest.mark.parametrize("seed", [3, 11])
def test_info_right_and_wrong_answer(name, seed, db):
    t, goal = _goal(name, seed)
    right = goal["answer"].split("|OR|")[0].strip()
    assert t.check(db, {"url": "/"}, goal, right) == (1.0, True)
    assert t.check(db, {"url": "/"}, goal, " " + right.upper() + ".") == (1.0, True)
    assert t.check(db, {"url": "/"}, goal, right + " 7")[0] == 0.0
    assert t.check(db, {"url": "/"}, goal, None) == (0.0, False)


@pytest.mark.parametrize("name", [t.name for t in TEMPLATES if t.family == "nav"])
@pytest.mark.parametrize("seed", [4, 9])
def test_nav_right_and_wrong_url(name, seed, db):
    t, goal = _goal(name, seed)
    right = goal["path"] + ("?" + urlencode(goal["params"]) if goal.get("params") else "")
    assert t.check(db, {"url": right}, goal, None) == (1.0, True)
    assert t.check(db, {"url": right + ("&" if "?" in right else "?") + "q=&page=1"}, goal, None)[0] == 1.0
    assert t.check(db, {"url": goal["path"] + "9"}, goal, None) == (0.0, False)
    if goal.get("params"):
        assert t.check(db, {"url": goal["path"]}, goal, None)[0] == 0.0


def _upd(table, key, **cols):
    def write(db, g):
        vals = {k: (v(g) if callable(v) else v) for k, v in cols.items()}
        db.execute(f"UPDATE {table} SET {', '.join(f'{k}=?' for k in vals)} WHERE id=?", (*vals.values(), g[key]))
    return write


def _note(body_fn):
    def write(db, g):
        sid = db.execute("SELECT id FROM staff WHERE username=?", (g["staff"],)).fetchone()[0]
        db.execute("INSERT INTO order_notes(order_id, staff_id, body) VALUES (?,?,?)", (g["oid"], sid, body_fn(g)))
    return write


CHANGES = {
    "ship-order": (_upd("orders", "oid", status="shipped"), _upd("orders", "oid", status="delivered")),
    "deliver-order": (_upd("orders", "oid", status="delivered"), _upd("orders", "oid", status="cancelled")),
    "cancel-order": (_upd("orders", "oid", status="cancelled"),
                     _upd("orders", "oid", status="cancelled", total_cents=0)),
    "note-on-order": (_note(lambda g: g["body"]), _note(lambda g: g["body"].upper())),
    "set-stock": (_upd("products", "pid", stock=lambda g: g["new_stock"]),
                  _upd("products", "pid", stock=lambda g: g["stock"] + g["new_stock"])),
    "receive-stock": (_upd("products", "pid", stock=lambda g: g["stock"] + g["received"]),
                      _upd("products", "pid", stock=lambda g: g["received"])),
    "set-price": (_upd("products", "pid", price_cents=lambda g: int(round(float(g["new_price"]) * 100))),
                  _upd("products", "pid", price_cents=lambda g: int(round(float(g["new_price"]) * 100)) + 1)),
    "discount-price": (_upd("products", "pid", price_cents=lambda g: g["discounted"]),
                       _upd("products", "pid", price_cents=lambda g: g["price"] - 1000)),
    "change-customer-address": (_upd("users", "uid", address=lambda g: g["address"], city=lambda g: g["city"],
                                     zip=lambda g: g["zip"]),
                                _upd("users", "uid", address=lambda g: g["address"], city=lambda g: g["city"])),
    "change-customer-email": (_upd("users", "uid", email=lambda g: g["new_email"]),
                              _upd("users", "uid", email=lambda g: g["new_email"], name="Changed Too")),
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
        assert t.check(a, {}, g, None) == (0.0, False)
        right(a, g)
        assert t.check(a, {}, g, None) == (1.0, True)
        wrong(b, g)
        assert t.check(b, {}, g, None)[0] == 0.0
        assert t.check(b, {}, g, "done") == (0.0, True)
        right(c, g)
        c.execute("UPDATE products SET stock = stock + 1 WHERE id = 7")  # something else changed too
        assert t.check(c, {}, g, None)[0] == 0.0
    finally:
        for conn in (a, b, c):
            forget_changes(conn)
            conn.close()


# ---------------------------------------------------------------- the app: its own login, validation, roles
def _req(site, db, method, path, body: str = "", cookie: str = ""):
    hdr = dict(FORM, cookie=cookie) if cookie else dict(FORM)
    return follow_redirects(site, db, method, "http://arl.test" + MOUNT + path, hdr, body.encode() or None, MOUNT)


def _login(site, db, role: str) -> str:
    u = db.execute("SELECT username, password FROM staff WHERE role=? ORDER BY id", (role,)).fetchone()
    st, h, _, url = _req(site, db, "POST", "/login", f"username={u[0]}&password={u[1]}&next=/orders")
    assert st == 200 and url.endswith("/orders")
    return dict(h)["Set-Cookie"].split(";")[0]


ROUTES = ("/", "/index.html", "/orders", "/orders/1", "/customers", "/customers/1", "/products", "/products/1",
          "/reports?month=2024-03", "/debug", "/goal", "/admin", "/api/orders")


def test_every_page_needs_a_staff_login(site, db):
    for path in ROUTES:
        st, _, _, url = _req(site, db, "GET", path)
        assert "/login?next=" in url, path
    for path in ("/orders/1", "/products/1", "/customers/1"):  # writes too
        _req(site, db, "POST", path, "action=status&status=cancelled&price=1&stock=1&email=a%40b.co&address=x&city=y&zip=12345")
    assert changed_tables(db, TABLES) == {}
    # the shop's customer accounts and sessions do not open the back office
    cust = db.execute("SELECT email, password FROM users WHERE id=1").fetchone()
    st, _, body, _ = _req(site, db, "POST", "/login", f"username={cust[0]}&password={cust[1]}")
    assert b"Unknown staff username or wrong password" in body
    db.execute("INSERT INTO sessions VALUES ('shopsid', 1)")
    assert "/login?next=" in _req(site, db, "GET", "/orders", cookie="adm_sid=shopsid")[3]
    assert "/login?next=" in _req(site, db, "GET", "/orders", cookie="shop_sid=shopsid")[3]


def test_forms_validate_and_roles(site, db):
    clerk = _login(site, db, "Clerk")
    p = db.execute("SELECT id, price_cents, stock FROM products WHERE id=5").fetchone()
    st, _, body, _ = _req(site, db, "POST", "/products/5", "price=abc&stock=-3", clerk)
    assert b"Price must be a number" in body and b"Stock must be a whole number" in body
    st, _, body, _ = _req(site, db, "POST", "/products/5", f"price={p[1] / 100 + 1:.2f}&stock={p[2]}", clerk)
    assert b"Only Managers can change prices" in body
    st, _, body, _ = _req(site, db, "POST", "/customers/3", "email=not-an-email&address=&city=X&zip=1", clerk)
    assert b"valid email" in body and b"Address is required" in body and b"5 digits" in body
    delivered = db.execute("SELECT id FROM orders WHERE status='delivered'").fetchone()[0]
    st, _, body, _ = _req(site, db, "POST", f"/orders/{delivered}", "action=status&status=cancelled", clerk)
    assert b"cannot change status" in body
    assert changed_tables(db, TABLES) == {}
    st, _, body, _ = _req(site, db, "POST", "/products/5", f"price={p[1] / 100:.2f}&stock={p[2] + 4}", clerk)
    assert set(changed_tables(db, TABLES)) == {"products"}
    st, _, body, _ = _req(site, db, "GET", "/reports?month=March", "", clerk)
    assert b"Month must be YYYY-MM" in body


def test_restore_and_isolation(site):
    a, b = site.connect(), site.connect()
    a.execute("UPDATE orders SET status='cancelled' WHERE id < 50")
    a.execute("INSERT INTO staff_sessions VALUES ('x', 1)")
    assert set(changed_tables(a, TABLES)) == {"orders"}
    assert changed_tables(b, TABLES) == {}
    site.restore(a)
    forget_changes(a)
    assert changed_tables(a, TABLES) == {}
    assert a.execute("SELECT COUNT(*) FROM staff_sessions").fetchone()[0] == 0  # signed out
    a.close()
    b.close()


def test_no_goal_in_any_route(site, db):
    cookie = _login(site, db, "Manager")
    seen, queue, pages = set(), ["/"], []
    while queue and len(seen) < 200:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        html = _req(site, db, "GET", path, "", cookie)[2].decode()
        pages.append(html)
        queue += [h.replace("&amp;", "&")[len(MOUNT):] for h in re.findall(r'href="([^"]+)"', html)
                  if h.startswith(MOUNT + "/") and "/static/" not in h]
    text = "\n".join(pages)
    assert "template" not in text and "goal" not in text.lower()
    for name in ("note-on-order", "change-customer-email"):
        for seed in range(4):
            _, g = _goal(name, seed)
            assert g.get("body", g.get("new_email")) not in text


# ---------------------------------------------------------------- with Chromium
browser = pytest.importorskip("arl_envs.envs.web.browser")


def _chromium_or_skip():
    try:
        browser.find_chromium()
    except browser.BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium
        pytest.skip(f"no Chromium on this machine: {exc}")


@pytest.mark.slow
def test_expert_solves_every_template_and_writes_are_isolated():
    _chromium_or_skip()
    from arl_envs.envs.web.sites.env import SiteEnv

    env, other = SiteEnv("admin"), SiteEnv("admin", family="nav")
    try:
        other.reset(seed=1)
        names = [t.name for t in env.task.templates]
        seeds: dict[str, int] = {}
        s = 0
        while len(seeds) < len(names):
            seeds.setdefault(names[int(np.random.default_rng(s).integers(len(names)))], s)
            s += 1
        family = {t.name: t.family for t in TEMPLATES}
        for name, seed in sorted(seeds.items(), key=lambda kv: family[kv[0]] == "change"):
            obs, info = env.reset(options={"task_id": str(seed)})
            assert changed_tables(env._db, TABLES) == {} and "Staff sign-in" in obs
            for _ in range(env.max_turns):
                _, _, term, trunc, info = env.step(env.expert_action())
                if term or trunc:
                    break
            assert info["success"], name
            assert changed_tables(other._db, TABLES) == {}
        assert changed_tables(env._db, TABLES)
        obs, _ = env.reset(seed=0)
        assert changed_tables(env._db, TABLES) == {} and "Staff sign-in" in obs
    finally:
        env.close()
        other.close()


@pytest.mark.slow
def test_admin_conformance():
    _chromium_or_skip()
    from arl_envs.testing import check_conformance

    with browser.hold_browser():
        report = check_conformance("arl/web.site-admin-v0", n_fuzz=30, n_random_episodes=1)
    assert report.passed, report.summary()

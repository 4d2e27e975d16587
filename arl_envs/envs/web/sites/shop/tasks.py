"""The shop's task templates (one table, :data:`TEMPLATES`): 23 information-seeking, 8 navigation, 5 content-change
and 1 WebShop-style template, each drawn from the seed database with the episode's generator.

Customers' credentials are part of the seed (``users`` table); a template that needs an account names one in the
instruction, like WebArena's tasks do. The card number any checkout accepts is :data:`CARD`.
"""

from __future__ import annotations

import re
from typing import Any

from arl_envs.envs.web.sites.tasks import (
    Template,
    changed_tables,
    check_answer,
    check_url,
    checkout,
    ensure_login,
    fill_then,
    go_product,
    go_search,
    path_of,
)
from arl_envs.envs.web.task import ANSWER_OR, act

CARD = "4111 1111 1111 1111"


def money(cents: int) -> str:
    return f"${cents / 100:.2f}"


def _pick(db, rng, sql: str, args: tuple = ()) -> tuple:
    rows = db.execute(sql, args).fetchall()
    return rows[int(rng.integers(len(rows)))]


def _product(db, rng, where: str = "1=1") -> tuple:
    n = db.execute(f"SELECT COUNT(*) FROM products WHERE {where}").fetchone()[0]
    return db.execute(f"SELECT id, name FROM products WHERE {where} ORDER BY id LIMIT 1 OFFSET ?",
                      (int(rng.integers(n)),)).fetchone()


def _leaf(db, rng) -> tuple:
    return _pick(db, rng, "SELECT id, slug, name FROM categories WHERE parent IS NOT NULL ORDER BY id")


def _user(db, rng, where: str = "1=1") -> tuple:
    return _pick(db, rng, f"SELECT id, email, password, name FROM users u WHERE {where} ORDER BY id")


def _login_note(u: tuple) -> str:
    return f" (Log in as {u[1]}, password {u[2]}.)"


# ---------------------------------------------------------------- information seeking about one product
def product_question(name: str, question: str, column_sql: str, fmt=str, where: str = "1=1") -> Template:
    def sample(db, rng):
        pid, pname = _product(db, rng, where)
        value = db.execute(column_sql, (pid,)).fetchone()[0]
        return question.format(name=pname), {"pid": pid, "name": pname, "answer": fmt(value)}

    def expert(view, goal):
        return go_product(view, goal["pid"], goal["name"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def feature_question() -> Template:
    from arl_envs.envs.web.sites.shop.data import CATALOG

    pools = {name: feats for entries in CATALOG.values() for _, name, _, _, feats in entries}

    def sample(db, rng):
        pid, pname = _product(db, rng)
        tname = db.execute("SELECT c.name FROM products p JOIN categories c ON c.id=p.category_id WHERE p.id=?",
                           (pid,)).fetchone()[0]
        feat = pools[tname][int(rng.integers(5))]
        has = db.execute("SELECT 1 FROM product_attributes WHERE product_id=? AND attribute=?", (pid, feat)).fetchone()
        return (f'Does the {pname} list "{feat}" among its features? Answer yes or no.',
                {"pid": pid, "name": pname, "answer": "yes" if has else "no"})

    def expert(view, goal):
        return go_product(view, goal["pid"], goal["name"]) or act("answer", goal["answer"])

    return Template("product-has-feature", "info", sample, check_answer, expert)


def review_author() -> Template:
    def sample(db, rng):
        rows = db.execute("SELECT r.product_id, p.name, r.title, u.name FROM reviews r JOIN products p ON p.id=r.product_id "
                          "JOIN users u ON u.id=r.user_id WHERE (SELECT COUNT(*) FROM reviews r2 WHERE "
                          "r2.product_id=r.product_id AND r2.title=r.title)=1 AND r.product_id % 7 = ? ORDER BY r.id",
                          (int(rng.integers(7)),)).fetchall()
        pid, pname, title, author = rows[int(rng.integers(len(rows)))]
        return (f'Who wrote the review titled "{title}" of the {pname}? Give the reviewer\'s name.',
                {"pid": pid, "name": pname, "answer": author})

    def expert(view, goal):
        return go_product(view, goal["pid"], goal["name"]) or act("answer", goal["answer"])

    return Template("review-author", "info", sample, check_answer, expert)


# ---------------------------------------------------------------- information seeking over a category
def category_extreme(name: str, question: str, order: str, value_sql: str, sort: str, value_answer=None) -> Template:
    """The product(s) of a product type with the extreme ``value_sql``; ties are all accepted (``|OR|``)."""

    def sample(db, rng):
        cid, slug, cname = _leaf(db, rng)
        best = db.execute(f"SELECT {value_sql} FROM products p WHERE category_id=? ORDER BY 1 {order} LIMIT 1",
                          (cid,)).fetchone()[0]
        names = [r[0] for r in db.execute(f"SELECT name FROM products p WHERE category_id=? AND {value_sql}=?",
                                          (cid, best))]
        answer = value_answer(best) if value_answer else f" {ANSWER_OR} ".join(names)
        return question.format(cat=cname.lower()), {"answer": answer, "params": {"cat": slug, "sort": sort}}

    def expert(view, goal):
        return go_search(view, goal["params"]) or act("answer", goal["answer"].split(ANSWER_OR)[0].strip())

    return Template(name, "info", sample, check_answer, expert)


def category_count(name: str, question: str, where: str, params_fn) -> Template:
    def sample(db, rng):
        cid, slug, cname = _leaf(db, rng)
        bound = int(db.execute("SELECT price_cents FROM products WHERE category_id=? ORDER BY price_cents LIMIT 1 OFFSET 3",
                               (cid,)).fetchone()[0] // 100 + int(rng.integers(2, 30)))
        brand = _pick(db, rng, "SELECT DISTINCT brand FROM products WHERE category_id=? ORDER BY brand", (cid,))[0]
        ctx = {"cid": cid, "bound": bound, "brand": brand}
        n = db.execute(f"SELECT COUNT(*) FROM products p WHERE p.category_id=:cid AND {where}", ctx).fetchone()[0]
        return (question.format(cat=cname.lower(), bound=bound, brand=brand),
                {"answer": str(n), "params": params_fn(slug, bound, brand)})

    def expert(view, goal):
        return go_search(view, goal["params"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


# ---------------------------------------------------------------- information seeking about a customer's orders
def order_question(name: str, question: str, sample_fn) -> Template:
    def sample(db, rng):
        u = _user(db, rng, "EXISTS (SELECT 1 FROM orders o WHERE o.user_id=u.id)")
        q, goal = sample_fn(db, rng, u)
        return question.format(**q) + _login_note(u), {"email": u[1], "password": u[2], **goal}

    def expert(view, goal):
        step = ensure_login(view, goal["email"], goal["password"])
        if step:
            return step
        oid = goal.get("oid")
        if oid is not None and path_of(view) != f"/orders/{oid}":
            if path_of(view) != "/orders":
                return act("click", view.bid('header nav.user a[href$="/orders"]'))
            return act("click", view.bid(f'a.order[data-oid="{oid}"]'))
        if oid is None and path_of(view) != "/orders":
            return act("click", view.bid('header nav.user a[href$="/orders"]'))
        return act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def _order_total(db, rng, u):
    oid, total = _pick(db, rng, "SELECT id, total_cents FROM orders WHERE user_id=? ORDER BY id", (u[0],))
    return {"oid": oid}, {"oid": oid, "answer": money(total)}


def _order_count(db, rng, u):
    n = db.execute("SELECT COUNT(*) FROM orders WHERE user_id=?", (u[0],)).fetchone()[0]
    return {}, {"answer": str(n)}


def _latest_status(db, rng, u):
    oid, status = db.execute("SELECT id, status FROM orders WHERE user_id=? ORDER BY id DESC LIMIT 1", (u[0],)).fetchone()
    return {}, {"answer": status}


def _order_items(db, rng, u):
    oid = _pick(db, rng, "SELECT id FROM orders WHERE user_id=? ORDER BY id", (u[0],))[0]
    n = db.execute("SELECT SUM(qty) FROM order_items WHERE order_id=?", (oid,)).fetchone()[0]
    return {"oid": oid}, {"oid": oid, "answer": str(n)}


def _order_city(db, rng, u):
    oid, city = _pick(db, rng, "SELECT id, city FROM orders WHERE user_id=? ORDER BY id", (u[0],))
    return {"oid": oid}, {"oid": oid, "answer": city}


# ---------------------------------------------------------------- navigation
def nav_search(name: str, instruction: str, params_fn) -> Template:
    def sample(db, rng):
        cid, slug, cname = _leaf(db, rng)
        dept = db.execute("SELECT c2.slug, c2.name FROM categories c JOIN categories c2 ON c2.id=c.parent WHERE c.id=?",
                          (cid,)).fetchone()
        lo = int(rng.integers(1, 5)) * 10
        ctx = {"slug": slug, "cat": cname.lower(), "dept_slug": dept[0], "dept": dept[1], "lo": lo, "hi": lo + 40,
               "word": ("waterproof", "organic", "lightweight", "vegan", "non-slip")[int(rng.integers(5))]}
        return instruction.format(**ctx), {"path": "/search", "params": params_fn(ctx)}

    def expert(view, goal):
        return go_search(view, goal["params"]) or act("noop")

    return Template(name, "nav", sample, check_url, expert)


def nav_product() -> Template:
    def sample(db, rng):
        pid, pname = _product(db, rng)
        return f"Open the product page of the {pname}.", {"path": f"/product/{pid}", "pid": pid, "name": pname}

    def expert(view, goal):
        return go_product(view, goal["pid"], goal["name"]) or act("noop")

    return Template("open-product", "nav", sample, check_url, expert)


def nav_order() -> Template:
    def sample(db, rng):
        u = _user(db, rng, "EXISTS (SELECT 1 FROM orders o WHERE o.user_id=u.id)")
        oid = _pick(db, rng, "SELECT id FROM orders WHERE user_id=? ORDER BY id", (u[0],))[0]
        return (f"Open the details page of your order #{oid}." + _login_note(u),
                {"path": f"/orders/{oid}", "oid": oid, "email": u[1], "password": u[2]})

    def expert(view, goal):
        step = ensure_login(view, goal["email"], goal["password"])
        if step:
            return step
        if path_of(view) != "/orders":
            return act("click", view.bid('header nav.user a[href$="/orders"]'))
        return act("click", view.bid(f'a.order[data-oid="{goal["oid"]}"]'))

    return Template("open-order", "nav", sample, check_url, expert)


# ---------------------------------------------------------------- content changes
def _options(db, pid) -> tuple[str | None, str | None]:
    size = db.execute("SELECT value FROM product_options WHERE product_id=? AND kind='size' LIMIT 1 OFFSET 1", (pid,)).fetchone()
    color = db.execute("SELECT value FROM product_options WHERE product_id=? AND kind='color' ORDER BY value DESC LIMIT 1",
                       (pid,)).fetchone()
    return (size[0] if size else None), (color[0] if color else None)


def _opt_text(size, color) -> str:
    parts = ([f"size {size}"] if size else []) + ([f"colour {color}"] if color else [])
    return " in " + " and ".join(parts) if parts else ""


def _pick_options(view, goal) -> str | None:
    wanted = [(k, v) for k, v in (("opt-size", goal.get("size")), ("opt-color", goal.get("color"))) if v]
    from arl_envs.envs.web.sites.tasks import fields

    f = fields(view)
    for key, value in wanted:
        if f.get(key) != value:
            return act("select_option", view.bid(f"#{key}"), value)
    return None


def add_to_cart() -> Template:
    def sample(db, rng):
        pid, pname = _product(db, rng)
        size, color = _options(db, pid)
        qty = int(rng.integers(1, 4))
        return (f"Add {qty} of the {pname}{_opt_text(size, color)} to the shopping cart.",
                {"pid": pid, "name": pname, "size": size, "color": color, "qty": qty})

    def check(db, state, goal, answer):
        ch = changed_tables(db)
        cart = db.execute("SELECT product_id, size, color, qty FROM cart_items").fetchall()
        ok = set(ch) == {"cart_items"} and cart == [(goal["pid"], goal["size"], goal["color"], goal["qty"])]
        return (1.0 if ok else 0.0), ok or answer is not None or "orders" in ch

    def expert(view, goal):
        step = go_product(view, goal["pid"], goal["name"]) or _pick_options(view, goal)
        if step:
            return step
        if view.bids("#qty") and (view.state.get("fields") or {}).get("qty") != str(goal["qty"]):
            return act("fill", view.bid("#qty"), str(goal["qty"]))
        return act("click", view.bid("#add"))

    return Template("add-to-cart", "change", sample, check, expert)


def _new_order(db) -> tuple[dict[str, Any], list[tuple]]:
    ch = changed_tables(db)
    items = db.execute("SELECT i.product_id, i.size, i.color, i.qty FROM order_items i WHERE i.order_id > "
                       "(SELECT MAX(id) FROM seed.orders)").fetchall()
    return ch, items


def buy_product() -> Template:
    def sample(db, rng):
        pid, pname = _product(db, rng, "stock > 0")
        size, color = _options(db, pid)
        u = _user(db, rng)
        return (f"Buy one {pname}{_opt_text(size, color)} and have it shipped to your saved address; pay with card "
                f"{CARD}." + _login_note(u),
                {"pid": pid, "name": pname, "size": size, "color": color, "uid": u[0], "email": u[1], "password": u[2]})

    def check(db, state, goal, answer):
        ch, items = _new_order(db)
        if "orders" not in ch:
            return 0.0, answer is not None
        orders = db.execute("SELECT user_id FROM orders WHERE id > (SELECT MAX(id) FROM seed.orders)").fetchall()
        ok = (set(ch) <= {"orders", "order_items", "cart_items"} and orders == [(goal["uid"],)]
              and items == [(goal["pid"], goal["size"], goal["color"], 1)])
        return (1.0 if ok else 0.0), True

    def expert(view, goal):
        if path_of(view) in ("/login", "/checkout", "/cart"):
            return checkout(view, goal["email"], goal["password"], CARD)
        step = go_product(view, goal["pid"], goal["name"]) or _pick_options(view, goal)
        return step or act("click", view.bid("#buy-now"))

    return Template("buy-product", "change", sample, check, expert)


def change_address() -> Template:
    from arl_envs.envs.web.sites.shop.data import CITIES, STREETS

    def sample(db, rng):
        u = _user(db, rng)
        city, zipc = CITIES[int(rng.integers(len(CITIES)))]
        addr = f"{int(rng.integers(1, 999))} {STREETS[int(rng.integers(len(STREETS)))]}"
        return (f"Change the shipping address in your account to {addr}, {city}, ZIP {zipc}." + _login_note(u),
                {"uid": u[0], "email": u[1], "password": u[2], "address": addr, "city": city, "zip": zipc})

    def check(db, state, goal, answer):
        ch = changed_tables(db)
        row = db.execute("SELECT address, city, zip FROM users WHERE id=?", (goal["uid"],)).fetchone()
        ok = set(ch) == {"users"} and len(ch["users"][0]) == 1 and row == (goal["address"], goal["city"], goal["zip"])
        return (1.0 if ok else 0.0), ok or answer is not None

    def expert(view, goal):
        step = ensure_login(view, goal["email"], goal["password"])
        if step:
            return step
        if path_of(view) != "/account":
            return act("click", view.bid("header nav.user a[href$='/account']"))
        return fill_then(view, [("ac-address", goal["address"]), ("ac-city", goal["city"]), ("ac-zip", goal["zip"])],
                         "#ac-save")

    return Template("change-address", "change", sample, check, expert)


def write_review() -> Template:
    def sample(db, rng):
        pid, pname = _product(db, rng)
        u = _user(db, rng)
        stars = int(rng.integers(1, 6))
        title = ("Worth every penny", "Good but pricey", "Arrived late", "Better than expected", "Returned it")[int(rng.integers(5))]
        return (f'Write a {stars}-star review of the {pname} titled "{title}" (any text of at least 10 characters).'
                + _login_note(u), {"pid": pid, "name": pname, "uid": u[0], "email": u[1], "password": u[2],
                                   "stars": stars, "title": title})

    def check(db, state, goal, answer):
        ch = changed_tables(db)
        added = ch.get("reviews", ([], []))[0]
        ok = (set(ch) <= {"reviews", "products"} and len(added) == 1 and added[0][1:5] ==
              (goal["pid"], goal["uid"], goal["stars"], goal["title"]) and not ch.get("reviews", ([], []))[1])
        return (1.0 if ok else 0.0), ok or answer is not None or bool(added)

    def expert(view, goal):
        step = ensure_login(view, goal["email"], goal["password"]) or go_product(view, goal["pid"], goal["name"])
        if step:
            return step
        return fill_then(view, [("rv-rating", str(goal["stars"])), ("rv-title", goal["title"]),
                                ("rv-body", "Sharing my honest experience with this product.")], "#rv-submit")

    return Template("write-review", "change", sample, check, expert)


def empty_then_add() -> Template:
    """Add two different products (cart holds exactly both)."""

    def sample(db, rng):
        a = _product(db, rng)
        b = _product(db, rng, f"id != {a[0]}")
        items = [[p[0], p[1], *_options(db, p[0])] for p in (a, b)]
        return (f"Put one {a[1]}{_opt_text(*items[0][2:])} and one {b[1]}{_opt_text(*items[1][2:])} in the cart "
                "(nothing else).", {"items": items})

    def check(db, state, goal, answer):
        ch = changed_tables(db)
        cart = sorted(db.execute("SELECT product_id, size, color, qty FROM cart_items").fetchall(), key=repr)
        ok = set(ch) == {"cart_items"} and cart == sorted(((*i[:1], *i[2:], 1) for i in goal["items"]), key=repr)
        return (1.0 if ok else 0.0), ok or answer is not None

    def expert(view, goal):
        m = re.search(r"Cart \((\d+)\)", view.axtree)
        n = int(m.group(1)) if m else 0
        if n >= len(goal["items"]):
            return act("noop")
        pid, name, size, color = goal["items"][n]
        return (go_product(view, pid, name) or _pick_options(view, {"size": size, "color": color})
                or act("click", view.bid("#add")))

    return Template("add-two-items", "change", sample, check, expert)


# ---------------------------------------------------------------- WebShop-style purchase
def webshop_reward(db, goal: dict[str, Any], pid: int, size: str | None, color: str | None) -> float:
    """WebShop's score of a purchased item (Yao et al., 2022, section 3.2):
    ``r_type * (|U_att & Y_att| + |U_opt & Y_opt| + 1[price <= bound]) / (|U_att| + |U_opt| + 1)``, with ``r_type``
    1 for the requested product type, 0.5 for another type of the same department, 0.1 otherwise (WebShop derives
    it from title/category text similarity; our catalogue has explicit types)."""
    cat, price = db.execute("SELECT category_id, price_cents FROM products WHERE id=?", (pid,)).fetchone()
    if cat == goal["cat"]:
        r_type = 1.0
    else:
        same = db.execute("SELECT a.parent = b.parent FROM categories a, categories b WHERE a.id=? AND b.id=?",
                          (cat, goal["cat"])).fetchone()[0]
        r_type = 0.5 if same else 0.1
    attrs = {r[0] for r in db.execute("SELECT attribute FROM product_attributes WHERE product_id=?", (pid,))}
    n_att = len(set(goal["attrs"]) & attrs)
    want_opts = {k: v for k, v in (("size", goal.get("size")), ("color", goal.get("color"))) if v}
    got = {"size": size, "color": color}
    n_opt = sum(got[k] == v for k, v in want_opts.items())
    price_ok = 1 if price <= goal["max_cents"] else 0
    return r_type * (n_att + n_opt + price_ok) / (len(goal["attrs"]) + len(want_opts) + 1)


def webshop() -> Template:
    def sample(db, rng):
        pid, pname = _product(db, rng, "stock > 0 AND id IN (SELECT product_id FROM product_options)")
        cat, cname, price = db.execute("SELECT p.category_id, c.name, p.price_cents FROM products p JOIN categories c "
                                       "ON c.id=p.category_id WHERE p.id=?", (pid,)).fetchone()
        attrs = [r[0] for r in db.execute("SELECT attribute FROM product_attributes WHERE product_id=? ORDER BY attribute",
                                          (pid,))][:2]
        size, color = _options(db, pid)
        bound = (price // 100 + int(rng.integers(2, 20)))
        u = _user(db, rng)
        opt = " and ".join(([f"colour {color}"] if color else []) + ([f"size {size}"] if size else []))
        text = (f"i am looking for a {' and '.join(attrs)} {cname.lower()}" + (f" with {opt}" if opt else "")
                + f", and price lower than {bound}.00 dollars. Buy it and pay with card {CARD}." + _login_note(u))
        return text, {"pid": pid, "name": pname, "cat": cat, "attrs": attrs, "size": size, "color": color,
                      "max_cents": bound * 100, "uid": u[0], "email": u[1], "password": u[2]}

    def check(db, state, goal, answer):
        ch, items = _new_order(db)
        if "orders" not in ch or not items:
            return 0.0, answer is not None
        pid, size, color, _ = items[0]
        return webshop_reward(db, goal, pid, size, color), True

    def expert(view, goal):
        if path_of(view) in ("/login", "/checkout", "/cart"):
            return checkout(view, goal["email"], goal["password"], CARD)
        step = go_product(view, goal["pid"], goal["name"]) or _pick_options(view, goal)
        return step or act("click", view.bid("#buy-now"))

    return Template("webshop-purchase", "webshop", sample, check, expert)


TEMPLATES: list[Template] = [
    # information seeking: one product (10)
    product_question("product-price", "What is the price of the {name}?",
                     "SELECT price_cents FROM products WHERE id=?", money),
    product_question("product-rating", "What is the average customer rating of the {name}? Answer with the number.",
                     "SELECT printf('%.1f', rating) FROM products WHERE id=?", where="n_reviews > 0"),
    product_question("product-review-count", "How many customer reviews does the {name} have?",
                     "SELECT n_reviews FROM products WHERE id=?"),
    product_question("product-brand", "Which brand makes the {name}?", "SELECT brand FROM products WHERE id=?"),
    product_question("product-stock", "How many units of the {name} are left in stock? (0 if it is out of stock)",
                     "SELECT stock FROM products WHERE id=?"),
    product_question("product-colour-count", "In how many colours is the {name} available?",
                     "SELECT COUNT(*) FROM product_options WHERE product_id=? AND kind='color'",
                     where="id IN (SELECT product_id FROM product_options WHERE kind='color')"),
    product_question("product-category", "In which product category is the {name} listed?",
                     "SELECT c.name FROM products p JOIN categories c ON c.id=p.category_id WHERE p.id=?"),
    product_question("product-lowest-review", "What is the lowest star rating a reviewer gave the {name}?",
                     "SELECT MIN(rating) FROM reviews WHERE product_id=?", where="n_reviews > 1"),
    feature_question(),
    review_author(),
    # information seeking: one category (8)
    category_extreme("cheapest-in-category", "What is the name of the cheapest {cat} in the shop?", "ASC",
                     "p.price_cents", "price_asc"),
    category_extreme("priciest-in-category", "What is the name of the most expensive {cat} in the shop?", "DESC",
                     "p.price_cents", "price_desc"),
    category_extreme("most-reviewed-in-category", "Which {cat} has the most customer reviews? Give its name.", "DESC",
                     "p.n_reviews", "reviews"),
    category_extreme("best-rated-in-category", "Which {cat} has the best average rating (most reviews among equally rated)? "
                     "Give its name.", "DESC", "p.rating * 1000 + p.n_reviews", "rating"),
    category_extreme("lowest-price-in-category", "What is the lowest price of any {cat}? Answer with the price.",
                     "ASC", "p.price_cents", "price_asc", money),
    category_count("count-under-price", "How many {cat} products cost at most ${bound}?",
                   "p.price_cents <= :bound * 100", lambda s, b, br: {"cat": s, "max_price": str(b)}),
    category_count("count-brand", "How many {brand} products are listed in the {cat} category?",
                   "p.name LIKE :brand || ' %'", lambda s, b, br: {"cat": s, "q": br}),
    category_count("count-rated-4", "How many {cat} products have an average rating of 4 or more?",
                   "p.rating >= 4", lambda s, b, br: {"cat": s, "min_rating": "4"}),
    # information seeking: the customer's orders (5)
    order_question("order-total", "What was the total of your order #{oid}?", _order_total),
    order_question("order-count", "How many orders have you placed in this shop?", _order_count),
    order_question("latest-order-status", "What is the status of your most recent order?", _latest_status),
    order_question("order-item-count", "How many items (counting quantities) were in your order #{oid}?", _order_items),
    order_question("order-ship-city", "To which city was your order #{oid} shipped?", _order_city),
    # navigation (8)
    nav_product(),
    nav_order(),
    nav_search("open-category", "Show the list of all {cat} products.", lambda c: {"cat": c["slug"]}),
    nav_search("category-by-price", "List the {cat} products sorted by price, lowest first.",
               lambda c: {"cat": c["slug"], "sort": "price_asc"}),
    nav_search("category-price-range", "Show the {cat} products priced between ${lo} and ${hi}.",
               lambda c: {"cat": c["slug"], "min_price": str(c["lo"]), "max_price": str(c["hi"])}),
    nav_search("category-top-rated", "Show the {cat} products rated 4.5 or higher, best rated first.",
               lambda c: {"cat": c["slug"], "min_rating": "4.5", "sort": "rating"}),
    nav_search("department-second-page", "Open the second page of all products in the {dept} department.",
               lambda c: {"cat": c["dept_slug"], "page": "2"}),
    nav_search("search-word-in-department", 'Search for "{word}" and narrow the results to the {dept} department.',
               lambda c: {"q": c["word"], "cat": c["dept_slug"]}),
    # content changes (5)
    add_to_cart(),
    empty_then_add(),
    buy_product(),
    change_address(),
    write_review(),
    # WebShop-style (its own id)
    webshop(),
]

"""The admin site's task templates (one table, :data:`TEMPLATES`): 18 information-seeking, 8 navigation and 10
content-change templates over the shop's orders, customers, products, stock and monthly reports.

Every page needs a staff sign-in, so every instruction names the staff account (a Manager where the change needs
one: prices). Change evaluators diff :data:`TABLES` against the seed: the right rows changed and nothing else.
"""

from __future__ import annotations

from typing import Any

from arl_envs.envs.web.sites.tasks import (
    Template,
    check_answer,
    check_url,
    fill_then,
    path_of,
    row_inserted_only,
    row_updated_only,
    url_params,
)
from arl_envs.envs.web.task import ExpertView, act

#: Tables a change evaluator diffs against the seed (staff sessions are bookkeeping).
TABLES = ("users", "orders", "order_items", "products", "reviews", "cart_items", "staff", "order_notes")
_SECTION = {"/": "#nav-dashboard", "/orders": "#nav-orders", "/customers": "#nav-customers",
            "/products": "#nav-products", "/reports": "#nav-reports"}
_FILTERS = {"/orders": (("q", "o-q"), ("status", "o-status"), ("sort", "o-sort"), "#o-apply"),
            "/customers": (("q", "c-q"), ("city", "c-city"), "#c-apply"),
            "/products": (("q", "p-q"), ("cat", "p-cat"), ("stock", "p-stock"), ("sort", "p-sort"), "#p-apply"),
            "/reports": (("month", "r-month"), "#r-apply")}


def money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def _pick(db, rng, sql: str, args: tuple = ()) -> tuple:
    rows = db.execute(sql, args).fetchall()
    return rows[int(rng.integers(len(rows)))]


def _staff(db, rng, manager: bool = False) -> dict[str, Any]:
    r = _pick(db, rng, "SELECT username, password, name FROM staff WHERE role=? OR ? ORDER BY id",
              ("Manager", 0 if manager else 1))
    return {"staff": r[0], "password": r[1], "staff_name": r[2]}


def _login(g: dict[str, Any]) -> str:
    return f" (Staff sign-in: {g['staff']}, password {g['password']}.)"


def _order(db, rng, where: str = "1=1") -> dict[str, Any]:
    r = _pick(db, rng, f"SELECT id FROM orders o WHERE {where} ORDER BY id")
    return {"oid": r[0]}


def _customer(db, rng) -> dict[str, Any]:
    r = _pick(db, rng, "SELECT id, email, name FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id=u.id) "
                       "ORDER BY id")
    return {"uid": r[0], "email": r[1], "cname": r[2]}


def _product(db, rng, where: str = "1=1") -> dict[str, Any]:
    n = db.execute(f"SELECT COUNT(*) FROM products WHERE {where}").fetchone()[0]
    r = db.execute(f"SELECT id, name, price_cents, stock FROM products WHERE {where} ORDER BY id LIMIT 1 OFFSET ?",
                   (int(rng.integers(n)),)).fetchone()
    return {"pid": r[0], "pname": r[1], "price": r[2], "stock": r[3]}


def _month(db, rng) -> str:
    return _pick(db, rng, "SELECT DISTINCT substr(placed, 1, 7) FROM orders ORDER BY 1")[0]


# ---------------------------------------------------------------- expert moves
def ensure_login(view: ExpertView, g: dict[str, Any]) -> str | None:
    if path_of(view) != "/login":
        return None
    return fill_then(view, [("adm-user", g["staff"]), ("adm-password", g["password"])], "#adm-submit")


def go_list(view: ExpertView, path: str, params: dict[str, str]) -> str | None:
    """Reach ``path`` (a section) with exactly ``params`` (``page`` through the pager)."""
    here, have = url_params(view.url)
    if (here if here != "/index.html" else "/") != path:
        return act("click", view.bid(_SECTION[path]))
    want = {k: v for k, v in params.items() if k != "page" and v}
    if {k: v for k, v in have.items() if k != "page"} == want:
        page, cur = int(params.get("page", "1")), int(have.get("page", "1"))
        return None if page == cur else act("click", view.bid("#next" if cur < page else "#prev"))
    *form, submit = _FILTERS[path]
    return fill_then(view, [(fid, params.get(key, "")) for key, fid in form], submit)


def open_customer(view: ExpertView, uid: int, email: str) -> str | None:
    if path_of(view) == f"/customers/{uid}":
        return None
    links = view.bids(f'a.customer[data-uid="{uid}"]')
    if links and path_of(view) == "/customers":
        return act("click", links[0])
    return go_list(view, "/customers", {"q": email})


def open_product(view: ExpertView, pid: int, name: str) -> str | None:
    if path_of(view) == f"/products/{pid}":
        return None
    links = view.bids(f'a.product[data-pid="{pid}"]')
    if links and path_of(view) == "/products":
        return act("click", links[0])
    return go_list(view, "/products", {"q": name})


def _to_order(view: ExpertView, g: dict[str, Any]) -> str | None:
    """Open order ``g["oid"]``: its link where the page shows one, else the orders list searched by number."""
    if path_of(view) == f"/orders/{g['oid']}":
        return None
    links = view.bids(f'a.order[data-oid="{g["oid"]}"]')
    if links:
        return act("click", links[0])
    return go_list(view, "/orders", {"q": str(g["oid"])})


# ---------------------------------------------------------------- information seeking
def order_question(name: str, question: str, value_sql: str, fmt=str, where: str = "1=1") -> Template:
    def sample(db, rng):
        g = {**_order(db, rng, where), **_staff(db, rng)}
        g["uid"], g["email"] = db.execute("SELECT u.id, u.email FROM orders o JOIN users u ON u.id=o.user_id WHERE "
                                          "o.id=?", (g["oid"],)).fetchone()
        g["answer"] = fmt(db.execute(value_sql, (g["oid"],)).fetchone()[0])
        return question.format(oid=g["oid"], email=g["email"]) + _login(g), g

    def expert(view, goal):
        return ensure_login(view, goal) or _to_order(view, goal) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def customer_question(name: str, question: str, value_sql: str, fmt=str) -> Template:
    def sample(db, rng):
        g = {**_customer(db, rng), **_staff(db, rng)}
        g["answer"] = fmt(db.execute(value_sql, (g["uid"],)).fetchone()[0])
        return question.format(email=g["email"]) + _login(g), g

    def expert(view, goal):
        return ensure_login(view, goal) or open_customer(view, goal["uid"], goal["email"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def product_question(name: str, question: str, value_sql: str, fmt=str) -> Template:
    def sample(db, rng):
        g = {**_product(db, rng), **_staff(db, rng)}
        g["answer"] = fmt(db.execute(value_sql, (g["pid"],)).fetchone()[0])
        return question.format(name=g["pname"]) + _login(g), g

    def expert(view, goal):
        return ensure_login(view, goal) or open_product(view, goal["pid"], goal["pname"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def list_question(name: str, question: str, path: str, choose) -> Template:
    """An answer read from a filtered list or the reports page (``choose(db, rng) -> (format dict, params, answer)``)."""

    def sample(db, rng):
        g = _staff(db, rng)
        fmt, params, answer = choose(db, rng)
        return question.format(**fmt) + _login(g), {**g, "params": params, "answer": answer}

    def expert(view, goal):
        return ensure_login(view, goal) or go_list(view, path, goal["params"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def _status_count(db, rng):
    s = ("processing", "shipped", "delivered", "cancelled")[int(rng.integers(4))]
    return {"status": s}, {}, str(db.execute("SELECT COUNT(*) FROM orders WHERE status=?", (s,)).fetchone()[0])


def _leaf(db, rng):
    return _pick(db, rng, "SELECT id, slug, name FROM categories WHERE parent IS NOT NULL ORDER BY id")


def _low_in_cat(db, rng):
    cid, slug, cname = _leaf(db, rng)
    n = db.execute("SELECT COUNT(*) FROM products WHERE category_id=? AND stock < 5", (cid,)).fetchone()[0]
    return {"cat": cname.lower()}, {"cat": slug, "stock": "low"}, str(n)


def _out_in_cat(db, rng):
    cid, slug, cname = _leaf(db, rng)
    n = db.execute("SELECT COUNT(*) FROM products WHERE category_id=? AND stock = 0", (cid,)).fetchone()[0]
    return {"cat": cname.lower()}, {"cat": slug, "stock": "out"}, str(n)


_MONTH_SQL = "o.status != 'cancelled' AND substr(o.placed, 1, 7)=?"


def _revenue(db, rng):
    m = _month(db, rng)
    cents = db.execute(f"SELECT SUM(o.total_cents) FROM orders o WHERE {_MONTH_SQL}", (m,)).fetchone()[0]
    return {"month": m}, {"month": m}, money(cents)


def _top_product(db, rng):
    m = _month(db, rng)
    rows = db.execute(f"SELECT p.name, SUM(i.qty * i.price_cents) AS r FROM order_items i JOIN orders o ON o.id=i.order_id "
                      f"JOIN products p ON p.id=i.product_id WHERE {_MONTH_SQL} GROUP BY p.id ORDER BY r DESC, p.id",
                      (m,)).fetchall()
    return {"month": m}, {"month": m}, " |OR| ".join(r[0] for r in rows if r[1] == rows[0][1])


def _top_dept(db, rng):
    m = _month(db, rng)
    rows = db.execute(f"SELECT d.name, SUM(i.qty * i.price_cents) AS r FROM order_items i JOIN orders o ON o.id=i.order_id "
                      f"JOIN products p ON p.id=i.product_id JOIN categories c ON c.id=p.category_id JOIN categories d ON "
                      f"d.id=c.parent WHERE {_MONTH_SQL} GROUP BY d.id ORDER BY r DESC", (m,)).fetchall()
    return {"month": m}, {"month": m}, rows[0][0]


def _city_count(db, rng):
    city = _pick(db, rng, "SELECT DISTINCT city FROM users ORDER BY city")[0]
    return {"city": city}, {"city": city}, str(db.execute("SELECT COUNT(*) FROM users WHERE city=?", (city,)).fetchone()[0])


# ---------------------------------------------------------------- navigation
def nav_page(name: str, instruction: str, sample_fn, route) -> Template:
    def sample(db, rng):
        g = {**sample_fn(db, rng), **_staff(db, rng)}
        if "oid" in g:
            g["uid"], g["email"] = db.execute("SELECT u.id, u.email FROM orders o JOIN users u ON u.id=o.user_id WHERE "
                                              "o.id=?", (g["oid"],)).fetchone()
        return instruction.format(**g) + _login(g), {**g, "path": route(g)}

    def expert(view, goal):
        step = ensure_login(view, goal)
        if step:
            return step
        if "oid" in goal:
            return _to_order(view, goal) or act("noop")
        if "pid" in goal:
            return open_product(view, goal["pid"], goal["pname"]) or act("noop")
        return open_customer(view, goal["uid"], goal["email"]) or act("noop")

    return Template(name, "nav", sample, check_url, expert)


def nav_list(name: str, instruction: str, path: str, choose) -> Template:
    def sample(db, rng):
        g = _staff(db, rng)
        fmt, params, _ = choose(db, rng)
        return instruction.format(**fmt) + _login(g), {**g, "path": path, "params": params}

    def expert(view, goal):
        return ensure_login(view, goal) or go_list(view, path, goal["params"]) or act("noop")

    return Template(name, "nav", sample, check_url, expert)


def _orders_by_status(db, rng):
    fmt, _, _ = _status_count(db, rng)
    return fmt, {"status": fmt["status"]}, None


def _customer_orders_largest(db, rng):
    c = _customer(db, rng)
    return {"email": c["email"]}, {"q": c["email"], "sort": "total_desc"}, None


def _report_month(db, rng):
    m = _month(db, rng)
    return {"month": m}, {"month": m}, None


def _low_sorted(db, rng):
    fmt, params, _ = _low_in_cat(db, rng)
    return fmt, {**params, "sort": "stock_asc"}, None


# ---------------------------------------------------------------- content changes
def change(name: str, instruction: str, sample_fn, check_fn, expert_fn, manager: bool = False) -> Template:
    def sample(db, rng):
        g = {**_staff(db, rng, manager), **sample_fn(db, rng)}
        return instruction.format(**g) + _login(g), g

    def check(db, state, goal, answer):
        ok = check_fn(db, goal)
        return (1.0 if ok else 0.0), ok or answer is not None

    def expert(view, goal):
        return ensure_login(view, goal) or expert_fn(view, goal)

    return Template(name, "change", sample, check, expert)


def _order_in(*statuses: str):
    def sample(db, rng):
        marks = ",".join(f"'{s}'" for s in statuses)
        g = _order(db, rng, f"status IN ({marks})")
        g["uid"], g["email"] = db.execute("SELECT u.id, u.email FROM orders o JOIN users u ON u.id=o.user_id WHERE "
                                          "o.id=?", (g["oid"],)).fetchone()
        return g
    return sample


def _set_status(status: str):
    def expert(view, g):
        return _to_order(view, g) or fill_then(view, [("os-status", status)], "#os-save")
    return expert


NOTES = ("Customer called: leave the parcel with the neighbour.", "Gift order, do not include the invoice.",
         "Address confirmed by phone.", "Customer asked for delivery after 5 pm.")


def _note_sample(db, rng):
    g = _order_in("processing", "shipped", "delivered")(db, rng)
    g["body"] = NOTES[int(rng.integers(len(NOTES)))]
    return g


def _note_check(db, g):
    sid = db.execute("SELECT id FROM staff WHERE username=?", (g["staff"],)).fetchone()[0]
    return row_inserted_only(db, TABLES, "order_notes", {"order_id": g["oid"], "staff_id": sid, "body": g["body"]}) is not None


def _stock_sample(db, rng):
    g = _product(db, rng)
    g["new_stock"] = int(rng.integers(10, 80))
    g["received"] = int(rng.integers(5, 40))
    return g


def _price_sample(db, rng):
    g = _product(db, rng)
    g["new_price"] = f"{g['price'] // 100 + int(rng.integers(-3, 8)) + 0.49:.2f}"
    g["discounted"] = int(round(g["price"] * 0.9))
    return g


def _product_form(key: str, value):
    def expert(view, g):
        v = value(g)
        return open_product(view, g["pid"], g["pname"]) or fill_then(view, [(key, v)], "#pr-save")
    return expert


def _customer_sample(db, rng):
    from arl_envs.envs.web.sites.shop.data import CITIES, STREETS

    g = _customer(db, rng)
    g["city"], g["zip"] = CITIES[int(rng.integers(len(CITIES)))]
    g["address"] = f"{int(rng.integers(1, 999))} {STREETS[int(rng.integers(len(STREETS)))]}"
    first, last = g["cname"].lower().split()[:2]
    g["new_email"] = f"{first[0]}.{last}{g['uid']}@mailbox.example.org"
    return g


def _customer_form(fields_):
    def expert(view, g):
        return open_customer(view, g["uid"], g["email"]) or fill_then(view, [(k, g[v]) for k, v in fields_], "#cu-save")
    return expert


TEMPLATES: list[Template] = [
    # information seeking: orders, customers, products (11)
    order_question("order-status", "What is the status of order #{oid}?", "SELECT status FROM orders WHERE id=?"),
    order_question("order-total", "What is the total of order #{oid} (placed by {email})?",
                   "SELECT total_cents FROM orders WHERE id=?", money),
    order_question("order-units", "How many units (counting quantities) does order #{oid} of {email} contain?",
                   "SELECT SUM(qty) FROM order_items WHERE order_id=?"),
    order_question("order-ship-city", "To which city does order #{oid} of {email} ship?", "SELECT city FROM orders WHERE id=?"),
    customer_question("customer-order-count", "How many orders has the customer {email} placed?",
                      "SELECT COUNT(*) FROM orders WHERE user_id=?"),
    customer_question("customer-spent", "How much has the customer {email} spent in total, not counting cancelled orders?",
                      "SELECT COALESCE(SUM(total_cents), 0) FROM orders WHERE user_id=? AND status != 'cancelled'", money),
    customer_question("customer-city", "In which city does the customer {email} live?", "SELECT city FROM users WHERE id=?"),
    customer_question("customer-name", "What is the full name of the customer with the email {email}?",
                      "SELECT name FROM users WHERE id=?"),
    product_question("product-stock", "How many units of the {name} are in stock?", "SELECT stock FROM products WHERE id=?"),
    product_question("product-units-sold", "How many units of the {name} have been sold (orders not cancelled)?",
                     "SELECT COALESCE(SUM(i.qty), 0) FROM order_items i JOIN orders o ON o.id=i.order_id WHERE "
                     "i.product_id=? AND o.status != 'cancelled'"),
    product_question("product-price", "What is the current price of the {name}?",
                     "SELECT price_cents FROM products WHERE id=?", money),
    # information seeking: dashboard, lists, reports (7)
    list_question("count-orders-with-status", "How many orders have the status {status}?", "/", _status_count),
    list_question("count-low-stock-in-category", "How many {cat} products have fewer than 5 units in stock?",
                  "/products", _low_in_cat),
    list_question("count-out-of-stock-in-category", "How many {cat} products are out of stock?", "/products", _out_in_cat),
    list_question("revenue-in-month", "What was the revenue of {month} (orders not cancelled)? Use the sales report.",
                  "/reports", _revenue),
    list_question("top-product-in-month", "Which product brought the most revenue in {month}? Give its name.",
                  "/reports", _top_product),
    list_question("top-department-in-month", "Which department brought the most revenue in {month}?", "/reports", _top_dept),
    list_question("customers-in-city", "How many customers live in {city}?", "/customers", _city_count),
    # navigation (8)
    nav_page("open-order", "Open the admin page of order #{oid}.", lambda db, rng: _order(db, rng),
             lambda g: f"/orders/{g['oid']}"),
    nav_page("open-customer", "Open the admin page of the customer {email}.", _customer, lambda g: f"/customers/{g['uid']}"),
    nav_page("open-product", "Open the admin page of the {pname}.", _product, lambda g: f"/products/{g['pid']}"),
    nav_list("orders-with-status", "List all {status} orders.", "/orders", _orders_by_status),
    nav_list("customer-orders-largest-first", "List the orders of the customer {email}, largest total first.", "/orders",
             _customer_orders_largest),
    nav_list("low-stock-by-stock", "List the {cat} products with fewer than 5 units in stock, lowest stock first.",
             "/products", _low_sorted),
    nav_list("report-of-month", "Open the sales report of {month}.", "/reports", _report_month),
    nav_list("customers-of-city", "List the customers who live in {city}.", "/customers",
             lambda db, rng: _city_count(db, rng)[:2] + (None,)),
    # content changes (10)
    change("ship-order", "Mark order #{oid} of {email} as shipped.", _order_in("processing"),
           lambda db, g: row_updated_only(db, TABLES, "orders", g["oid"], {"status": "shipped"}), _set_status("shipped")),
    change("deliver-order", "Mark order #{oid} of {email} as delivered.", _order_in("shipped"),
           lambda db, g: row_updated_only(db, TABLES, "orders", g["oid"], {"status": "delivered"}),
           _set_status("delivered")),
    change("cancel-order", "Cancel order #{oid} of {email}.", _order_in("processing", "shipped"),
           lambda db, g: row_updated_only(db, TABLES, "orders", g["oid"], {"status": "cancelled"}),
           _set_status("cancelled")),
    change("note-on-order", 'Add the internal note "{body}" to order #{oid} of {email}.', _note_sample, _note_check,
           lambda v, g: _to_order(v, g) or fill_then(v, [("note-body", g["body"])], "#note-save")),
    change("set-stock", "After a stock count, set the stock of the {pname} to {new_stock} units.", _stock_sample,
           lambda db, g: row_updated_only(db, TABLES, "products", g["pid"], {"stock": g["new_stock"]}),
           _product_form("pr-stock", lambda g: str(g["new_stock"]))),
    change("receive-stock", "{received} more units of the {pname} arrived; add them to its stock.", _stock_sample,
           lambda db, g: row_updated_only(db, TABLES, "products", g["pid"], {"stock": g["stock"] + g["received"]}),
           _product_form("pr-stock", lambda g: str(g["stock"] + g["received"]))),
    change("set-price", "Change the price of the {pname} to ${new_price}.", _price_sample,
           lambda db, g: row_updated_only(db, TABLES, "products", g["pid"],
                                          {"price_cents": int(round(float(g["new_price"]) * 100))}),
           _product_form("pr-price", lambda g: g["new_price"]), manager=True),
    change("discount-price", "Reduce the price of the {pname} by 10% (round to the cent).", _price_sample,
           lambda db, g: row_updated_only(db, TABLES, "products", g["pid"], {"price_cents": g["discounted"]}),
           _product_form("pr-price", lambda g: f"{g['discounted'] / 100:.2f}"), manager=True),
    change("change-customer-address", "The customer {email} moved: set the address to {address}, {city}, ZIP {zip}.",
           _customer_sample, lambda db, g: row_updated_only(db, TABLES, "users", g["uid"], {
               "address": g["address"], "city": g["city"], "zip": g["zip"]}),
           _customer_form((("cu-address", "address"), ("cu-city", "city"), ("cu-zip", "zip")))),
    change("change-customer-email", "Change the email of the customer {email} to {new_email}.", _customer_sample,
           lambda db, g: row_updated_only(db, TABLES, "users", g["uid"], {"email": g["new_email"]}),
           _customer_form((("cu-email", "new_email"),))),
]

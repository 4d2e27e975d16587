"""The shop's back office "Harbor Market Admin": a Flask application over the shop's data (one SQLite connection per
request, the caller's WSGI environ key ``arl.db``), with its own staff login.

Every page but ``/login`` needs a staff session (table ``staff_sessions``, cookie ``adm_sid``); there is no other way
in. Routes (relative to the mount point): ``/`` (dashboard), ``/login``, ``/logout``, ``/orders`` (``status``, ``q``
= order number or customer name or email words, ``sort`` = ""(newest)/oldest/total_desc, ``page``), ``/orders/<id>`` (items, status
change, internal note), ``/customers`` (``q``, ``city``, ``page``), ``/customers/<id>`` (orders; edit email, address,
city, ZIP), ``/products`` (``q``, ``cat``, ``stock`` = ""/low/out, ``sort`` = ""/stock_asc/price_desc, ``page``),
``/products/<id>`` (edit price and stock; units sold), ``/reports`` (``month`` = YYYY-MM: revenue, orders, top products
by revenue, revenue per department). Clerks may change order status and notes; price changes need a Manager.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from flask import Flask, abort, g, redirect, render_template, request, url_for

from arl_envs.envs.web.sites.common import login_redirect_target, make_app

PAGE_SIZE = 20
STATUSES = ("processing", "shipped", "delivered", "cancelled")
ORDER_SORTS = {"": "o.id DESC", "oldest": "o.id ASC", "total_desc": "o.total_cents DESC, o.id ASC"}
PRODUCT_SORTS = {"": "p.id ASC", "stock_asc": "p.stock ASC, p.id ASC", "price_desc": "p.price_cents DESC, p.id ASC"}
LOW_STOCK = 5
_ZIP_RE = re.compile(r"^\d{5}$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")
_MONTH_RE = re.compile(r"^2024-(0[1-9]|1[0-2])$")
REVENUE = "o.status != 'cancelled'"


def money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def create_app() -> Flask:
    app = make_app("arl_admin", Path(__file__).parent, "adm_sid")
    app.jinja_env.filters["money"] = money

    @app.before_request
    def _open():
        g.db = request.environ["arl.db"]
        sid = request.cookies.get("adm_sid", "")
        row = g.db.execute("SELECT s.id, s.username, s.name, s.role FROM staff_sessions ss JOIN staff s ON "
                           "s.id=ss.staff_id WHERE ss.id=?", (sid,)).fetchone() if sid else None
        g.staff, g.new_sid = row, None
        if row is None and request.endpoint not in ("login", "static"):
            return redirect(url_for("login", next=request.full_path.rstrip("?")))
        return None

    @app.context_processor
    def _globals():
        return {"staff": g.get("staff")}

    def page_of(total: int) -> tuple[int, int]:
        pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
        try:
            return min(max(1, int(request.args.get("page", "1"))), pages), pages
        except ValueError:
            return 1, pages

    def params() -> dict[str, str]:
        return {k: v for k, v in request.args.items() if k != "page" and v}

    @app.route("/login", methods=["GET", "POST"])
    def login():
        error, nxt = "", request.values.get("next", "")
        if request.method == "POST":
            row = g.db.execute("SELECT id FROM staff WHERE username=? AND password=?",
                               (request.form.get("username", "").strip().lower(), request.form.get("password", ""))).fetchone()
            if row is None:
                error = "Unknown staff username or wrong password."
            else:
                g.new_sid = secrets.token_hex(8)
                g.db.execute("INSERT INTO staff_sessions VALUES (?, ?)", (g.new_sid, row[0]))
                return redirect(login_redirect_target(nxt) or url_for("dashboard"))
        return render_template("login.html", error=error, next=nxt)

    @app.route("/logout", methods=["POST"])
    def logout():
        g.db.execute("DELETE FROM staff_sessions WHERE id=?", (request.cookies.get("adm_sid", ""),))
        return redirect(url_for("login"))

    @app.route("/")
    @app.route("/index.html")
    def dashboard():
        counts = dict(g.db.execute("SELECT status, COUNT(*) FROM orders GROUP BY status").fetchall())
        low = g.db.execute("SELECT COUNT(*) FROM products WHERE stock < ?", (LOW_STOCK,)).fetchone()[0]
        return render_template("dashboard.html", counts=counts, statuses=STATUSES, low=low,
                               n_customers=g.db.execute("SELECT COUNT(*) FROM users").fetchone()[0])

    @app.route("/orders")
    def orders():
        a, where, args, errors = request.args, ["1=1"], [], []
        if a.get("status"):
            if a["status"] not in STATUSES:
                errors.append(f"Unknown status {a['status']!r}.")
            where.append("o.status=?")
            args.append(a["status"])
        for word in a.get("q", "").lower().split()[:6]:
            if word.lstrip("#").isdigit():  # an order number
                where.append("o.id=?")
                args.append(int(word.lstrip("#")))
            else:
                where.append("(lower(u.name) LIKE ? OR lower(u.email) LIKE ?)")
                args += [f"%{word}%", f"%{word}%"]
        sort = a.get("sort", "") if a.get("sort", "") in ORDER_SORTS else ""
        w = " AND ".join(where)
        total = g.db.execute(f"SELECT COUNT(*) FROM orders o JOIN users u ON u.id=o.user_id WHERE {w}", args).fetchone()[0]
        page, pages = page_of(total)
        rows = g.db.execute(f"SELECT o.id, o.placed, u.name, o.status, o.total_cents FROM orders o JOIN users u ON "
                            f"u.id=o.user_id WHERE {w} ORDER BY {ORDER_SORTS[sort]} LIMIT ? OFFSET ?",
                            (*args, PAGE_SIZE, (page - 1) * PAGE_SIZE)).fetchall()
        return render_template("orders.html", rows=rows, total=total, page=page, pages=pages, args=a, params=params(),
                               errors=errors, statuses=STATUSES)

    @app.route("/orders/<int:oid>", methods=["GET", "POST"])
    def order(oid: int):
        o = g.db.execute("SELECT o.*, u.email FROM orders o JOIN users u ON u.id=o.user_id WHERE o.id=?", (oid,)).fetchone()
        if o is None:
            abort(404)
        error = ""
        if request.method == "POST":
            if request.form.get("action") == "status":
                new = request.form.get("status", "")
                if new not in STATUSES:
                    error = "Choose a valid status."
                elif o[2] in ("delivered", "cancelled") and new != o[2]:
                    error = f"A {o[2]} order cannot change status."
                elif new != o[2]:
                    g.db.execute("UPDATE orders SET status=? WHERE id=?", (new, oid))
                    return redirect(url_for("order", oid=oid, saved="1"))
            elif request.form.get("action") == "note":
                body = request.form.get("body", "").strip()
                if len(body) < 3:
                    error = "A note needs at least 3 characters."
                else:
                    g.db.execute("INSERT INTO order_notes(order_id, staff_id, body) VALUES (?,?,?)", (oid, g.staff[0], body))
                    return redirect(url_for("order", oid=oid, saved="1"))
        items = g.db.execute("SELECT p.id, p.name, i.size, i.color, i.qty, i.price_cents FROM order_items i JOIN products p "
                             "ON p.id=i.product_id WHERE i.order_id=?", (oid,)).fetchall()
        notes = g.db.execute("SELECT s.name, n.body FROM order_notes n JOIN staff s ON s.id=n.staff_id WHERE n.order_id=? "
                             "ORDER BY n.id", (oid,)).fetchall()
        return render_template("order.html", o=o, items=items, notes=notes, error=error, statuses=STATUSES,
                               saved=request.args.get("saved") == "1")

    @app.route("/customers")
    def customers():
        a, where, args = request.args, ["1=1"], []
        for word in a.get("q", "").lower().split()[:6]:
            where.append("(lower(u.name) LIKE ? OR lower(u.email) LIKE ?)")
            args += [f"%{word}%", f"%{word}%"]
        if a.get("city"):
            where.append("u.city=?")
            args.append(a["city"])
        w = " AND ".join(where)
        total = g.db.execute(f"SELECT COUNT(*) FROM users u WHERE {w}", args).fetchone()[0]
        page, pages = page_of(total)
        rows = g.db.execute(f"SELECT u.id, u.name, u.email, u.city, (SELECT COUNT(*) FROM orders o WHERE o.user_id=u.id) "
                            f"FROM users u WHERE {w} ORDER BY u.id LIMIT ? OFFSET ?",
                            (*args, PAGE_SIZE, (page - 1) * PAGE_SIZE)).fetchall()
        cities = [r[0] for r in g.db.execute("SELECT DISTINCT city FROM users ORDER BY city")]
        return render_template("customers.html", rows=rows, total=total, page=page, pages=pages, args=a, params=params(),
                               cities=cities)

    @app.route("/customers/<int:uid>", methods=["GET", "POST"])
    def customer(uid: int):
        u = g.db.execute("SELECT id, email, name, address, city, zip FROM users WHERE id=?", (uid,)).fetchone()
        if u is None:
            abort(404)
        errors = {}
        form = dict(zip(("email", "address", "city", "zip"), u[1:2] + u[3:]))
        if request.method == "POST":
            form = {k: request.form.get(k, "").strip() for k in form}
            if not _EMAIL_RE.match(form["email"].lower()):
                errors["email"] = "Enter a valid email address."
            elif g.db.execute("SELECT 1 FROM users WHERE email=? AND id!=?", (form["email"].lower(), uid)).fetchone():
                errors["email"] = "Another customer uses this email."
            for k in ("address", "city"):
                if not form[k]:
                    errors[k] = f"{k.capitalize()} is required."
            if not _ZIP_RE.match(form["zip"]):
                errors["zip"] = "ZIP code must be 5 digits."
            if not errors:
                g.db.execute("UPDATE users SET email=?, address=?, city=?, zip=? WHERE id=?",
                             (form["email"].lower(), form["address"], form["city"], form["zip"], uid))
                return redirect(url_for("customer", uid=uid, saved="1"))
        orders_ = g.db.execute("SELECT id, placed, status, total_cents FROM orders WHERE user_id=? ORDER BY id DESC",
                               (uid,)).fetchall()
        spent = sum(r[3] for r in orders_ if r[2] != "cancelled")
        return render_template("customer.html", u=u, form=form, errors=errors, orders=orders_, spent=spent,
                               saved=request.args.get("saved") == "1")

    @app.route("/products")
    def products():
        a, where, args = request.args, ["1=1"], []
        for word in a.get("q", "").lower().split()[:6]:
            where.append("lower(p.name) LIKE ?")
            args.append(f"%{word}%")
        if a.get("cat"):
            where.append("(c.slug=? OR c.parent IN (SELECT id FROM categories WHERE slug=?))")
            args += [a["cat"], a["cat"]]
        if a.get("stock") == "low":
            where.append(f"p.stock < {LOW_STOCK}")
        elif a.get("stock") == "out":
            where.append("p.stock = 0")
        sort = a.get("sort", "") if a.get("sort", "") in PRODUCT_SORTS else ""
        w = " AND ".join(where)
        total = g.db.execute(f"SELECT COUNT(*) FROM products p JOIN categories c ON c.id=p.category_id WHERE {w}",
                             args).fetchone()[0]
        page, pages = page_of(total)
        rows = g.db.execute(f"SELECT p.id, p.name, c.name, p.price_cents, p.stock FROM products p JOIN categories c ON "
                            f"c.id=p.category_id WHERE {w} ORDER BY {PRODUCT_SORTS[sort]} LIMIT ? OFFSET ?",
                            (*args, PAGE_SIZE, (page - 1) * PAGE_SIZE)).fetchall()
        cats = g.db.execute("SELECT slug, name, parent FROM categories ORDER BY id").fetchall()
        return render_template("products.html", rows=rows, total=total, page=page, pages=pages, args=a, params=params(),
                               cats=cats)

    @app.route("/products/<int:pid>", methods=["GET", "POST"])
    def product(pid: int):
        p = g.db.execute("SELECT p.id, p.name, p.brand, c.name, p.price_cents, p.stock FROM products p JOIN categories c "
                         "ON c.id=p.category_id WHERE p.id=?", (pid,)).fetchone()
        if p is None:
            abort(404)
        errors = {}
        form = {"price": f"{p[4] / 100:.2f}", "stock": str(p[5])}
        if request.method == "POST":
            form = {k: request.form.get(k, "").strip() for k in form}
            try:
                price = int(round(float(form["price"].lstrip("$")) * 100))
                if not 1 <= price <= 10_000_00:
                    raise ValueError
            except ValueError:
                errors["price"] = "Price must be a number between 0.01 and 10000."
            if not form["stock"].isdigit() or int(form["stock"]) > 10000:
                errors["stock"] = "Stock must be a whole number from 0 to 10000."
            if not errors and price != p[4] and g.staff[3] != "Manager":
                errors["price"] = "Only Managers can change prices."
            if not errors:
                if (price, int(form["stock"])) != (p[4], p[5]):
                    g.db.execute("UPDATE products SET price_cents=?, stock=? WHERE id=?", (price, int(form["stock"]), pid))
                return redirect(url_for("product", pid=pid, saved="1"))
        sold = g.db.execute(f"SELECT COALESCE(SUM(i.qty), 0) FROM order_items i JOIN orders o ON o.id=i.order_id WHERE "
                            f"i.product_id=? AND {REVENUE}", (pid,)).fetchone()[0]
        return render_template("product.html", p=p, form=form, errors=errors, sold=sold,
                               saved=request.args.get("saved") == "1")

    @app.route("/reports")
    def reports():
        month = request.args.get("month", "")
        error = "" if not month or _MONTH_RE.match(month) else "Month must be YYYY-MM (2024)."
        months = [r[0] for r in g.db.execute("SELECT DISTINCT substr(placed, 1, 7) FROM orders ORDER BY 1")]
        data = None
        if month and not error:
            cond = f"{REVENUE} AND substr(o.placed, 1, 7)=?"
            n, rev = g.db.execute(f"SELECT COUNT(*), COALESCE(SUM(o.total_cents), 0) FROM orders o WHERE {cond}",
                                  (month,)).fetchone()
            top = g.db.execute(f"SELECT p.id, p.name, SUM(i.qty), SUM(i.qty * i.price_cents) AS r FROM order_items i JOIN "
                               f"orders o ON o.id=i.order_id JOIN products p ON p.id=i.product_id WHERE {cond} GROUP BY "
                               f"p.id ORDER BY r DESC, p.id ASC LIMIT 10", (month,)).fetchall()
            depts = g.db.execute(f"SELECT d.name, SUM(i.qty * i.price_cents) AS r FROM order_items i JOIN orders o ON "
                                 f"o.id=i.order_id JOIN products p ON p.id=i.product_id JOIN categories c ON "
                                 f"c.id=p.category_id JOIN categories d ON d.id=c.parent WHERE {cond} GROUP BY d.id ORDER "
                                 f"BY r DESC", (month,)).fetchall()
            data = {"n": n, "revenue": rev, "top": top, "depts": depts}
        return render_template("reports.html", month=month, months=months, data=data, error=error)

    return app

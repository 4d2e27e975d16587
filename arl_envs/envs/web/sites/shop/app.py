"""The shop: a Flask application over one SQLite connection per request (chosen by the caller's WSGI environ).

Routes (relative to the mount point): ``/`` (departments, top rated), ``/search`` (``q``, ``cat``, ``min_price``,
``max_price``, ``min_rating``, ``sort`` = relevance/price_asc/price_desc/rating/reviews, ``page``), ``/product/<id>``
(options, add to cart, buy now, reviews, write a review), ``/cart`` (update, remove), ``/checkout`` (validated
form; login required), ``/login``, ``/logout``, ``/account`` (edit address), ``/orders``, ``/orders/<id>``.
Sessions live in the database (``sessions`` table; cookie ``shop_sid``), so restoring the database logs everyone out.
The WSGI environ key ``arl.db`` must hold the ``sqlite3.Connection`` of the env the request belongs to.
"""

from __future__ import annotations

import re
from pathlib import Path

from flask import Flask, abort, g, redirect, render_template, request, url_for

from arl_envs.envs.web.sites.common import make_app, open_user_session, session_id, sign_in, sign_out

PAGE_SIZE = 20
SORTS = {
    "relevance": "p.id ASC",
    "price_asc": "p.price_cents ASC, p.id ASC",
    "price_desc": "p.price_cents DESC, p.id ASC",
    "rating": "p.rating DESC, p.n_reviews DESC, p.id ASC",
    "reviews": "p.n_reviews DESC, p.id ASC",
}
_ZIP_RE = re.compile(r"^\d{5}$")
_CARD_RE = re.compile(r"^\d{16}$")


def money(cents: int) -> str:
    return f"${cents / 100:,.2f}"


def create_app() -> Flask:
    app = make_app("arl_shop", Path(__file__).parent, "shop_sid")
    app.jinja_env.filters["money"] = money

    @app.before_request
    def _open() -> None:
        open_user_session("shop_sid")

    @app.context_processor
    def _globals():
        cats = g.db.execute("SELECT id, slug, name, parent FROM categories ORDER BY id").fetchall()
        n_cart = 0
        if g.get("sid"):
            n_cart = g.db.execute("SELECT COALESCE(SUM(qty),0) FROM cart_items WHERE session_id=?", (g.sid,)).fetchone()[0]
        return {"departments": [c for c in cats if c[3] is None], "all_categories": cats, "user": g.get("user"),
                "n_cart": n_cart}

    def product_cards(where: str, args: tuple, order: str, limit: int, offset: int = 0):
        return g.db.execute(
            f"SELECT p.id, p.name, p.price_cents, p.rating, p.n_reviews, c.name FROM products p "
            f"JOIN categories c ON c.id=p.category_id WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
            (*args, limit, offset)).fetchall()

    @app.route("/")
    @app.route("/index.html")
    def home():
        top = product_cards("p.n_reviews >= 8", (), SORTS["rating"], 8)
        return render_template("home.html", top=top)

    @app.route("/search")
    def search():
        q = request.args.get("q", "").strip()
        cat = request.args.get("cat", "")
        sort = request.args.get("sort", "relevance")
        errors = []
        if sort not in SORTS:
            errors.append(f"Unknown sort order {sort!r}.")
            sort = "relevance"
        where, args = ["1=1"], []
        for word in q.lower().split()[:8]:
            where.append("(lower(p.name) LIKE ? OR p.id IN (SELECT product_id FROM product_attributes WHERE attribute LIKE ?))")
            args += [f"%{word}%", f"%{word}%"]
        if cat:
            row = g.db.execute("SELECT id, parent FROM categories WHERE slug=?", (cat,)).fetchone()
            if row is None:
                errors.append(f"Unknown category {cat!r}.")
            elif row[1] is None:
                where.append("p.category_id IN (SELECT id FROM categories WHERE parent=?)")
                args.append(row[0])
            else:
                where.append("p.category_id=?")
                args.append(row[0])
        for key, sql in (("min_price", "p.price_cents >= ?"), ("max_price", "p.price_cents <= ?")):
            val = request.args.get(key, "").strip()
            if val:
                try:
                    args.append(int(round(float(val) * 100)))
                    where.append(sql)
                except ValueError:
                    errors.append(f"{key.replace('_', ' ').capitalize()} must be a number.")
        min_rating = request.args.get("min_rating", "")
        if min_rating:
            try:
                args.append(float(min_rating))
                where.append("p.rating >= ?")
            except ValueError:
                errors.append("Minimum rating must be a number.")
        w = " AND ".join(where)
        total = g.db.execute(f"SELECT COUNT(*) FROM products p WHERE {w}", args).fetchone()[0]
        pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
        try:
            page = min(max(1, int(request.args.get("page", "1"))), pages)
        except ValueError:
            page = 1
        results = product_cards(w, tuple(args), SORTS[sort], PAGE_SIZE, (page - 1) * PAGE_SIZE)
        params = {k: v for k, v in request.args.items() if k != "page" and v}
        return render_template("search.html", results=results, total=total, page=page, pages=pages, q=q, cat=cat,
                               sort=sort, sorts=list(SORTS), errors=errors, params=params, args=request.args)

    @app.route("/product/<int:pid>")
    def product(pid: int):
        p = g.db.execute("SELECT p.*, c.name, c.slug FROM products p JOIN categories c ON c.id=p.category_id WHERE p.id=?",
                         (pid,)).fetchone()
        if p is None:
            abort(404)
        attrs = [r[0] for r in g.db.execute("SELECT attribute FROM product_attributes WHERE product_id=?", (pid,))]
        sizes = [r[0] for r in g.db.execute("SELECT value FROM product_options WHERE product_id=? AND kind='size'", (pid,))]
        colors = [r[0] for r in g.db.execute("SELECT value FROM product_options WHERE product_id=? AND kind='color'", (pid,))]
        reviews = g.db.execute("SELECT r.rating, r.title, r.body, u.name FROM reviews r JOIN users u ON u.id=r.user_id "
                               "WHERE r.product_id=? ORDER BY r.id", (pid,)).fetchall()
        return render_template("product.html", p=p, attrs=attrs, sizes=sizes, colors=colors, reviews=reviews,
                               error=request.args.get("error", ""), added=request.args.get("added", ""))

    def read_options(pid: int):
        size = request.form.get("size") or None
        color = request.form.get("color") or None
        for kind, val in (("size", size), ("color", color)):
            have = [r[0] for r in g.db.execute("SELECT value FROM product_options WHERE product_id=? AND kind=?", (pid, kind))]
            if have and val not in have:
                return None, None, f"Please choose a {kind}."
            if not have and val:
                return None, None, f"This product has no {kind} option."
        return size, color, ""

    @app.route("/cart/add/<int:pid>", methods=["POST"])
    def cart_add(pid: int):
        if g.db.execute("SELECT 1 FROM products WHERE id=?", (pid,)).fetchone() is None:
            abort(404)
        size, color, err = read_options(pid)
        try:
            qty = int(request.form.get("qty", "1"))
        except ValueError:
            qty = 0
        if not err and not 1 <= qty <= 10:
            err = "Quantity must be between 1 and 10."
        if err:
            return redirect(url_for("product", pid=pid, error=err))
        sid = session_id()
        row = g.db.execute("SELECT rowid, qty FROM cart_items WHERE session_id=? AND product_id=? AND size IS ? AND color IS ?",
                           (sid, pid, size, color)).fetchone()
        if row:
            g.db.execute("UPDATE cart_items SET qty=? WHERE rowid=?", (min(10, row[1] + qty), row[0]))
        else:
            g.db.execute("INSERT INTO cart_items VALUES (?,?,?,?,?)", (sid, pid, size, color, qty))
        if request.form.get("buy_now"):
            return redirect(url_for("checkout"))
        return redirect(url_for("product", pid=pid, added="1"))

    def cart_rows():
        return g.db.execute("SELECT c.rowid, p.id, p.name, c.size, c.color, c.qty, p.price_cents FROM cart_items c "
                            "JOIN products p ON p.id=c.product_id WHERE c.session_id=? ORDER BY c.rowid",
                            (g.sid,)).fetchall() if g.sid else []

    @app.route("/cart", methods=["GET", "POST"])
    def cart():
        if request.method == "POST" and g.sid:
            rowid = request.form.get("item", "")
            if request.form.get("remove"):
                g.db.execute("DELETE FROM cart_items WHERE rowid=? AND session_id=?", (rowid, g.sid))
            else:
                try:
                    qty = int(request.form.get("qty", ""))
                except ValueError:
                    qty = -1
                if 1 <= qty <= 10:
                    g.db.execute("UPDATE cart_items SET qty=? WHERE rowid=? AND session_id=?", (qty, rowid, g.sid))
                elif qty == 0:
                    g.db.execute("DELETE FROM cart_items WHERE rowid=? AND session_id=?", (rowid, g.sid))
            return redirect(url_for("cart"))
        rows = cart_rows()
        return render_template("cart.html", rows=rows, total=sum(r[5] * r[6] for r in rows))

    @app.route("/checkout", methods=["GET", "POST"])
    def checkout():
        if g.user is None:
            return redirect(url_for("login", next="checkout"))
        rows = cart_rows()
        u = g.user
        form = {"name": u[3], "address": u[4], "city": u[5], "zip": u[6], "card": ""}
        errors = {}
        if request.method == "POST":
            form = {k: request.form.get(k, "").strip() for k in form}
            for k in ("name", "address", "city"):
                if not form[k]:
                    errors[k] = "This field is required."
            if not _ZIP_RE.match(form["zip"]):
                errors["zip"] = "ZIP code must be 5 digits."
            if not _CARD_RE.match(form["card"].replace(" ", "")):
                errors["card"] = "Card number must be 16 digits."
            if not rows:
                errors["cart"] = "Your cart is empty."
            if not errors:
                total = sum(r[5] * r[6] for r in rows)
                today = g.db.execute("SELECT MAX(placed) FROM orders").fetchone()[0]  # the newest seed order's day
                cur = g.db.execute("INSERT INTO orders(user_id,status,total_cents,name,address,city,zip,placed) "
                                   "VALUES (?,?,?,?,?,?,?,?)", (u[0], "processing", total, form["name"], form["address"],
                                                                form["city"], form["zip"], today))
                oid = cur.lastrowid
                g.db.executemany("INSERT INTO order_items VALUES (?,?,?,?,?,?)",
                                 [(oid, r[1], r[3], r[4], r[5], r[6]) for r in rows])
                g.db.execute("DELETE FROM cart_items WHERE session_id=?", (g.sid,))
                return redirect(url_for("order", oid=oid, placed="1"))
        return render_template("checkout.html", rows=rows, total=sum(r[5] * r[6] for r in rows), form=form,
                               errors=errors)

    @app.route("/login", methods=["GET", "POST"])
    def login():
        error = ""
        nxt = request.values.get("next", "")
        if request.method == "POST":
            row = g.db.execute("SELECT id FROM users WHERE email=? AND password=?",
                               (request.form.get("email", "").strip().lower(), request.form.get("password", ""))).fetchone()
            if row is None:
                error = "Wrong email or password."
            else:
                sign_in(row[0])
                return redirect(url_for("checkout") if nxt == "checkout" else url_for("account"))
        return render_template("login.html", error=error, next=nxt)

    @app.route("/logout", methods=["POST"])
    def logout():
        sign_out()
        return redirect(url_for("home"))

    @app.route("/account", methods=["GET", "POST"])
    def account():
        if g.user is None:
            return redirect(url_for("login"))
        errors, saved = {}, False
        if request.method == "POST":
            form = {k: request.form.get(k, "").strip() for k in ("name", "address", "city", "zip")}
            for k in ("name", "address", "city"):
                if not form[k]:
                    errors[k] = "This field is required."
            if not _ZIP_RE.match(form["zip"]):
                errors["zip"] = "ZIP code must be 5 digits."
            if not errors:
                g.db.execute("UPDATE users SET name=?, address=?, city=?, zip=? WHERE id=?",
                             (form["name"], form["address"], form["city"], form["zip"], g.user[0]))
                return redirect(url_for("account", saved="1"))
        saved = request.args.get("saved") == "1"
        return render_template("account.html", errors=errors, saved=saved)

    @app.route("/orders")
    def orders():
        if g.user is None:
            return redirect(url_for("login"))
        rows = g.db.execute("SELECT id, placed, status, total_cents FROM orders WHERE user_id=? ORDER BY id DESC",
                            (g.user[0],)).fetchall()
        return render_template("orders.html", rows=rows)

    @app.route("/orders/<int:oid>")
    def order(oid: int):
        if g.user is None:
            return redirect(url_for("login"))
        o = g.db.execute("SELECT * FROM orders WHERE id=? AND user_id=?", (oid, g.user[0])).fetchone()
        if o is None:
            abort(404)
        items = g.db.execute("SELECT p.id, p.name, i.size, i.color, i.qty, i.price_cents FROM order_items i "
                             "JOIN products p ON p.id=i.product_id WHERE i.order_id=?", (oid,)).fetchall()
        return render_template("order.html", o=o, items=items, placed=request.args.get("placed") == "1")

    @app.route("/reviews/<int:pid>", methods=["POST"])
    def review(pid: int):
        if g.user is None:
            return redirect(url_for("login"))
        try:
            rating = int(request.form.get("rating", ""))
        except ValueError:
            rating = 0
        title, body = request.form.get("title", "").strip(), request.form.get("body", "").strip()
        if not 1 <= rating <= 5 or not title or len(body) < 10:
            return redirect(url_for("product", pid=pid, error="A review needs a rating, a title and at least 10 characters."))
        g.db.execute("INSERT INTO reviews(product_id,user_id,rating,title,body) VALUES (?,?,?,?,?)",
                     (pid, g.user[0], rating, title, body))
        n, s = g.db.execute("SELECT COUNT(*), SUM(rating) FROM reviews WHERE product_id=?", (pid,)).fetchone()
        g.db.execute("UPDATE products SET n_reviews=?, rating=? WHERE id=?", (n, round(s / n, 1), pid))
        return redirect(url_for("product", pid=pid))

    return app

"""The forum ("Commons"): a Flask application over one SQLite connection per request (chosen by the WSGI environ).

Routes (relative to the mount point): ``/`` (subforums, hot posts, your subscriptions), ``/f/<slug>`` (``sort`` =
new/top/comments, ``page``; subscribe/unsubscribe), ``/p/<id>`` (post, threaded comments, votes, comment and reply
forms), ``/p/<id>/edit`` and ``/p/<id>/delete`` (author only), ``/p/<id>/vote``, ``/c/<id>/vote``,
``/p/<id>/comment``, ``/submit`` (validated new-post form), ``/search`` (``q``, ``f``, ``sort`` =
relevance/new/top/comments, ``page``), ``/u/<username>`` (profile: karma, posts, comments), ``/login``,
``/logout``, ``/account`` (edit bio and email). Sessions live in the database (``sessions`` table; cookie
``forum_sid``), so restoring the database logs everyone out. The WSGI environ key ``arl.db`` must hold the
``sqlite3.Connection`` of the env the request belongs to.
"""

from __future__ import annotations

import re
from pathlib import Path

from flask import Flask, abort, g, redirect, render_template, request, url_for

from arl_envs.envs.web.sites.common import login_redirect_target, make_app, open_user_session, sign_in, sign_out

PAGE_SIZE = 20
N_COMMENTS = "(SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id)"
LIST_SORTS = {"new": "p.id DESC", "top": "p.score DESC, p.id DESC", "comments": f"{N_COMMENTS} DESC, p.id DESC"}
SEARCH_SORTS = {"relevance": "p.id ASC", **LIST_SORTS}
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$")
POST_COLUMNS = (f"p.id, p.title, p.score, {N_COMMENTS}, p.created, u.username, f.slug, f.name")


def create_app() -> Flask:
    app = make_app("arl_forum", Path(__file__).parent, "forum_sid")

    @app.before_request
    def _open() -> None:
        open_user_session("forum_sid")

    @app.context_processor
    def _globals():
        forums = g.db.execute("SELECT id, slug, name FROM forums ORDER BY name").fetchall()
        return {"forums": forums, "user": g.get("user")}

    def now() -> str:
        """The forum's clock: one minute after the newest post or comment (the seed is a frozen moment)."""
        last = g.db.execute("SELECT MAX(m) FROM (SELECT MAX(created) m FROM posts UNION ALL "
                            "SELECT MAX(created) FROM comments)").fetchone()[0]
        hh, mm = int(last[11:13]), int(last[14:16]) + 1
        if mm == 60:
            hh, mm = hh + 1, 0
        return f"{last[:11]}{min(hh, 23):02d}:{mm:02d}"

    def post_list(where: str, args: tuple, order: str, page: int):
        total = g.db.execute(f"SELECT COUNT(*) FROM posts p WHERE {where}", args).fetchone()[0]
        pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
        page = min(max(1, page), pages)
        rows = g.db.execute(f"SELECT {POST_COLUMNS} FROM posts p JOIN users u ON u.id=p.user_id JOIN forums f "
                            f"ON f.id=p.forum_id WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
                            (*args, PAGE_SIZE, (page - 1) * PAGE_SIZE)).fetchall()
        return rows, total, page, pages

    def int_arg(name: str, default: int = 1) -> int:
        try:
            return int(request.args.get(name, str(default)))
        except ValueError:
            return default

    def need_login():
        return redirect(url_for("login", next=request.path))

    @app.route("/")
    @app.route("/index.html")
    def home():
        stats = g.db.execute("SELECT f.id, f.slug, f.name, f.description, COUNT(p.id) FROM forums f LEFT JOIN posts p "
                             "ON p.forum_id=f.id GROUP BY f.id ORDER BY f.name").fetchall()
        hot = g.db.execute(f"SELECT {POST_COLUMNS} FROM posts p JOIN users u ON u.id=p.user_id JOIN forums f "
                           "ON f.id=p.forum_id ORDER BY p.id DESC LIMIT 10").fetchall()
        subs = []
        if g.user:
            subs = g.db.execute("SELECT f.slug, f.name FROM subscriptions s JOIN forums f ON f.id=s.forum_id "
                                "WHERE s.user_id=? ORDER BY f.name", (g.user[0],)).fetchall()
        return render_template("home.html", stats=stats, hot=hot, subs=subs)

    @app.route("/f/<slug>")
    def forum(slug: str):
        f = g.db.execute("SELECT f.*, u.username FROM forums f JOIN users u ON u.id=f.moderator_id WHERE slug=?",
                         (slug,)).fetchone()
        if f is None:
            abort(404)
        sort = request.args.get("sort", "new")
        error = "" if sort in LIST_SORTS else f"Unknown sort order {sort!r}."
        if error:
            sort = "new"
        rows, total, page, pages = post_list("p.forum_id=?", (f[0],), LIST_SORTS[sort], int_arg("page"))
        subscribed = bool(g.user and g.db.execute("SELECT 1 FROM subscriptions WHERE user_id=? AND forum_id=?",
                                                  (g.user[0], f[0])).fetchone())
        return render_template("forum.html", f=f, rows=rows, total=total, page=page, pages=pages, sort=sort,
                               sorts=list(LIST_SORTS), error=error, subscribed=subscribed)

    @app.route("/f/<slug>/subscribe", methods=["POST"])
    def subscribe(slug: str):
        f = g.db.execute("SELECT id FROM forums WHERE slug=?", (slug,)).fetchone()
        if f is None:
            abort(404)
        if g.user is None:
            return need_login()
        if g.db.execute("SELECT 1 FROM subscriptions WHERE user_id=? AND forum_id=?", (g.user[0], f[0])).fetchone():
            g.db.execute("DELETE FROM subscriptions WHERE user_id=? AND forum_id=?", (g.user[0], f[0]))
        else:
            g.db.execute("INSERT INTO subscriptions VALUES (?,?)", (g.user[0], f[0]))
        return redirect(url_for("forum", slug=slug))

    def thread(pid: int):
        rows = g.db.execute("SELECT c.id, c.parent_id, c.body, c.score, c.created, u.username FROM comments c "
                            "JOIN users u ON u.id=c.user_id WHERE c.post_id=? ORDER BY c.id", (pid,)).fetchall()
        kids: dict = {}
        for r in rows:
            kids.setdefault(r[1], []).append(r)
        out = []

        def walk(parent, depth):
            for r in kids.get(parent, []):
                out.append((r, depth))
                walk(r[0], depth + 1)

        walk(None, 0)
        return out

    @app.route("/p/<int:pid>")
    def post(pid: int):
        p = g.db.execute("SELECT p.*, u.username, f.slug, f.name FROM posts p JOIN users u ON u.id=p.user_id "
                         "JOIN forums f ON f.id=p.forum_id WHERE p.id=?", (pid,)).fetchone()
        if p is None:
            abort(404)
        my_votes = {}
        if g.user:
            for post_id, cid, v in g.db.execute("SELECT post_id, comment_id, value FROM votes WHERE user_id=? AND "
                                                "(post_id=? OR comment_id IN (SELECT id FROM comments WHERE post_id=?))",
                                                (g.user[0], pid, pid)):
                my_votes[("p", post_id) if post_id else ("c", cid)] = v
        return render_template("post.html", p=p, comments=thread(pid), my_votes=my_votes,
                               error=request.args.get("error", ""), reply_to=request.args.get("reply", ""))

    def cast_vote(kind: str, oid: int, table: str, back: int):
        value = {"up": 1, "down": -1}.get(request.form.get("dir", ""))
        if value is None:
            return redirect(url_for("post", pid=back, error="Unknown vote direction."))
        col = "post_id" if kind == "p" else "comment_id"
        old = g.db.execute(f"SELECT rowid, value FROM votes WHERE user_id=? AND {col}=?", (g.user[0], oid)).fetchone()
        if old and old[1] == value:  # the same vote again takes it back
            g.db.execute("DELETE FROM votes WHERE rowid=?", (old[0],))
            delta = -value
        elif old:
            g.db.execute("UPDATE votes SET value=? WHERE rowid=?", (value, old[0]))
            delta = 2 * value
        else:
            g.db.execute("INSERT INTO votes VALUES (?,?,?,?)",
                         (g.user[0], oid if kind == "p" else None, oid if kind == "c" else None, value))
            delta = value
        g.db.execute(f"UPDATE {table} SET score=score+? WHERE id=?", (delta, oid))
        return redirect(url_for("post", pid=back) + (f"#c{oid}" if kind == "c" else ""))

    @app.route("/p/<int:pid>/vote", methods=["POST"])
    def vote_post(pid: int):
        if g.db.execute("SELECT 1 FROM posts WHERE id=?", (pid,)).fetchone() is None:
            abort(404)
        return need_login() if g.user is None else cast_vote("p", pid, "posts", pid)

    @app.route("/c/<int:cid>/vote", methods=["POST"])
    def vote_comment(cid: int):
        row = g.db.execute("SELECT post_id FROM comments WHERE id=?", (cid,)).fetchone()
        if row is None:
            abort(404)
        return need_login() if g.user is None else cast_vote("c", cid, "comments", row[0])

    @app.route("/p/<int:pid>/comment", methods=["POST"])
    def comment(pid: int):
        if g.db.execute("SELECT 1 FROM posts WHERE id=?", (pid,)).fetchone() is None:
            abort(404)
        if g.user is None:
            return need_login()
        body = request.form.get("body", "").strip()
        parent = request.form.get("parent", "").strip() or None
        if parent is not None and g.db.execute("SELECT 1 FROM comments WHERE id=? AND post_id=?",
                                               (parent, pid)).fetchone() is None:
            return redirect(url_for("post", pid=pid, error="The comment you replied to does not exist."))
        if not 2 <= len(body) <= 2000:
            return redirect(url_for("post", pid=pid, error="A comment needs 2 to 2000 characters.",
                                    reply=parent or ""))
        cur = g.db.execute("INSERT INTO comments(post_id,user_id,parent_id,body,score,created) VALUES (?,?,?,?,1,?)",
                           (pid, g.user[0], int(parent) if parent else None, body, now()))
        return redirect(url_for("post", pid=pid) + f"#c{cur.lastrowid}")

    def validate_post(form: dict) -> dict:
        errors = {}
        if not 5 <= len(form["title"]) <= 120:
            errors["title"] = "The title needs 5 to 120 characters."
        elif g.db.execute("SELECT 1 FROM posts WHERE title=? AND id IS NOT ?", (form["title"], form.get("id"))).fetchone():
            errors["title"] = "A post with this title already exists."
        if not 10 <= len(form["body"]) <= 10000:
            errors["body"] = "The text needs 10 to 10000 characters."
        return errors

    @app.route("/submit", methods=["GET", "POST"])
    def submit():
        if g.user is None:
            return need_login()
        form = {"forum": request.values.get("f", ""), "title": "", "body": ""}
        errors = {}
        if request.method == "POST":
            form = {k: request.form.get(k, "").strip() for k in ("forum", "title", "body")}
            errors = validate_post(form)
            f = g.db.execute("SELECT id FROM forums WHERE slug=?", (form["forum"],)).fetchone()
            if f is None:
                errors["forum"] = "Choose a subforum."
            if not errors:
                cur = g.db.execute("INSERT INTO posts(forum_id,user_id,title,body,score,created,edited) "
                                   "VALUES (?,?,?,?,1,?,NULL)", (f[0], g.user[0], form["title"], form["body"], now()))
                return redirect(url_for("post", pid=cur.lastrowid))
        return render_template("submit.html", form=form, errors=errors, editing=None)

    def own_post(pid: int):
        p = g.db.execute("SELECT * FROM posts WHERE id=?", (pid,)).fetchone()
        if p is None:
            abort(404)
        if p[2] != g.user[0]:
            abort(403)
        return p

    @app.route("/p/<int:pid>/edit", methods=["GET", "POST"])
    def edit(pid: int):
        if g.user is None:
            return need_login()
        p = own_post(pid)
        form, errors = {"title": p[3], "body": p[4]}, {}
        if request.method == "POST":
            form = {"id": pid, **{k: request.form.get(k, "").strip() for k in ("title", "body")}}
            errors = validate_post(form)
            if not errors:
                g.db.execute("UPDATE posts SET title=?, body=?, edited=? WHERE id=?", (form["title"], form["body"], now(), pid))
                return redirect(url_for("post", pid=pid))
        return render_template("submit.html", form=form, errors=errors, editing=p)

    @app.route("/p/<int:pid>/delete", methods=["POST"])
    def delete(pid: int):
        if g.user is None:
            return need_login()
        p = own_post(pid)
        g.db.execute("DELETE FROM posts WHERE id=?", (pid,))
        g.db.execute("DELETE FROM comments WHERE post_id=?", (pid,))
        slug = g.db.execute("SELECT slug FROM forums WHERE id=?", (p[1],)).fetchone()[0]
        return redirect(url_for("forum", slug=slug, deleted="1"))

    @app.route("/search")
    def search():
        q = request.args.get("q", "").strip()
        fslug = request.args.get("f", "")
        sort = request.args.get("sort", "relevance")
        errors = []
        if sort not in SEARCH_SORTS:
            errors.append(f"Unknown sort order {sort!r}.")
            sort = "relevance"
        where, args = ["1=1"], []
        for word in q.lower().split()[:8]:
            where.append("(lower(p.title) LIKE ? OR lower(p.body) LIKE ?)")
            args += [f"%{word}%", f"%{word}%"]
        if fslug:
            f = g.db.execute("SELECT id FROM forums WHERE slug=?", (fslug,)).fetchone()
            if f is None:
                errors.append(f"Unknown subforum {fslug!r}.")
            else:
                where.append("p.forum_id=?")
                args.append(f[0])
        rows, total, page, pages = post_list(" AND ".join(where), tuple(args), SEARCH_SORTS[sort], int_arg("page"))
        params = {k: v for k, v in request.args.items() if k != "page" and v}
        return render_template("search.html", rows=rows, total=total, page=page, pages=pages, q=q, fslug=fslug,
                               sort=sort, sorts=list(SEARCH_SORTS), errors=errors, params=params)

    @app.route("/u/<username>")
    def profile(username: str):
        u = g.db.execute("SELECT * FROM users WHERE username=?", (username,)).fetchone()
        if u is None:
            abort(404)
        karma = g.db.execute("SELECT (SELECT COALESCE(SUM(score),0) FROM posts WHERE user_id=:u) + "
                             "(SELECT COALESCE(SUM(score),0) FROM comments WHERE user_id=:u)", {"u": u[0]}).fetchone()[0]
        rows, total, page, pages = post_list("p.user_id=?", (u[0],), LIST_SORTS["new"], int_arg("page"))
        comments = g.db.execute("SELECT c.id, c.body, c.score, c.created, p.id, p.title FROM comments c JOIN posts p "
                                "ON p.id=c.post_id WHERE c.user_id=? ORDER BY c.id DESC LIMIT 10", (u[0],)).fetchall()
        n_comments = g.db.execute("SELECT COUNT(*) FROM comments WHERE user_id=?", (u[0],)).fetchone()[0]
        return render_template("profile.html", u=u, karma=karma, rows=rows, total=total, page=page, pages=pages,
                               comments=comments, n_comments=n_comments)

    @app.route("/login", methods=["GET", "POST"])
    def login():
        error = ""
        nxt = request.values.get("next", "")
        if request.method == "POST":
            row = g.db.execute("SELECT id FROM users WHERE username=? AND password=?",
                               (request.form.get("username", "").strip(), request.form.get("password", ""))).fetchone()
            if row is None:
                error = "Wrong username or password."
            else:
                sign_in(row[0])
                return redirect(login_redirect_target(nxt) or url_for("home"))
        return render_template("login.html", error=error, next=nxt)

    @app.route("/logout", methods=["POST"])
    def logout():
        sign_out()
        return redirect(url_for("home"))

    @app.route("/account", methods=["GET", "POST"])
    def account():
        if g.user is None:
            return need_login()
        errors = {}
        form = {"email": g.user[2], "bio": g.user[5]}
        if request.method == "POST":
            form = {k: request.form.get(k, "").strip() for k in ("email", "bio")}
            if not _EMAIL_RE.match(form["email"]):
                errors["email"] = "Enter a valid email address."
            if len(form["bio"]) > 200:
                errors["bio"] = "The bio can have at most 200 characters."
            if not errors:
                g.db.execute("UPDATE users SET email=?, bio=? WHERE id=?", (form["email"], form["bio"], g.user[0]))
                return redirect(url_for("account", saved="1"))
        return render_template("account.html", form=form, errors=errors, saved=request.args.get("saved") == "1")

    return app

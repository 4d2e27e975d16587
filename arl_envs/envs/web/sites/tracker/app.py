"""The tracker "Quayside": a GitLab-like Flask application over one SQLite connection per request (the caller's WSGI
environ key ``arl.db``).

Routes (relative to the mount point): ``/`` (projects), ``/login`` (username or email), ``/logout``, ``/search``
(issues and merge requests of every project by title, ``q``, ``page``), ``/users/<username>``,
``/projects/<slug>`` (overview, members), ``/projects/<slug>/issues`` (``state`` = ""(open)/closed/all, ``label``,
``milestone``, ``assignee`` (username or ``none``), ``q``, ``sort`` = ""(newest)/oldest/comments, ``page``),
``/projects/<slug>/issues/new``, ``/projects/<slug>/issues/<iid>`` (comments; members edit title, assignee, milestone,
labels, state), ``/projects/<slug>/merge_requests`` (``state`` = ""(open)/merged/closed/all, ``q``, ``page``) and
``/<iid>`` (comment, merge, close), ``/projects/<slug>/milestones`` (+ new milestone), ``/milestones/<id>``,
``/projects/<slug>/labels`` (+ new label). Reading is public; writing needs a login, and changing a project's issues,
merge requests, labels or milestones needs membership (Reporters may only comment). Sessions live in the database
(``sessions``; cookie ``quay_sid``), so restoring the database logs everyone out.
"""

from __future__ import annotations

import re
from pathlib import Path

from flask import Flask, abort, g, redirect, render_template, request, url_for

from arl_envs.envs.web.sites.common import login_redirect_target, make_app, open_user_session, sign_in, sign_out

PAGE_SIZE = 20
ISSUE_SORTS = {"": "i.created DESC, i.iid DESC", "oldest": "i.created ASC, i.iid ASC",
               "comments": "n_notes DESC, i.iid DESC"}
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")


def create_app() -> Flask:
    app = make_app("arl_tracker", Path(__file__).parent, "quay_sid")

    @app.before_request
    def _open() -> None:
        open_user_session("quay_sid")

    @app.context_processor
    def _globals():
        return {"user": g.get("user"), "here": request.full_path.rstrip("?")}

    def page_of(total: int) -> tuple[int, int]:
        pages = max(1, (total + PAGE_SIZE - 1) // PAGE_SIZE)
        try:
            return min(max(1, int(request.args.get("page", "1"))), pages), pages
        except ValueError:
            return 1, pages

    def project(slug: str):
        p = g.db.execute("SELECT * FROM projects WHERE slug=?", (slug,)).fetchone()
        if p is None:
            abort(404)
        return p

    def role(pid: int) -> str | None:
        if g.user is None:
            return None
        r = g.db.execute("SELECT role FROM members WHERE project_id=? AND user_id=?", (pid, g.user[0])).fetchone()
        return r[0] if r else None

    def can_edit(pid: int) -> bool:
        return role(pid) in ("Owner", "Maintainer", "Developer")

    @app.route("/")
    @app.route("/index.html")
    def home():
        rows = g.db.execute(
            "SELECT p.slug, p.name, p.description, (SELECT COUNT(*) FROM issues i WHERE i.project_id=p.id AND "
            "i.state='opened'), (SELECT COUNT(*) FROM merge_requests m WHERE m.project_id=p.id AND m.state='opened') "
            "FROM projects p ORDER BY p.name").fetchall()
        return render_template("home.html", projects=rows)

    @app.route("/login", methods=["GET", "POST"])
    def login():
        error = ""
        nxt = request.values.get("next", "")
        if request.method == "POST":
            who = request.form.get("username", "").strip().lower()
            row = g.db.execute("SELECT id FROM users WHERE (username=? OR email=?) AND password=?",
                               (who, who, request.form.get("password", ""))).fetchone()
            if not who or not request.form.get("password"):
                error = "Enter your username and password."
            elif row is None:
                error = "Invalid login or password."
            else:
                sign_in(row[0])
                return redirect(login_redirect_target(nxt) or url_for("home"))
        return render_template("login.html", error=error, next=nxt)

    @app.route("/logout", methods=["POST"])
    def logout():
        sign_out()
        return redirect(url_for("home"))

    @app.route("/search")
    def search():
        q = request.args.get("q", "").strip()
        where, args = ["1=1"], []
        for word in q.lower().split()[:8]:
            where.append("lower(t.title) LIKE ?")
            args.append(f"%{word}%")
        base = ("SELECT 'issue' AS kind, i.iid, i.title, i.state, p.slug, p.name, i.created FROM issues i JOIN projects p "
                "ON p.id=i.project_id UNION ALL SELECT 'mr', m.iid, m.title, m.state, p.slug, p.name, m.created FROM "
                "merge_requests m JOIN projects p ON p.id=m.project_id")
        w = " AND ".join(where)
        total = g.db.execute(f"SELECT COUNT(*) FROM ({base}) t WHERE {w}", args).fetchone()[0] if q else 0
        page, pages = page_of(total)
        rows = g.db.execute(f"SELECT * FROM ({base}) t WHERE {w} ORDER BY t.created DESC, t.slug LIMIT ? OFFSET ?",
                            (*args, PAGE_SIZE, (page - 1) * PAGE_SIZE)).fetchall() if q else []
        return render_template("search.html", rows=rows, q=q, total=total, page=page, pages=pages)

    @app.route("/users/<username>")
    def user_page(username: str):
        u = g.db.execute("SELECT id, username, name FROM users WHERE username=?", (username,)).fetchone()
        if u is None:
            abort(404)
        projects = g.db.execute("SELECT p.slug, p.name, m.role FROM members m JOIN projects p ON p.id=m.project_id "
                                "WHERE m.user_id=? ORDER BY p.name", (u[0],)).fetchall()
        assigned = g.db.execute("SELECT i.iid, i.title, p.slug, p.name FROM issues i JOIN projects p ON p.id=i.project_id "
                                "WHERE i.assignee_id=? AND i.state='opened' ORDER BY i.created DESC", (u[0],)).fetchall()
        return render_template("user.html", u=u, projects=projects, assigned=assigned)

    @app.route("/projects/<slug>")
    def project_page(slug: str):
        p = project(slug)
        members = g.db.execute("SELECT u.username, u.name, m.role FROM members m JOIN users u ON u.id=m.user_id WHERE "
                               "m.project_id=? ORDER BY u.name", (p[0],)).fetchall()
        counts = g.db.execute("SELECT (SELECT COUNT(*) FROM issues WHERE project_id=:p AND state='opened'), (SELECT "
                              "COUNT(*) FROM issues WHERE project_id=:p AND state='closed'), (SELECT COUNT(*) FROM "
                              "merge_requests WHERE project_id=:p AND state='opened')", {"p": p[0]}).fetchone()
        return render_template("project.html", p=p, members=members, counts=counts, tab="overview")

    def filter_options(pid: int):
        labels = g.db.execute("SELECT id, name, color FROM labels WHERE project_id=? ORDER BY name", (pid,)).fetchall()
        milestones = g.db.execute("SELECT id, title, due, state FROM milestones WHERE project_id=? ORDER BY due",
                                  (pid,)).fetchall()
        people = g.db.execute("SELECT u.username, u.name, u.id FROM members m JOIN users u ON u.id=m.user_id WHERE "
                              "m.project_id=? ORDER BY u.name", (pid,)).fetchall()
        return labels, milestones, people

    @app.route("/projects/<slug>/issues")
    def issues(slug: str):
        p = project(slug)
        a = request.args
        errors, where, args = [], ["i.project_id=?"], [p[0]]
        state = a.get("state", "")
        if state in ("", "closed"):
            where.append("i.state=?")
            args.append("closed" if state else "opened")
        elif state != "all":
            errors.append(f"Unknown state {state!r}.")
        if a.get("label"):
            where.append("i.id IN (SELECT il.issue_id FROM issue_labels il JOIN labels l ON l.id=il.label_id WHERE "
                         "l.project_id=? AND l.name=?)")
            args += [p[0], a["label"]]
        if a.get("milestone"):
            where.append("i.milestone_id IN (SELECT id FROM milestones WHERE project_id=? AND title=?)")
            args += [p[0], a["milestone"]]
        if a.get("assignee") == "none":
            where.append("i.assignee_id IS NULL")
        elif a.get("assignee"):
            where.append("i.assignee_id IN (SELECT id FROM users WHERE username=?)")
            args.append(a["assignee"])
        for word in a.get("q", "").lower().split()[:8]:
            where.append("lower(i.title) LIKE ?")
            args.append(f"%{word}%")
        sort = a.get("sort", "")
        if sort not in ISSUE_SORTS:
            errors.append(f"Unknown sort order {sort!r}.")
            sort = ""
        w = " AND ".join(where)
        total = g.db.execute(f"SELECT COUNT(*) FROM issues i WHERE {w}", args).fetchone()[0]
        page, pages = page_of(total)
        rows = g.db.execute(
            f"SELECT i.iid, i.title, i.state, i.created, u.name, ms.title, (SELECT COUNT(*) FROM notes n WHERE "
            f"n.target_type='issue' AND n.target_id=i.id) AS n_notes, (SELECT group_concat(l.name, ', ') FROM "
            f"issue_labels il JOIN labels l ON l.id=il.label_id WHERE il.issue_id=i.id) FROM issues i LEFT JOIN users u "
            f"ON u.id=i.assignee_id LEFT JOIN milestones ms ON ms.id=i.milestone_id WHERE {w} ORDER BY "
            f"{ISSUE_SORTS[sort]} LIMIT ? OFFSET ?", (*args, PAGE_SIZE, (page - 1) * PAGE_SIZE)).fetchall()
        labels, milestones, people = filter_options(p[0])
        params = {k: v for k, v in a.items() if k != "page" and v}
        return render_template("issues.html", p=p, rows=rows, total=total, page=page, pages=pages, args=a,
                               params=params, errors=errors, labels=labels, milestones=milestones, people=people,
                               tab="issues")

    def issue_row(p, iid: int):
        row = g.db.execute("SELECT * FROM issues WHERE project_id=? AND iid=?", (p[0], iid)).fetchone()
        if row is None:
            abort(404)
        return row

    def read_issue_form(pid: int) -> tuple[dict, dict]:
        """Assignee / milestone / labels of an issue form, validated: (values, errors)."""
        labels, milestones, people = filter_options(pid)
        f, errors = request.form, {}
        out = {"assignee_id": None, "milestone_id": None, "labels": []}
        if f.get("assignee"):
            hit = [x[2] for x in people if x[0] == f["assignee"]]
            if not hit:
                errors["assignee"] = "The assignee must be a member of the project."
            else:
                out["assignee_id"] = hit[0]
        if f.get("milestone"):
            hit = [x[0] for x in milestones if x[1] == f["milestone"]]
            if not hit:
                errors["milestone"] = "Unknown milestone."
            else:
                out["milestone_id"] = hit[0]
        known = {x[1]: x[0] for x in labels}
        out["labels"] = sorted(known[n] for n in f.getlist("labels") if n in known)
        return out, errors

    @app.route("/projects/<slug>/issues/new", methods=["GET", "POST"])
    def issue_new(slug: str):
        p = project(slug)
        if g.user is None:
            return redirect(url_for("login", next=f"/projects/{slug}/issues/new"))
        errors, form = {}, {"title": "", "body": ""}
        if request.method == "POST":
            if not can_edit(p[0]):
                errors["form"] = "Only project members with the Developer role or higher can open issues here."
            form = {"title": request.form.get("title", "").strip(), "body": request.form.get("body", "").strip()}
            if not form["title"]:
                errors["title"] = "Title can't be blank."
            elif len(form["title"]) > 200:
                errors["title"] = "Title is too long (200 characters at most)."
            vals, more = read_issue_form(p[0])
            errors.update(more)
            if not errors:
                today = g.db.execute("SELECT MAX(created) FROM issues").fetchone()[0]
                iid = g.db.execute("SELECT COALESCE(MAX(iid), 0) + 1 FROM issues WHERE project_id=?", (p[0],)).fetchone()[0]
                cur = g.db.execute("INSERT INTO issues(project_id,iid,title,body,author_id,assignee_id,milestone_id,state,"
                                   "created) VALUES (?,?,?,?,?,?,?,?,?)", (p[0], iid, form["title"], form["body"],
                                   g.user[0], vals["assignee_id"], vals["milestone_id"], "opened", today))
                g.db.executemany("INSERT INTO issue_labels VALUES (?,?)", [(cur.lastrowid, x) for x in vals["labels"]])
                return redirect(url_for("issue", slug=slug, iid=iid))
        labels, milestones, people = filter_options(p[0])
        return render_template("issue_new.html", p=p, form=form, errors=errors, labels=labels, milestones=milestones,
                               people=people, tab="issues")

    def add_note(target_type: str, target_id: int) -> str:
        """Post the form's ``body`` as the signed-in user's comment on an issue or merge request (``target_type``
        ``"issue"`` / ``"mr"``), dated the site's today; the error to show, or ``""`` when posted."""
        body = request.form.get("body", "").strip()
        if not body:
            return "A comment can't be blank."
        today = g.db.execute("SELECT MAX(created) FROM notes").fetchone()[0]
        g.db.execute("INSERT INTO notes(target_type,target_id,author_id,body,created) VALUES (?,?,?,?,?)",
                     (target_type, target_id, g.user[0], body, today))
        return ""

    @app.route("/projects/<slug>/issues/<int:iid>", methods=["GET", "POST"])
    def issue(slug: str, iid: int):
        p = project(slug)
        i = issue_row(p, iid)
        error = ""
        if request.method == "POST":
            what = request.form.get("action", "")
            if g.user is None:
                return redirect(url_for("login", next=f"/projects/{slug}/issues/{iid}"))
            if what == "comment":
                error = add_note("issue", i[0])
                if not error:
                    return redirect(url_for("issue", slug=slug, iid=iid))
            elif not can_edit(p[0]):
                error = "Only project members with the Developer role or higher can change this issue."
            elif what == "toggle":
                g.db.execute("UPDATE issues SET state=? WHERE id=?", ("opened" if i[8] == "closed" else "closed", i[0]))
                return redirect(url_for("issue", slug=slug, iid=iid))
            elif what == "title":
                title = request.form.get("title", "").strip()
                if not title or len(title) > 200:
                    error = "Title can't be blank (200 characters at most)."
                elif title != i[3]:
                    g.db.execute("UPDATE issues SET title=? WHERE id=?", (title, i[0]))
                    return redirect(url_for("issue", slug=slug, iid=iid))
            elif what == "meta":
                vals, errors = read_issue_form(p[0])
                if errors:
                    error = " ".join(errors.values())
                else:
                    if (vals["assignee_id"], vals["milestone_id"]) != (i[6], i[7]):
                        g.db.execute("UPDATE issues SET assignee_id=?, milestone_id=? WHERE id=?",
                                     (vals["assignee_id"], vals["milestone_id"], i[0]))
                    have = sorted(r[0] for r in g.db.execute("SELECT label_id FROM issue_labels WHERE issue_id=?", (i[0],)))
                    if have != vals["labels"]:
                        for x in set(have) - set(vals["labels"]):
                            g.db.execute("DELETE FROM issue_labels WHERE issue_id=? AND label_id=?", (i[0], x))
                        g.db.executemany("INSERT INTO issue_labels VALUES (?,?)",
                                         [(i[0], x) for x in vals["labels"] if x not in have])
                    return redirect(url_for("issue", slug=slug, iid=iid))
            else:
                error = "Unknown action."
        author = g.db.execute("SELECT username, name FROM users WHERE id=?", (i[5],)).fetchone()
        assignee = g.db.execute("SELECT username, name FROM users WHERE id=?", (i[6],)).fetchone()
        ms = g.db.execute("SELECT title, due FROM milestones WHERE id=?", (i[7],)).fetchone()
        mine = g.db.execute("SELECT l.name, l.color FROM issue_labels il JOIN labels l ON l.id=il.label_id WHERE "
                            "il.issue_id=? ORDER BY l.name", (i[0],)).fetchall()
        notes = g.db.execute("SELECT u.username, u.name, n.body, n.created, n.id FROM notes n JOIN users u ON u.id=n.author_id "
                             "WHERE n.target_type='issue' AND n.target_id=? ORDER BY n.id", (i[0],)).fetchall()
        labels, milestones, people = filter_options(p[0])
        return render_template("issue.html", p=p, i=i, author=author, assignee=assignee, ms=ms, mine=[m[0] for m in mine],
                               mine_rows=mine, notes=notes, labels=labels, milestones=milestones, people=people,
                               error=error, editable=can_edit(p[0]), tab="issues")

    @app.route("/projects/<slug>/merge_requests")
    def mrs(slug: str):
        p = project(slug)
        state = request.args.get("state", "")
        where, args, errors = ["m.project_id=?"], [p[0]], []
        if state in ("", "merged", "closed"):
            where.append("m.state=?")
            args.append(state or "opened")
        elif state != "all":
            errors.append(f"Unknown state {state!r}.")
        for word in request.args.get("q", "").lower().split()[:8]:
            where.append("lower(m.title) LIKE ?")
            args.append(f"%{word}%")
        w = " AND ".join(where)
        total = g.db.execute(f"SELECT COUNT(*) FROM merge_requests m WHERE {w}", args).fetchone()[0]
        page, pages = page_of(total)
        rows = g.db.execute(f"SELECT m.iid, m.title, m.state, m.created, u.name, m.source_branch FROM merge_requests m "
                            f"JOIN users u ON u.id=m.author_id WHERE {w} ORDER BY m.created DESC, m.iid DESC LIMIT ? "
                            f"OFFSET ?", (*args, PAGE_SIZE, (page - 1) * PAGE_SIZE)).fetchall()
        params = {k: v for k, v in request.args.items() if k != "page" and v}
        return render_template("mrs.html", p=p, rows=rows, total=total, page=page, pages=pages, args=request.args,
                               params=params, errors=errors, tab="mrs")

    @app.route("/projects/<slug>/merge_requests/<int:iid>", methods=["GET", "POST"])
    def mr(slug: str, iid: int):
        p = project(slug)
        m = g.db.execute("SELECT * FROM merge_requests WHERE project_id=? AND iid=?", (p[0], iid)).fetchone()
        if m is None:
            abort(404)
        error = ""
        if request.method == "POST":
            what = request.form.get("action", "")
            if g.user is None:
                return redirect(url_for("login", next=f"/projects/{slug}/merge_requests/{iid}"))
            if what == "comment":
                error = add_note("mr", m[0])
                if not error:
                    return redirect(url_for("mr", slug=slug, iid=iid))
            elif role(p[0]) not in ("Owner", "Maintainer") and what == "merge":
                error = "Only Maintainers and Owners can merge."
            elif not can_edit(p[0]):
                error = "Only project members with the Developer role or higher can change this merge request."
            elif m[9] != "opened" and what in ("merge", "close"):
                error = f"This merge request is already {m[9]}."
            elif what in ("merge", "close"):
                g.db.execute("UPDATE merge_requests SET state=? WHERE id=?", ("merged" if what == "merge" else "closed", m[0]))
                return redirect(url_for("mr", slug=slug, iid=iid))
            else:
                error = "Unknown action."
        author = g.db.execute("SELECT username, name FROM users WHERE id=?", (m[5],)).fetchone()
        assignee = g.db.execute("SELECT username, name FROM users WHERE id=?", (m[6],)).fetchone()
        notes = g.db.execute("SELECT u.username, u.name, n.body, n.created, n.id FROM notes n JOIN users u ON u.id=n.author_id "
                             "WHERE n.target_type='mr' AND n.target_id=? ORDER BY n.id", (m[0],)).fetchall()
        return render_template("mr.html", p=p, m=m, author=author, assignee=assignee, notes=notes, error=error, tab="mrs")

    @app.route("/projects/<slug>/milestones", methods=["GET", "POST"])
    def milestones(slug: str):
        p = project(slug)
        errors, form = {}, {"title": "", "due": "", "description": ""}
        if request.method == "POST":
            if g.user is None:
                return redirect(url_for("login", next=f"/projects/{slug}/milestones"))
            form = {k: request.form.get(k, "").strip() for k in form}
            if role(p[0]) not in ("Owner", "Maintainer"):
                errors["form"] = "Only Maintainers and Owners can create milestones."
            if not form["title"]:
                errors["title"] = "Title can't be blank."
            elif g.db.execute("SELECT 1 FROM milestones WHERE project_id=? AND title=?", (p[0], form["title"])).fetchone():
                errors["title"] = "A milestone with this title already exists."
            if form["due"] and not _DATE_RE.match(form["due"]):
                errors["due"] = "Due date must be YYYY-MM-DD."
            if not errors:
                g.db.execute("INSERT INTO milestones(project_id,title,due,state,description) VALUES (?,?,?,?,?)",
                             (p[0], form["title"], form["due"] or None, "active", form["description"]))
                return redirect(url_for("milestones", slug=slug))
        rows = g.db.execute("SELECT ms.id, ms.title, ms.due, ms.state, (SELECT COUNT(*) FROM issues i WHERE "
                            "i.milestone_id=ms.id AND i.state='opened'), (SELECT COUNT(*) FROM issues i WHERE "
                            "i.milestone_id=ms.id AND i.state='closed') FROM milestones ms WHERE ms.project_id=? ORDER BY "
                            "ms.due", (p[0],)).fetchall()
        return render_template("milestones.html", p=p, rows=rows, errors=errors, form=form, tab="milestones")

    @app.route("/projects/<slug>/milestones/<int:mid>")
    def milestone(slug: str, mid: int):
        p = project(slug)
        ms = g.db.execute("SELECT * FROM milestones WHERE id=? AND project_id=?", (mid, p[0])).fetchone()
        if ms is None:
            abort(404)
        rows = g.db.execute("SELECT i.iid, i.title, i.state, u.name FROM issues i LEFT JOIN users u ON u.id=i.assignee_id "
                            "WHERE i.milestone_id=? ORDER BY i.state DESC, i.iid", (mid,)).fetchall()
        return render_template("milestone.html", p=p, ms=ms, rows=rows, tab="milestones")

    @app.route("/projects/<slug>/labels", methods=["GET", "POST"])
    def labels(slug: str):
        p = project(slug)
        errors, form = {}, {"name": "", "color": "#428bca"}
        if request.method == "POST":
            if g.user is None:
                return redirect(url_for("login", next=f"/projects/{slug}/labels"))
            form = {k: request.form.get(k, "").strip() for k in form}
            if role(p[0]) not in ("Owner", "Maintainer"):
                errors["form"] = "Only Maintainers and Owners can create labels."
            if not form["name"]:
                errors["name"] = "Name can't be blank."
            elif g.db.execute("SELECT 1 FROM labels WHERE project_id=? AND name=?", (p[0], form["name"])).fetchone():
                errors["name"] = "A label with this name already exists."
            if not _COLOR_RE.match(form["color"]):
                errors["color"] = "Color must be a hex code like #1f75cb."
            if not errors:
                g.db.execute("INSERT INTO labels(project_id,name,color) VALUES (?,?,?)",
                             (p[0], form["name"], form["color"].lower()))
                return redirect(url_for("labels", slug=slug))
        rows = g.db.execute("SELECT l.name, l.color, (SELECT COUNT(*) FROM issue_labels il JOIN issues i ON i.id=il.issue_id "
                            "WHERE il.label_id=l.id AND i.state='opened') FROM labels l WHERE l.project_id=? ORDER BY "
                            "l.name", (p[0],)).fetchall()
        return render_template("labels.html", p=p, rows=rows, errors=errors, form=form, tab="labels")

    return app

"""The tracker's task templates (one table, :data:`TEMPLATES`): 23 information-seeking, 10 navigation and 13
content/configuration-change templates, each drawn from the seed database with the episode's generator.

Developers' credentials are part of the seed (``users`` table); a template that writes names the account to sign in
with, like WebArena's GitLab tasks do, and picks one whose project role allows the change. Change evaluators diff
:data:`TABLES` against the seed: the right rows changed and nothing else.
"""

from __future__ import annotations

import re
from typing import Any

from arl_envs.envs.web.sites.tasks import (
    Template,
    changed_tables,
    check_answer,
    check_url,
    fill_then,
    path_of,
    row_inserted_only,
    row_updated_only,
)
from arl_envs.envs.web.sites.tracker.nav import ensure_login, go_list, go_project, go_user, open_item, set_checkbox
from arl_envs.envs.web.task import ANSWER_OR, act, normalize_answer

#: Tables a change evaluator diffs against the seed (``sessions`` is bookkeeping).
TABLES = ("users", "projects", "members", "labels", "milestones", "issues", "issue_labels", "merge_requests", "notes")
_ISSUE = ("SELECT i.id, i.iid, i.title, p.slug, p.name, p.id FROM issues i JOIN projects p ON p.id=i.project_id "
          "WHERE {where} ORDER BY i.id")
_MR = ("SELECT m.id, m.iid, m.title, p.slug, p.name, p.id FROM merge_requests m JOIN projects p ON p.id=m.project_id "
       "WHERE {where} ORDER BY m.id")


def _pick(db, rng, sql: str, args: tuple = ()) -> tuple:
    rows = db.execute(sql, args).fetchall()
    return rows[int(rng.integers(len(rows)))]


def _issue(db, rng, where: str = "1=1") -> dict[str, Any]:
    r = _pick(db, rng, _ISSUE.format(where=where))
    return {"id": r[0], "iid": r[1], "title": r[2], "slug": r[3], "pname": r[4], "pid": r[5]}


def _mr(db, rng, where: str = "1=1") -> dict[str, Any]:
    r = _pick(db, rng, _MR.format(where=where))
    return {"id": r[0], "iid": r[1], "title": r[2], "slug": r[3], "pname": r[4], "pid": r[5]}


def _project(db, rng) -> dict[str, Any]:
    r = _pick(db, rng, "SELECT id, slug, name FROM projects ORDER BY id")
    return {"pid": r[0], "slug": r[1], "pname": r[2]}


def _member(db, rng, pid: int, roles: tuple[str, ...] = ("Owner", "Maintainer", "Developer")) -> dict[str, Any]:
    marks = ",".join("?" * len(roles))
    r = _pick(db, rng, f"SELECT u.id, u.username, u.password, u.name FROM members m JOIN users u ON u.id=m.user_id "
                       f"WHERE m.project_id=? AND m.role IN ({marks}) ORDER BY u.id", (pid, *roles))
    return {"uid": r[0], "username": r[1], "password": r[2], "uname": r[3]}


def _login(g: dict[str, Any]) -> str:
    return f" (Sign in as {g['username']}, password {g['password']}.)"


def _ref(g: dict[str, Any]) -> str:
    return f'issue #{g["iid"]} "{g["title"]}" of the {g["pname"]} project'


def _mref(g: dict[str, Any]) -> str:
    return f'merge request !{g["iid"]} "{g["title"]}" of the {g["pname"]} project'


# ---------------------------------------------------------------- evaluators
def _items(text: str) -> set[str]:
    return {normalize_answer(x) for x in re.split(r",|;|\n| and ", text) if normalize_answer(x)}


def check_items(db, state, goal, answer) -> tuple[float, bool]:
    """The answer lists exactly ``goal["items"]`` (separated by commas, semicolons, newlines or "and"; any order)."""
    ok = answer is not None and _items(answer) == {normalize_answer(x) for x in goal["items"]}
    return (1.0 if ok else 0.0), answer is not None


def updated_only(db, table: str, rid: int, want: dict[str, Any]) -> bool:
    return row_updated_only(db, TABLES, table, rid, want)


def inserted_only(db, table: str, want: dict[str, Any], also: tuple[str, ...] = ()) -> tuple | None:
    return row_inserted_only(db, TABLES, table, want, also)


def _done(ok: bool, answer) -> tuple[float, bool]:
    return (1.0 if ok else 0.0), ok or answer is not None


# ---------------------------------------------------------------- information seeking
def issue_question(name: str, question: str, value_sql: str, where: str = "1=1") -> Template:
    def sample(db, rng):
        g = _issue(db, rng, where)
        g["answer"] = str(db.execute(value_sql, (g["id"],)).fetchone()[0])
        return question.format(ref=_ref(g)), g

    def expert(view, goal):
        return open_item(view, goal["slug"], "issues", goal["iid"], goal["title"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def mr_question(name: str, question: str, value_sql: str, where: str = "1=1") -> Template:
    def sample(db, rng):
        g = _mr(db, rng, where)
        g["answer"] = str(db.execute(value_sql, (g["id"],)).fetchone()[0])
        return question.format(ref=_mref(g)), g

    def expert(view, goal):
        return open_item(view, goal["slug"], "merge_requests", goal["iid"], goal["title"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def issue_labels() -> Template:
    def sample(db, rng):
        g = _issue(db, rng, "(SELECT COUNT(*) FROM issue_labels il WHERE il.issue_id=i.id) >= 2")
        g["items"] = [r[0] for r in db.execute("SELECT l.name FROM issue_labels il JOIN labels l ON l.id=il.label_id "
                                               "WHERE il.issue_id=? ORDER BY l.name", (g["id"],))]
        return f"List all labels of {_ref(g)}, separated by commas.", g

    def expert(view, goal):
        return open_item(view, goal["slug"], "issues", goal["iid"], goal["title"]) or act("answer", ", ".join(goal["items"]))

    return Template("issue-labels", "info", sample, check_items, expert)


def list_count(name: str, question: str, section: str, choose) -> Template:
    """A count read from a filtered list of one project (``choose(db, rng, project) -> (format dict, params, sql
    WHERE over alias i/m, args)``)."""

    def sample(db, rng):
        g = _project(db, rng)
        fmt, params, where, args = choose(db, rng, g)
        table = "issues i" if section == "issues" else "merge_requests i"
        n = db.execute(f"SELECT COUNT(*) FROM {table} WHERE i.project_id=? AND {where}", (g["pid"], *args)).fetchone()[0]
        return question.format(pname=g["pname"], **fmt), {**g, "params": params, "answer": str(n)}

    def expert(view, goal):
        return go_list(view, goal["slug"], section, goal["params"]) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def _label_choice(db, rng, g):
    lab = _pick(db, rng, "SELECT name FROM labels WHERE project_id=? ORDER BY id", (g["pid"],))[0]
    return ({"label": lab}, {"label": lab}, "i.state='opened' AND i.id IN (SELECT issue_id FROM issue_labels il JOIN "
            "labels l ON l.id=il.label_id WHERE l.name=? AND l.project_id=i.project_id)", (lab,))


def _assignee_choice(db, rng, g):
    m = _member(db, rng, g["pid"])
    return ({"name": m["uname"]}, {"assignee": m["username"]}, "i.state='opened' AND i.assignee_id=?", (m["uid"],))


def _unassigned_choice(db, rng, g):
    return {}, {"assignee": "none"}, "i.state='opened' AND i.assignee_id IS NULL", ()


def _milestone_closed_choice(db, rng, g):
    ms = _pick(db, rng, "SELECT id, title FROM milestones WHERE project_id=? ORDER BY id", (g["pid"],))
    return {"ms": ms[1]}, {"state": "closed", "milestone": ms[1]}, "i.state='closed' AND i.milestone_id=?", (ms[0],)


def _merged_choice(db, rng, g):
    return {}, {"state": "merged"}, "i.state='merged'", ()


def list_first(name: str, question: str, sort: str, order_sql: str, tie_sql: str) -> Template:
    """The title of the first open issue with a label under a sort order; ties on ``tie_sql`` all accepted."""

    def sample(db, rng):
        g = _project(db, rng)
        fmt, params, where, args = _label_choice(db, rng, g)
        rows = db.execute(f"SELECT i.title, {tie_sql} FROM issues i WHERE i.project_id=? AND {where} ORDER BY {order_sql}",
                          (g["pid"], *args)).fetchall()
        if not rows:
            return sample(db, rng)
        answer = f" {ANSWER_OR} ".join(r[0] for r in rows if r[1] == rows[0][1])
        return question.format(pname=g["pname"], **fmt), {**g, "params": {**params, "sort": sort}, "answer": answer}

    def expert(view, goal):
        return go_list(view, goal["slug"], "issues", goal["params"]) or act("answer", goal["answer"].split(ANSWER_OR)[0].strip())

    return Template(name, "info", sample, check_answer, expert)


def project_page_question(name: str, question: str, section: str, choose) -> Template:
    """An answer read from a project page (``choose(db, rng, project) -> (format dict, answer)``)."""

    def sample(db, rng):
        g = _project(db, rng)
        fmt, answer = choose(db, rng, g)
        return question.format(pname=g["pname"], **fmt), {**g, "answer": answer}

    def expert(view, goal):
        return go_project(view, goal["slug"], section) or act("answer", goal["answer"])

    return Template(name, "info", sample, check_answer, expert)


def _ms_due(db, rng, g):
    title, due = _pick(db, rng, "SELECT title, due FROM milestones WHERE project_id=? ORDER BY id", (g["pid"],))
    return {"ms": title}, due


def _ms_open(db, rng, g):
    mid, title = _pick(db, rng, "SELECT id, title FROM milestones WHERE project_id=? ORDER BY id", (g["pid"],))
    return {"ms": title}, str(db.execute("SELECT COUNT(*) FROM issues WHERE milestone_id=? AND state='opened'",
                                         (mid,)).fetchone()[0])


def _owner(db, rng, g):
    return {}, db.execute("SELECT u.name FROM members m JOIN users u ON u.id=m.user_id WHERE m.project_id=? AND "
                          "m.role='Owner'", (g["pid"],)).fetchone()[0]


def _label_open(db, rng, g):
    lid, name = _pick(db, rng, "SELECT id, name FROM labels WHERE project_id=? ORDER BY id", (g["pid"],))
    return {"label": name}, str(db.execute("SELECT COUNT(*) FROM issue_labels il JOIN issues i ON i.id=il.issue_id WHERE "
                                           "il.label_id=? AND i.state='opened'", (lid,)).fetchone()[0])


def user_assigned_count() -> Template:
    def sample(db, rng):
        g = _project(db, rng)
        g.update(_member(db, rng, g["pid"]))
        n = db.execute("SELECT COUNT(*) FROM issues WHERE assignee_id=? AND state='opened'", (g["uid"],)).fetchone()[0]
        return (f"How many open issues are assigned to {g['uname']} (a member of {g['pname']}) across all projects?",
                {**g, "answer": str(n)})

    def expert(view, goal):
        return go_user(view, goal["slug"], goal["username"]) or act("answer", goal["answer"])

    return Template("user-open-assigned", "info", sample, check_answer, expert)


WORDS = ("webhook", "scheduler", "dashboard", "billing", "export", "timezone", "avatar", "safari", "csv", "quotas",
         "invite", "cache", "audit", "upload", "digests")


def search_count() -> Template:
    def sample(db, rng):
        w = WORDS[int(rng.integers(len(WORDS)))]
        n = db.execute("SELECT (SELECT COUNT(*) FROM issues WHERE lower(title) LIKE :w) + (SELECT COUNT(*) FROM "
                       "merge_requests WHERE lower(title) LIKE :w)", {"w": f"%{w}%"}).fetchone()[0]
        return (f'How many issues and merge requests across all projects have "{w}" in their title? Use the search.',
                {"word": w, "answer": str(n)})

    def expert(view, goal):
        if path_of(view) == "/search":
            return act("answer", goal["answer"])
        if (view.state.get("fields") or {}).get("q") != goal["word"]:
            return act("fill", view.bid("#q"), goal["word"])
        return act("press", view.bid("#q"), "Enter")

    return Template("search-count", "info", sample, check_answer, expert)


# ---------------------------------------------------------------- navigation
def nav_item(name: str, kind: str) -> Template:
    def sample(db, rng):
        g = _issue(db, rng) if kind == "issues" else _mr(db, rng)
        text = _ref(g) if kind == "issues" else _mref(g)
        return f"Open the page of {text}.", {**g, "path": f"/projects/{g['slug']}/{kind}/{g['iid']}"}

    def expert(view, goal):
        return open_item(view, goal["slug"], kind, goal["iid"], goal["title"]) or act("noop")

    return Template(name, "nav", sample, check_url, expert)


def nav_list(name: str, instruction: str, section: str, choose) -> Template:
    def sample(db, rng):
        g = _project(db, rng)
        fmt, params, _, _ = choose(db, rng, g)
        return instruction.format(pname=g["pname"], **fmt), {**g, "path": f"/projects/{g['slug']}/{section}",
                                                              "params": params}

    def expert(view, goal):
        return go_list(view, goal["slug"], section, goal["params"]) or act("noop")

    return Template(name, "nav", sample, check_url, expert)


def _search_oldest(db, rng, g):
    w = WORDS[int(rng.integers(len(WORDS)))]
    return {"word": w}, {"q": w, "state": "all", "sort": "oldest"}, "", ()


def _second_page(db, rng, g):
    return {}, {"page": "2"}, "", ()


def nav_milestone() -> Template:
    def sample(db, rng):
        g = _project(db, rng)
        mid, title = _pick(db, rng, "SELECT id, title FROM milestones WHERE project_id=? ORDER BY id", (g["pid"],))
        return (f"Open the page of milestone {title} of the {g['pname']} project.",
                {**g, "ms": title, "path": f"/projects/{g['slug']}/milestones/{mid}"})

    def expert(view, goal):
        if path_of(view) == goal["path"]:
            return act("noop")
        return go_project(view, goal["slug"], "milestones") or act("click", view.bid(f'a.milestone[data-title="{goal["ms"]}"]'))

    return Template("open-milestone", "nav", sample, check_url, expert)


def nav_user() -> Template:
    def sample(db, rng):
        g = _project(db, rng)
        g.update(_member(db, rng, g["pid"], ("Owner", "Maintainer", "Developer", "Reporter")))
        return f"Open the profile page of {g['uname']}, a member of {g['pname']}.", {**g, "path": f"/users/{g['username']}"}

    def expert(view, goal):
        return go_user(view, goal["slug"], goal["username"]) or act("noop")

    return Template("open-user-profile", "nav", sample, check_url, expert)


# ---------------------------------------------------------------- content and configuration changes
COMMENTS = ("I can reproduce this on the release branch as well.", "Taking this one, expect a fix by Friday.",
            "Please add the browser version and the exact steps.", "This is a duplicate, see the older report.",
            "Verified the fix on staging, looks good.")


def comment(kind: str) -> Template:
    def sample(db, rng):
        g = _issue(db, rng) if kind == "issues" else _mr(db, rng)
        g.update(_member(db, rng, g["pid"], ("Owner", "Maintainer", "Developer", "Reporter")))
        g["body"] = COMMENTS[int(rng.integers(len(COMMENTS)))]
        text = _ref(g) if kind == "issues" else _mref(g)
        return f'Add the comment "{g["body"]}" to {text}.' + _login(g), g

    def check(db, state, goal, answer):
        row = inserted_only(db, "notes", {"target_type": "issue" if kind == "issues" else "mr", "target_id": goal["id"],
                                          "author_id": goal["uid"], "body": goal["body"]})
        return _done(row is not None, answer)

    def expert(view, goal):
        step = ensure_login(view, goal["username"], goal["password"]) or open_item(
            view, goal["slug"], kind, goal["iid"], goal["title"])
        return step or fill_then(view, [("note-body", goal["body"])], "#note-submit")

    return Template("comment-on-issue" if kind == "issues" else "comment-on-mr", "change", sample, check, expert)


def issue_update(name: str, instruction: str, where: str, choose, form) -> Template:
    """Change one issue through its sidebar (``choose(db, rng, goal) -> (format dict, {column: value})``; ``form(view,
    goal) -> action or None`` fills the sidebar)."""

    def sample(db, rng):
        g = _issue(db, rng, where)
        g.update(_member(db, rng, g["pid"]))
        fmt, want = choose(db, rng, g)
        g.update(fmt)
        g["want"] = want
        return instruction.format(ref=_ref(g), **fmt) + _login(g), g

    def check(db, state, goal, answer):
        return _done(updated_only(db, "issues", goal["id"], goal["want"]), answer)

    def expert(view, goal):
        step = ensure_login(view, goal["username"], goal["password"]) or open_item(
            view, goal["slug"], "issues", goal["iid"], goal["title"])
        return step or form(view, goal)

    return Template(name, "change", sample, check, expert)


def _assign(db, rng, g):
    m = _pick(db, rng, "SELECT u.id, u.username, u.name FROM members m JOIN users u ON u.id=m.user_id WHERE "
                       "m.project_id=? AND m.role != 'Reporter' AND u.id IS NOT (SELECT assignee_id FROM issues WHERE id=?) "
                       "ORDER BY u.id", (g["pid"], g["id"]))
    return {"to": m[2], "to_user": m[1]}, {"assignee_id": m[0]}


def _milestone(db, rng, g):
    m = _pick(db, rng, "SELECT id, title FROM milestones WHERE project_id=? AND id IS NOT (SELECT milestone_id FROM "
                       "issues WHERE id=?) ORDER BY id", (g["pid"], g["id"]))
    return {"ms": m[1]}, {"milestone_id": m[0]}


SUFFIXES = (" on mobile", " for admins", " in production", " after the upgrade")


def _rename(db, rng, g):
    new = g["title"] + SUFFIXES[int(rng.integers(len(SUFFIXES)))]
    return {"new": new}, {"title": new}


def _toggle(view, goal):
    return act("click", view.bid("#toggle-state"))


def label_change(name: str, add: bool) -> Template:
    def sample(db, rng):
        g = _issue(db, rng, "EXISTS (SELECT 1 FROM labels l WHERE l.project_id=i.project_id AND l.id NOT IN (SELECT "
                            "label_id FROM issue_labels il WHERE il.issue_id=i.id))" if add else
                   "EXISTS (SELECT 1 FROM issue_labels il WHERE il.issue_id=i.id)")
        g.update(_member(db, rng, g["pid"]))
        have = {r[0] for r in db.execute("SELECT label_id FROM issue_labels WHERE issue_id=?", (g["id"],))}
        pool = db.execute("SELECT id, name FROM labels WHERE project_id=? ORDER BY id", (g["pid"],)).fetchall()
        pool = [r for r in pool if (r[0] in have) != add]
        g["lid"], g["label"] = pool[int(rng.integers(len(pool)))]
        g["labels"] = sorted(have | {g["lid"]}) if add else sorted(have - {g["lid"]})
        verb = f'Add the label "{g["label"]}" to' if add else f'Remove the label "{g["label"]}" from'
        return f"{verb} {_ref(g)}, keeping its other labels." + _login(g), g

    def check(db, state, goal, answer):
        ch = changed_tables(db, TABLES)
        rows = ch.get("issue_labels", ([], []))
        now = sorted(r[0] for r in db.execute("SELECT label_id FROM issue_labels WHERE issue_id=?", (goal["id"],)))
        ok = (set(ch) == {"issue_labels"} and all(r[0] == goal["id"] for r in rows[0] + rows[1])
              and now == goal["labels"])
        return _done(ok, answer)

    def expert(view, goal):
        step = ensure_login(view, goal["username"], goal["password"]) or open_item(
            view, goal["slug"], "issues", goal["iid"], goal["title"])
        return step or set_checkbox(view, f"ed-lbl-{goal['lid']}", add) or act("click", view.bid("#ed-save"))

    return Template(name, "change", sample, check, expert)


def create_issue() -> Template:
    from arl_envs.envs.web.sites.tracker.data import BUG_TITLES, _fill

    def sample(db, rng):
        g = _project(db, rng)
        g.update(_member(db, rng, g["pid"]))
        title = _fill(rng, BUG_TITLES[int(rng.integers(len(BUG_TITLES)))])
        while db.execute("SELECT 1 FROM issues WHERE title=?", (title,)).fetchone():  # new on the whole site
            title = _fill(rng, BUG_TITLES[int(rng.integers(len(BUG_TITLES)))])
        lid, label = _pick(db, rng, "SELECT id, name FROM labels WHERE project_id=? ORDER BY id", (g["pid"],))
        a = _member(db, rng, g["pid"])
        g.update({"title": title, "lid": lid, "label": label, "to_uid": a["uid"], "to_user": a["username"], "to": a["uname"]})
        return (f'Open a new issue in the {g["pname"]} project titled "{title}", with the label "{label}", assigned to '
                f'{a["uname"]} (any description).' + _login(g), g)

    def check(db, state, goal, answer):
        row = inserted_only(db, "issues", {"project_id": goal["pid"], "title": goal["title"], "author_id": goal["uid"],
                                           "assignee_id": goal["to_uid"], "state": "opened", "milestone_id": None},
                            also=("issue_labels",))
        labels = changed_tables(db, TABLES).get("issue_labels", ([], []))[0]
        ok = row is not None and labels == [(row[0], goal["lid"])]
        return _done(ok, answer)

    def expert(view, goal):
        step = ensure_login(view, goal["username"], goal["password"])
        if step:
            return step
        if path_of(view) != f"/projects/{goal['slug']}/issues/new":
            return go_project(view, goal["slug"], "issues") or act("click", view.bid("#new-issue"))
        return (set_checkbox(view, f"ni-lbl-{goal['lid']}", True) or fill_then(
            view, [("ni-title", goal["title"]), ("ni-body", "Found while testing the release candidate."),
                   ("ni-assignee", goal["to_user"])], "#ni-submit"))

    return Template("create-issue", "change", sample, check, expert)


NEW_LABELS = (("blocked", "#b60205"), ("customer", "#0e8a16"), ("frontend", "#1d76db"), ("infra", "#5319e7"),
              ("wontfix", "#cccccc"), ("duplicate", "#cfd3d7"), ("question", "#d876e3"), ("release blocker", "#e11d21"))


def create_label() -> Template:
    def sample(db, rng):
        g = _project(db, rng)
        g.update(_member(db, rng, g["pid"], ("Owner", "Maintainer")))
        g["label"], g["color"] = NEW_LABELS[int(rng.integers(len(NEW_LABELS)))]
        return f'Create a label "{g["label"]}" with colour {g["color"]} in the {g["pname"]} project.' + _login(g), g

    def check(db, state, goal, answer):
        row = inserted_only(db, "labels", {"project_id": goal["pid"], "name": goal["label"], "color": goal["color"]})
        return _done(row is not None, answer)

    def expert(view, goal):
        step = ensure_login(view, goal["username"], goal["password"]) or go_project(view, goal["slug"], "labels")
        return step or fill_then(view, [("lb-name", goal["label"]), ("lb-color", goal["color"])], "#lb-create")

    return Template("create-label", "change", sample, check, expert)


def create_milestone() -> Template:
    from arl_envs.envs.web.sites.tracker.data import _date

    def sample(db, rng):
        g = _project(db, rng)
        g.update(_member(db, rng, g["pid"], ("Owner", "Maintainer")))
        last = db.execute("SELECT title FROM milestones WHERE project_id=? ORDER BY id DESC", (g["pid"],)).fetchone()[0]
        major = int(last[1:].split(".")[0])
        g["ms"] = f"v{major + 1}.{int(rng.integers(0, 3))}"
        g["due"] = _date(400 + int(rng.integers(0, 200)))
        return f'Create a milestone "{g["ms"]}" due on {g["due"]} in the {g["pname"]} project.' + _login(g), g

    def check(db, state, goal, answer):
        row = inserted_only(db, "milestones", {"project_id": goal["pid"], "title": goal["ms"], "due": goal["due"],
                                               "state": "active"})
        return _done(row is not None, answer)

    def expert(view, goal):
        step = ensure_login(view, goal["username"], goal["password"]) or go_project(view, goal["slug"], "milestones")
        return step or fill_then(view, [("ms-title", goal["ms"]), ("ms-due", goal["due"])], "#ms-create")

    return Template("create-milestone", "change", sample, check, expert)


def mr_state(name: str, verb: str, button: str, new_state: str) -> Template:
    def sample(db, rng):
        g = _mr(db, rng, "m.state='opened'")
        g.update(_member(db, rng, g["pid"], ("Owner", "Maintainer")))
        return f"{verb} {_mref(g)}." + _login(g), g

    def check(db, state, goal, answer):
        return _done(updated_only(db, "merge_requests", goal["id"], {"state": new_state}), answer)

    def expert(view, goal):
        step = ensure_login(view, goal["username"], goal["password"]) or open_item(
            view, goal["slug"], "merge_requests", goal["iid"], goal["title"])
        return step or act("click", view.bid(button))

    return Template(name, "change", sample, check, expert)


TEMPLATES: list[Template] = [
    # information seeking: one issue or merge request (10)
    issue_question("issue-assignee", "Who is assigned to {ref}? Give the full name.",
                   "SELECT u.name FROM issues i JOIN users u ON u.id=i.assignee_id WHERE i.id=?", "i.assignee_id IS NOT NULL"),
    issue_question("issue-author", "Who opened {ref}? Give the full name.",
                   "SELECT u.name FROM issues i JOIN users u ON u.id=i.author_id WHERE i.id=?"),
    issue_question("issue-milestone", "Which milestone is {ref} planned for? Give the milestone title.",
                   "SELECT ms.title FROM issues i JOIN milestones ms ON ms.id=i.milestone_id WHERE i.id=?",
                   "i.milestone_id IS NOT NULL"),
    issue_question("issue-comment-count", "How many comments does {ref} have?",
                   "SELECT COUNT(*) FROM notes WHERE target_type='issue' AND target_id=?"),
    issue_question("issue-state", 'Is {ref} open or closed? Answer "open" or "closed".',
                   "SELECT CASE state WHEN 'opened' THEN 'open' ELSE 'closed' END FROM issues WHERE id=?"),
    issue_question("issue-last-commenter", "Who wrote the most recent comment on {ref}? Give the full name.",
                   "SELECT u.name FROM notes n JOIN users u ON u.id=n.author_id WHERE n.target_type='issue' AND "
                   "n.target_id=? ORDER BY n.id DESC LIMIT 1",
                   "EXISTS (SELECT 1 FROM notes n WHERE n.target_type='issue' AND n.target_id=i.id)"),
    issue_labels(),
    mr_question("mr-source-branch", "What is the source branch of {ref}?",
                "SELECT source_branch FROM merge_requests WHERE id=?"),
    mr_question("mr-state", 'What is the status of {ref}? Answer "open", "merged" or "closed".',
                "SELECT CASE state WHEN 'opened' THEN 'open' ELSE state END FROM merge_requests WHERE id=?"),
    mr_question("mr-author", "Who opened {ref}? Give the full name.",
                "SELECT u.name FROM merge_requests m JOIN users u ON u.id=m.author_id WHERE m.id=?"),
    # information seeking: lists, project pages, search (13)
    list_count("count-open-with-label", 'How many open issues of the {pname} project have the label "{label}"?', "issues",
               _label_choice),
    list_count("count-open-assigned", "How many open issues of the {pname} project are assigned to {name}?", "issues",
               _assignee_choice),
    list_count("count-open-unassigned", "How many open issues of the {pname} project have no assignee?", "issues",
               _unassigned_choice),
    list_count("count-closed-in-milestone", "How many closed issues of the {pname} project belong to milestone {ms}?",
               "issues", _milestone_closed_choice),
    list_count("count-merged-mrs", "How many merge requests of the {pname} project have been merged?", "merge_requests",
               _merged_choice),
    list_first("oldest-open-with-label", 'What is the title of the oldest open issue with the label "{label}" in the '
               "{pname} project?", "oldest", "i.created ASC, i.iid ASC", "i.created"),
    list_first("most-commented-with-label", 'Which open issue with the label "{label}" in the {pname} project has the '
               "most comments? Give its title.", "comments",
               "(SELECT COUNT(*) FROM notes n WHERE n.target_type='issue' AND n.target_id=i.id) DESC, i.iid DESC",
               "(SELECT COUNT(*) FROM notes n WHERE n.target_type='issue' AND n.target_id=i.id)"),
    project_page_question("milestone-due", "When is milestone {ms} of the {pname} project due? Answer as YYYY-MM-DD.",
                          "milestones", _ms_due),
    project_page_question("milestone-open-count", "How many open issues are left in milestone {ms} of the {pname} "
                          "project?", "milestones", _ms_open),
    project_page_question("project-owner", "Who is the Owner of the {pname} project? Give the full name.", "", _owner),
    project_page_question("label-open-count", 'How many open issues carry the label "{label}" in the {pname} project? '
                          "(The labels page counts them.)", "labels", _label_open),
    user_assigned_count(),
    search_count(),
    # navigation (10)
    nav_item("open-issue", "issues"),
    nav_item("open-mr", "merge_requests"),
    nav_list("issues-with-label", 'Show the open issues of the {pname} project that have the label "{label}".', "issues",
             _label_choice),
    nav_list("issues-assigned-to", "Show the open issues of the {pname} project assigned to {name}.", "issues",
             _assignee_choice),
    nav_list("closed-in-milestone", "List the closed issues of milestone {ms} in the {pname} project.", "issues",
             _milestone_closed_choice),
    nav_list("merged-mrs", "List the merged merge requests of the {pname} project.", "merge_requests", _merged_choice),
    nav_list("search-oldest-first", 'Search all issues (open and closed) of the {pname} project for "{word}", oldest '
             "first.", "issues", _search_oldest),
    nav_list("open-issues-page-2", "Open the second page of the open issues of the {pname} project.", "issues",
             _second_page),
    nav_milestone(),
    nav_user(),
    # content and configuration changes (13)
    comment("issues"),
    comment("merge_requests"),
    issue_update("close-issue", "Close {ref}.", "i.state='opened'", lambda db, rng, g: ({}, {"state": "closed"}), _toggle),
    issue_update("reopen-issue", "Reopen {ref}.", "i.state='closed'", lambda db, rng, g: ({}, {"state": "opened"}), _toggle),
    issue_update("assign-issue", "Assign {ref} to {to}.", "1=1", _assign,
                 lambda v, g: fill_then(v, [("ed-assignee", g["to_user"])], "#ed-save")),
    issue_update("set-milestone", "Move {ref} to milestone {ms}.", "1=1", _milestone,
                 lambda v, g: fill_then(v, [("ed-milestone", g["ms"])], "#ed-save")),
    issue_update("rename-issue", 'Rename {ref} to "{new}".', "1=1", _rename,
                 lambda v, g: fill_then(v, [("ed-title", g["new"])], "#title-save")),
    label_change("add-label", True),
    label_change("remove-label", False),
    create_issue(),
    create_label(),
    create_milestone(),
    mr_state("merge-mr", "Merge", "#merge", "merged"),
]

"""The tracker's seed database ("Quayside", a GitLab-like issue tracker), generated deterministically into SQLite.

Tables (all ids 1-based; dates ``YYYY-MM-DD`` strings):

* ``users(id, username, name, email, password)``: 40 developers; ``projects(id, slug, name, description)``: 8 projects;
  ``members(project_id, user_id, role)`` with ``role`` Owner / Maintainer / Developer / Reporter.
* ``labels(id, project_id, name, color)``; ``milestones(id, project_id, title, due, state, description)``, ``state``
  ``active`` or ``closed``.
* ``issues(id, project_id, iid, title, body, author_id, assignee_id, milestone_id, state, created)``: ``iid`` numbers
  issues per project, ``state`` ``opened`` or ``closed``; ``issue_labels(issue_id, label_id)``.
* ``merge_requests(id, project_id, iid, title, body, author_id, assignee_id, source_branch, target_branch, state,
  created)``, ``state`` ``opened`` / ``merged`` / ``closed``.
* ``notes(id, target_type, target_id, author_id, body, created)``: comments on issues (``target_type`` ``issue``) and
  merge requests (``mr``); ``sessions(id, user_id)``.

Titles, bodies and comments are assembled from the word tables below (components, actions, features), so they read
like a real team's tracker; issue titles are unique within a project. ``n_issues`` (default 3,000) sets the size;
there are about 3 comments per issue and one merge request per 6 issues.
"""

from __future__ import annotations

import sqlite3

import numpy as np

PROJECTS = (
    ("tidewater-api", "Tidewater API", "REST API of the Tidewater booking platform: reservations, payments, webhooks."),
    ("lighthouse-web", "Lighthouse Web", "Customer-facing web application for booking and managing trips."),
    ("anchor-cli", "Anchor CLI", "Command-line client for operators: imports, exports and bulk changes."),
    ("keel-db", "Keel DB", "Schema migrations, seed data and database tooling for all services."),
    ("compass-mobile", "Compass Mobile", "The iOS and Android app for travellers, with offline tickets."),
    ("beacon-metrics", "Beacon Metrics", "Metrics pipeline and dashboards for the operations team."),
    ("harbor-docs", "Harbor Docs", "Product and developer documentation site."),
    ("mooring-auth", "Mooring Auth", "Single sign-on, sessions and permissions service."),
)
FIRST = ("Emma", "Liam", "Olivia", "Noah", "Ava", "Lucas", "Mia", "Ethan", "Sofia", "Mason", "Chloe", "Logan", "Grace",
         "Henry", "Zoe", "Jack", "Nora", "Owen", "Ruby", "Samuel", "Ivy", "Daniel", "Leah", "Caleb", "Maya", "Isaac",
         "Priya", "Tomas", "Aisha", "Kenji")
LAST = ("Hughes", "Patel", "Nguyen", "Garcia", "Kim", "Okafor", "Larsen", "Rossi", "Dubois", "Silva", "Cohen", "Murphy",
        "Tanaka", "Kowalski", "Andersen", "Reyes", "Walsh", "Fischer", "Moreau", "Bennett")
ROLES = ("Owner", "Maintainer", "Developer", "Developer", "Developer", "Reporter")
LABELS = (("bug", "#d9534f"), ("feature", "#5cb85c"), ("documentation", "#5bc0de"), ("performance", "#f0ad4e"),
          ("security", "#8e44ad"), ("ui", "#e67e22"), ("backend", "#34495e"), ("good first issue", "#1abc9c"),
          ("needs review", "#c0392b"), ("priority::high", "#e74c3c"), ("priority::low", "#95a5a6"), ("regression", "#a94442"),
          ("tech debt", "#7f8c8d"), ("accessibility", "#2980b9"))
COMPONENTS = ("login page", "settings page", "search", "export job", "billing module", "notification service",
              "dashboard", "file upload", "user profile", "API client", "scheduler", "audit log", "report builder",
              "invite flow", "password reset", "booking form", "webhook sender", "cache layer", "admin panel",
              "sync worker")
ACTIONS = ("saving a draft", "uploading a large file", "switching the language", "the session expires",
           "exporting to CSV", "paging past 100 results", "using Safari", "two tabs are open", "the network drops",
           "filtering by date", "the user has no avatar", "importing 10k rows", "retrying a failed payment",
           "running on Windows", "the timezone is UTC+13")
THINGS = ("timezone", "currency symbol", "item count", "date format", "sort order", "total", "page title",
          "error message", "progress bar", "tooltip")
FEATURES = ("dark mode", "keyboard shortcuts", "CSV export", "bulk edit", "SSO login", "webhooks", "rate limiting",
            "two-factor auth", "email digests", "saved filters", "audit events", "cursor pagination", "retry backoff",
            "per-user quotas", "JSON logs")
BUG_TITLES = ("{C} crashes when {a}", "{C} shows the wrong {t} after {a}", "Timeout in the {c} when {a}",
              "Error 500 from the {c} when {a}", "{C} loses data when {a}", "Flaky test for the {c} when {a}")
FEATURE_TITLES = ("Add {f} to the {c}", "Support {f} in the {c}", "Allow admins to configure {f} for the {c}")
DOC_TITLES = ("Document {f} for the {c}", "Update the {c} guide for {f}")
CHORE_TITLES = ("Refactor the {c} before adding {f}", "Speed up the {c} when {a}", "Remove the deprecated {c} endpoint")
COMMENTS = ("I can reproduce this on staging.", "Looks related to last week's change in the {c}.",
            "I'll take a look this week.", "Could you attach the server logs?", "Confirmed on the latest build.",
            "This blocks the release, raising the priority.", "Not reproducible on my machine, which browser is this?",
            "The fix is in review, please verify once it is merged.", "Added a failing test that shows the problem.",
            "Customers reported this twice through support.", "We should split this into two issues.",
            "Workaround for now: reload the page after {a}.", "Done, closing after the next deploy.",
            "Is this still happening after the cache change?", "Moved to the next milestone, we ran out of time.")
MR_TITLES = ("Fix {c} crash when {a}", "Add {f} to the {c}", "Refactor the {c} module", "Speed up the {c}",
             "Document {f} for the {c}", "Handle {t} correctly in the {c}")
MR_BODIES = ("Implements what the title says and adds regression tests.",
             "Follow-up to the discussion on the issue; the old code path stays behind a flag for one release.",
             "Small change, covered by the existing tests. Please check the migration notes.",
             "Splits the change into three commits so it is easier to review.")

SCHEMA = """
CREATE TABLE users(id INTEGER PRIMARY KEY, username TEXT UNIQUE, name TEXT, email TEXT UNIQUE, password TEXT);
CREATE TABLE projects(id INTEGER PRIMARY KEY, slug TEXT UNIQUE, name TEXT, description TEXT);
CREATE TABLE members(project_id INTEGER, user_id INTEGER, role TEXT);
CREATE TABLE labels(id INTEGER PRIMARY KEY, project_id INTEGER, name TEXT, color TEXT);
CREATE TABLE milestones(id INTEGER PRIMARY KEY, project_id INTEGER, title TEXT, due TEXT, state TEXT, description TEXT);
CREATE TABLE issues(id INTEGER PRIMARY KEY, project_id INTEGER, iid INTEGER, title TEXT, body TEXT, author_id INTEGER,
  assignee_id INTEGER, milestone_id INTEGER, state TEXT, created TEXT);
CREATE TABLE issue_labels(issue_id INTEGER, label_id INTEGER);
CREATE TABLE merge_requests(id INTEGER PRIMARY KEY, project_id INTEGER, iid INTEGER, title TEXT, body TEXT,
  author_id INTEGER, assignee_id INTEGER, source_branch TEXT, target_branch TEXT, state TEXT, created TEXT);
CREATE TABLE notes(id INTEGER PRIMARY KEY, target_type TEXT, target_id INTEGER, author_id INTEGER, body TEXT, created TEXT);
CREATE TABLE sessions(id TEXT PRIMARY KEY, user_id INTEGER);
CREATE INDEX ix_is ON issues(project_id, iid);
CREATE INDEX ix_il ON issue_labels(issue_id);
CREATE INDEX ix_il2 ON issue_labels(label_id);
CREATE INDEX ix_mr ON merge_requests(project_id, iid);
CREATE INDEX ix_nt ON notes(target_type, target_id);
CREATE INDEX ix_mb ON members(project_id);
"""


def _date(day: int) -> str:
    """Day ``day`` (0-based) of 2024 as ``YYYY-MM-DD`` (days past 365 wrap into 2025)."""
    import datetime

    return (datetime.date(2024, 1, 1) + datetime.timedelta(days=int(day))).isoformat()


def _fill(rng: np.random.Generator, pattern: str) -> str:
    def one(xs):
        return xs[int(rng.integers(len(xs)))]

    c = one(COMPONENTS)
    return pattern.format(C=c[0].upper() + c[1:], c=c, a=one(ACTIONS), t=one(THINGS), f=one(FEATURES))


def build(conn: sqlite3.Connection, n_issues: int = 3000, seed: int = 0) -> None:
    """Fill an empty connection with the seed data (same ``n_issues`` and ``seed`` -> the same database)."""
    rng = np.random.default_rng(seed)
    conn.executescript(SCHEMA)
    users, seen = [], set()
    while len(users) < 40:
        first, last = FIRST[int(rng.integers(len(FIRST)))], LAST[int(rng.integers(len(LAST)))]
        if (first, last) in seen:
            continue
        seen.add((first, last))
        uid = len(users) + 1
        uname = f"{first[0].lower()}{last.lower()}"
        users.append((uid, uname, f"{first} {last}", f"{first.lower()}.{last.lower()}@quayside.dev", f"{first.lower()}-{300 + uid}"))
    conn.executemany("INSERT INTO users VALUES (?,?,?,?,?)", users)
    members: dict[int, list[tuple[int, str]]] = {}
    label_ids: dict[int, list[int]] = {}
    milestone_ids: dict[int, list[int]] = {}
    lid = mid = 0
    for pid, (slug, name, desc) in enumerate(PROJECTS, 1):
        conn.execute("INSERT INTO projects VALUES (?,?,?,?)", (pid, slug, name, desc))
        team = rng.choice(40, size=int(rng.integers(7, 13)), replace=False) + 1
        members[pid] = [(int(u), "Owner" if i == 0 else ROLES[1 + int(rng.integers(len(ROLES) - 1))])
                        for i, u in enumerate(team)]
        conn.executemany("INSERT INTO members VALUES (?,?,?)", [(pid, u, r) for u, r in members[pid]])
        chosen = sorted(rng.choice(len(LABELS), size=int(rng.integers(8, 12)), replace=False).tolist())
        label_ids[pid] = []
        for i in chosen:
            lid += 1
            conn.execute("INSERT INTO labels VALUES (?,?,?,?)", (lid, pid, *LABELS[i]))
            label_ids[pid].append(lid)
        milestone_ids[pid] = []
        major = int(rng.integers(1, 4))
        n_ms = int(rng.integers(4, 7))
        for k in range(n_ms):
            mid += 1
            due = _date(40 + k * 55 + int(rng.integers(0, 20)))
            state = "closed" if k < n_ms - 2 else "active"
            title = f"v{major}.{k}"
            conn.execute("INSERT INTO milestones VALUES (?,?,?,?,?,?)",
                         (mid, pid, title, due, state, f"Release {title} of {name}."))
            milestone_ids[pid].append(mid)
    issues, links, notes, mrs = [], [], [], []
    nid = 0
    per = [n_issues // len(PROJECTS) + (1 if i < n_issues % len(PROJECTS) else 0) for i in range(len(PROJECTS))]
    iss_id = mr_id = 0
    for pid, count in enumerate(per, 1):
        titles: set[str] = set()
        team = [u for u, _ in members[pid]]
        devs = [u for u, r in members[pid] if r != "Reporter"]
        for iid in range(1, count + 1):
            kind = int(rng.integers(10))
            pool, lab = ((BUG_TITLES, "bug") if kind < 5 else (FEATURE_TITLES, "feature") if kind < 8
                         else (DOC_TITLES, "documentation") if kind < 9 else (CHORE_TITLES, "tech debt"))
            title = _fill(rng, pool[int(rng.integers(len(pool)))])
            while title in titles:
                title = _fill(rng, pool[int(rng.integers(len(pool)))])
            titles.add(title)
            iss_id += 1
            day = int(iid * 360 / count) + int(rng.integers(0, 3))
            ms_list = milestone_ids[pid]
            ms_k = min(len(ms_list) - 1, int(iid * len(ms_list) / count + rng.integers(-1, 2)))
            ms = ms_list[max(0, ms_k)] if rng.random() < 0.8 else None
            old = ms is not None and ms_k < len(ms_list) - 2
            state = "closed" if rng.random() < (0.9 if old else 0.3) else "opened"
            assignee = devs[int(rng.integers(len(devs)))] if rng.random() < 0.75 else None
            author = team[int(rng.integers(len(team)))]
            if lab == "bug":
                body = (f"Reproduced on {_date(day)}: {title[0].lower() + title[1:]}. Expected it to keep "
                        "working; instead the request fails and the change is lost.")
            else:
                body = _fill(rng, "This would help teams that rely on {f}. ") + "Acceptance: covered by tests and " \
                    "mentioned in the changelog."
            issues.append((iss_id, pid, iid, title, body, author, assignee, ms, state, _date(day)))
            names = dict(conn.execute("SELECT name, id FROM labels WHERE project_id=?", (pid,)).fetchall())
            mine = {names[lab]} if lab in names else set()
            for j in rng.choice(len(label_ids[pid]), size=int(rng.integers(0, 3)), replace=False):
                mine.add(label_ids[pid][int(j)])
            links += [(iss_id, x) for x in sorted(mine)]
            for k in range(int(rng.poisson(2.5))):
                nid += 1
                notes.append((nid, "issue", iss_id, team[int(rng.integers(len(team)))],
                              _fill(rng, COMMENTS[int(rng.integers(len(COMMENTS)))]), _date(day + 1 + 2 * k)))
        for miid in range(1, count // 6 + 1):
            mr_id += 1
            title = _fill(rng, MR_TITLES[int(rng.integers(len(MR_TITLES)))])
            branch = f"{miid}-" + "-".join(title.lower().replace(",", "").split()[:5])
            day = int(miid * 360 / (count // 6 + 1))
            st = ("merged", "merged", "merged", "opened", "opened", "closed")[int(rng.integers(6))]
            body = MR_BODIES[int(rng.integers(len(MR_BODIES)))]
            mrs.append((mr_id, pid, miid, title, body,
                        devs[int(rng.integers(len(devs)))], devs[int(rng.integers(len(devs)))], branch, "main", st,
                        _date(day)))
            for k in range(int(rng.integers(0, 4))):
                nid += 1
                notes.append((nid, "mr", mr_id, team[int(rng.integers(len(team)))],
                              ("Looks good to me.", "Please add a test for the empty case.", "Rebased on main.",
                               "Approved.", "Can we split the refactoring into its own merge request?")[int(rng.integers(5))],
                              _date(day + k)))
    conn.executemany("INSERT INTO issues VALUES (?,?,?,?,?,?,?,?,?,?)", issues)
    conn.executemany("INSERT INTO issue_labels VALUES (?,?)", links)
    conn.executemany("INSERT INTO merge_requests VALUES (?,?,?,?,?,?,?,?,?,?,?)", mrs)
    conn.executemany("INSERT INTO notes VALUES (?,?,?,?,?,?)", notes)
    conn.commit()

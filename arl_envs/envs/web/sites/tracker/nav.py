"""The tracker's scripted expert moves: each returns the next action string, or ``None`` when already there.

They read the page through :class:`ExpertView` (element ids and ``data-`` attributes of the templates) and act with
the same action strings as the agent; what to reach comes from the privileged goal.
"""

from __future__ import annotations

from arl_envs.envs.web.sites.tasks import fields, fill_then, path_of, url_params
from arl_envs.envs.web.task import ExpertView, act

_SECTION_NAV = {"": "#nav-overview", "issues": "#nav-issues", "merge_requests": "#nav-mrs",
                "milestones": "#nav-milestones", "labels": "#nav-labels"}
#: List filters: query parameter -> filter form element id.
_FILTERS = {"issues": (("q", "f-q"), ("state", "f-state"), ("label", "f-label"), ("milestone", "f-milestone"),
                       ("assignee", "f-assignee"), ("sort", "f-sort")),
            "merge_requests": (("q", "f-q"), ("state", "f-state"))}


def ensure_login(view: ExpertView, username: str, password: str) -> str | None:
    if not view.bids("#nav-login"):
        return None
    if path_of(view) != "/login":
        return act("click", view.bid("#nav-login"))
    return fill_then(view, [("login-user", username), ("login-password", password)], "#login-submit")


def go_project(view: ExpertView, slug: str, section: str = "") -> str | None:
    target = f"/projects/{slug}" + (f"/{section}" if section else "")
    path = path_of(view)
    if path == target:
        return None
    if path == f"/projects/{slug}" or path.startswith(f"/projects/{slug}/"):
        return act("click", view.bid(_SECTION_NAV[section]))
    links = view.bids(f'a.project[data-slug="{slug}"]')
    return act("click", links[0]) if links else act("click", view.bid("#home"))


def go_list(view: ExpertView, slug: str, section: str, params: dict[str, str]) -> str | None:
    """Reach ``/projects/<slug>/<section>`` with exactly ``params`` (``page`` through the pager)."""
    step = go_project(view, slug, section)
    if step:
        return step
    _, have = url_params(view.url)
    want = {k: v for k, v in params.items() if k != "page" and v}
    if {k: v for k, v in have.items() if k != "page"} == want:
        page, cur = int(params.get("page", "1")), int(have.get("page", "1"))
        if page == cur:
            return None
        return act("click", view.bid("#next" if cur < page else "#prev"))
    return fill_then(view, [(fid, params.get(key, "")) for key, fid in _FILTERS[section]], "#f-apply")


def open_item(view: ExpertView, slug: str, kind: str, iid: int, title: str) -> str | None:
    """Open issue (``kind="issues"``) or merge request (``"merge_requests"``) ``iid`` through the list search."""
    if path_of(view) == f"/projects/{slug}/{kind}/{iid}":
        return None
    ref = f'a.issue[data-ref="{slug}#{iid}"]' if kind == "issues" else f'a.mr[data-ref="{slug}!{iid}"]'
    links = view.bids(ref)
    if links:
        return act("click", links[0])
    return go_list(view, slug, kind, {"q": title, "state": "all"})


def go_user(view: ExpertView, slug: str, username: str) -> str | None:
    """Open ``/users/<username>`` from the members table of a project they belong to."""
    if path_of(view) == f"/users/{username}":
        return None
    return go_project(view, slug) or act("click", view.bid(f'a.member[data-user="{username}"]'))


def set_checkbox(view: ExpertView, element_id: str, on: bool) -> str | None:
    if (fields(view).get(element_id) == "on") != on:
        return act("click", view.bid(f"#{element_id}"))
    return None

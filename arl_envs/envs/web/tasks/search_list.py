"""``arl/web.search-list-v0``: search a paginated staff directory and open the matching person's profile."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    register_task,
    urls_match,
)
from arl_envs.envs.web.tasks._kit import CITIES, FIRST_NAMES, LAST_NAMES, page, pick

#: People in the directory, rows per page, and namesakes of the target (same name, other department).
N_PEOPLE = 36
PAGE_SIZE = 6
N_NAMESAKES = 2
DEPARTMENTS = ("Sales", "Legal", "Finance", "Research", "Support", "Design", "Logistics", "Marketing")

_LIST_JS = """
var pageNo = 0;
function matches() {
  var q = document.getElementById('q').value.trim().toLowerCase();
  return ARL_DATA.people.filter(function (p) { return q === '' || p.name.toLowerCase().indexOf(q) >= 0; });
}
function render() {
  var rows = matches();
  var npages = Math.max(1, Math.ceil(rows.length / ARL_DATA.page_size));
  if (pageNo >= npages) pageNo = npages - 1;
  var shown = rows.slice(pageNo * ARL_DATA.page_size, (pageNo + 1) * ARL_DATA.page_size);
  document.getElementById('rows').innerHTML = shown.map(function (p) {
    return '<tr><td><a href="profile.html?id=' + p.id + '" data-id="' + p.id + '">' + arlEsc(p.name) + '</a></td><td>' +
      arlEsc(p.dept) + '</td><td>' + arlEsc(p.city) + '</td></tr>';
  }).join('');
  document.getElementById('count').textContent = rows.length + ' people, page ' + (pageNo + 1) + ' of ' + npages;
  document.getElementById('prev').disabled = pageNo === 0;
  document.getElementById('next').disabled = pageNo >= npages - 1;
}
document.getElementById('search').addEventListener('submit', function (ev) { ev.preventDefault(); pageNo = 0; render(); });
document.getElementById('prev').addEventListener('click', function () { pageNo -= 1; render(); });
document.getElementById('next').addEventListener('click', function () { pageNo += 1; render(); });
render();
window.arlState = () => ({page: 'list', query: document.getElementById('q').value,
  listed: Array.from(document.querySelectorAll('#rows a')).map(function (a) { return a.dataset.id; })});
"""

_PROFILE_JS = """
var id = new URLSearchParams(location.search).get('id');
var p = ARL_DATA.people.filter(function (x) { return String(x.id) === id; })[0];
if (p) {
  document.getElementById('name').textContent = p.name;
  document.getElementById('details').textContent = p.dept + ', ' + p.city + '. Extension ' + p.ext + '.';
}
window.arlState = () => ({page: 'profile', id: id});
"""


@register_task
class SearchList(WebTask):
    """Find a person in a paginated directory (search box, Previous/Next) and open their profile.

    Instance: ``N_PEOPLE`` people (``PAGE_SIZE`` per page); the target has ``N_NAMESAKES`` namesakes in other
    departments, so the department named in the instruction decides.
    State: list page ``{"page": "list", "query": str, "listed": [id...]}``; profile page
    ``{"page": "profile", "id": str}``; plus the env's ``url``.
    Validation: done when a profile is open; success iff it is the target's (``/profile.html?id=<id>``).
    Sub-goals: ``"listed"`` (the target's row is on screen), ``"opened"``.
    """

    name = "search-list"
    description = "Search a paginated directory and open the profile of the person in the named department."
    max_turns = 12
    n_subgoals = 2

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        target_name = f"{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES)}"
        depts = [str(d) for d in rng.choice(DEPARTMENTS, size=N_NAMESAKES + 1, replace=False)]
        names = [target_name] * (N_NAMESAKES + 1)
        seen = {target_name}
        while len(names) < N_PEOPLE:
            n = f"{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES)}"
            if n not in seen:
                seen.add(n)
                names.append(n)
        people = []
        for i, n in enumerate(names):
            dept = depts[i] if i <= N_NAMESAKES else pick(rng, DEPARTMENTS)
            people.append({"name": n, "dept": dept, "city": pick(rng, CITIES), "ext": int(rng.integers(1000, 9999))})
        order = rng.permutation(N_PEOPLE)
        people = [people[int(j)] for j in order]
        for i, p in enumerate(people):
            p["id"] = i + 1
        target = next(p for p in people if p["name"] == target_name and p["dept"] == depts[0])
        data = {"people": people, "page_size": PAGE_SIZE}
        list_body = (
            "<h1>Staff directory</h1>"
            '<form id="search" role="search"><label for="q">Name</label><input id="q" type="search">'
            '<button type="submit">Search</button></form>'
            '<p id="count" class="muted"></p>'
            "<table><thead><tr><th>Name</th><th>Department</th><th>City</th></tr></thead><tbody id=\"rows\"></tbody>"
            '</table><button id="prev" type="button">Previous page</button><button id="next" type="button">Next page</button>'
        )
        profile_body = '<p><a href="index.html">Back to directory</a></p><h1 id="name">Unknown person</h1><p id="details"></p>'
        return TaskInstance(
            goal={"id": str(target["id"]), "name": target_name, "url": f"/profile.html?id={target['id']}",
                  "namesakes": [str(p["id"]) for p in people if p["name"] == target_name and p is not target]},
            utterance=f"Open the directory profile of {target_name} from the {depts[0]} department.",
            files={
                "index.html": page("Staff directory", list_body, _LIST_JS, data),
                "profile.html": page("Profile", profile_body, _PROFILE_JS, data),
            },
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        if state.get("page") == "list":
            listed = state.get("listed") or []
            return Score(done=False, success=False, subgoals=frozenset({"listed"} if goal["id"] in listed else ()))
        if state.get("page") != "profile":
            return Score(done=False, success=False)
        ok = urls_match(str(state.get("url", "")), goal["url"])
        return Score(done=True, success=ok, subgoals=frozenset({"listed", "opened"} if ok else ()))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        if goal["id"] in (st.get("listed") or []):
            return act("click", view.bid(f'#rows a[data-id="{goal["id"]}"]'))
        if st.get("query") != goal["name"]:
            return act("fill", view.bid("#q"), goal["name"])
        return act("press", view.bid("#q"), "Enter")

"""``arl/web.menu-navigate-v0``: open a page through a two-level hover menu (hover the top item, click the entry)."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    html_escape,
    register_task,
    urls_match,
)
from arl_envs.envs.web.tasks._kit import page

#: The menu: top item -> entries; an entry's page is ``<top>/<entry>.html`` (lower case, dashes).
MENU = {
    "Account": ("Profile", "Security", "Notifications", "Privacy"),
    "Orders": ("Open orders", "History", "Returns", "Invoices"),
    "Settings": ("Privacy", "Language", "Display", "Notifications"),
    "Help": ("Contact", "Returns", "Shipping", "Security"),
}

_JS = """
var openMenu = null;
document.querySelectorAll('li.top').forEach(function (li) {
  li.addEventListener('mouseenter', function () { setOpen(li.dataset.menu); });
  li.querySelector('button').addEventListener('click', function () { setOpen(openMenu === li.dataset.menu ? null : li.dataset.menu); });
});
function setOpen(name) {
  openMenu = name;
  document.querySelectorAll('li.top').forEach(function (li) {
    var on = li.dataset.menu === name;
    li.querySelector('ul').hidden = !on;
    li.querySelector('button').setAttribute('aria-expanded', on ? 'true' : 'false');
  });
}
window.arlState = () => ({page: 'home', open_menu: openMenu});
"""

_LEAF_JS = "window.arlState = () => ({page: 'leaf', leaf: ARL_DATA.leaf});"

_CSS = (
    "#menubar{list-style:none;padding:0;margin:0;display:flex;gap:8px}li.top{position:relative}"
    "li.top ul{position:absolute;top:28px;left:0;background:#fff;border:1px solid #aaa;list-style:none;padding:4px;"
    "margin:0;min-width:140px;z-index:2}li.top ul a{display:block;padding:3px}"
)


def _slug(text: str) -> str:
    return text.lower().replace(" ", "-")


@register_task
class MenuNavigate(WebTask):
    """Open "<Top> > <Entry>" from a menu bar whose sub-menus appear on hover (or click on the top item).

    Instance: the target is one (top, entry) pair; entries with the same name exist under other top items
    (e.g. "Privacy" under both Account and Settings), so the top item matters.
    State: home ``{"page": "home", "open_menu": str | None}``; a leaf page ``{"page": "leaf", "leaf": path}``.
    Validation: done when any leaf page is open; success iff it is the target (canonical URL
    ``/<top>/<entry>.html``). Sub-goals: ``"menu-open"`` (the target's sub-menu is open), ``"opened"``.
    """

    name = "menu-navigate"
    description = "Open a page through a two-level hover menu (entries repeat under different top items)."
    max_turns = 6
    n_subgoals = 2

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        tops = list(MENU)
        order = [tops[int(i)] for i in rng.permutation(len(tops))]
        # Only targets whose entry name also appears under another top item (so the path matters) ...
        dupes = [(t, e) for t in tops for e in MENU[t] if sum(e in MENU[u] for u in tops) > 1]
        top, entry = dupes[int(rng.integers(len(dupes)))]
        items = []
        for t in order:
            links = "".join(
                f'<li><a href="{_slug(t)}/{_slug(e)}.html" data-path="{_slug(t)}/{_slug(e)}">{html_escape(e)}</a></li>'
                for e in MENU[t]
            )
            items.append(
                f'<li class="top" data-menu="{t}"><button type="button" aria-haspopup="true" aria-expanded="false">{t}'
                f"</button><ul hidden>{links}</ul></li>"
            )
        body = f'<nav><ul id="menubar">{"".join(items)}</ul></nav><h1 style="margin-top:40px">Customer portal</h1>'
        files: dict[str, str | bytes] = {"index.html": page("Customer portal", body, _JS, None, _CSS)}
        for t in tops:
            for e in MENU[t]:
                path = f"{_slug(t)}/{_slug(e)}"
                files[f"{path}.html"] = page(
                    f"{t} - {e}", f'<p><a href="../index.html">Home</a></p><h1>{t}: {e}</h1>', _LEAF_JS, {"leaf": path}
                )
        return TaskInstance(
            goal={"top": top, "entry": entry, "url": f"/{_slug(top)}/{_slug(entry)}.html"},
            utterance=f'Open the "{entry}" page under the "{top}" menu.',
            files=files,
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        if state.get("page") == "home":
            return Score(done=False, success=False, subgoals=frozenset({"menu-open"} if state.get("open_menu") == goal["top"] else ()))
        if state.get("page") != "leaf":
            return Score(done=False, success=False)
        ok = urls_match(str(state.get("url", "")), goal["url"])
        return Score(done=True, success=ok, subgoals=frozenset({"menu-open", "opened"} if ok else ()))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        if view.state.get("open_menu") != goal["top"]:
            return act("hover", view.bid(f'li.top[data-menu="{goal["top"]}"] > button'))
        path = goal["url"].lstrip("/").removesuffix(".html")
        return act("click", view.bid(f'a[data-path="{path}"]'))

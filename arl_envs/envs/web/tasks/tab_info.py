"""``arl/web.tab-info-v0``: open a product in a new browser tab, switch page tabs, and report a fact."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    answer_matches,
    html_escape,
    register_task,
    urls_match,
)
from arl_envs.envs.web.tasks._kit import COLORS, PRODUCTS, page, sample

#: Products in the catalogue.
N_PRODUCTS = 4
#: Facts: (key, page tab holding it, question phrase, unit).
FACTS = (
    ("weight", "Specifications", "weight in grams", "g"),
    ("battery", "Specifications", "battery life in hours", "hours"),
    ("warranty", "Warranty", "warranty period in months", "months"),
    ("returns", "Warranty", "return window in days", "days"),
    ("delivery", "Shipping", "delivery time in days", "days"),
    ("shipping", "Shipping", "shipping cost in dollars", "USD"),
)
PAGE_TABS = ("Overview", "Specifications", "Shipping", "Warranty")

_INDEX_JS = """
var opened = [];
document.querySelectorAll('a[data-id]').forEach(function (a) {
  a.addEventListener('click', function () { opened.push(a.dataset.id); });
});
window.arlState = () => ({page: 'catalogue', opened: opened.slice()});
"""

_PRODUCT_JS = """
var id = new URLSearchParams(location.search).get('id');
var p = ARL_DATA.products[id];
var active = 'Overview';
if (p) {
  document.getElementById('title').textContent = p.name;
  document.getElementById('p-Overview').textContent = 'The ' + p.name + ' is one of our best sellers.';
  document.getElementById('p-Specifications').innerHTML = '<ul><li>Weight: ' + p.weight + ' g</li><li>Battery life: ' +
    p.battery + ' hours</li></ul>';
  document.getElementById('p-Shipping').innerHTML = '<ul><li>Delivery time: ' + p.delivery + ' days</li><li>Shipping cost: $' +
    p.shipping + '</li></ul>';
  document.getElementById('p-Warranty').innerHTML = '<ul><li>Warranty: ' + p.warranty + ' months</li><li>Returns accepted within ' +
    p.returns + ' days</li></ul>';
}
function show(name) {
  active = name;
  document.querySelectorAll('[role=tab]').forEach(function (t) {
    var on = t.dataset.tab === name;
    t.setAttribute('aria-selected', on ? 'true' : 'false');
    document.getElementById('p-' + t.dataset.tab).hidden = !on;
  });
}
document.querySelectorAll('[role=tab]').forEach(function (t) {
  t.addEventListener('click', function () { show(t.dataset.tab); });
});
show('Overview');
window.arlState = () => ({page: 'product', id: id, tab: active});
"""


@register_task
class TabInfo(WebTask):
    """Report a fact about a named product; its details open in a NEW browser tab, behind a page tab.

    Instance: ``N_PRODUCTS`` products ("Details" links open ``product.html?id=N`` with ``target=_blank``);
    each product page has page tabs (Overview, Specifications, Shipping, Warranty; only the selected panel is
    shown). One numeric fact of the target product is asked for.
    State: catalogue ``{"page": "catalogue", "opened": [id...]}`` (Details links clicked); product page ``{"page": "product", "id": str, "tab": str}``;
    plus the env's ``url``, ``tabs``, ``active_tab``.
    Validation: ``answer`` ends the episode; success iff it equals the fact (numbers normalised, the unit may
    be written: ``"250"``, ``"250 g"``). Sub-goals: ``"product-open"`` (the target's page in any browser tab),
    ``"tab-shown"`` (its page tab holding the fact is selected in the active browser tab).
    """

    name = "tab-info"
    description = "Open a product's details in a new browser tab, switch to the right page tab, answer a question."
    max_turns = 10
    n_subgoals = 2

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        names = [f"{c} {p}" for c, p in zip(sample(rng, COLORS, N_PRODUCTS), sample(rng, PRODUCTS, N_PRODUCTS))]
        products = {}
        for i, n in enumerate(names):
            products[str(i + 1)] = {
                "name": n,
                "weight": int(rng.integers(80, 2500)),
                "battery": int(rng.integers(4, 60)),
                "warranty": int(rng.choice([6, 12, 18, 24, 36])),
                "returns": int(rng.choice([14, 30, 45, 60])),
                "delivery": int(rng.integers(1, 12)),
                "shipping": int(rng.integers(0, 25)),
            }
        pid = str(int(rng.integers(1, N_PRODUCTS + 1)))
        key, tab, phrase, unit = FACTS[int(rng.integers(len(FACTS)))]
        value = products[pid][key]
        rows = "".join(
            f'<li class="card"><strong>{html_escape(p["name"])}</strong> '
            f'<a href="product.html?id={i}" target="_blank" data-id="{i}">Details</a></li>'
            for i, p in products.items()
        )
        index_body = f"<h1>Gadget shop</h1><p>Details open in a new tab.</p><ul>{rows}</ul>"
        tabs = "".join(f'<button type="button" role="tab" data-tab="{t}">{t}</button>' for t in PAGE_TABS)
        panels = "".join(f'<div role="tabpanel" id="p-{t}" aria-label="{t}" hidden></div>' for t in PAGE_TABS)
        product_body = f'<h1 id="title">Unknown product</h1><div role="tablist">{tabs}</div>{panels}'
        answers = f"{value} |OR| {value} {unit}" + (f" |OR| ${value}" if unit == "USD" else "")
        return TaskInstance(
            goal={"id": pid, "tab": tab, "answer": answers, "url": f"/product.html?id={pid}"},
            utterance=f"What is the {phrase} of the {products[pid]['name']}? Reply with answer(\"...\").",
            files={
                "index.html": page("Gadget shop", index_body, _INDEX_JS),
                "product.html": page("Product details", product_body, _PRODUCT_JS, {"products": products}),
            },
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        sub = set()
        tabs = state.get("tabs") if isinstance(state.get("tabs"), list) else []
        if any(urls_match(str(t), goal["url"]) for t in tabs):
            sub.add("product-open")
        if state.get("page") == "product" and state.get("id") == goal["id"] and state.get("tab") == goal["tab"]:
            sub.add("tab-shown")
        if answer is None:
            return Score(done=False, success=False, subgoals=frozenset(sub))
        return Score(done=True, success=answer_matches(answer, goal["answer"]), subgoals=frozenset(sub))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        tabs = [str(t) for t in (st.get("tabs") or [])]
        here = st.get("page") == "product" and st.get("id") == goal["id"]
        if not here:
            for i, t in enumerate(tabs):
                if urls_match(t, goal["url"]) and i != st.get("active_tab"):
                    return act("tab_focus", i)
            if st.get("page") == "catalogue" and goal["id"] in (st.get("opened") or []):
                return act("noop", 300)  # the new tab is on its way: wait for it rather than open a second one
            return act("click", view.bid(f'a[data-id="{goal["id"]}"]'))
        if st.get("tab") != goal["tab"]:
            return act("click", view.bid(f'[role=tab][data-tab="{goal["tab"]}"]'))
        return act("answer", goal["answer"].split("|OR|")[0].strip())

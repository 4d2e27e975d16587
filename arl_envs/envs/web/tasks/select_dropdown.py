"""``arl/web.select-dropdown-v0``: set two dropdowns of an order form to the requested options, then submit."""

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
)
from arl_envs.envs.web.tasks._kit import CITIES, COLORS, page, sample

#: The form's dropdowns: (field id, label, option pool, options shown).
FIELDS = (
    ("city", "Delivery city", CITIES, 8),
    ("color", "Colour", COLORS, 7),
    ("size", "Size", ("XS", "S", "M", "L", "XL", "XXL"), 6),
    ("speed", "Shipping", ("Economy", "Standard", "Express", "Overnight", "Pick-up"), 5),
)
#: Dropdowns the instruction names (the others may stay as they are).
N_TARGETS = 2
PLACEHOLDER = "-- choose --"

_JS = """
var submitted = null;
function values() {
  var out = {};
  document.querySelectorAll('#order select').forEach(function (s) {
    out[s.id] = s.selectedIndex > 0 ? s.options[s.selectedIndex].text : null;
  });
  return out;
}
document.getElementById('submit').addEventListener('click', function () {
  if (submitted === null) submitted = values();
  document.getElementById('status').textContent = 'Order options saved.';
});
window.arlState = () => ({values: values(), submitted: submitted});
"""


@register_task
class SelectDropdown(WebTask):
    """Pick the requested option in each of two named dropdowns, then Submit.

    Instance: four dropdowns (city, colour, size, shipping) with a placeholder first option; two of them,
    with a target option each, are named.
    State: ``{"values": {field: option text | None}, "submitted": {...} | None}`` (values at the FIRST Submit).
    Validation: done at Submit; success iff both named dropdowns hold their target option (the others are free).
    Sub-goals: ``"<field>-set"`` for each named dropdown holding its target.
    """

    name = "select-dropdown"
    description = "Choose the requested options in two dropdowns of a form, then submit."
    max_turns = 8
    n_subgoals = N_TARGETS

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        rows, options = [], {}
        for fid, label, pool, n in FIELDS:
            opts = sample(rng, pool, n)
            options[fid] = opts
            html_opts = f"<option>{PLACEHOLDER}</option>" + "".join(
                f"<option>{html_escape(o)}</option>" for o in opts
            )
            rows.append(f'<div class="row"><label for="{fid}">{label}</label><select id="{fid}">{html_opts}</select></div>')
        picked = sorted(int(i) for i in rng.choice(len(FIELDS), size=N_TARGETS, replace=False))
        targets = {FIELDS[i][0]: options[FIELDS[i][0]][int(rng.integers(FIELDS[i][3]))] for i in picked}
        phrase = " and ".join(f'"{targets[FIELDS[i][0]]}" as {FIELDS[i][1].lower()}' for i in picked)
        body = (
            '<h1>Order options</h1><div id="order">' + "".join(rows) + "</div>"
            '<button id="submit" type="button">Submit</button><p id="status" role="status"></p>'
        )
        return TaskInstance(
            goal={"targets": targets},
            utterance=f"Select {phrase}, then click Submit.",
            files={"index.html": page("Order options", body, _JS)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        values = state.get("values") if isinstance(state.get("values"), dict) else {}
        sub = frozenset(f"{f}-set" for f, v in goal["targets"].items() if values.get(f) == v)
        submitted = state.get("submitted")
        if not isinstance(submitted, dict):
            return Score(done=False, success=False, subgoals=sub)
        ok = all(submitted.get(f) == v for f, v in goal["targets"].items())
        return Score(done=True, success=ok, subgoals=sub)

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        values = view.state.get("values") or {}
        for f, v in sorted(goal["targets"].items()):
            if values.get(f) != v:
                return act("select_option", view.bid(f"#{f}"), v)
        return act("click", view.bid("#submit"))

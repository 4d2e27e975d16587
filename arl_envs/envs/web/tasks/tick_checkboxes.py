"""``arl/web.tick-checkboxes-v0``: leave exactly the requested checkboxes ticked, then submit."""

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
from arl_envs.envs.web.tasks._kit import WORDS, page, sample

#: Checkboxes on the page (range, inclusive) and requested ones (range, inclusive).
N_BOXES = (6, 9)
N_TARGETS = (2, 4)
#: Probability that a box starts ticked (so some must be unticked).
PRETICK_P = 0.3

_JS = """
var submitted = null;
function ticked() {
  return Array.from(document.querySelectorAll('#boxes input[type=checkbox]')).filter(b => b.checked).map(b => b.value);
}
document.getElementById('submit').addEventListener('click', function () {
  if (submitted === null) submitted = ticked();
  document.getElementById('status').textContent = 'Preferences saved.';
});
window.arlState = () => ({checked: ticked(), submitted: submitted});
"""


@register_task
class TickCheckboxes(WebTask):
    """Make the ticked set of checkboxes EXACTLY the requested one (ticking and unticking), then Submit.

    Instance: 6-9 labelled checkboxes (some pre-ticked, probability ``PRETICK_P``); 2-4 are requested.
    State: ``{"checked": [label...], "submitted": [label...] | None}`` (the set at the FIRST Submit).
    Validation: done at Submit; success iff the submitted set equals the requested set (one missing or one extra
    box fails). Sub-goal: ``"exact-selection"`` (the current ticked set is the requested one).
    """

    name = "tick-checkboxes"
    description = "Tick exactly the requested checkboxes (untick the others), then submit."
    max_turns = 15
    n_subgoals = 1

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        n = int(rng.integers(N_BOXES[0], N_BOXES[1] + 1))
        labels = [w.capitalize() for w in sample(rng, WORDS, n)]
        k = int(rng.integers(N_TARGETS[0], N_TARGETS[1] + 1))
        targets = sorted(sample(rng, labels, k))
        pre = [bool(rng.random() < PRETICK_P) for _ in labels]
        rows = "\n".join(
            f'<div class="row"><label><input type="checkbox" value="{html_escape(lab)}"'
            f'{" checked" if p else ""}> {html_escape(lab)}</label></div>'
            for lab, p in zip(labels, pre)
        )
        body = (
            "<h1>Newsletter topics</h1><p>Choose the topics you want to hear about.</p>"
            f'<div id="boxes">\n{rows}\n</div><button id="submit" type="button">Submit</button><p id="status"></p>'
        )
        return TaskInstance(
            goal={"targets": targets},
            utterance=f"Make sure exactly these topics are ticked: {', '.join(targets)} "
            "(untick every other one), then click Submit.",
            files={"index.html": page("Newsletter topics", body, _JS)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        want = set(goal["targets"])
        checked = state.get("checked")
        sub = frozenset({"exact-selection"}) if isinstance(checked, list) and set(checked) == want else frozenset()
        submitted = state.get("submitted")
        if not isinstance(submitted, list):
            return Score(done=False, success=False, subgoals=sub)
        return Score(done=True, success=set(submitted) == want and len(submitted) == len(want), subgoals=sub)

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        want = set(goal["targets"])
        checked = set(view.state.get("checked") or [])
        for lab in sorted(want - checked):
            return act("check", view.bid(f'#boxes input[value="{lab}"]'))
        for lab in sorted(checked - want):
            return act("uncheck", view.bid(f'#boxes input[value="{lab}"]'))
        return act("click", view.bid("#submit"))

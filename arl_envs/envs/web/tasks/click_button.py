"""``arl/web.click-button-v0``: click the button with the given label (the simplest task; a model to copy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    WORDS,
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    html_escape,
    html_page,
    register_task,
)

#: Buttons on the page, the target among them.
N_BUTTONS = 5

_SCRIPT = """
let clicked = null;
document.querySelectorAll('#buttons button').forEach(b => b.addEventListener('click', () => {
  if (clicked === null) clicked = b.dataset.label;
  document.getElementById('status').textContent = 'You clicked ' + b.dataset.label + '.';
}));
window.arlState = () => ({clicked: clicked});
"""


@register_task
class ClickButton(WebTask):
    """Click the button whose label the instruction names.

    Instance: ``N_BUTTONS`` distinct capitalised words as buttons, in random order; one is the target.
    State: ``{"clicked": label | None}`` (the FIRST button clicked; a later click does not change it).
    Validation: done at the first click; success iff it was the target. Sub-goal: ``"clicked-target"``.
    """

    name = "click-button"
    description = "Click the button with the given label among several."
    max_turns = 5
    n_subgoals = 1

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        labels = [str(w).capitalize() for w in rng.choice(WORDS, size=N_BUTTONS, replace=False)]
        target = labels[int(rng.integers(N_BUTTONS))]
        buttons = "\n".join(
            f'<button type="button" data-label="{html_escape(lab)}">{html_escape(lab)}</button>' for lab in labels
        )
        body = f'<h1>Buttons</h1>\n<div id="buttons">\n{buttons}\n</div>\n<p id="status"></p>'
        return TaskInstance(
            goal={"label": target},
            utterance=f'Click the "{target}" button.',
            files={"index.html": html_page("Buttons", body, _SCRIPT)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        clicked = state.get("clicked")
        ok = clicked == goal["label"]
        return Score(done=clicked is not None, success=ok, subgoals=frozenset({"clicked-target"} if ok else ()))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        return act("click", view.bid(f'#buttons button[data-label="{goal["label"]}"]'))

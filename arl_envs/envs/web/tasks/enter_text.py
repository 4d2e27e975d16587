"""``arl/web.enter-text-v0``: type the given text into a field and submit it (a two-step model task)."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import WORDS, ExpertView, Score, TaskInstance, WebTask, act, html_page, register_task

_SCRIPT = """
let submitted = null;
const field = document.getElementById('text');
document.getElementById('form').addEventListener('submit', ev => {
  ev.preventDefault();
  if (submitted === null) submitted = field.value;
  document.getElementById('status').textContent = 'Submitted.';
});
window.arlState = () => ({value: field.value, submitted: submitted});
"""


@register_task
class EnterText(WebTask):
    """Enter the given text in the text field and press Submit.

    Instance: two or three words (some capitalised) joined by a space, sometimes with a trailing digit.
    State: ``{"value": field value, "submitted": value at the first submit | None}``.
    Validation: done at the first submit; success iff the submitted text equals the target EXACTLY (case and
    spaces included). Sub-goals: ``"typed"`` (the field holds the target), ``"submitted"`` (submitted the target).
    """

    name = "enter-text"
    description = "Type the given text into a field and submit the form."
    max_turns = 6
    n_subgoals = 2

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        n = int(rng.integers(2, 4))
        words = [str(w) for w in rng.choice(WORDS, size=n, replace=False)]
        words = [w.capitalize() if rng.random() < 0.4 else w for w in words]
        text = " ".join(words) + (f" {int(rng.integers(2, 99))}" if rng.random() < 0.3 else "")
        body = (
            "<h1>Enter text</h1>\n"
            '<form id="form">\n<label for="text">Text</label>\n'
            '<input id="text" name="text" type="text" autocomplete="off">\n'
            '<button id="submit" type="submit">Submit</button>\n</form>\n<p id="status"></p>'
        )
        return TaskInstance(
            goal={"text": text},
            utterance=f'Enter "{text}" in the text field and press Submit.',
            files={"index.html": html_page("Enter text", body, _SCRIPT)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        target = goal["text"]
        submitted = state.get("submitted")
        subgoals = set()
        if state.get("value") == target or submitted == target:
            subgoals.add("typed")
        if submitted == target:
            subgoals.add("submitted")
        return Score(done=submitted is not None, success=submitted == target, subgoals=frozenset(subgoals))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        if view.state.get("value") != goal["text"]:
            return act("fill", view.bid("#text"), goal["text"])
        return act("click", view.bid("#submit"))

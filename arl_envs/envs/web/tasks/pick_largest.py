"""``arl/web.pick-largest-v0``: choose the listing with the largest (or smallest) value of a named attribute."""

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
from arl_envs.envs.web.tasks._kit import CITIES, WORDS, page, sample

#: Listings on the page.
N_LISTINGS = 6
#: Attributes: (key, phrase for "largest", phrase for "smallest", unit, low, high).
ATTRIBUTES = (
    ("area", "the largest floor area", "the smallest floor area", "m2", 28, 220),
    ("rent", "the highest rent", "the lowest rent", "$/month", 600, 4200),
    ("walk", "the longest walk to the station", "the shortest walk to the station", "min walk", 2, 45),
)

_JS = """
var chosen = null;
document.querySelectorAll('button.choose').forEach(function (b) {
  b.addEventListener('click', function () {
    if (chosen === null) chosen = b.dataset.id;
    document.getElementById('status').textContent = 'You chose ' + b.dataset.name + '. We will contact you.';
  });
});
window.arlState = () => ({chosen: chosen});
"""


@register_task
class PickLargest(WebTask):
    """Choose the one listing with the extreme value of an attribute (not the runner-up).

    Instance: ``N_LISTINGS`` flat listings with distinct area, rent and walking time; the target is the maximum
    (or minimum) of one attribute. Values of the runner-up are close (within a few units) to the target's.
    State: ``{"chosen": id | None}`` (the FIRST "Choose" clicked).
    Validation: done at the first choice; success iff it is the extreme listing (the second largest fails).
    Sub-goal: ``"chose-target"``.
    """

    name = "pick-largest"
    description = "Choose the listing with the largest / smallest value of an attribute among several."
    max_turns = 5
    n_subgoals = 1

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        names = [f"{w.capitalize()} Court, {c}" for w, c in zip(sample(rng, WORDS, N_LISTINGS), sample(rng, CITIES, N_LISTINGS))]
        listings: list[dict[str, Any]] = [{"id": str(i + 1), "name": n} for i, n in enumerate(names)]
        for key, _, _, _, lo, hi in ATTRIBUTES:
            vals = [int(v) for v in rng.choice(np.arange(lo, hi), size=N_LISTINGS, replace=False)]
            for r, v in zip(listings, vals):
                r[key] = v
        a = int(rng.integers(len(ATTRIBUTES)))
        key, big, small, _unit, lo, hi = ATTRIBUTES[a]
        largest = bool(rng.random() < 0.5)
        ranked = sorted(listings, key=lambda r: r[key], reverse=largest)
        # Make the runner-up close to the winner so a glance is not enough.
        step = 1 if largest else -1
        gap = int(rng.integers(1, 4))
        candidate = ranked[0][key] - step * gap
        if all(r[key] != candidate for r in listings) and lo <= candidate < hi:
            ranked[1][key] = candidate
            ranked = sorted(listings, key=lambda r: r[key], reverse=largest)
        target = ranked[0]
        cards = "".join(
            f'<div class="card"><strong>{html_escape(r["name"])}</strong><br>Floor area: {r["area"]} m2 &middot; '
            f'Rent: ${r["rent"]:,}/month &middot; Station: {r["walk"]} min walk<br>'
            f'<button type="button" class="choose" data-id="{r["id"]}" data-name="{html_escape(r["name"])}">'
            f'Choose {html_escape(r["name"])}</button></div>'
            for r in listings
        )
        body = f'<h1>Flats to rent</h1>{cards}<p id="status" role="status"></p>'
        return TaskInstance(
            goal={"id": target["id"], "key": key, "largest": largest, "runner_up": ranked[1]["id"]},
            utterance=f"Choose the flat with {big if largest else small}.",
            files={"index.html": page("Flats to rent", body, _JS)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        chosen = state.get("chosen")
        ok = chosen == goal["id"]
        return Score(done=chosen is not None, success=ok, subgoals=frozenset({"chose-target"} if ok else ()))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        return act("click", view.bid(f'button.choose[data-id="{goal["id"]}"]'))

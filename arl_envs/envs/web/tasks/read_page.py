"""``arl/web.read-page-v0``: read an article (part of it behind "Read more") and answer a question about it."""

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
    register_task,
)
from arl_envs.envs.web.tasks._kit import (
    CITIES,
    PRODUCTS,
    WORDS,
    page,
    person_names,
    pick,
    sample,
)

#: Facts that can be asked; the ones after the first paragraph are hidden until "Read more" is clicked.
QUESTIONS = (
    ("founded", "In which year was {co} founded?"),
    ("founder", "Who founded {co}? Give the full name."),
    ("hq", "In which city is {co} headquartered today?"),
    ("employees", "How many people does {co} employ?"),
    ("product", "What is the name of {co}'s best-selling product?"),
    ("ceo", "Who is the current chief executive of {co}? Give the full name."),
    ("revenue", "What was {co}'s revenue last year, in millions of dollars?"),
)
#: Facts shown before "Read more" (the others are in the hidden part).
VISIBLE = ("founded", "founder")

_JS = """
var expanded = false;
document.getElementById('more').addEventListener('click', function () {
  expanded = !expanded;
  document.getElementById('rest').hidden = !expanded;
  this.textContent = expanded ? 'Show less' : 'Read more';
  this.setAttribute('aria-expanded', expanded ? 'true' : 'false');
});
window.arlState = () => ({expanded: expanded});
"""


@register_task
class ReadPage(WebTask):
    """Answer a factual question about a generated company profile.

    Instance: a fictional company (name, founding year and founder; behind "Read more": former and current
    city, staff count, products, chief executive, revenue), with distractors of the same kind (a former
    headquarters city, a second product, a former chief executive, a previous year's revenue).
    State: ``{"expanded": bool}``.
    Validation: ``answer`` ends the episode; success iff it matches the fact (numbers normalised, ``1,250`` ==
    ``1250``; names case-insensitive; a revenue may carry ``$`` or "million"). Sub-goal: ``"expanded"``
    (the hidden part was opened; credited also for a correct answer to a visible fact).
    """

    name = "read-page"
    description = "Read an article (partly behind 'Read more') and answer a question about it with answer()."
    max_turns = 6
    n_subgoals = 1

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        co = f"{pick(rng, WORDS).capitalize()}{pick(rng, ('tech', 'works', 'labs', 'foods', 'motion'))}"
        founder, ceo, old_ceo = person_names(rng, 3)
        old_hq, hq = sample(rng, CITIES, 2)
        prod, prod2 = sample(rng, PRODUCTS, 2)
        brand = pick(rng, WORDS).capitalize()
        founded = int(rng.integers(1950, 2015))
        employees = int(rng.integers(120, 25_000))
        revenue, old_revenue = (int(v) for v in rng.choice(np.arange(20, 900), size=2, replace=False))
        facts = {
            "founded": str(founded),
            "founder": founder,
            "hq": hq,
            "employees": str(employees),
            "product": f"{brand} {prod}",
            "ceo": ceo,
            "revenue": f"{revenue} |OR| {revenue} million |OR| ${revenue} million |OR| {revenue * 1_000_000}",
        }
        body = (
            f"<h1>Company profile: {co}</h1>"
            f"<p>{co} was founded in {founded} by {founder} as a small workshop. It grew quickly in its first decade.</p>"
            '<button id="more" type="button" aria-expanded="false">Read more</button>'
            f'<div id="rest" hidden><p>The company was first based in {old_hq}; it moved its headquarters to {hq} '
            f"{int(rng.integers(3, 15))} years ago. It now employs {employees:,} people.</p>"
            f"<p>Its best-selling product is the {brand} {prod}; the {prod2} line, launched later, sells less. "
            f"{old_ceo} led the company until {ceo} became chief executive.</p>"
            f"<p>Revenue was ${old_revenue} million two years ago and ${revenue} million last year.</p></div>"
        )
        # A wrong answer of the same kind found on the page (for tests of wrong end states).
        distractors = {"founded": str(founded + 1), "founder": ceo, "hq": old_hq, "employees": str(employees + 100),
                       "product": f"{brand} {prod2}", "ceo": old_ceo, "revenue": str(old_revenue)}
        key, q = QUESTIONS[int(rng.integers(len(QUESTIONS)))]
        return TaskInstance(
            goal={"key": key, "answer": facts[key], "hidden": key not in VISIBLE, "distractor": distractors[key]},
            utterance=f'Read the company profile and answer: {q.format(co=co)} Reply with answer("...").',
            files={"index.html": page(f"{co} - profile", body, _JS)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        expanded = bool(state.get("expanded"))
        if answer is None:
            return Score(done=False, success=False, subgoals=frozenset({"expanded"} if expanded else ()))
        ok = answer_matches(answer, goal["answer"])
        return Score(done=True, success=ok, subgoals=frozenset({"expanded"} if expanded or ok else ()))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        if goal["hidden"] and not view.state.get("expanded"):
            return act("click", view.bid("#more"))
        return act("answer", goal["answer"].split("|OR|")[0].strip())

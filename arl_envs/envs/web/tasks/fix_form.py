"""``arl/web.fix-form-v0``: submit a registration form whose saved draft has errors the page reports."""

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
from arl_envs.envs.web.tasks._kit import (
    CITIES,
    FIRST_NAMES,
    LAST_NAMES,
    page,
    pick,
    sample,
)

#: Text fields of the form, in order: (id, label, format hint shown under the field).
FIELDS = (
    ("name", "Full name", "First and last name"),
    ("email", "Email", "name@example.com"),
    ("phone", "Phone", "Format: 555-123-4567"),
    ("age", "Age", "A whole number, 18 to 99"),
    ("zip", "ZIP code", "5 digits"),
    ("city", "City", ""),
)
#: Fields of the draft that hold a wrong value (each fails the page's validation).
N_BROKEN = 3

_JS = """
var RULES = {
  name: [/^\\S+( \\S+)+$/, 'Enter your first and last name.'],
  email: [/^[^@\\s]+@[^@\\s]+\\.[a-z]{2,}$/i, 'Enter a valid email address.'],
  phone: [/^\\d{3}-\\d{3}-\\d{4}$/, 'Use the format 555-123-4567.'],
  age: [/^(1[89]|[2-9]\\d)$/, 'Age must be a whole number from 18 to 99.'],
  zip: [/^\\d{5}$/, 'ZIP code must be 5 digits.'],
  city: [/^.+$/, 'City is required.']
};
var accepted = null, attempts = 0;
function values() {
  var out = {};
  Object.keys(RULES).forEach(function (k) { out[k] = document.getElementById(k).value; });
  out.terms = document.getElementById('terms').checked;
  return out;
}
document.getElementById('reg').addEventListener('submit', function (ev) {
  ev.preventDefault();
  attempts += 1;
  var v = values(), bad = 0;
  Object.keys(RULES).forEach(function (k) {
    var ok = RULES[k][0].test(v[k].trim());
    var el = document.getElementById(k + '-err');
    el.textContent = ok ? '' : RULES[k][1];
    document.getElementById(k).setAttribute('aria-invalid', ok ? 'false' : 'true');
    if (!ok) bad += 1;
  });
  document.getElementById('terms-err').textContent = v.terms ? '' : 'You must accept the terms.';
  if (!v.terms) bad += 1;
  if (bad === 0) {
    if (accepted === null) accepted = v;
    document.getElementById('reg').hidden = true;
    document.getElementById('status').textContent = 'Registration complete. Welcome, ' + v.name.trim() + '!';
  } else {
    document.getElementById('status').textContent = 'Please fix ' + bad + ' error(s) and submit again.';
  }
});
window.arlState = () => ({values: values(), accepted: accepted, attempts: attempts});
"""


def _broken(field: str, good: str, rng: np.random.Generator) -> str:
    """A wrong draft value for ``field`` that the page's validation rejects."""
    if field == "name":
        return good.split(" ")[0]
    if field == "email":
        return good.replace("@", " at ") if rng.random() < 0.5 else good.split(".")[0]
    if field == "phone":
        return good.replace("-", "")[:-1]
    if field == "age":
        return str(int(rng.integers(3, 17)))
    if field == "zip":
        return good[:-1] + "O"
    return ""


@register_task
class FixForm(WebTask):
    """Register with the given details; the pre-filled draft has ``N_BROKEN`` invalid fields.

    Instance: a person (name, email, phone, age, ZIP, city); the form is pre-filled with a draft in which
    ``N_BROKEN`` fields are wrong AND invalid (the page's validation rejects them and shows an error beside each
    after Submit), and the terms box is unticked.
    State: ``{"values": {...}, "accepted": {...} | None, "attempts": int}``; ``accepted`` is what the page
    accepted at the first valid submission (the form then disappears).
    Validation: done when the page accepts a submission; success iff every accepted field equals the given
    details (whitespace-trimmed; email case-insensitive). Sub-goals: ``"fixed:<field>"`` for each broken field
    now holding the right value, and ``"accepted"``.
    """

    name = "fix-form"
    description = "Submit a registration form; fix the fields its validation rejects (a pre-filled draft)."
    max_turns = 16
    n_subgoals = N_BROKEN + 1

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
        person = {
            "name": f"{first} {last}",
            "email": f"{first.lower()}.{last.lower()}@{pick(rng, ('example.com', 'mail.test', 'post.org'))}",
            "phone": f"{int(rng.integers(200, 999))}-{int(rng.integers(200, 999))}-{int(rng.integers(1000, 9999))}",
            "age": str(int(rng.integers(18, 90))),
            "zip": f"{int(rng.integers(10000, 99999))}",
            "city": pick(rng, CITIES),
        }
        broken = sorted(sample(rng, [f[0] for f in FIELDS[:5]], N_BROKEN))
        draft = {k: (_broken(k, v, rng) if k in broken else v) for k, v in person.items()}
        rows = []
        for fid, label, hint in FIELDS:
            rows.append(
                f'<div class="row"><label for="{fid}">{label}</label>'
                f'<input id="{fid}" value="{html_escape(draft[fid])}" aria-describedby="{fid}-err">'
                f' <span class="muted">{html_escape(hint)}</span>'
                f'<div class="error" id="{fid}-err"></div></div>'
            )
        rows.append(
            '<div class="row"><label><input type="checkbox" id="terms"> I accept the terms</label>'
            '<div class="error" id="terms-err"></div></div>'
        )
        body = (
            "<h1>Create your account</h1><p>We restored your saved draft.</p>"
            f'<form id="reg" novalidate>{"".join(rows)}<button type="submit">Register</button></form>'
            '<p id="status" role="status"></p>'
        )
        details = "; ".join(f"{label.lower()}: {person[fid]}" for fid, label, _ in FIELDS)
        return TaskInstance(
            goal={"person": person, "broken": broken},
            utterance=f"Register with these details ({details}) and accept the terms. The form is pre-filled "
            "from an old draft: fix every error it reports and submit until it is accepted.",
            files={"index.html": page("Create your account", body, _JS)},
        )

    @staticmethod
    def _same(field: str, got: Any, want: str) -> bool:
        if not isinstance(got, str):
            return False
        return got.strip().casefold() == want.casefold() if field == "email" else got.strip() == want

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        person = goal["person"]
        values = state.get("values") if isinstance(state.get("values"), dict) else {}
        accepted = state.get("accepted")
        current = accepted if isinstance(accepted, dict) else values
        sub = {f"fixed:{f}" for f in goal["broken"] if self._same(f, current.get(f), person[f])}
        if not isinstance(accepted, dict):
            return Score(done=False, success=False, subgoals=frozenset(sub))
        sub.add("accepted")
        ok = all(self._same(f, accepted.get(f), v) for f, v in person.items())
        return Score(done=True, success=ok, subgoals=frozenset(sub))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        values = view.state.get("values") or {}
        for fid, _, _ in FIELDS:
            if not self._same(fid, values.get(fid), goal["person"][fid]):
                return act("fill", view.bid(f"#{fid}"), goal["person"][fid])
        if not values.get("terms"):
            return act("check", view.bid("#terms"))
        return act("click", view.bid('#reg button[type="submit"]'))

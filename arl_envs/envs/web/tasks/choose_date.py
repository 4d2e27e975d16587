"""``arl/web.choose-date-v0``: pick a date in a calendar widget (month navigation, day grid), then submit."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    register_task,
)
from arl_envs.envs.web.tasks._kit import MONTHS, page

#: Target months lie at most this many months before or after the month the calendar opens on.
MAX_MONTH_OFFSET = 5
YEARS = (2024, 2025, 2026)

_JS = """
var MONTHS = ARL_DATA.months;
var shown = {y: ARL_DATA.start[0], m: ARL_DATA.start[1]};   // m: 1..12
var selected = null, submitted = null;
function pad(n) { return (n < 10 ? '0' : '') + n; }
function iso(y, m, d) { return y + '-' + pad(m) + '-' + pad(d); }
function render() {
  document.getElementById('month').textContent = MONTHS[shown.m - 1] + ' ' + shown.y;
  var grid = document.getElementById('days');
  grid.innerHTML = '';
  var first = new Date(Date.UTC(shown.y, shown.m - 1, 1)).getUTCDay();
  var ndays = new Date(Date.UTC(shown.y, shown.m, 0)).getUTCDate();
  ['Su', 'Mo', 'Tu', 'We', 'Th', 'Fr', 'Sa'].forEach(function (d) {
    var h = document.createElement('span'); h.className = 'dow'; h.textContent = d; grid.appendChild(h);
  });
  for (var i = 0; i < first; i++) { grid.appendChild(document.createElement('span')); }
  for (var d = 1; d <= ndays; d++) {
    var b = document.createElement('button');
    b.type = 'button'; b.textContent = d; b.dataset.date = iso(shown.y, shown.m, d);
    if (selected === b.dataset.date) { b.className = 'sel'; b.setAttribute('aria-pressed', 'true'); }
    b.addEventListener('click', function (ev) {
      selected = ev.target.dataset.date;
      document.getElementById('date').value = selected;
      render();
    });
    grid.appendChild(b);
  }
}
document.getElementById('prev').addEventListener('click', function () {
  shown.m -= 1; if (shown.m < 1) { shown.m = 12; shown.y -= 1; } render();
});
document.getElementById('next').addEventListener('click', function () {
  shown.m += 1; if (shown.m > 12) { shown.m = 1; shown.y += 1; } render();
});
document.getElementById('submit').addEventListener('click', function () {
  if (submitted === null && selected !== null) {
    submitted = selected;
    document.getElementById('status').textContent = 'Appointment booked for ' + selected + '.';
  } else if (selected === null) {
    document.getElementById('status').textContent = 'Please choose a date first.';
  }
});
render();
window.arlState = () => ({shown: iso(shown.y, shown.m, 1).slice(0, 7), selected: selected, submitted: submitted});
"""

_CSS = (
    "#days{display:grid;grid-template-columns:repeat(7,36px);gap:2px;margin:6px 0}"
    "#days button{margin:0;padding:4px 0}#days button.sel{background:#1a73e8;color:#fff}"
    "#cal{border:1px solid #ccc;padding:8px;display:inline-block}.dow{text-align:center;color:#666;font-size:12px}"
)


@register_task
class ChooseDate(WebTask):
    """Choose the requested date in a calendar widget and submit.

    Instance: the calendar opens on a random month of 2024-2026; the target date is at most
    ``MAX_MONTH_OFFSET`` months away (navigate with "Previous month" / "Next month", then click the day).
    The date field is read-only: only the calendar sets it.
    State: ``{"shown": "YYYY-MM", "selected": "YYYY-MM-DD" | None, "submitted": ... | None}``.
    Validation: done at the first Submit with a date chosen; success iff it is the target date.
    Sub-goals: ``"month-shown"`` (the target month is displayed), ``"date-selected"``.
    """

    name = "choose-date"
    description = "Choose a date in a calendar widget (navigate months, click the day), then submit."
    max_turns = 16
    n_subgoals = 2

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        year = int(YEARS[int(rng.integers(len(YEARS)))])
        month = int(rng.integers(1, 13))
        offset = int(rng.integers(-MAX_MONTH_OFFSET, MAX_MONTH_OFFSET + 1))
        idx = year * 12 + (month - 1) + offset
        ty, tm = idx // 12, idx % 12 + 1
        ndays = ((dt.date(ty + (tm == 12), tm % 12 + 1, 1)) - dt.date(ty, tm, 1)).days
        target = dt.date(ty, tm, int(rng.integers(1, ndays + 1)))
        body = (
            "<h1>Book an appointment</h1>"
            '<div class="row"><label for="date">Date</label><input id="date" readonly placeholder="YYYY-MM-DD"></div>'
            '<div id="cal"><button id="prev" type="button">Previous month</button>'
            '<strong id="month" aria-live="polite"></strong>'
            '<button id="next" type="button">Next month</button><div id="days"></div></div>'
            '<div><button id="submit" type="button">Submit</button></div><p id="status" role="status"></p>'
        )
        spoken = f"{MONTHS[target.month - 1]} {target.day}, {target.year}"
        return TaskInstance(
            goal={"date": target.isoformat()},
            utterance=f"Choose {spoken} in the calendar, then click Submit.",
            files={"index.html": page("Book an appointment", body, _JS, {"start": [year, month], "months": MONTHS}, _CSS)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        sub = set()
        if state.get("shown") == goal["date"][:7]:
            sub.add("month-shown")
        if state.get("selected") == goal["date"]:
            sub.add("date-selected")
        submitted = state.get("submitted")
        return Score(done=submitted is not None, success=submitted == goal["date"], subgoals=frozenset(sub))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        if st.get("selected") == goal["date"]:
            return act("click", view.bid("#submit"))
        shown = str(st.get("shown", ""))
        want = goal["date"][:7]
        if shown < want:
            return act("click", view.bid("#next"))
        if shown > want:
            return act("click", view.bid("#prev"))
        return act("click", view.bid(f'#days button[data-date="{goal["date"]}"]'))

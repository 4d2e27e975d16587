"""``arl/web.sort-table-v0``: sort a table by a column and report the top row's name with ``answer``."""

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
from arl_envs.envs.web.tasks._kit import CITIES, page

#: Rows in the table and rows shown (the table shows only the first ``N_SHOWN`` rows of the current order).
N_ROWS = 14
N_SHOWN = 5
#: Sortable numeric columns: (key, header, low, high) of distinct integer values.
COLUMNS = (
    ("population", "Population", 20_000, 3_000_000),
    ("area", "Area (km2)", 40, 2_500),
    ("founded", "Founded", 800, 1950),
    ("rainfall", "Rainfall (mm)", 200, 1_800),
)

_JS = """
var rows = ARL_DATA.rows.slice(), sort = {col: null, dir: null};
function render() {
  var shown = rows.slice(0, ARL_DATA.n_shown);
  document.getElementById('body').innerHTML = shown.map(function (r) {
    return '<tr><td class="name">' + arlEsc(r.name) + '</td>' + ARL_DATA.columns.map(function (c) {
      return '<td>' + r[c[0]].toLocaleString('en-US') + '</td>';
    }).join('') + '</tr>';
  }).join('');
  document.querySelectorAll('th[data-col]').forEach(function (th) {
    th.setAttribute('aria-sort', th.dataset.col === sort.col ? sort.dir : 'none');
  });
  document.getElementById('count').textContent = 'Showing ' + shown.length + ' of ' + rows.length + ' towns' +
    (sort.col ? ', sorted by ' + sort.col + ' (' + sort.dir + ')' : ', unsorted') + '.';
}
document.querySelectorAll('th[data-col] button').forEach(function (b) {
  b.addEventListener('click', function () {
    var col = b.parentNode.dataset.col;
    sort.dir = (sort.col === col && sort.dir === 'ascending') ? 'descending' : 'ascending';
    sort.col = col;
    rows.sort(function (x, y) { return sort.dir === 'ascending' ? x[col] - y[col] : y[col] - x[col]; });
    render();
  });
});
render();
window.arlState = () => ({sort_col: sort.col, sort_dir: sort.dir, top: rows[0].name,
  shown: rows.slice(0, ARL_DATA.n_shown).map(function (r) { return r.name; })});
"""


@register_task
class SortTable(WebTask):
    """Sort a table by the named column (highest or lowest first) and report the first row's town.

    Instance: ``N_ROWS`` towns with four numeric columns of distinct values, only ``N_SHOWN`` rows visible (so
    the answer needs the sort). Clicking a header's button sorts ascending, clicking again descending.
    State: ``{"sort_col", "sort_dir": "ascending" | "descending" | None, "top": name, "shown": [names]}``.
    Validation: ``answer`` ends the episode; success iff it is the town with the highest (lowest) value
    (e.g. answering the second largest fails). Sub-goal: ``"sorted"`` (the table is sorted as asked).
    """

    name = "sort-table"
    description = "Sort a table by a column and report the top row's name with answer()."
    max_turns = 8
    n_subgoals = 1

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        names = [str(c) for c in rng.choice(CITIES, size=N_ROWS, replace=False)]
        names = [f"New {n}" if i % 3 == 0 else f"{n} Falls" if i % 3 == 1 else f"Port {n}" for i, n in enumerate(names)]
        rows: list[dict[str, Any]] = [{"name": n} for n in names]
        for key, _, lo, hi in COLUMNS:
            vals = rng.choice(np.arange(lo, hi), size=N_ROWS, replace=False)
            for r, v in zip(rows, vals):
                r[key] = int(v)
        key, header, _, _ = COLUMNS[int(rng.integers(len(COLUMNS)))]
        desc = bool(rng.random() < 0.5)
        ranked = sorted(rows, key=lambda r: r[key], reverse=desc)
        heads = "".join(f'<th data-col="{k}"><button type="button">{h}</button></th>' for k, h, _, _ in COLUMNS)
        body = (
            '<h1>Towns</h1><p id="count" class="muted"></p>'
            f'<table><thead><tr><th>Town</th>{heads}</tr></thead><tbody id="body"></tbody></table>'
        )
        data = {"rows": rows, "n_shown": N_SHOWN, "columns": [[k, h] for k, h, _, _ in COLUMNS]}
        which = "highest" if desc else "lowest"
        return TaskInstance(
            goal={"col": key, "dir": "descending" if desc else "ascending", "answer": ranked[0]["name"],
                  "runner_up": ranked[1]["name"]},
            utterance=f'Sort the table by {header}, {which} first, and report the town in the top row with answer("...").',
            files={"index.html": page("Towns", body, _JS, data)},
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        sub = frozenset({"sorted"}) if (state.get("sort_col"), state.get("sort_dir")) == (goal["col"], goal["dir"]) else frozenset()
        if answer is None:
            return Score(done=False, success=False, subgoals=sub)
        return Score(done=True, success=answer_matches(answer, goal["answer"]), subgoals=sub)

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        if (st.get("sort_col"), st.get("sort_dir")) == (goal["col"], goal["dir"]):
            return act("answer", str(st.get("top")))
        return act("click", view.bid(f'th[data-col="{goal["col"]}"] button'))

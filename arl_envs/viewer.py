"""Episode viewer: one self-contained HTML page for a JSONL file of recorded episodes (``arl-envs view``).

The page has no network dependency: its CSS, JavaScript and data (the episodes as JSON, screenshots as base64 PNG
data URLs) are inline. It lists the episodes (env id, seed, task, success, return, turns) with filters by env id and
success, and shows one episode turn by turn when its row is clicked: the observation (user or tool turn), the
action (assistant turn) with its parsed tool calls, the reward parts of each step, ``action_error`` / ``env_error``
marks, and the screenshot after each step for web episodes recorded with ``obs_mode="axtree+screenshot"``.

Input lines are the ones :class:`arl_envs.wrappers.RecordEpisodes` writes; lines recorded before it kept ``steps``
(per-step errors and tool calls) still load, without those marks. Numbers JSON cannot hold (``NaN``, ``Infinity``,
which Python's ``json`` reads and writes) are shown as the text ``NaN`` / ``Infinity`` in their own cells; an
episode the page cannot draw gets a row that says so, and the other episodes are shown.

The page is never written over the input file, nor over an existing file that is not a viewer page.
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path
from typing import Any

#: Keys an episode line must have to be shown.
REQUIRED_KEYS = ("env_id", "observations", "actions", "rewards")
#: In the first bytes of every page :func:`render_html` writes; :func:`write_viewer` only replaces files that have it.
PAGE_MARK = '<meta name="generator" content="arl-envs view">'

_CSS = """
body{font-family:system-ui,sans-serif;margin:1.2em;color:#222;background:#fafafa}
h1{font-size:1.3em;margin:0 0 .6em}
#filters{margin-bottom:.8em} #filters label{margin-right:1.2em}
table{border-collapse:collapse} th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left}
#episodes tbody tr.ep{cursor:pointer} #episodes tbody tr.ep:hover{background:#eef}
tr.sel{background:#dde6ff!important}
.ok{color:#17803d;font-weight:600} .fail{color:#b3261e;font-weight:600}
#detail{margin-top:1.2em;max-width:70em}
.turn{border-radius:8px;padding:.5em .8em;margin:.5em 0;white-space:pre-wrap;font-family:ui-monospace,monospace;
 font-size:.85em;overflow-x:auto}
.turn .role{font-family:system-ui,sans-serif;font-weight:600;font-size:.8em;display:block;margin-bottom:.3em;color:#555}
.user{background:#fff;border:1px solid #ccc} .assistant{background:#e8f0fe;border:1px solid #9ab;margin-left:3em}
.tool{background:#fff7e0;border:1px solid #e0b040}
.call{display:inline-block;background:#ffe08a;border:1px solid #c90;border-radius:4px;padding:0 .4em;margin:.2em .3em 0 0}
.err{display:block;border-radius:4px;padding:.2em .5em;margin-top:.3em;font-family:system-ui,sans-serif}
.action_error{background:#fde2e1;border:1px solid #b3261e} .env_error{background:#ead7ff;border:1px solid #6a1b9a}
.parts{font-family:system-ui,sans-serif;font-size:.8em;margin:.2em 0 .2em 3em;color:#333}
.parts span{display:inline-block;margin-right:.8em} .pos{color:#17803d} .neg{color:#b3261e}
img.shot{max-width:40em;border:1px solid #999;margin:.3em 0 .3em 3em;display:block}
"""

_JS = r"""
const EPISODES = JSON.parse(document.getElementById('episodes-data').textContent);
const $ = (id) => document.getElementById(id);
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text; return e; }
function fmt(x) { x = Number(x); return (x >= 0 ? '+' : '') + x.toFixed(3); }
function init() {
  const envs = [...new Set(EPISODES.map(e => e.env_id))].sort();
  for (const id of envs) { const o = el('option', '', id); o.value = id; $('env-filter').appendChild(o); }
  $('env-filter').onchange = render; $('success-filter').onchange = render; render();
}
function visible(ep) {
  const env = $('env-filter').value, succ = $('success-filter').value;
  return (env === '' || ep.env_id === env) && (succ === '' || String(!!ep.success) === succ);
}
function render() {
  const body = $('episodes').querySelector('tbody'); body.innerHTML = '';
  let n = 0;
  EPISODES.forEach((ep, i) => {
    if (!visible(ep)) return; n++;
    const tr = el('tr', 'ep'); tr.dataset.index = i;
    try {
      const cells = [i, ep.env_id, ep.seed ?? '', ep.task_id ?? '', ep.success ? 'yes' : 'no',
        fmt(ep['return'] ?? ep.rewards.reduce((a, b) => a + Number(b), 0)), ep.actions.length,
        ep.terminated ? 'terminated' : ep.truncated ? 'truncated' : 'unfinished'];
      cells.forEach((c, j) => { const td = el('td', j === 4 ? (ep.success ? 'ok' : 'fail') : '', String(c));
        tr.appendChild(td); });
      tr.onclick = () => show(i, tr);
    } catch (e) {  // one episode the page cannot draw: its row says so, the others are shown
      tr.innerHTML = ''; tr.appendChild(el('td', '', String(i)));
      const td = el('td', 'fail', 'cannot show this episode: ' + e); td.colSpan = 7; tr.appendChild(td);
    }
    body.appendChild(tr);
  });
  $('count').textContent = n + ' of ' + EPISODES.length + ' episodes';
}
function shot(ep, t) {
  const s = ep.screenshots && ep.screenshots[t];
  if (!s) return null;
  const img = el('img', 'shot'); img.src = 'data:image/png;base64,' + s; img.alt = 'screenshot after step ' + t;
  return img;
}
function show(i, tr) {
  document.querySelectorAll('tr.sel').forEach(r => r.classList.remove('sel')); tr.classList.add('sel');
  const ep = EPISODES[i], d = $('detail'); d.innerHTML = '';
  d.appendChild(el('h2', '', ep.env_id + ' - seed ' + (ep.seed ?? '?') + ' - task ' + (ep.task_id ?? '?')));
  const first = el('div', 'turn user'); first.dataset.step = 0;
  first.appendChild(el('span', 'role', 'observation 0 (task)')); first.appendChild(document.createTextNode(ep.observations[0]));
  d.appendChild(first);
  const s0 = shot(ep, 0); if (s0) d.appendChild(s0);
  ep.actions.forEach((a, t) => {
    const info = (ep.steps || [])[t] || {};
    const act = el('div', 'turn assistant'); act.dataset.step = t + 1;
    act.appendChild(el('span', 'role', 'action ' + (t + 1) + ' (assistant)'));
    act.appendChild(document.createTextNode(a));
    const calls = info.tool_calls || [];
    if (calls.length) { const c = el('div'); calls.forEach(tc => c.appendChild(el('span', 'call',
      'tool call: ' + tc.name + '(' + JSON.stringify(tc.arguments ?? tc.args ?? {}) + ')'))); act.appendChild(c); }
    if (info.action_error) act.appendChild(el('span', 'err action_error', 'action_error: ' + info.action_error));
    if (info.env_error) act.appendChild(el('span', 'err env_error', 'env_error: ' + info.env_error));
    d.appendChild(act);
    const parts = el('div', 'parts'); parts.dataset.step = t + 1;
    parts.appendChild(el('span', '', 'reward ' + fmt(ep.rewards[t])));
    for (const [k, v] of Object.entries((ep.reward_components || [])[t] || {}))
      parts.appendChild(el('span', v > 0 ? 'pos' : v < 0 ? 'neg' : '', k + ' ' + fmt(v)));
    d.appendChild(parts);
    const isTool = calls.length && !info.action_error;
    const obs = el('div', 'turn ' + (isTool ? 'tool' : 'user'));
    obs.appendChild(el('span', 'role', 'observation ' + (t + 1) + (isTool ? ' (tool output: ' + calls[0].name + ')' : ' (user)')));
    obs.appendChild(document.createTextNode(ep.observations[t + 1] ?? ''));
    d.appendChild(obs);
    const s = shot(ep, t + 1); if (s) d.appendChild(s);
  });
  d.appendChild(el('p', ep.success ? 'ok' : 'fail', 'return ' + fmt(ep['return'] ?? 0) + ', success ' +
    (ep.success ? 'yes' : 'no') + ', ' + ep.actions.length + ' turns'));
}
init();
"""


def load_episodes(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file of recorded episodes.

    Args:
        path: File written by :class:`~arl_envs.wrappers.RecordEpisodes` (one JSON object per line).

    Returns:
        The episodes in file order (blank lines skipped).

    Raises:
        FileNotFoundError: No such file.
        ValueError: A line that is not JSON or lacks one of :data:`REQUIRED_KEYS` (the message gives its number).
    """
    episodes: list[dict[str, Any]] = []
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                ep = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON ({exc})") from None
            missing = [k for k in REQUIRED_KEYS if not isinstance(ep, dict) or k not in ep]
            if missing:
                raise ValueError(f"{path}:{lineno}: not a recorded episode (missing {', '.join(missing)})")
            episodes.append(ep)
    return episodes


def _json_safe(value: Any) -> Any:
    """``value`` with every non-finite float replaced by the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``
    (``JSON.parse`` rejects the bare tokens Python's ``json.dumps`` writes for them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def render_html(episodes: list[dict[str, Any]], title: str = "arl-envs episodes") -> str:
    """The viewer page for ``episodes`` as one HTML string (inline CSS, JS and data; no network).

    Args:
        episodes: Episode dicts as :func:`load_episodes` returns them.
        title: Page title.
    """
    # "</" cannot appear inside <script>: escape it (and the other HTML-significant characters) in the JSON text
    data = json.dumps(_json_safe(episodes), allow_nan=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    t = html.escape(title)
    return (
        f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{PAGE_MARK}"
        f"<title>{t}</title><style>{_CSS}</style></head><body>\n"
        f"<h1>{t}</h1>\n<div id=\"filters\"><label>env <select id=\"env-filter\"><option value=\"\">all</option>"
        "</select></label><label>success <select id=\"success-filter\"><option value=\"\">all</option>"
        "<option value=\"true\">yes</option><option value=\"false\">no</option></select></label>"
        "<span id=\"count\"></span></div>\n"
        "<table id=\"episodes\"><thead><tr><th>#</th><th>env id</th><th>seed</th><th>task</th><th>success</th>"
        "<th>return</th><th>turns</th><th>end</th></tr></thead><tbody></tbody></table>\n<div id=\"detail\"></div>\n"
        f"<script type=\"application/json\" id=\"episodes-data\">{data}</script>\n<script>{_JS}</script>\n"
        "</body></html>\n"
    )


def default_output(path: str | Path) -> Path:
    """Where :func:`write_viewer` writes by default: ``path`` with the suffix ``.html``, or ``NAME.view.html`` when
    ``path`` already ends in ``.html`` (never ``path`` itself)."""
    src = Path(path)
    return src.with_suffix(".view.html") if src.suffix.lower() == ".html" else src.with_suffix(".html")


def _is_viewer_page(path: Path) -> bool:
    with path.open("rb") as fh:
        return PAGE_MARK.encode() in fh.read(4096)


def write_viewer(path: str | Path, output: str | Path | None = None) -> Path:
    """Write the viewer page of a JSONL file (to a temporary file first, then renamed over ``output``).

    Args:
        path: The JSONL file of episodes.
        output: The HTML file (default: :func:`default_output`). It may replace a page this function wrote
            earlier, never ``path`` nor any other existing file.

    Returns:
        The path written.

    Raises:
        FileNotFoundError, ValueError: As :func:`load_episodes`.
        FileExistsError: ``output`` is ``path`` (or a link to it), or an existing file that is not a viewer page;
            nothing is written.
    """
    src = Path(path)
    out = Path(output) if output is not None else default_output(src)
    episodes = load_episodes(src)
    if out.exists() and (out.resolve() == src.resolve() or os.path.samefile(out, src)):
        raise FileExistsError(f"the page would overwrite its input {src}: give another --output")
    if out.exists() and (not out.is_file() or not _is_viewer_page(out)):
        raise FileExistsError(f"{out} exists and is not a viewer page: give another --output, or remove it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(render_html(episodes, title=f"arl-envs episodes: {src.name}"), encoding="utf-8")
    tmp.replace(out)
    return out


#: A hand-written episode line: an infrastructure failure is rare by design, but the page must mark one.
SAMPLE_ENV_ERROR_EPISODE: dict[str, Any] = {
    "env_id": "arl/code.functions-v0", "task_id": "t-env-error", "seed": 7,
    "observations": ["Write f.", "sandbox unavailable"], "actions": ["```python\ndef f(): pass\n```"],
    "rewards": [0.0], "reward_components": [{"task": 0.0}],
    "steps": [{"action_error": None, "env_error": "SandboxUnavailable: bwrap died", "tool_calls": []}],
    "terminated": False, "truncated": True, "success": False, "return": 0.0,
}


def record_sample_episodes(path: str | Path, web: bool = True) -> list[dict[str, Any]]:
    """Record a sample of episodes to ``path`` (JSONL, appended) and return them as :func:`load_episodes` reads them.

    Two expert episodes of ``arl/math.tool-v1`` (tool calls), two random ones of ``arl/search.qa-v1`` (action
    errors), with ``web`` one expert episode of ``arl/web.click-button-v0`` with screenshots, then
    :data:`SAMPLE_ENV_ERROR_EPISODE`. The viewer's tests and ``benchmarks/viewer_screenshots.py`` use it.
    """
    import gymnasium as gym

    import arl_envs  # noqa: F401 - the ids
    from arl_envs.agents import make_agent, run_episode
    from arl_envs.wrappers import RecordEpisodes

    path = Path(path)
    runs = [("arl/math.tool-v1", "expert", {}, 2), ("arl/search.qa-v1", "random", {}, 2)]
    if web:
        runs.append(("arl/web.click-button-v0", "expert", {"obs_mode": "axtree+screenshot"}, 1))
    for env_id, agent, kwargs, n in runs:
        env = RecordEpisodes(gym.make(env_id, **kwargs), path)
        for seed in range(n):
            run_episode(env, make_agent(agent, env, seed=seed), seed=seed)
        env.close()
    with path.open("a") as fh:
        fh.write(json.dumps(SAMPLE_ENV_ERROR_EPISODE) + "\n")
    return load_episodes(path)

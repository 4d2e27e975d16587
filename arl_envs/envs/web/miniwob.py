"""The MiniWoB++ suite on our browser backend: ``arl/web.miniwob-v0`` with kwarg ``task``.

Pages: the task pages shipped by the PyPI package ``miniwob`` (MIT, Farama Foundation; ``miniwob/html/``). Only its
HTML/JS/CSS files are used: none of its Selenium or Gymnasium code runs. Each episode serves them from memory under
``http://arl.test/miniwob-<task>/`` through the env's request router (never the internet, never ``file://``):

* ``index.html``: the task's own ``miniwob/html/miniwob/<task>.html`` with three insertions (below) and its
  ``../core/``, ``../common/`` references made relative to the task root;
* ``core/...``, ``common/...``: the package's shared scripts, styles and images, byte for byte.

Insertions into the task page (the page's own code is not changed):

1. ``<meta charset="utf-8">`` (the files are UTF-8; ``unicode-test`` needs it), a style rule hiding MiniWoB's
   human display (``#reward-display``: last reward, timer, episode count; ``#click-canvas``), which is not
   part of the task and would change every second, and an ``error`` listener recording uncaught page errors.
2. Right after ``core.js``: ``Math.seedrandom("<seed>:load")``, so everything the page draws while loading is
   seeded (seedrandom replaces ``Math.random``, which ``core.randi``/``core.sample`` use).
3. At the end of ``<body>``: on the ``load`` event (after the page's own ``window.onload``, which shows the
   "START" cover), ``Math.seedrandom("<seed>")`` then ``core.startEpisodeReal()`` -- exactly what the
   ``miniwob`` package's own env does at reset (``selenium_instance.py``: ``Math.seedrandom(seed)`` then
   ``core.startEpisodeReal()``) -- then the episode timer (``core.EP_TIMER``, ``core.EPISODE_MAX_TIME``,
   7-30 s, after which the page gives reward -1) and the countdown display are cancelled: an LLM turn takes
   seconds, so the turn budget (``max_turns``) replaces the page's clock. ``core.EP_TIMER`` keeps its id, so
   ``core.endEpisode`` still records the reward. And ``window.arlState()`` (the env's state hook) is defined.

The seed string is ``"arl-<n>"`` with ``n`` drawn from the env's ``np_random``: same seed, same instance (for the
tasks listed as deterministic in :data:`MINIWOB_TASKS`; a few animate with wall-clock timers and are not).

Reward: the page's own MiniWoB++ reward, read after every step by ``arlState()`` from core.js's globals
``WOB_DONE_GLOBAL`` (episode over), ``WOB_RAW_REWARD_GLOBAL`` (the task's reward in [-1, 1], e.g. in
``click-checkboxes`` the fraction of correctly set boxes mapped to [-1, 1]) and ``WOB_REWARD_GLOBAL`` (the raw
reward scaled down by elapsed time; reported, not used). The episode ends when the page says done; ``success`` and
task reward 1 only when the raw reward is full (``>= SUCCESS_RAW_REWARD``); any raw reward below it, partial
credit included, is task reward 0 and ``success=False``. (BrowserGym counts any raw reward ``> 0`` as solved.)

Experts: scripted solvers for the tasks in :data:`arl_envs.envs.web.miniwob_experts.EXPERTS`; they read the page's
hidden state through a per-task probe (a JavaScript expression evaluated inside ``arlState()``, e.g. the
checkbox labels and ids) plus the utterance, and act through our action strings via
:class:`arl_envs.envs.web.task.ExpertView`. Tasks without one have ``has_expert = False`` on the env, which
:func:`arl_envs.testing.check_conformance` honours by skipping only its expert check.

Which tasks are listed: :data:`MINIWOB_TASKS`, produced by ``python -m arl_envs.envs.web.miniwob --survey``
(loads every task page of the package once in headless Chromium through this env and records whether it
starts, shows an utterance, raises no page error and is deterministic under a seed); the test
``arl_envs_tests/envs/web/test_miniwob.py`` re-checks it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import pathlib
import re
import threading
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from arl_envs.core.errors import ArlError, DependencyNotInstalled
from arl_envs.envs.web.task import ExpertView, Score, TaskInstance, WebTask

#: Prefix of every MiniWoB++ task's page root: ``http://arl.test/miniwob-<task>/``.
MINIWOB_ROOT = "miniwob"
#: Full raw MiniWoB++ reward; ``success`` needs ``WOB_RAW_REWARD_GLOBAL >= SUCCESS_RAW_REWARD``. The tolerance
#: only absorbs floating point (e.g. ``3/3``); a partial reward such as ``0.6`` never reaches it.
SUCCESS_RAW_REWARD = 1.0 - 1e-9
#: Default turn budget of an episode (the page's own timer is cancelled, see the module docstring).
DEFAULT_MAX_TURNS = 30
#: Milliseconds ``arlState()`` waits for the episode to start when asked during page load (then answers anyway,
#: with ``started`` False, which the validator treats as not done). 15 s: under a load average of 25 on 2 cores a
#: jQuery UI page took longer than the former 5 s once (its expert then saw no utterance); below STEP_TIMEOUT_S.
START_WAIT_MS = 15000
#: Upper bound of the per-episode page seed (``"arl-<n>"``, ``0 <= n < SEED_RANGE``).
SEED_RANGE = 2**31 - 1

_INSTALL = "pip install 'arl-envs[web]'  (the miniwob package supplies the MiniWoB++ task pages)"


@dataclass(frozen=True)
class MiniWoBTaskInfo:
    """One task of the suite, as the survey found it.

    Attributes:
        name: The task's file name without ``.html`` (``"click-checkboxes"``).
        deterministic: Same seed gives the same page (False for tasks animated by wall-clock timers).
        note: Why a task has no expert or is not deterministic (empty when neither applies).
    """

    name: str
    deterministic: bool = True
    note: str = ""


def _tasks(names: str, **kw: Any) -> list[MiniWoBTaskInfo]:
    return [MiniWoBTaskInfo(n, **kw) for n in names.split()]


#: Tasks driven by wall-clock timers (``setInterval``/``setTimeout`` animations, or a reward that measures
#: ``Date`` intervals): they load and run, but the same seed and actions do not reproduce the same observations
#: (or reward) step by step.
_TIMING = "wall-clock timers: same seed and actions need not repeat observations"

#: Every task of the ``miniwob`` package's ``html/miniwob/`` that loads and runs in headless Chromium (survey:
#: ``python -m arl_envs.envs.web.miniwob --survey``; all 125 pages pass it). Filled below.
MINIWOB_TASKS: dict[str, MiniWoBTaskInfo] = {}


def _register_table() -> None:
    rows = _tasks(
        """
        ascending-numbers bisect-angle book-flight book-flight-nodelay buy-ticket choose-date choose-date-easy
        choose-date-medium choose-date-nodelay choose-list circle-center click-button click-button-sequence
        click-checkboxes click-checkboxes-large click-checkboxes-soft click-checkboxes-transfer
        click-collapsible click-collapsible-2 click-collapsible-2-nodelay click-collapsible-nodelay click-color
        click-dialog click-dialog-2 click-link click-menu click-menu-2 click-option click-pie-nodelay
        click-scroll-list click-shades click-shape click-tab click-tab-2 click-tab-2-easy click-tab-2-hard
        click-tab-2-medium click-test click-test-2 click-test-transfer click-widget copy-paste copy-paste-2
        count-shape count-sides daily-calendar drag-box drag-circle drag-cube drag-items drag-items-grid
        drag-shapes drag-shapes-2 drag-single-shape drag-sort-numbers draw-circle draw-line email-inbox
        email-inbox-delete email-inbox-forward email-inbox-forward-nl email-inbox-forward-nl-turk
        email-inbox-important email-inbox-nl-turk email-inbox-noscroll email-inbox-reply email-inbox-star-reply
        enter-date enter-password enter-text enter-text-2 enter-text-dynamic enter-time find-greatest
        find-midpoint find-word focus-text focus-text-2 form-sequence form-sequence-2 form-sequence-3
        generate-number grid-coordinate guess-number highlight-text highlight-text-2 hot-cold identify-shape
        login-user login-user-popup multi-layouts multi-orderings navigate-tree number-checkboxes odd-or-even
        order-food phone-book read-table read-table-2 resize-textarea right-angle scroll-text scroll-text-2
        search-engine sign-agreement simple-algebra simple-arithmetic social-media social-media-all
        social-media-some text-editor text-transform tic-tac-toe unicode-test use-autocomplete
        use-autocomplete-nodelay use-colorwheel use-colorwheel-2 use-slider use-slider-2 use-spinner
        visual-addition
        """
    )
    rows += _tasks(
        "button-delay chase-circle click-pie hover-shape moving-items simon-says stock-market terminal",
        deterministic=False,
        note=_TIMING,
    )
    for row in sorted(rows, key=lambda r: r.name):
        MINIWOB_TASKS[row.name] = row


_register_table()


# --------------------------------------------------------------------------- package files
def miniwob_html_dir() -> pathlib.Path:
    """The ``miniwob`` package's ``html/`` directory.

    Raises:
        DependencyNotInstalled: The ``miniwob`` package is not installed.
    """
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyNotInstalled(_INSTALL)
    html = pathlib.Path(next(iter(spec.submodule_search_locations))) / "html"
    if not (html / "core" / "core.js").is_file():
        raise DependencyNotInstalled(f"the miniwob package has no html/core/core.js at {html}; {_INSTALL}")
    return html


_SHARED_LOCK = threading.Lock()
_SHARED: dict[str, bytes] | None = None
_PAGES: dict[str, str] = {}


def shared_files() -> dict[str, bytes]:
    """``core/...`` and ``common/...`` of the package (relative path -> bytes), read once per process (~2.4 MB)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            html = miniwob_html_dir()
            files: dict[str, bytes] = {}
            for sub in ("core", "common"):
                for path in sorted((html / sub).rglob("*")):
                    if path.is_file():
                        files[path.relative_to(html).as_posix()] = path.read_bytes()
            _SHARED = files
        return _SHARED


def task_source(task: str) -> str:
    """The unmodified HTML of ``task`` (cached).

    Raises:
        UnknownMiniWoBTask: No such page in the package.
    """
    with _SHARED_LOCK:
        cached = _PAGES.get(task)
    if cached is not None:
        return cached
    path = miniwob_html_dir() / "miniwob" / f"{task}.html"
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", task) or not path.is_file():
        raise UnknownMiniWoBTask(task)
    text = path.read_text(encoding="utf-8")
    with _SHARED_LOCK:
        _PAGES[task] = text
    return text


def all_task_pages() -> list[str]:
    """Names of every task page in the package's ``html/miniwob/`` (sorted), listed or not."""
    return sorted(p.stem for p in (miniwob_html_dir() / "miniwob").glob("*.html"))


class UnknownMiniWoBTask(ArlError, ValueError):
    """The ``task`` kwarg names no MiniWoB++ task listed in :data:`MINIWOB_TASKS`."""

    def __init__(self, task: str):
        close = [t for t in MINIWOB_TASKS if task and (task in t or t in task)][:8]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        super().__init__(
            f"unknown MiniWoB++ task {task!r}{hint}; `arl-envs list --miniwob` lists the {len(MINIWOB_TASKS)} tasks"
        )


# --------------------------------------------------------------------------- page patching
#: Hides MiniWoB's human display (not part of any task; it changes every second) and records uncaught page errors
#: (reported by ``arlState()`` as ``page_errors``; the survey counts a page with errors as not working).
_HEAD = (
    '<meta charset="utf-8"><style>#reward-display,#click-canvas{display:none!important}</style>'
    "<script>window.__arlErrors=[];window.addEventListener('error',function(e){"
    "if(window.__arlErrors.length<5)window.__arlErrors.push(String(e.message||e).slice(0,200));});</script>"
)

#: End-of-body script: start the seeded episode at ``load`` and define the state hook. ``%SEED%`` and ``%PROBE%``
#: are replaced (the seed as a JSON string, the probe as a JS function expression or ``null``).
_START_JS = r"""
<script>
(function () {
  var SEED = %SEED%, START_WAIT_MS = %START_WAIT_MS%;
  var PROBE = %PROBE%;
  var started = false, startError = null;
  window.__arlPath = function (el) {
    // a CSS selector that matches exactly ``el`` (id-anchored where possible)
    if (!el || el.nodeType !== 1) return null;
    var parts = [];
    while (el && el.nodeType === 1 && el !== document.documentElement) {
      if (el.id && /^[A-Za-z][\w-]*$/.test(el.id) && document.querySelectorAll('#' + el.id).length === 1) {
        parts.unshift('#' + el.id);
        return parts.join(' > ');
      }
      var i = 1, s = el;
      while ((s = s.previousElementSibling)) i++;
      parts.unshift(el.tagName.toLowerCase() + ':nth-child(' + i + ')');
      el = el.parentElement;
    }
    parts.unshift('html');
    return parts.join(' > ');
  };
  window.__arlText = function (el) { return (el.textContent || '').replace(/\s+/g, ' ').trim(); };
  var waiters = [];
  function start() {
    if (started) return;
    started = true;
    try {
      if (window.__arl && window.__arl.episodeBegins) window.__arl.episodeBegins();
      Math.seedrandom(SEED);
      core.startEpisodeReal();
      // the turn budget replaces the page's clock: cancel the end-of-episode timer and the countdown
      // (EP_TIMER keeps its id so that core.endEpisode still records the reward)
      clearTimeout(core.EP_TIMER);
      clearInterval(core.CD_TIMER);
    } catch (e) { startError = String(e && e.stack || e); }
    var w = waiters; waiters = [];
    w.forEach(function (f) { f(); });
  }
  window.addEventListener('load', start);
  // the env's in-place reset (what the miniwob package's own env does at reset: seed, then startEpisodeReal);
  // returns why it cannot restart, or null
  window.__arlRestart = function (seed) {
    if (!started || startError !== null) return 'the episode never started';
    try {
      Math.seedrandom(seed);
      core.startEpisodeReal();
      clearTimeout(core.EP_TIMER);
      clearInterval(core.CD_TIMER);
    } catch (e) { startError = String(e && e.stack || e); return 'core.startEpisodeReal failed: ' + startError; }
    return null;
  };
  function readState() {
    var u = null, fields = null, probe = null, probeError = null;
    try {
      u = core.getUtterance();
      if (u && typeof u === 'object') { fields = u.fields || null; u = u.utterance; }
    } catch (e) { u = null; }
    if (PROBE && started && !WOB_DONE_GLOBAL) {
      try { probe = PROBE(); } catch (e) { probeError = String(e); }
    }
    var reason = WOB_REWARD_REASON;
    return {
      started: started && startError === null, start_error: startError,
      done: !!WOB_DONE_GLOBAL, raw_reward: +WOB_RAW_REWARD_GLOBAL, reward: +WOB_REWARD_GLOBAL,
      reason: reason === null || reason === undefined ? null : String(reason),
      utterance: typeof u === 'string' ? u : null, fields: fields, probe: probe, probe_error: probeError,
      page_errors: (window.__arlErrors || []).slice()
    };
  }
  // Before the episode has started (a snapshot taken while the page loads, whose own 'load' listener may run
  // before ours), answer once it has: the env's snapshot awaits this promise before reading the page.
  window.arlState = function () {
    if (started) return readState();
    return new Promise(function (resolve) {
      var answered = false;
      function answer() { if (!answered) { answered = true; resolve(readState()); } }
      waiters.push(answer);
      setTimeout(answer, START_WAIT_MS);
    });
  };
})();
</script>
"""

_CORE_TAG = re.compile(r"""<script[^>]*src=["']core/core\.js["'][^>]*>\s*</script>""", re.IGNORECASE)


def build_page(task: str, seed: str, probe_js: str | None = None) -> str:
    """The served ``index.html`` of ``task``: the package page plus the insertions of the module docstring.

    Args:
        task: Task name (a key of :data:`MINIWOB_TASKS` or any page of the package).
        seed: The episode's seed string (``Math.seedrandom`` argument).
        probe_js: A JavaScript function expression (``"() => ({...})"``) whose JSON-able result becomes
            ``state["probe"]`` (the expert's view of hidden page state), or None.

    Raises:
        UnknownMiniWoBTask: No such page.
        ArlError: The page lacks the ``core.js`` script tag (not a MiniWoB++ page).
    """
    src = task_source(task)
    src = src.replace("../core/", "core/").replace("../common/", "common/")
    m = _CORE_TAG.search(src)
    if m is None:
        raise ArlError(f"MiniWoB++ page {task!r} has no core.js script tag")
    seed_js = json.dumps(seed)
    load_seed = f"<script>Math.seedrandom({json.dumps(seed + ':load')});</script>"
    src = src[: m.end()] + load_seed + src[m.end():]
    head = re.search(r"<head[^>]*>", src, re.IGNORECASE)
    src = src[: head.end()] + _HEAD + src[head.end():] if head else _HEAD + src
    start = (_START_JS.replace("%SEED%", seed_js).replace("%PROBE%", probe_js or "null")
             .replace("%START_WAIT_MS%", str(START_WAIT_MS)))
    end = src.lower().rfind("</body>")
    return src[:end] + start + src[end:] if end >= 0 else src + start


# --------------------------------------------------------------------------- the task
class MiniWoBTask(WebTask):
    """One MiniWoB++ task as a :class:`WebTask` (an instance per env; not in the ``arl/web.<name>`` registry).

    Instance: a seed string ``"arl-<n>"`` (``n`` from the env's rng); the page draws its problem from it.
    State (``window.arlState()``): ``started`` (the episode began), ``done``, ``raw_reward``, ``reward``
    (time-scaled, informational), ``reason``, ``utterance`` (``core.getUtterance()``), ``fields`` (the task's
    own structured fields, for the few tasks that return them), ``probe`` (expert data) plus the env's keys.
    Validation: done when the page says done; success iff the raw reward is full (see module docstring).

    Args:
        task: The MiniWoB++ task name, a key of :data:`MINIWOB_TASKS`.

    Raises:
        UnknownMiniWoBTask: ``task`` is not listed.
    """

    name = MINIWOB_ROOT  # the instance's ``name`` is ``miniwob-<task>`` (its pages' root and task-id prefix)
    description = "A MiniWoB++ task page (miniwob package), its own reward."
    max_turns = DEFAULT_MAX_TURNS
    n_subgoals = 1  # MiniWoB++ pages report only a final reward: no sub-goal is ever credited

    def __init__(self, task: str):
        if not isinstance(task, str) or task not in MINIWOB_TASKS:
            raise UnknownMiniWoBTask(str(task))
        from arl_envs.envs.web.miniwob_experts import EXPERTS

        self.task = task
        self.name = f"{MINIWOB_ROOT}-{task}"  # pages under http://arl.test/miniwob-<task>/; task ids "miniwob-<task>:<seed>"
        self.info = MINIWOB_TASKS[task]
        self._expert = EXPERTS.get(task)

    @property
    def has_expert(self) -> bool:
        """Whether a scripted expert exists for this task."""
        return self._expert is not None

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        """Draw the page seed from ``rng`` and build the page (the utterance is the page's own, read later)."""
        seed = f"arl-{int(rng.integers(0, SEED_RANGE))}"
        probe = self._expert.probe if self._expert is not None else None
        files: dict[str, str | bytes] = dict(shared_files())
        files["index.html"] = build_page(self.task, seed, probe)
        return TaskInstance(
            goal={"task": self.task, "seed": seed},
            utterance=f"Solve the MiniWoB++ task {self.task!r}: follow the instruction at the top of the page.",
            files=files,
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        """Done when the page's ``WOB_DONE_GLOBAL`` is set; success only at full raw reward."""
        if not state.get("page_ok", True) or not state.get("started"):
            return Score(done=False, success=False)
        done = bool(state.get("done"))
        raw = state.get("raw_reward")
        success = done and isinstance(raw, (int, float)) and raw >= SUCCESS_RAW_REWARD
        return Score(done=done, success=bool(success))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        """The task's scripted expert (see :mod:`arl_envs.envs.web.miniwob_experts`).

        Raises:
            ExpertError: The task has no expert, or the expert could not find what it needs.
        """
        from arl_envs.envs.web.task import ExpertError

        if self._expert is None:
            raise ExpertError(f"MiniWoB++ task {self.task!r} has no scripted expert")
        if view.state.get("probe_error"):
            raise ExpertError(f"{self.task}: the expert's page probe failed: {view.state['probe_error']}")
        return self._expert.act(view)


# --------------------------------------------------------------------------- the env
def _web_env_class() -> type:
    from arl_envs.envs.web.env import WebEnv

    return WebEnv


class MiniWoBEnv(_web_env_class()):  # type: ignore[misc]
    """A MiniWoB++ task (``miniwob`` package pages) in our headless Chromium: ``arl/web.miniwob-v0``.

    Description:
        The MiniWoB++ benchmark (Liu et al. 2018, "Reinforcement Learning on Web Interfaces using Workflow-Guided
        Exploration"; Shi et al. 2017, "World of Bits") run on :class:`~arl_envs.envs.web.env.WebEnv`'s browser
        backend: the package's own task page is served locally, its problem is drawn from our seed
        (``Math.seedrandom``), and its own reward decides the outcome. The page's episode timer is cancelled
        (the turn budget replaces it). ``arl-envs list --miniwob`` lists the tasks and which have an expert.

    Observation:
        As :class:`WebEnv`: ``Goal:`` is the page's own utterance (``core.getUtterance()``), then URL, tabs, focused
        element, last action and error, and the accessibility tree with bids (the utterance's yellow box is in
        the tree too).

    Action:
        As :class:`WebEnv` (``click(bid)``, ``fill(bid, text)``, ``check(bid)``, ``select_option(bid, opt)``,
        ``press(bid, key)``, ``drag(from, to)``, ...).

    Tools:
        As :class:`WebEnv` (``action_format="json"``).

    Rewards:
        ``task``: 1 when the page ends the episode with its FULL raw reward (``WOB_RAW_REWARD_GLOBAL`` = 1), else 0:
        a partial raw reward (e.g. 2 of 3 checkboxes right) is 0 and ``success=False``. ``format``: -1 per
        malformed action (weight 0.1). No ``progress`` part (MiniWoB++ pages only report a final reward).
        ``info["miniwob"]`` reports the page's ``raw_reward``, time-scaled ``reward`` and ``reason`` every step.

    Episode end:
        ``terminated`` when the page says done (``WOB_DONE_GLOBAL``), after ``answer(...)``, or after too many
        malformed actions; ``truncated`` at ``max_turns`` (default :data:`DEFAULT_MAX_TURNS`) or on a browser
        failure (``info["env_error"]``).

    Arguments:
        task: MiniWoB++ task name (a key of :data:`MINIWOB_TASKS`), default ``"click-checkboxes"``.
        **kwargs: :class:`WebEnv` keyword arguments (``obs_mode``, ``action_format``, ``max_turns``, ...).

    Attributes:
        has_expert: Whether the task has a scripted expert (:data:`arl_envs.envs.web.miniwob_experts.EXPERTS`);
            :func:`arl_envs.testing.check_conformance` skips its expert check when False.

    Raises:
        UnknownMiniWoBTask: ``task`` is not a listed task.
        DependencyNotInstalled: The ``miniwob`` package is missing.

    Version history:
        v0: first version: 130 tasks of miniwob 1.1.0.
    """

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.0, "format": 0.1}

    def __init__(self, task: str = "click-checkboxes", **kwargs: Any) -> None:
        miniwob_html_dir()  # a missing package fails here, with the install hint
        super().__init__(MiniWoBTask(task), **kwargs)

    @property
    def has_expert(self) -> bool:
        """Whether this task has a scripted expert."""
        return self.task.has_expert

    def _use_task(self, task: str) -> None:
        """Switch to another MiniWoB++ task from the next reset on (the survey loads every page with one env).

        Raises:
            UnknownMiniWoBTask: ``task`` is not listed.
        """
        self.task = MiniWoBTask(task)
        self._restart_ok = False

    def _restart_request(self) -> tuple[str, Any]:
        """MiniWoB++ pages restart through their own core: ``("core", the new episode's seed string)``."""
        assert self._instance is not None
        return "core", self._instance.goal["seed"]

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        # the utterance is drawn by the page itself: show it as the goal once the page has started
        tid, obs = super()._reset_task(task_id)
        utterance = self._state.get("utterance")
        if isinstance(utterance, str) and utterance and self._instance is not None:
            self._instance = dataclasses.replace(self._instance, utterance=utterance)
            obs = self._observation(first=True)
        return tid, obs

    def _step_calls(self, calls: list[Any]) -> Any:
        tr = super()._step_calls(calls)
        tr.info["miniwob"] = {k: self._state.get(k) for k in ("done", "raw_reward", "reward", "reason")}
        return tr


def miniwob_task_rows() -> list[dict[str, Any]]:
    """One row per listed task: ``{"task", "expert", "deterministic", "note"}`` (for ``arl-envs list --miniwob``)."""
    from arl_envs.envs.web.miniwob_experts import EXPERTS

    return [
        {
            "task": name,
            "expert": name in EXPERTS,
            "deterministic": info.deterministic,
            "note": info.note or ("" if name in EXPERTS else "no scripted expert"),
        }
        for name, info in MINIWOB_TASKS.items()
    ]


# --------------------------------------------------------------------------- survey
def survey_task(env: Any, seed: int = 0, repeat: bool = True) -> dict[str, Any]:
    """Load ``env``'s task page with ``seed`` (twice with ``repeat``) and say whether it works here.

    Args:
        env: A :class:`MiniWoBEnv` (its task is surveyed).
        seed: Reset seed.
        repeat: Reset a second time with the same seed (in place when the env trusts a restart) and compare the
            observations.

    Returns:
        ``{"task", "ok", "same_instance", "second_reset", "utterance", "problem"}``: ``ok`` when the episode
        started (no exception in ``core.startEpisodeReal``), the page shows a non-empty utterance, raised no
        uncaught error and is not already done; ``same_instance`` when the second reset with the same seed gave
        the same observation, and ``second_reset`` how it started (``"restart"`` in the same document or
        ``"reload"``, see :class:`~arl_envs.envs.web.env.WebEnv`); both None without ``repeat``.
    """
    task = env.task.task
    try:
        obs1, _ = env.reset(seed=seed)
        state = dict(env._state)
        obs2 = env.reset(seed=seed)[0] if repeat else None
        second = env.last_reset_mode if repeat else None
    except Exception as exc:  # noqa: BLE001  (a page that cannot load is a survey result, not a crash)
        return {"task": task, "ok": False, "same_instance": False, "second_reset": None, "utterance": None,
                "problem": f"{type(exc).__name__}: {exc}"}
    problems = []
    if not state.get("started"):
        problems.append(f"episode did not start: {state.get('start_error')}")
    if not state.get("utterance"):
        problems.append("no utterance")
    if state.get("page_errors"):
        problems.append(f"page errors: {state['page_errors']}")
    if state.get("done"):
        problems.append("done at reset")
    return {"task": task, "ok": not problems, "same_instance": (obs1 == obs2) if repeat else None,
            "second_reset": second, "utterance": state.get("utterance"), "problem": "; ".join(problems)}


def survey(tasks: list[str] | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """:func:`survey_task` over ``tasks`` (default: every page of the package) with one env (one browser context)."""
    from arl_envs.envs.web.browser import hold_browser

    names = tasks if tasks is not None else all_task_pages()
    out = []
    for name in names:
        if name not in MINIWOB_TASKS:
            MINIWOB_TASKS[name] = MiniWoBTaskInfo(name)  # surveyed but not (yet) listed
    with hold_browser():
        env = MiniWoBEnv(names[0]) if names else None
        try:
            for name in names:
                env._use_task(name)
                out.append(survey_task(env, seed))
        finally:
            if env is not None:
                env.close()
    return out


def _main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description="Survey the miniwob package's task pages in headless Chromium.")
    ap.add_argument("--survey", action="store_true", help="load every task page once and report which work")
    ap.add_argument("tasks", nargs="*")
    args = ap.parse_args()
    if not args.survey:
        ap.print_help()
        return
    rows = survey(args.tasks or None)
    for r in rows:
        flag = "ok  " if r["ok"] else "FAIL"
        print(f"{flag} {r['task']:<28} same-instance={r['same_instance']!s:<5} second-reset={r['second_reset']!s:<7} "
              f"{r['problem'] or r['utterance']}")
    print(f"{sum(r['ok'] for r in rows)}/{len(rows)} task pages work; "
          f"{sum(r['second_reset'] == 'restart' for r in rows)} restarted in place at the second reset")


if __name__ == "__main__":
    _main()

"""``WebEnv``: a web task in a real headless Chromium (ids ``arl/web.<task>-v0``)."""

from __future__ import annotations

import contextlib
import io
import zlib
from typing import Any, ClassVar

import numpy as np

from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import ResetNeeded, TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.web.actions import action_help, format_action, parse_action, web_tools
from arl_envs.envs.web.axtree import (
    Snapshot,
)
from arl_envs.envs.web.browser import BrowserCallTimeout, BrowserCrashed, BrowserHost, BrowserUnavailable, get_host
from arl_envs.envs.web.task import (
    REGISTRY,
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
)

from arl_envs.envs.web.session import (  # noqa: F401 - constants and helpers kept importable from here
    _CLOSED_MARKERS,
    _content_type,
    _ContextSlot,
    _describe_error,
    _first_line,
    _inject_prelude,
    _is_closed_error,
    _PRELUDE,
    _PW_PREFIX_RE,
    _TASK_ID_RE,
    ACTION_TIMEOUT_S,
    BrowserSession,
    DEFAULT_FIXED_TIME,
    DEFAULT_VIEWPORT,
    DRAG_STEPS,
    FIRST_TWO_LETTER_PREFIX,
    INSTANCE_SEED_RANGE,
    MAX_DIALOGS,
    MAX_POOLED_CONTEXTS,
    NAVIGATION_TIMEOUT_S,
    NAVIGATION_WAIT_S,
    OBS_MODES,
    POPUP_WAIT_S,
    PREFIX_SPREAD,
    SNAPSHOT_ATTEMPTS,
    STEP_TIMEOUT_S,
)

def _resolve_task(task: str | WebTask | type[WebTask]) -> WebTask:
    if isinstance(task, WebTask):
        return task
    if isinstance(task, type) and issubclass(task, WebTask):
        return task()
    if isinstance(task, str):
        from arl_envs.envs.web import tasks  # noqa: F401  (registers our tasks)

        cls = REGISTRY.get(task)
        if cls is None:
            raise ValueError(f"unknown web task {task!r}; known: {', '.join(sorted(REGISTRY))}")
        return cls()
    raise TypeError(f"task must be a task name, a WebTask or a WebTask subclass, got {type(task).__name__}")


class WebEnv(BrowserSession, AgentEnv):
    """A web task (a page family with a seeded instance) in a real headless Chromium.

    Description:
        Each episode draws a :class:`~arl_envs.envs.web.task.TaskInstance` from the seed, serves its files under
        ``http://arl.test/<task>/`` (request routing inside the browser context; every other URL is blocked) and
        opens ``index.html``. The agent acts on the page through element ids from the accessibility tree; the
        task's validator reads the real page state (``window.arlState()``) after every step.

        Reset: when it can be trusted, the next episode starts IN the document the tab already has (no page
        load): our task pages are rebuilt from the new instance's ``index.html`` (mode ``"rebuild"``), MiniWoB++
        pages restart through their own ``core.startEpisodeReal()`` (mode ``"core"``); see
        :data:`arl_envs.envs.web.axtree.RESTART_CALL` for what is cleared. It is not trusted, and the page is
        reloaded, for the first episode in a browser context, after a navigation away from ``index.html``, a
        second tab, a dialog, a request of the page (rebuild), history changes, a crash, page scripts that fail
        when re-run, work of the previous episode still pending (core), or a task with
        ``restart_in_place = False``. A restarted episode gives the same observations as a freshly loaded one
        (same seed, same actions). ``last_reset_mode`` (``"restart"``/``"reload"``) and ``last_reset_reason``
        report what happened.

    Observation:
        Text: the goal, the URL, the open tabs, the focused element, the last action and its error (if any), any
        dialog the page opened (accepted automatically), then the accessibility tree with an element id (bid)
        before each element (format: :mod:`arl_envs.envs.web.axtree`). Bids are scoped to the page's document: a
        bid from a page that has been navigated away from is reported as "stale element id" and nothing is
        clicked. With ``obs_mode="axtree+screenshot"``, ``info["screenshot"]`` holds the viewport as PNG bytes
        (``viewport`` size) at reset and after every step; ``render()`` with ``render_mode="rgb_array"`` returns
        it as an ``(H, W, 3) uint8`` array.

    Action:
        One BrowserGym-style call per turn (native format, parsed with ``ast``): ``click(bid)``,
        ``dblclick(bid)``, ``hover(bid)``, ``fill(bid, value)``, ``select_option(bid, options)``, ``check(bid)``,
        ``uncheck(bid)``, ``press(bid, key_comb)``, ``scroll(delta_x, delta_y)``, ``drag(from_bid, to_bid)``,
        ``go_back()``, ``go_forward()``, ``tab_focus(index)``, ``noop(wait_ms=0)``, ``answer(text)``. Unknown,
        stale, hidden or disabled elements and actions that time out (``action_timeout_s``, default
        :data:`ACTION_TIMEOUT_S` = 2 s) give an error observation (``info["last_action_error"]``); the episode
        goes on. A malformed call is a format error (``info["action_error"]``, ``format`` penalty).

    Tools:
        The same 15 actions as tools (``action_format="json"``), see :func:`arl_envs.envs.web.actions.web_tools`.

    Rewards:
        ``task``: 1 when the episode ends in the task's EXACT goal state, else 0 (no partial credit).
        ``progress``: ``1 / n_subgoals`` the first time each validator sub-goal is reached (weight 0.1).
        ``format``: -1 per malformed action (weight 0.1).

    Episode end:
        ``terminated`` when the validator says done (goal reached, or an irrecoverable wrong state), after
        ``answer(...)``, or after more than ``max_invalid_actions`` malformed actions. ``truncated`` at
        ``max_turns`` (default: the task's ``max_turns``) or on a browser failure (``info["env_error"]``: the
        next ``reset`` starts a fresh browser).

    Arguments:
        task: Task name (``REGISTRY`` key), a :class:`WebTask` subclass or instance.
        obs_mode: ``"axtree"`` or ``"axtree+screenshot"``.
        action_format: ``"native"`` or ``"json"``.
        reward_weights: Overrides of ``{"task": 1.0, "progress": 0.1, "format": 0.1}``.
        max_turns: Steps before truncation (default: the task's ``max_turns``).
        max_invalid_actions: Malformed actions tolerated (default 3).
        render_mode: None, ``"ansi"`` (transcript) or ``"rgb_array"`` (screenshot array).
        viewport: ``(width, height)`` in CSS pixels.
        action_timeout_s: Seconds per action.
        step_timeout_s: Watchdog seconds per step/reset (a hung browser becomes ``env_error``).
        fixed_time: ISO time ``Date.now()`` returns in pages (None: the real clock, not reproducible).

    Version history:
        v0: first version (CHANGELOG.md lists its changes).
    """

    #: Snapshot (arl_envs.core.snapshot): the page state lives in Chromium: replay the actions into a fresh page of the
    #: same instance.
    snapshot_mode: ClassVar[str] = "replay"

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}
    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = 20
    default_max_invalid_actions: ClassVar[int] = 3

    def __init__(
        self,
        task: str | WebTask | type[WebTask] = "click-button",
        *,
        obs_mode: str = "axtree",
        action_format: str = "native",
        reward_weights: dict[str, float] | None = None,
        max_turns: int | None = None,
        max_invalid_actions: int | None = None,
        render_mode: str | None = None,
        viewport: tuple[int, int] = DEFAULT_VIEWPORT,
        action_timeout_s: float = ACTION_TIMEOUT_S,
        step_timeout_s: float = STEP_TIMEOUT_S,
        fixed_time: str | None = DEFAULT_FIXED_TIME,
    ) -> None:
        self.task = _resolve_task(task)
        super().__init__(
            action_format=action_format,
            reward_weights=reward_weights,
            max_turns=self.task.max_turns if max_turns is None else max_turns,
            max_invalid_actions=max_invalid_actions,
            render_mode=render_mode,
        )
        if obs_mode not in OBS_MODES:
            raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {obs_mode!r}")
        w, h = (int(v) for v in viewport)
        if w < 50 or h < 50:
            raise ValueError(f"viewport must be at least 50x50, got {viewport!r}")
        if action_timeout_s <= 0 or step_timeout_s <= action_timeout_s:
            raise ValueError("need 0 < action_timeout_s < step_timeout_s")
        self.obs_mode = obs_mode
        self.viewport = (w, h)
        self.action_timeout_s = float(action_timeout_s)
        self.step_timeout_s = float(step_timeout_s)
        self.fixed_time = fixed_time
        # The process's browser host is looked up and counted on first use (:attr:`_host`, at the first reset):
        # a fresh env holds no thread, event loop or browser, so it can be copied and pickled.
        self._host_ref: BrowserHost | None = None
        self._released = False
        self._ctx: Any = None
        self._ctx_generation = -1
        self._pages: list[Any] = []
        self._active = 0
        self._slot: _ContextSlot | None = None
        self._instance: TaskInstance | None = None
        self._instance_seed = 0
        self._files: dict[str, bytes] = {}
        self._counter = 0
        self._snap: Snapshot | None = None
        self._state: dict[str, Any] = {}
        self._dialogs: list[str] = []
        self._crashed: str | None = None
        self._credited: set[str] = set()
        self._screenshot: bytes | None = None
        self._last_action = ""
        self._last_error: str | None = None
        self._tab_titles: list[str] = []
        self._fresh_pages: set[Any] = set()
        self._first_prefix = 0
        # in-place restart (see _restart_in_place_async): the page's episode token, and what rules a restart out
        self._episode_token: str | None = None
        self._token_counter = 0
        self._restart_ok = False
        self._episode_requests = 0
        self._episode_dialog = False
        #: How the last reset started its episode: ``"restart"`` (in the same document) or ``"reload"``.
        self.last_reset_mode = ""
        #: Why the last reset reloaded instead of restarting in place ("" after a restart).
        self.last_reset_reason = ""

    @property
    def _host(self) -> BrowserHost:
        """This process's :class:`BrowserHost`, acquired (counted as one user) on first access."""
        host = self._host_ref
        if host is None:
            host = self._host_ref = get_host()
            host.acquire()
        return host

    # ================================================================ AgentEnv hooks
    def tools(self) -> list[Tool]:
        return web_tools()

    def instructions(self) -> str:
        if self.action_format == "json":
            how = self.json_format_instructions()
        else:
            how = (
                "Reply with exactly ONE action per turn, written as a Python call with literal arguments, e.g. "
                'click("a12") or fill("a5", "some text"). Available actions:\n' + action_help()
            )
        return (
            "You are operating a web browser to accomplish a goal. Each observation shows the page's accessibility "
            "tree; every element you can act on has an id in [brackets] (e.g. [a12]). Ids belong to the page they "
            "were shown on: after the page changes, use the ids of the newest observation. When the goal asks for "
            "information, reply with answer(\"...\"), which ends the episode.\n" + how
        )

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            seed = int(self.np_random.integers(INSTANCE_SEED_RANGE))
        else:
            m = _TASK_ID_RE.match(task_id)
            if m is None or (m.group("name") and m.group("name") != self.task.name):
                raise TaskLoadError(f"task_id must be '{self.task.name}:<seed>' or '<seed>', got {task_id!r}")
            seed = int(m.group("seed"))
        self._instance_seed = seed
        self._first_prefix = FIRST_TWO_LETTER_PREFIX + zlib.crc32(f"{self.task.name}:{seed}".encode()) % PREFIX_SPREAD
        self._instance = self.task.setup(np.random.default_rng(seed))
        if "index.html" not in self._instance.files:
            raise TaskLoadError(f"task {self.task.name!r} produced no index.html")
        self._files = {
            k.lstrip("/"): (v.encode("utf-8") if isinstance(v, str) else bytes(v))
            for k, v in self._instance.files.items()
        }
        self._credited = set()
        self._dialogs = []
        self._last_action = ""
        self._last_error = None
        self._screenshot = None
        try:
            self._host.call(self._reset_async(), self.step_timeout_s)
        except Exception as first:
            if not self._is_browser_error(first):
                raise
            # one retry on a fresh context (and a fresh browser when it died, e.g. killed between episodes)
            self._drop_context()
            try:
                self._host.call(self._reset_async(), self.step_timeout_s)
            except Exception as exc:
                if isinstance(exc, BrowserUnavailable):
                    raise
                raise BrowserUnavailable(f"the browser could not open the task page: {_first_line(exc)}") from first
        return f"{self.task.name}:{seed}", self._observation(first=True)

    def _reset_info(self) -> dict[str, Any]:
        """``url`` at reset, and ``screenshot`` with a screenshot obs mode.

        (``reset`` raises ``BrowserUnavailable`` when Chromium is missing or cannot open the page even on a fresh
        browser, ``TaskLoadError`` for a malformed ``options["task_id"]``: both from :meth:`_reset_task`.)
        """
        info: dict[str, Any] = {}
        if self.obs_mode == "axtree+screenshot":
            info["screenshot"] = self._screenshot
        info["url"] = self._snap.url if self._snap else ""
        return info

    def _parse_native(self, text: str) -> list[ToolCall]:
        return [parse_action(text)]

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        return format_action(name, arguments)

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        call = calls[0]
        self._last_action = format_action(call.name, call.arguments)
        answer = str(call.arguments["text"]) if call.name == "answer" else None
        try:
            if self._crashed:
                raise BrowserCrashed(self._crashed)
            error = self._host.call(self._step_async(call), self.step_timeout_s)
        except Exception as exc:
            if not (isinstance(exc, (BrowserCrashed, BrowserCallTimeout)) or self._is_browser_error(exc)):
                raise
            self._drop_context()
            msg = f"browser failure: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            return Transition(observation=f"The browser failed ({msg}); the episode ends.", env_error=msg)
        self._last_error = error
        assert self._instance is not None
        try:
            score = self.task.validate(self._state, self._instance.goal, answer)
            if not isinstance(score, Score):
                raise TypeError(f"validate returned {type(score).__name__}, not Score")
        except Exception as exc:  # a validator bug must not crash a training loop
            msg = f"validator of task {self.task.name!r} failed: {type(exc).__name__}: {exc}"
            return Transition(observation=f"Internal error ({msg}); the episode ends.", env_error=msg)
        parts: dict[str, float] = {}
        new = {str(s) for s in score.subgoals} - self._credited
        room = self.task.n_subgoals - len(self._credited)
        new = set(sorted(new)[: max(0, room)])
        if new:
            self._credited |= new
            parts["progress"] = len(new) / self.task.n_subgoals
        terminated = bool(score.done or score.success or answer is not None)
        success = bool(score.success) and terminated
        if terminated:
            parts["task"] = 1.0 if success else 0.0
        info: dict[str, Any] = {
            "last_action_error": error,
            "url": self._snap.url if self._snap else "",
            "subgoals": sorted(self._credited),
        }
        if self.obs_mode == "axtree+screenshot":
            info["screenshot"] = self._screenshot
        obs = self._observation()
        if terminated:
            obs += "\n\n[The episode is over: " + ("goal reached.]" if success else "the goal was not reached.]")
        return Transition(observation=obs, parts=parts, terminated=terminated, success=success, info=info)

    def _expert_action(self) -> str:
        """The scripted expert's next action (the task's :meth:`WebTask.expert` on the current page).

        Raises:
            ResetNeeded: No running episode.
            ExpertError: The task's expert cannot find what it needs.
        """
        if self._snap is None or self._instance is None:
            raise ResetNeeded("no running episode: call reset() first")
        snap = self._snap

        def resolver(selector: str) -> list[str]:
            found = self._host.call(self._resolve_async(selector), self.step_timeout_s)
            return [b for b in found if b in snap.bids]

        view = ExpertView(snap.tree, self._state.get("url", ""), dict(self._state), resolver)
        native = self.task.expert(view, self._instance.goal)
        if self.action_format == "native":
            return native
        call = parse_action(native)
        return self.render_call(call.name, self._tool_map()[call.name].validate(call.arguments))

    def render(self) -> Any:
        """``"ansi"``: the transcript; ``"rgb_array"``: the active page's viewport as ``(H, W, 3) uint8``."""
        if self.render_mode == "rgb_array":
            if self._ctx is None or self._crashed:
                return np.zeros((self.viewport[1], self.viewport[0], 3), dtype=np.uint8)
            try:
                png = self._host.call(self._screenshot_async(), self.step_timeout_s)
            except Exception as exc:
                if not (isinstance(exc, (BrowserCrashed, BrowserCallTimeout)) or self._is_browser_error(exc)):
                    raise
                return np.zeros((self.viewport[1], self.viewport[0], 3), dtype=np.uint8)
            return png_to_array(png)
        return super().render()

    def _close(self) -> None:
        try:
            if self._slot is not None and self._host.loop.alive:
                with contextlib.suppress(Exception):
                    self._host.call(self._close_context_async(), self.step_timeout_s)
        finally:
            self._ctx = None
            self._pages = []
            if not self._released:
                self._released = True
                if self._host_ref is not None:  # never acquired: nothing to release
                    self._host_ref.release()

    # ================================================================ observation text
    def _observation(self, first: bool = False) -> str:
        snap = self._snap
        assert snap is not None and self._instance is not None
        lines = [f"Goal: {self._instance.utterance}", f"URL: {snap.url}"]
        tabs = self._tab_titles
        lines.append(
            "Tabs: "
            + "; ".join(f"{i}: {t!r}{' (active)' if i == self._active else ''}" for i, t in enumerate(tabs))
        )
        lines.append(f"Focused element: {snap.focused or 'none'}")
        if not first:
            lines.append(f"Last action: {self._last_action}")
            if self._last_error:
                lines.append(f"Last action error: {self._last_error}")
        if self._dialogs:
            lines.append("Dialogs (accepted): " + " | ".join(self._dialogs))
            self._dialogs = []
        return "\n".join(lines) + "\n\nAccessibility tree:\n" + snap.tree


def png_to_array(png: bytes) -> np.ndarray:
    """Decode PNG bytes into an ``(H, W, 3) uint8`` RGB array (Pillow)."""
    from PIL import Image

    with Image.open(io.BytesIO(png)) as im:
        return np.asarray(im.convert("RGB"), dtype=np.uint8).copy()

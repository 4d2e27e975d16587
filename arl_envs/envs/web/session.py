"""The browser side of :class:`~arl_envs.envs.web.env.WebEnv`: one episode's browser context, tabs and page.

:class:`BrowserSession` holds what runs on the browser host's event loop (:mod:`arl_envs.envs.web.browser`):
borrowing a pooled browser context (:class:`_ContextSlot`) and restarting the episode in place or reloading the
page, serving the task's files through request routing (every other origin is blocked), accepting dialogs,
following new tabs, taking the page snapshot (:mod:`arl_envs.envs.web.axtree`) and carrying out one action (the
action itself is :class:`~arl_envs.envs.web.page_actions.PageActions`, its base class).
``WebEnv`` derives from it and adds the env contract (tools, parsing, rewards, observation text); the state both
use is set up in ``WebEnv.__init__``.
"""

from __future__ import annotations

import asyncio
import contextlib
import mimetypes
import re
import zlib
from typing import Any
from urllib.parse import unquote, urlsplit


from arl_envs.core.tools import ToolCall
from arl_envs.envs.web.axtree import (
    RESOLVE_CALL,
    RESTART_CALL,
    SNAPSHOT_CALL,
    SNAPSHOT_JS,
    Snapshot,
)
from arl_envs.envs.web.browser import BrowserCallTimeout, BrowserCrashed, BrowserUnavailable
from arl_envs.envs.web.page_actions import DRAG_STEPS, NAVIGATION_TIMEOUT_S, PageActions  # noqa: F401 - DRAG_STEPS re-exported
from arl_envs.envs.web.task import (
    TASK_ORIGIN,
    canonical_url,
    task_url,
)


#: Observation modes.
OBS_MODES = ("axtree", "axtree+screenshot")
#: Seconds one action may take (Playwright's actionability wait: visible, enabled, stable, not covered).
ACTION_TIMEOUT_S = 2.0
#: Seconds a whole step or reset may take before the browser is declared hung (``env_error``).
STEP_TIMEOUT_S = 30.0
#: Page size in CSS pixels (width, height); screenshots are this size.
DEFAULT_VIEWPORT = (800, 600)
#: ``Date.now()`` in every page (Playwright's fixed clock) so dates render the same on every run; timers still run.
DEFAULT_FIXED_TIME = "2024-03-15T10:00:00Z"
#: Attempts at a snapshot when a navigation destroys the page's JS context in the middle of one.
SNAPSHOT_ATTEMPTS = 8
#: Seconds a snapshot waits for a navigation an action started (then it observes whatever document is there).
NAVIGATION_WAIT_S = 5.0
#: Seconds to wait for a tab the page asked to open (window.open, a link with a target).
POPUP_WAIT_S = 2.0
#: Dialog messages kept for the next observation.
MAX_DIALOGS = 5
#: Clean browser contexts kept per process for the next env (a new context costs a new renderer process).
MAX_POOLED_CONTEXTS = 4
#: Instance seeds are drawn in [0, INSTANCE_SEED_RANGE).
INSTANCE_SEED_RANGE = 2**31 - 1
#: An episode's first document prefix is ``aa`` + (crc32 of the task id) mod this, so ids of consecutive episodes
#: differ (ids from the previous episode are rejected) while the same seed always shows the same ids.
PREFIX_SPREAD = 600
#: Index of the two-letter prefix ``aa`` (see :func:`arl_envs.envs.web.axtree.prefix_index`).
FIRST_TWO_LETTER_PREFIX = 26

_TASK_ID_RE = re.compile(r"^(?:(?P<name>[a-z0-9-]+):)?(?P<seed>\d{1,10})$")

#: Prepended to every served HTML page: seeds ``Math.random`` from the instance seed and the page path, so page
#: scripts that draw random numbers give the same page for the same seed.
_PRELUDE = (
    "<script>(()=>{let s=%d>>>0;Math.random=function(){s=(s+0x6D2B79F5)>>>0;let t=s;"
    "t=Math.imul(t^(t>>>15),t|1);t^=t+Math.imul(t^(t>>>7),t|61);return((t^(t>>>14))>>>0)/4294967296;};})();</script>"
)


def _content_type(path: str) -> str:
    ctype, _ = mimetypes.guess_type(path)
    if ctype is None:
        return "application/octet-stream"
    if ctype.startswith("text/") or ctype in ("application/javascript", "application/json", "image/svg+xml"):
        return f"{ctype}; charset=utf-8"
    return ctype


def _inject_prelude(html: bytes, seed: int) -> bytes:
    script = (_PRELUDE % seed).encode()
    low = html[:4096].lower()
    i = low.find(b"<head")
    if i != -1:
        j = html.find(b">", i)
        if j != -1:
            return html[: j + 1] + script + html[j + 1 :]
    k = low.find(b"<html")
    if k != -1:
        j = html.find(b">", k)
        if j != -1:
            return html[: j + 1] + script + html[j + 1 :]
    if low.lstrip().startswith(b"<!doctype"):
        j = html.find(b">")
        return html[: j + 1] + script + html[j + 1 :]
    return script + html



class BrowserSession(PageActions):
    """The browser-side methods of a web env (a mixin of :class:`~arl_envs.envs.web.env.WebEnv`).

    They run on the browser host's loop thread (``self._host.call(...)``); the attributes they use (``task``,
    ``_slot``, ``_pages``, ``_snap``, ``_files``, timeouts...) are set up by ``WebEnv.__init__``.
    """

    async def _reset_async(self) -> None:
        host = self._host
        browser = await host.browser_async()
        slot = self._slot
        if slot is None or slot.generation != host.generation or slot.page is None or slot.page.is_closed():
            await self._close_context_async(pool=False)
            await self._acquire_slot_async(browser)
            slot = self._slot
            assert slot is not None
        # The pointer starts where a fresh page's does: a pointer left over a hover menu by the last episode would
        # change which hover events the next one's first moves fire (so a reset page equals a new one).
        with contextlib.suppress(Exception):
            await slot.page.mouse.move(0, 0)
        if await self._restart_in_place_async(slot):
            return
        await self._clean_slot_async(slot)
        assert self._slot is not None
        self.last_reset_mode = "reload"
        self._begin_episode_state()
        page = self._pages[0]
        url = task_url(self.task.name)
        fast = None
        if page.url.startswith(TASK_ORIGIN + "/"):
            # fast path: the previous task page clears its origin's storage and loads the new page in place
            # (renderer-initiated, same process; one round trip instead of a browser navigation)
            with contextlib.suppress(Exception):
                fast = await page.evaluate(
                    "(url) => (window.__arl && window.__arl.fresh) ? window.__arl.fresh(url) : null", url
                )
        if fast is None:
            await self._slot.ctx.clear_cookies()
            await page.goto(url, wait_until="load", timeout=NAVIGATION_TIMEOUT_S * 1000)
        elif fast.get("cookies"):
            await self._slot.ctx.clear_cookies()
        token = self._next_token()
        await self._snapshot_async(token=token)
        await self._slot.cdp.send("Page.resetNavigationHistory")  # (pushState entries too)
        self._episode_token = token
        self._restart_ok = True
        self._episode_requests = 0

    def _begin_episode_state(self) -> None:
        """Python-side state of a new episode in the slot's main tab."""
        assert self._slot is not None
        self._pages = [self._slot.page]
        self._fresh_pages = set()
        self._active = 0
        self._counter = self._first_prefix
        self._episode_dialog = False

    def _next_token(self) -> str:
        self._token_counter += 1
        return f"{id(self):x}-{self._token_counter}"

    def _restart_request(self) -> tuple[str, Any]:
        """How the page restarts in place: ``("rebuild", html of the new instance's index.html)``."""
        body = self._files["index.html"]
        return "rebuild", _inject_prelude(body, zlib.crc32(f"{self._instance_seed}:index.html".encode())).decode("utf-8")

    def _restart_refusal(self, slot: _ContextSlot, mode: str) -> str | None:
        """Why the next episode cannot start in the document the tab already has (None: it can)."""
        if not getattr(self.task, "restart_in_place", True):
            return f"task {self.task.name!r} reloads its page every episode"
        if not self._restart_ok or self._episode_token is None:
            return "no episode to restart from (first episode in this browser context, or the last one was unusable)"
        if self._crashed or not self._host.is_alive():
            return "the browser or page crashed"
        if len(slot.ctx.pages) != 1 or self._pages != [slot.page]:
            return "a second tab was opened"
        if self._episode_dialog:
            return "the page opened a dialog"
        if slot.page.url != task_url(self.task.name):
            return "the page navigated away from the task's start page"
        if mode == "rebuild" and self._episode_requests:
            return "the page made requests during the episode"
        return None

    async def _restart_in_place_async(self, slot: _ContextSlot) -> bool:
        """Start the next episode in the current document when that can be trusted (see the class docstring).

        Returns:
            True when the episode was restarted in place (the first snapshot is taken); False when the caller
            must load a fresh page (``last_reset_reason`` says why).
        """
        mode, payload = self._restart_request()
        why = self._restart_refusal(slot, mode)
        if why is None:
            new = self._next_token()
            r = await slot.page.evaluate(RESTART_CALL, [mode, payload, self._episode_token, new])
            self._episode_token = None
            if r.get("ok"):
                if r.get("cookies"):
                    await slot.ctx.clear_cookies()
                self._begin_episode_state()
                await self._snapshot_async()
                self._episode_token = new
                self._episode_requests = 0
                self.last_reset_mode, self.last_reset_reason = "restart", ""
                return True
            why = str(r.get("why") or "the page refused the restart")
        self.last_reset_reason = why
        return False

    async def _acquire_slot_async(self, browser: Any) -> None:
        """Take a clean pooled context with this env's settings, or make one."""
        key = (self.viewport, self.fixed_time)
        pool = self._host.context_pool
        slot = None
        usable = [c for c in pool if c.key == key and c.generation == self._host.generation and not c.page.is_closed()]
        for cand in usable:  # prefer a page of this task that can restart in place
            if cand.resume is not None and cand.resume[0] == self.task.name:
                slot = cand
                break
        if slot is None and usable:
            slot = usable[-1]
        for cand in list(pool):
            if cand not in usable:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(cand.ctx.close(), 10)
        pool[:] = [c for c in usable if c is not slot]
        if slot is None:
            ctx = await browser.new_context(
                viewport={"width": self.viewport[0], "height": self.viewport[1]},
                device_scale_factor=1,
                locale="en-US",
                timezone_id="UTC",
                service_workers="block",
                accept_downloads=False,
                reduced_motion="reduce",
            )
            slot = _ContextSlot(ctx, key, self._host.generation)
            slot.owner = self
            if self.fixed_time is not None:
                await ctx.clock.set_fixed_time(self.fixed_time)
            await ctx.add_init_script(SNAPSHOT_JS)
            await ctx.route("**/*", slot.route)
            ctx.on("page", slot.on_page)
            slot.page = await ctx.new_page()
            slot.cdp = await ctx.new_cdp_session(slot.page)
        slot.owner = self
        self._slot = slot
        self._ctx = slot.ctx
        self._ctx_generation = slot.generation
        self._crashed = None
        resume, slot.resume = slot.resume, None
        self._restart_ok = resume is not None and resume[0] == self.task.name
        self._episode_token = resume[1] if self._restart_ok and resume else None
        self._pages = [slot.page]
        self._active = 0

    async def _clean_slot_async(self, slot: _ContextSlot) -> None:
        """Close the previous episode's extra tabs (the main tab stays)."""
        for p in list(slot.ctx.pages):
            if p is not slot.page:
                with contextlib.suppress(Exception):
                    await p.close()

    def _on_new_page(self, page: Any) -> None:
        if page not in self._pages:
            self._pages.append(page)
            if len(self._pages) > 1:  # a popup / new tab becomes the active tab (as in BrowserGym)
                self._active = len(self._pages) - 1
                self._fresh_pages.add(page)

    async def _on_dialog(self, dialog: Any) -> None:
        self._episode_dialog = True
        msg = f"{dialog.type}: {dialog.message[:200]!r}"
        self._dialogs = (self._dialogs + [msg])[-MAX_DIALOGS:]
        with contextlib.suppress(Exception):
            if dialog.type == "prompt":
                await dialog.accept(dialog.default_value)
            else:
                await dialog.accept()

    async def _route(self, route: Any) -> None:
        self._episode_requests += 1
        try:
            url = route.request.url
            parts = urlsplit(url)
            origin = f"{parts.scheme}://{parts.netloc}"
            if origin != TASK_ORIGIN:
                await route.abort("blockedbyclient")
                return
            path = unquote(parts.path)
            prefix = f"/{self.task.name}/"
            body = None
            rel = ""
            if path.startswith(prefix) or path == prefix.rstrip("/"):
                rel = path[len(prefix):] if path.startswith(prefix) else ""
                rel = rel or "index.html"
                body = self._files.get(rel)
            if body is None:
                await route.fulfill(status=404, content_type="text/plain; charset=utf-8", body=f"404: {path} not found")
                return
            ctype = _content_type(rel)
            if ctype.startswith("text/html"):
                body = _inject_prelude(body, zlib.crc32(f"{self._instance_seed}:{rel}".encode()))
            await route.fulfill(status=200, content_type=ctype, body=body, headers={"cache-control": "no-store"})
        except Exception:  # the context closed while a request was in flight
            with contextlib.suppress(Exception):
                await route.abort()

    async def _close_context_async(self, pool: bool = True) -> None:
        """Give the context back to the host's pool (clean) or close it.

        A pooled context keeps its page when the episode could restart in place (same checks as a reset), so the
        next env of the same task starts its first episode there without a page load; otherwise it is left on
        ``about:blank``. Storage and cookies are cleared either way.
        """
        resume = None
        if pool and self._slot is not None and self._instance is not None and not self._crashed:
            with contextlib.suppress(Exception):
                if self._restart_refusal(self._slot, self._restart_request()[0]) is None:
                    resume = (self.task.name, self._episode_token)
        self._restart_ok = False
        slot, self._slot = self._slot, None
        self._ctx = None
        self._pages = []
        self._fresh_pages = set()
        if slot is None:
            return
        slot.owner = None
        host = self._host
        keep = (
            pool
            and not self._crashed
            and host.is_alive()
            and slot.generation == host.generation
            and slot.page is not None
            and not slot.page.is_closed()
            and len(host.context_pool) < MAX_POOLED_CONTEXTS
        )
        if keep:
            try:
                await self._clean_slot_async(slot)
                with contextlib.suppress(Exception):  # one origin for all tasks: clear its storage
                    await slot.page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
                await slot.ctx.clear_cookies()
                slot.resume = resume
                if resume is None:
                    await slot.page.goto("about:blank", timeout=NAVIGATION_TIMEOUT_S * 1000)
                host.context_pool.append(slot)
                return
            except Exception:
                pass
        with contextlib.suppress(Exception):
            await asyncio.wait_for(slot.ctx.close(), 10)

    def _drop_context(self) -> None:
        """Close the context after a browser failure (the next reset builds a new one)."""
        if self._slot is not None and self._host.loop.alive:
            with contextlib.suppress(Exception):
                self._host.call(self._close_context_async(pool=False), 10)
        self._slot = None
        self._ctx = None
        self._pages = []
        self._ctx_generation = -1
        self._restart_ok = False

    @property
    def _page(self) -> Any:
        return self._pages[self._active]

    async def _sync_tabs(self) -> None:
        live = [p for p in self._pages if not p.is_closed()]
        if len(live) != len(self._pages):
            active = self._pages[self._active] if self._active < len(self._pages) else None
            self._pages = live
            if active in live:
                self._active = live.index(active)
            else:
                self._active = max(0, len(live) - 1)
        if not self._pages:  # the page closed itself (window.close()): open a blank tab like a browser would
            page = await self._ctx.new_page()
            if page not in self._pages:
                self._pages.append(page)
            self._active = 0

    async def _snapshot_async(self, _retry_popup: bool = False, token: str | None = None) -> None:
        await self._sync_tabs()
        page = self._page
        if page in self._fresh_pages:  # a new tab: wait for its first document
            self._fresh_pages.discard(page)
            with contextlib.suppress(Exception):
                await page.wait_for_load_state("load", timeout=NAVIGATION_TIMEOUT_S * 1000)
        raw = None
        loop = asyncio.get_running_loop()
        leave_deadline = loop.time() + NAVIGATION_WAIT_S
        attempt = 0
        while True:
            try:
                raw = await page.evaluate(SNAPSHOT_CALL, [self._counter, loop.time() > leave_deadline, token])
                if raw.get("leaving"):  # the action started a navigation: observe the next document
                    await asyncio.sleep(0.005)
                    continue
                break
            except Exception as exc:
                if self._crashed or not self._host.is_alive() or _is_closed_error(exc):
                    raise BrowserCrashed(f"snapshot failed: {_first_line(exc)}") from exc
                attempt += 1
                if attempt >= SNAPSHOT_ATTEMPTS:
                    raise
                # a navigation destroyed the JS context mid-snapshot: wait for the new document
                with contextlib.suppress(Exception):
                    await page.wait_for_load_state("load", timeout=NAVIGATION_TIMEOUT_S * 1000)
        if self._page is not page and not _retry_popup:
            # a new tab became the active tab while this snapshot ran: observe it instead (else the observation
            # would show the old tab's tree under the new tab's index)
            await self._snapshot_async(_retry_popup=True, token=token)
            return
        if raw.get("opened") and not _retry_popup:
            # the page opened a tab: wait for it (it becomes the active tab) and observe it instead
            n = len(self._pages)
            deadline = asyncio.get_running_loop().time() + POPUP_WAIT_S
            while len(self._pages) <= n and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.005)
            if len(self._pages) > n:
                await self._snapshot_async(_retry_popup=True, token=token)
                return
        snap = Snapshot.from_js(raw)
        self._counter = snap.next_prefix
        self._snap = snap
        base = task_url(self.task.name, "").rstrip("/")
        titles = []
        for i, p in enumerate(self._pages):
            if i == self._active:
                titles.append(snap.title)
            else:
                try:
                    titles.append(await p.title())
                except Exception:
                    titles.append("")
        self._tab_titles = titles
        state: dict[str, Any] = dict(snap.state or {})
        state["url"] = canonical_url(snap.url, base)
        state["tabs"] = [canonical_url(p.url, base) for p in self._pages]
        state["active_tab"] = self._active
        state["page_ok"] = snap.state is not None
        self._state = state
        if self.obs_mode == "axtree+screenshot":
            self._screenshot = await page.screenshot(type="png", timeout=NAVIGATION_TIMEOUT_S * 1000)

    async def _screenshot_async(self) -> bytes:
        await self._sync_tabs()
        return await self._page.screenshot(type="png", timeout=NAVIGATION_TIMEOUT_S * 1000)

    async def _resolve_async(self, selector: str) -> list[str]:
        return list(await self._page.evaluate(RESOLVE_CALL, selector))

    async def _step_async(self, call: ToolCall) -> str | None:
        """Perform one action, then take the next snapshot; returns the action's error message or None."""
        host = self._host
        if not host.is_alive() or self._ctx_generation != host.generation or self._ctx is None:
            raise BrowserCrashed("the browser is not running (it crashed or was killed)")
        await self._sync_tabs()
        try:
            error = await self._perform(call)
        except Exception as exc:
            await asyncio.sleep(0)  # let a pending 'disconnected' event arrive
            if self._crashed or not host.is_alive():
                raise BrowserCrashed(f"{call.name} failed: {_first_line(exc)}") from exc
            if _is_closed_error(exc):
                # the page (not the browser) went away during the action, e.g. window.close()
                error = None
            else:
                error = _describe_error(exc, call.name, self.action_timeout_s)
        await self._snapshot_async()
        return error

    def _is_browser_error(self, exc: BaseException) -> bool:
        if isinstance(exc, (BrowserCrashed, BrowserCallTimeout, BrowserUnavailable)):
            return True
        return (type(exc).__module__ or "").startswith("playwright")


class _ContextSlot:
    """A browser context with its main tab, pooled by the host and lent to one env at a time.

    The context's event handlers (request routing, new tabs, dialogs, renderer crashes) are registered once and
    forward to the current ``owner`` env; with no owner, requests are blocked and dialogs dismissed.
    """

    def __init__(self, ctx: Any, key: tuple[Any, ...], generation: int) -> None:
        self.ctx = ctx
        self.key = key
        self.generation = generation
        self.owner: BrowserSession | None = None
        self.page: Any = None
        self.cdp: Any = None
        #: ``(task name, episode token)`` while pooled with a page the next env of that task may restart in.
        self.resume: tuple[str, str | None] | None = None

    async def route(self, route: Any) -> None:
        owner = self.owner
        if owner is None:
            with contextlib.suppress(Exception):
                await route.abort("blockedbyclient")
            return
        await owner._route(route)

    def on_page(self, page: Any) -> None:
        page.on("dialog", self.on_dialog)
        page.on("crash", self.on_crash)
        owner = self.owner
        if owner is not None:
            page.set_default_timeout(owner.action_timeout_s * 1000)
            page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_S * 1000)
            owner._on_new_page(page)

    async def on_dialog(self, dialog: Any) -> None:
        owner = self.owner
        if owner is not None:
            await owner._on_dialog(dialog)
        else:
            with contextlib.suppress(Exception):
                await dialog.dismiss()

    def on_crash(self, *_: Any) -> None:
        if self.owner is not None:
            self.owner._crashed = "the page's renderer process crashed"


# ==================================================================== helpers
_CLOSED_MARKERS = ("has been closed", "Target closed", "Browser closed", "Connection closed", "crashed")


def _is_closed_error(exc: BaseException) -> bool:
    return type(exc).__name__ == "TargetClosedError" or any(m in str(exc) for m in _CLOSED_MARKERS)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


_PW_PREFIX_RE = re.compile(r"^(?:Locator|Page|Frame|ElementHandle|FrameLocator|Mouse|Keyboard)\.[a-z_A-Z]+: ")


def _describe_error(exc: BaseException, action: str, timeout_s: float) -> str:
    """A deterministic, model-readable message for a failed action (Playwright call logs vary run to run)."""
    if type(exc).__name__ == "TimeoutError":
        return (
            f"{action} timed out after {timeout_s:g} s: the element is not actionable (hidden, covered by another "
            "element, disabled, not editable, or the option does not exist)"
        )
    line = _PW_PREFIX_RE.sub("", _first_line(exc))
    line = re.sub(r"^Error: ", "", line)
    line = re.sub(r"\s*Call log:.*$", "", line)
    return f"{action} failed: {line}"

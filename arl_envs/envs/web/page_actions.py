"""The page actions of a web env: one tool call carried out in the active tab.

:class:`PageActions` (a base class of :class:`~arl_envs.envs.web.session.BrowserSession`) performs an action on
the browser host's loop: ``answer``/``noop`` (an optional wait), ``scroll`` (a mouse wheel), ``go_back``/``go_forward``,
``tab_focus``, and the element actions by bid (``click``, ``dblclick``, ``hover``, ``check``/``uncheck``, ``fill``,
``select_option``, ``press``, ``drag``): the bid is checked against the last snapshot, our in-page helper
(:data:`~arl_envs.envs.web.axtree.ACTION_CALL`) finds, scrolls to and hit-tests the element, then real mouse and
keyboard input is sent, within ``action_timeout_s``. A problem the model can fix comes back as a message.
"""

from __future__ import annotations

import asyncio
from typing import Any

from arl_envs.core.actions import ParseError
from arl_envs.core.tools import ToolCall
from arl_envs.envs.web.axtree import ACTION_CALL, Snapshot, check_bid

#: Seconds a navigation (reset's page load, go_back, go_forward) may take.
NAVIGATION_TIMEOUT_S = 10.0
#: Intermediate mouse moves of a drag.
DRAG_STEPS = 5


class PageActions:
    """Carries out one action in the active tab (see the module docstring). It uses the session's state (``_page``,
    ``_pages``, ``_active``, ``_snap``, ``_first_prefix``, ``action_timeout_s``), set up by
    :class:`~arl_envs.envs.web.env.WebEnv`.
    """

    _page: Any
    _pages: list[Any]
    _active: int
    _snap: Snapshot | None
    _first_prefix: int
    action_timeout_s: float

    async def _perform(self, call: ToolCall) -> str | None:
        name, a = call.name, call.arguments
        page = self._page
        if name in ("answer", "noop"):
            if name == "noop" and a.get("wait_ms"):
                await asyncio.sleep(float(a["wait_ms"]) / 1000)
            return None
        if name == "scroll":
            await page.mouse.wheel(float(a["delta_x"]), float(a["delta_y"]))
            await page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(null)))")
            return None
        if name in ("go_back", "go_forward"):
            fn = page.go_back if name == "go_back" else page.go_forward
            resp = await fn(wait_until="load", timeout=NAVIGATION_TIMEOUT_S * 1000)
            if resp is None and page.url == (self._snap.url if self._snap else page.url):
                return f"cannot {name.replace('_', ' ')}: no {'previous' if name == 'go_back' else 'next'} page in this tab"
            return None
        if name == "tab_focus":
            i = int(a["index"])
            if not 0 <= i < len(self._pages):
                return f"no tab with index {i}; open tabs: 0..{len(self._pages) - 1}"
            self._active = i
            await self._pages[i].bring_to_front()
            return None
        bids = [str(a["from_bid"]), str(a["to_bid"])] if name == "drag" else [str(a["bid"])]
        assert self._snap is not None
        for bid in bids:
            problem = check_bid(bid, self._snap, self._first_prefix)
            if problem:
                return problem
            if bid in self._snap.disabled and name not in ("hover", "drag"):
                return f"element {bid!r} is disabled"
        try:
            return await asyncio.wait_for(self._element_action(page, name, a, bids), self.action_timeout_s)
        except asyncio.TimeoutError:
            return (
                f"{name} timed out after {self.action_timeout_s:g} s (the page did not respond in time; "
                "it may be busy)"
            )

    async def _element_action(self, page: Any, name: str, a: dict[str, Any], bids: list[str]) -> str | None:
        """Act on elements by bid: our in-page helper finds, scrolls to and hit-tests the element, then real
        mouse/keyboard input is sent (no Playwright locator: its actionability polling waits for animation
        frames, which costs 50-100 ms per action on a busy machine)."""
        bid = bids[0]
        if name == "fill":
            r = await page.evaluate(ACTION_CALL, ["prepareFill", bid, str(a["value"])])
            if r.get("error"):
                return f"fill: {r['error']}"
            if not r.get("done"):
                if a["value"]:
                    await page.keyboard.insert_text(str(a["value"]))
                else:
                    await page.keyboard.press("Delete")
            return None
        if name == "select_option":
            opts = a["options"]
            r = await page.evaluate(ACTION_CALL, ["selectOption", bid, opts if isinstance(opts, list) else [str(opts)]])
            return f"select_option: {r['error']}" if r.get("error") else None
        if name == "press":
            r = await page.evaluate(ACTION_CALL, ["focusBid", bid])
            if r.get("error"):
                return f"press: {r['error']}"
            await page.keyboard.press(str(a["key_comb"]))
            return None
        hit_test = name in ("click", "dblclick", "check", "uncheck", "drag")
        r = await page.evaluate(ACTION_CALL, ["target", bid, hit_test])
        if r.get("tag") == "OPTION" and name == "click":  # an option of a <select>: select it
            r2 = await page.evaluate(ACTION_CALL, ["selectOption", bid, None])
            return f"click: {r2['error']}" if r2.get("error") else None
        if r.get("error"):
            return f"{name}: {r['error']}"
        if r.get("disabled") and name not in ("hover", "drag"):
            return f"element {bid!r} is disabled"
        x, y = float(r["x"]), float(r["y"])
        if name == "click":
            await page.mouse.click(x, y, button=a.get("button", "left"))
        elif name == "dblclick":
            await page.mouse.dblclick(x, y)
        elif name == "hover":
            await page.mouse.move(x, y)
        elif name in ("check", "uncheck"):
            is_box = (r.get("tag") == "INPUT" and r.get("type") in ("checkbox", "radio")) or r.get("role") in (
                "checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio")
            if not is_box:
                return f"{name}: element {bid!r} is not a checkbox or radio button"
            want = name == "check"
            if bool(r.get("checked")) == want:
                return None
            if not want and r.get("type") == "radio":
                return f"uncheck: element {bid!r} is a radio button; choose another option instead"
            await page.mouse.click(x, y)
        elif name == "drag":
            r2 = await page.evaluate(ACTION_CALL, ["target", bids[1], False])
            if r2.get("error"):
                return f"drag: {r2['error']}"
            await page.mouse.move(x, y)
            await page.mouse.down()
            await page.mouse.move(float(r2["x"]), float(r2["y"]), steps=DRAG_STEPS)
            await page.mouse.up()
        else:  # pragma: no cover - every tool is handled
            raise ParseError(f"unhandled action {name!r}")
        return None

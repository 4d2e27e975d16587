"""WebEnv with a real headless Chromium: actions, bids, frames, tabs, crashes, leaks, threads, asyncio, vector.

Skipped (with the reason) only when Playwright or Chromium is missing on the machine.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from typing import Any

import numpy as np
import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.browser import (  # noqa: E402
    BrowserUnavailable,
    browser_main_pid,
    chromium_pids,
    find_chromium,
    get_host,
    hold_browser,
)
from arl_envs.envs.web.axtree import split_bid  # noqa: E402
from arl_envs.envs.web.env import WebEnv  # noqa: E402
from arl_envs.envs.web.task import Score, TaskInstance, WebTask, act, html_page  # noqa: E402

try:
    find_chromium()
except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
    pytest.skip(f"no Chromium on this machine: {exc}", allow_module_level=True)


class PageTask(WebTask):
    """A test task: fixed files, state = whatever the page's arlState returns, success on state["ok"]."""

    name = "test-page"
    description = "test page"
    n_subgoals = 1
    max_turns = 30

    def __init__(self, files: dict[str, str], expert_selector: str = "#go"):
        self.files = files
        self.expert_selector = expert_selector

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        return TaskInstance(goal={"n": int(rng.integers(1000))}, utterance="Test the page.", files=dict(self.files))

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        ok = bool(state.get("ok"))
        return Score(done=ok, success=ok, subgoals=frozenset({"ok"} if ok else ()))

    def expert(self, view, goal) -> str:
        return act("click", view.bid(self.expert_selector))


def page(body: str, script: str = "") -> str:
    return html_page("Test", body, script)


def bid_of(env: WebEnv, selector: str) -> str:
    found = env._host.call(env._resolve_async(selector))
    assert found, f"no bid for {selector}"
    return found[0]


@pytest.fixture(scope="module", autouse=True)
def _one_browser():
    with hold_browser():
        yield


def test_close_leaves_no_chromium_process():
    host = get_host()
    host.unhold()  # this test needs the browser to go when its last env closes
    try:
        # other envs of the module are closed: nothing holds the browser now
        env = WebEnv("click-button")
        env.reset(seed=0)
        assert chromium_pids(), "the browser did not start"
        env.close()
        assert chromium_pids() == [], "chromium processes left after close()"
        env.close()  # twice is fine
    finally:
        host.hold()


def test_fill_types_exactly_what_was_written():
    files = {"index.html": page('<textarea id="t"></textarea><input id="i">',
                                "window.arlState = () => ({t: document.getElementById('t').value,"
                                " i: document.getElementById('i').value});")}
    env = WebEnv(PageTask(files))
    try:
        env.reset(seed=0)
        t = bid_of(env, "#t")
        _, _, term, trunc, info = env.step(f'fill("{t}", "a\\nb it\'s \\"q\\"")')
        assert info["last_action_error"] is None and not term and not trunc
        assert env._state["t"] == 'a\nb it\'s "q"'
        i = bid_of(env, "#i")
        env.step(f"fill('{i}', 'ü 中文 \\\\ done')")
        assert env._state["i"] == "ü 中文 \\ done"
    finally:
        env.close()


def test_stale_bid_after_navigation_is_an_error_not_a_click():
    files = {
        "index.html": page('<button id="x">x</button><a id="go" href="page2.html">next</a>',
                           "window.arlState = () => ({page: 1});"),
        # page 2's first elements take the same numbers as page 1's, with another prefix
        "page2.html": page('<button id="b0">zero</button><button id="b1">one</button><button id="b2">two</button>',
                           "window.clicks = 0; document.querySelectorAll('button').forEach(b => b.onclick = () => clicks++);"
                           "window.arlState = () => ({page: 2, clicks: window.clicks});"),
    }
    env = WebEnv(PageTask(files))
    try:
        env.reset(seed=0)
        old_button = bid_of(env, "#x")
        link = bid_of(env, "#go")
        env.step(f'click("{link}")')
        assert env._state["page"] == 2 and env._state["url"] == "/page2.html"
        new_bids = [bid_of(env, f"#b{i}") for i in range(3)]
        number = split_bid(old_button)[1]
        assert number in [split_bid(b)[1] for b in new_bids], "test needs a number clash between the pages"
        obs, _, _, _, info = env.step(f'click("{old_button}")')
        assert "stale element id" in info["last_action_error"]
        assert "stale element id" in obs
        assert env._state["clicks"] == 0, "a stale bid clicked an element of the new page"
        env.step(f'click("{new_bids[1]}")')
        assert env._state["clicks"] == 1
        # go back: page 1 again, the link works again from the new snapshot
        _, _, _, _, info = env.step("go_back()")
        assert info["last_action_error"] is None and env._state["page"] == 1
    finally:
        env.close()


def test_unknown_hidden_disabled_and_timeout_are_error_observations():
    files = {"index.html": page(
        '<button id="dis" disabled>off</button><button id="hid">hid</button>'
        '<div style="position:relative"><button id="under">under</button>'
        '<div style="position:absolute;left:0;top:0;width:300px;height:60px;background:#fff"></div></div>'
        '<p id="txt">text</p>',
        "document.getElementById('hid').onclick = () => {}; window.arlState = () => ({});"
        "setTimeout(() => {}, 0);")}
    env = WebEnv(PageTask(files), action_timeout_s=0.5)
    try:
        env.reset(seed=0)
        dis, hid, under, txt = (bid_of(env, s) for s in ("#dis", "#hid", "#under", "#txt"))
        _, _, _, _, info = env.step(f'click("{dis}")')
        assert "disabled" in info["last_action_error"]
        env._host.call(env._page.evaluate("() => document.getElementById('hid').style.display = 'none'"))
        env.step("noop()")  # new snapshot: the hidden button has no bid now
        _, _, term, trunc, info = env.step(f'click("{hid}")')
        assert "unknown element id" in info["last_action_error"] and not (term or trunc)
        _, _, term, trunc, info = env.step(f'click("{under}")')  # covered by another element
        assert "covered by div" in info["last_action_error"] and not (term or trunc)
        _, _, _, _, info = env.step(f'fill("{txt}", "x")')  # not editable
        assert "is not a text field" in info["last_action_error"]
        _, _, _, _, info = env.step('click("nonsense!")')
        assert "invalid element id" in info["last_action_error"]
        _, _, _, _, info = env.step("tab_focus(3)")
        assert "no tab" in info["last_action_error"]
        obs, _, term, trunc, info = env.step("go_back()")
        assert "cannot go back" in info["last_action_error"] and not (term or trunc)
        assert "Accessibility tree:" in obs
    finally:
        env.close()


def test_iframe_actions_and_iframe_removed_or_navigating_during_a_step():
    files = {
        "index.html": page(
            '<iframe id="f" src="frame.html"></iframe><button id="rm">remove</button><button id="nav">nav</button>',
            "document.getElementById('rm').onclick = () => document.getElementById('f').remove();"
            "document.getElementById('nav').onclick = () => { document.getElementById('f').src = 'frame2.html'; };"
            "window.arlState = () => { const f = document.getElementById('f');"
            " return {inner: f && f.contentWindow.clicked ? f.contentWindow.clicked : 0, has: !!f}; };"),
        "frame.html": page('<button id="inner">inner</button>',
                           "window.clicked = 0; document.getElementById('inner').onclick = () => clicked++;"),
        "frame2.html": page('<button id="other">other</button>', ""),
    }
    env = WebEnv(PageTask(files))
    try:
        obs, _ = env.reset(seed=0)
        inner = bid_of(env, "#inner")
        assert inner[0] != "a", "the frame's document has its own prefix"
        assert f"[{inner}] button 'inner'" in obs
        _, _, _, _, info = env.step(f'click("{inner}")')
        assert info["last_action_error"] is None and env._state["inner"] == 1
        obs, _, term, trunc, info = env.step(f'click("{bid_of(env, "#nav")}")')  # the iframe navigates
        assert not (term or trunc) and "Accessibility tree:" in obs
        env.step("noop(wait_ms=100)")
        assert "other" in env._snap.tree
        _, _, _, _, info = env.step(f'click("{inner}")')
        assert "stale element id" in info["last_action_error"]
        obs, _, term, trunc, info = env.step(f'click("{bid_of(env, "#rm")}")')  # the iframe is removed
        assert not (term or trunc) and env._state["has"] is False and "iframe" not in env._snap.tree
        obs, _, _, _, info = env.step("noop()")
        assert info["last_action_error"] is None
    finally:
        env.close()


def test_network_is_blocked_except_the_task_files():
    files = {"index.html": page(
        '<img src="http://example.com/x.png"><p id="s">?</p>',
        "window.res = {};"
        "const tryFetch = (k, u) => fetch(u).then(r => r.text().then(t => res[k] = r.status + ':' + t.slice(0, 20)),"
        " e => res[k] = 'blocked');"
        "tryFetch('ext', 'http://example.com/'); tryFetch('ip', 'http://1.1.1.1/'); tryFetch('local', 'data.txt');"
        "tryFetch('other', '/click-button/index.html'); tryFetch('https', 'https://arl.test/test-page/data.txt');"
        "window.arlState = () => ({res: window.res});"),
        "data.txt": "hello data"}
    env = WebEnv(PageTask(files))
    try:
        env.reset(seed=0)
        for _ in range(20):
            env.step("noop(wait_ms=50)")
            if len(env._state["res"]) == 5:
                break
        res = env._state["res"]
        assert res["local"] == "200:hello data"
        assert res["ext"] == "blocked" and res["ip"] == "blocked" and res["https"] == "blocked"
        assert res["other"].startswith("404"), "another task's files are not served"
    finally:
        env.close()


def test_popup_tab_focus_dialog_and_answer():
    files = {
        "index.html": page('<a id="pop" href="tab.html" target="_blank">open</a><button id="al">alert</button>',
                           "document.getElementById('al').onclick = () => { alert('hi there'); window.alerted = 1; };"
                           "window.arlState = () => ({alerted: !!window.alerted});"),
        "tab.html": page("<p>second tab</p>", "window.arlState = () => ({tab: 2});"),
    }
    env = WebEnv(PageTask(files))
    try:
        env.reset(seed=0)
        env.step(f'click("{bid_of(env, "#pop")}")')
        assert env._state["tabs"] == ["/index.html", "/tab.html"] and env._state["active_tab"] == 1
        assert env._state.get("tab") == 2
        obs, *_ = env.step("tab_focus(0)")
        assert env._state["active_tab"] == 0 and "1: 'Test'" in obs
        obs, *_ = env.step(f'click("{bid_of(env, "#al")}")')
        assert "alert: 'hi there'" in obs and env._state["alerted"] is True
        obs, reward, term, trunc, info = env.step('answer("done")')
        assert term and not trunc and not info["success"] and info["reward_components"]["task"] == 0.0
    finally:
        env.close()


def test_script_popup_is_observed_without_waiting_for_a_navigation(monkeypatch):
    """A tab opened by ``window.open(url)`` reuses its initial about:blank window for ``url``: the helper state
    of about:blank (its ``beforeunload`` had fired) must not make every snapshot of the popup wait for a navigation
    that never comes (it stalled each such step by NAVIGATION_WAIT_S). With that wait longer than the step timeout,
    a stale flag is a hung step (env_error); a form submitted inside the popup is still followed to its next page."""
    import arl_envs.envs.web.session as web_session

    monkeypatch.setattr(web_session, "NAVIGATION_WAIT_S", 1000.0)
    files = {
        "index.html": page('<button id="wo">open</button>',
                           "document.getElementById('wo').onclick = () => { window.open('tab.html'); };"
                           "window.arlState = () => ({page: 'index'});"),
        "tab.html": page('<form action="done.html"><button id="go" type="submit">go</button></form>',
                         "window.arlState = () => ({page: 'tab'});"),
        "done.html": page("<p>done</p>", "window.arlState = () => ({page: 'done'});"),
    }
    env = WebEnv(PageTask(files), action_timeout_s=1.0, step_timeout_s=4.0)
    try:
        env.reset(seed=0)
        _, _, term, trunc, info = env.step(f'click("{bid_of(env, "#wo")}")')
        assert not (term or trunc) and "env_error" not in info, info.get("env_error")
        assert env._state["page"] == "tab" and env._state["active_tab"] == 1
        _, _, term, trunc, info = env.step(f'click("{bid_of(env, "#go")}")')
        assert not (term or trunc) and "env_error" not in info, info.get("env_error")
        assert env._state["page"] == "done" and env._state["tabs"][1].startswith("/done.html")
    finally:
        env.close()


def test_screenshot_modes():
    env = WebEnv("click-button", obs_mode="axtree+screenshot", render_mode="rgb_array", viewport=(640, 480))
    try:
        _, info = env.reset(seed=1)
        assert info["screenshot"][:8] == b"\x89PNG\r\n\x1a\n"
        _, _, _, _, info = env.step("noop()")
        assert info["screenshot"][:8] == b"\x89PNG\r\n\x1a\n"
        frame = env.render()
        assert frame.shape == (480, 640, 3) and frame.dtype == np.uint8 and frame.std() > 0
    finally:
        env.close()


def test_expert_solves_in_json_format():
    env = WebEnv("enter-text", action_format="json")
    try:
        env.reset(seed=3)
        for _ in range(5):
            a = env.expert_action()
            assert a.startswith("<tool_call>")
            _, reward, term, trunc, info = env.step(a)
            if term or trunc:
                break
        assert term and info["success"] and reward > 1.0
    finally:
        env.close()


def test_same_seed_same_instance_and_observations():
    def run() -> list[str]:
        env = WebEnv("enter-text")
        try:
            obs, info = env.reset(seed=42)
            out = [obs, info["task_id"]]
            for _ in range(3):
                obs, _, term, trunc, _ = env.step(env.expert_action())
                out.append(obs)
                if term or trunc:
                    break
            out.append(env.reset()[0])  # the next episode too
            return out
        finally:
            env.close()

    a, b = run(), run()
    assert a == b
    env = WebEnv("enter-text")
    try:
        assert env.reset(seed=43)[0] != a[0]
    finally:
        env.close()


def _count_browser_objects() -> tuple[int, int]:
    host = get_host()
    contexts = host.call(_contexts_and_pages(host))
    return contexts


async def _contexts_and_pages(host) -> tuple[int, int]:
    ctxs = host.browser.contexts
    return len(ctxs), sum(len(c.pages) for c in ctxs)


@pytest.mark.slow
def test_fifty_resets_leak_no_contexts_pages_or_processes():
    env = WebEnv("click-button")
    try:
        env.reset(seed=0)
        env.step(env.expert_action())
        before = (_count_browser_objects(), len(chromium_pids()))
        for i in range(50):
            env.reset(seed=i)
            if i % 10 == 0:  # open a popup tab now and then: the next reset must close it
                env._host.call(env._page.evaluate("() => { window.open('index.html'); }"))
                env.step("noop()")
        env.step("noop()")
        after = (_count_browser_objects(), len(chromium_pids()))
        assert after[0] == before[0], f"contexts/pages before {before[0]}, after {after[0]}"
        assert after[1] <= before[1], f"chromium processes before {before[1]}, after {after[1]}"
    finally:
        env.close()


@pytest.mark.slow
def test_killing_chromium_mid_episode_is_env_error_then_fresh_browser():
    env = WebEnv("enter-text")
    try:
        env.reset(seed=0)
        env.step(env.expert_action())
        pid = browser_main_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        obs, reward, term, trunc, info = env.step('click("a1")')
        assert trunc and not term and "env_error" in info and not info["success"]
        assert info["reward_components"].get("task", 0.0) == 0.0
        obs, info = env.reset(seed=0)  # a fresh browser
        assert browser_main_pid() not in (None, pid)
        for _ in range(4):
            _, _, term, trunc, info = env.step(env.expert_action())
            if term or trunc:
                break
        assert info["success"]
    finally:
        env.close()


def _solve(env: WebEnv, seed: int) -> bool:
    env.reset(seed=seed)
    for _ in range(env.max_turns):
        _, _, term, trunc, info = env.step(env.expert_action())
        if term or trunc:
            return bool(info["success"])
    return False


def test_reset_and_step_inside_asyncio_run():
    env = WebEnv("enter-text")

    async def main() -> bool:
        await asyncio.sleep(0)
        ok = _solve(env, 5)  # a blocking call from inside the running loop
        await asyncio.sleep(0)
        return ok

    try:
        assert asyncio.run(main())
    finally:
        env.close()


def test_two_threads_at_once():
    envs = [WebEnv("enter-text"), WebEnv("click-button")]
    results: dict[int, Any] = {}
    barrier = threading.Barrier(2)

    def work(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = [_solve(envs[i], s) for s in range(3)]
            results[f"goal{i}"] = envs[i]._instance.utterance
            results[f"obs{i}"] = envs[i]._snap.tree
        except BaseException as exc:  # reported below
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert results[0] == [True] * 3 and results[1] == [True] * 3, results
        assert "Submitted" in results["obs0"] and "You clicked" in results["obs1"]
    finally:
        for e in envs:
            e.close()


@pytest.mark.slow
def test_make_vec_async_each_worker_has_its_own_observation():
    from arl_envs.vector import make_vec

    vec = make_vec("arl/web.click-button-v0", 4, mode="async")
    try:
        obs, infos = vec.reset(seed=10)
        assert len(obs) == 4
        expected = []
        for i in range(4):
            env = WebEnv("click-button")
            try:
                expected.append(env.reset(seed=10 + i)[0])
            finally:
                env.close()
        assert list(obs) == expected
        assert len({o.split("Goal: ", 1)[1].split("\n", 1)[0] for o in obs}) > 1 or len(set(obs)) == 4
        obs2, rewards, term, trunc, infos = vec.step(["noop()"] * 4)
        for i in range(4):
            assert expected[i].split("\nGoal: ")[1].split("\n")[0] in obs2[i]
    finally:
        vec.close()


def test_action_timeout_is_an_error_observation():
    files = {"index.html": page('<button id="go">busy</button>',
                                "document.getElementById('go').onclick = () => {"
                                " const t = performance.now(); while (performance.now() - t < 1500) {} window.done = 1; };"
                                "window.arlState = () => ({done: !!window.done});")}
    env = WebEnv(PageTask(files), action_timeout_s=0.3)
    try:
        env.reset(seed=0)
        obs, _, term, trunc, info = env.step(f'click("{bid_of(env, "#go")}")')
        assert "timed out after 0.3 s" in info["last_action_error"] and not (term or trunc)
        assert "Accessibility tree:" in obs
        _, _, _, _, info = env.step("noop()")  # the episode goes on
        assert info["last_action_error"] is None
    finally:
        env.close()


def test_check_select_and_drag():
    files = {"index.html": page(
        '<input type="checkbox" id="c"><label for="c">box</label>'
        '<select id="s"><option value="1">One</option><option value="2">Two</option></select>'
        '<div id="src" draggable="true" style="width:40px;height:40px;background:red">drag</div>'
        '<div id="dst" style="width:80px;height:80px;background:blue;margin-top:20px">drop</div>',
        "document.getElementById('dst').addEventListener('dragover', e => e.preventDefault());"
        "document.getElementById('dst').addEventListener('drop', e => { e.preventDefault(); window.dropped = 1; });"
        "window.arlState = () => ({c: document.getElementById('c').checked, s: document.getElementById('s').value,"
        " dropped: !!window.dropped});")}
    env = WebEnv(PageTask(files))
    try:
        env.reset(seed=0)
        c, s, src, dst = (bid_of(env, x) for x in ("#c", "#s", "#src", "#dst"))
        env.step(f'check("{c}")')
        assert env._state["c"] is True
        env.step(f'check("{c}")')  # already ticked: stays ticked
        assert env._state["c"] is True
        env.step(f'uncheck("{c}")')
        assert env._state["c"] is False
        env.step(f'select_option("{s}", "Two")')
        assert env._state["s"] == "2"
        _, _, _, _, info = env.step(f'select_option("{s}", "Three")')
        assert "no option" in info["last_action_error"] and env._state["s"] == "2"
        _, _, _, _, info = env.step(f'check("{s}")')
        assert "not a checkbox" in info["last_action_error"]
        env.step(f'drag("{src}", "{dst}")')
        assert env._state["dropped"] is True
    finally:
        env.close()

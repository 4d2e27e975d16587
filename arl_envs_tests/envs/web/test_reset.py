"""In-place episode restart (``WebEnv.reset`` without a page load), with a real headless Chromium.

What must hold: a restarted episode is indistinguishable from a freshly loaded one with the same seed (same
observations, same page state, for the same actions); nothing of the previous episode survives (DOM, JS globals,
storage, cookies, listeners, observers, timers, animation frames, focus, scroll); ids of the previous episode are
errors; and whenever a restart cannot be trusted (first episode, navigation, a second tab, a dialog, requests,
history, a task that asks for it, a page whose scripts cannot run twice) the env reloads instead.

Skipped (with the reason) only when Playwright, Chromium or the miniwob package is missing on the machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium, hold_browser  # noqa: E402
from arl_envs.envs.web.env import WebEnv  # noqa: E402
from arl_envs.envs.web.task import Score, TaskInstance, WebTask, act, html_page  # noqa: E402

try:
    find_chromium()
except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
    pytest.skip(f"no Chromium on this machine: {exc}", allow_module_level=True)

#: Everything a page can carry over from one episode to the next, set up by one click on "Leak".
_LEAK_JS = """
let keys = 0;
document.getElementById('inp').addEventListener('keydown', () => { keys++; });
document.getElementById('leak').addEventListener('click', () => {
  window.leakGlobal = 'x';
  window.leakCounter = (window.leakCounter || 0) + 1;
  localStorage.setItem('leak', '1'); sessionStorage.setItem('leak', '1'); document.cookie = 'leak=1; path=/';
  document.addEventListener('keydown', () => { window.docKeys = (window.docKeys || 0) + 1; });
  window.addEventListener('keydown', () => { window.winKeys = (window.winKeys || 0) + 1; }, true);
  window.onkeyup = () => { window.winKeyups = (window.winKeyups || 0) + 1; };
  new MutationObserver(() => { window.mutations = (window.mutations || 0) + 1; })
    .observe(document.documentElement, {attributes: true, childList: true, subtree: true});
  setInterval(() => { window.ticks = (window.ticks || 0) + 1; }, 20);
  setTimeout(() => { localStorage.setItem('late', '1'); document.title = 'late'; }, 400);
  requestAnimationFrame(function f() { window.frameCount = (window.frameCount || 0) + 1; requestAnimationFrame(f); });
  document.documentElement.setAttribute('data-leak', '1');
  document.documentElement.classList.add('leaky');
  document.title = 'Leaked';
  document.head.appendChild(Object.assign(document.createElement('style'), {textContent: 'h1{color:red}'}));
  document.documentElement.appendChild(Object.assign(document.createElement('aside'), {textContent: 'outside'}));
  document.getElementById('inp').value = 'typed';
  document.getElementById('inp').focus();
  window.scrollTo(0, 900);
});
window.arlState = () => ({
  leakGlobal: typeof window.leakGlobal, leakCounter: window.leakCounter || 0,
  local: localStorage.getItem('leak'), late: localStorage.getItem('late'), session: sessionStorage.getItem('leak'),
  cookie: document.cookie, docKeys: window.docKeys || 0, winKeys: window.winKeys || 0,
  winKeyups: window.winKeyups || 0, mutations: window.mutations || 0, ticks: window.ticks || 0,
  frames: window.frameCount || 0, keys: keys, title: document.title,
  htmlAttrs: Array.from(document.documentElement.attributes).map(a => a.name + '=' + a.value).join(' '),
  styles: document.querySelectorAll('style').length, htmlChildren: document.documentElement.children.length,
  focused: document.activeElement ? (document.activeElement.id || document.activeElement.tagName) : null,
  scrollY: Math.round(window.scrollY), value: document.getElementById('inp').value,
  word: document.getElementById('word').textContent,
});
"""


class LeakTask(WebTask):
    """A test page that tries every way of carrying state into the next episode (one click on "Leak").

    The instance (``word``) comes from the seed, so episodes differ. ``extra`` adds page code (other fallbacks).
    """

    name = "test-leak"
    description = "test page"
    n_subgoals = 1
    max_turns = 50

    def __init__(self, extra: str = "", raw_index: str | None = None):
        self.extra = extra
        self.raw_index = raw_index

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        word = ["amber", "basil", "cedar", "delta", "ember", "fjord"][int(rng.integers(6))] + str(rng.integers(100))
        body = (
            f'<h1 id="word">{word}</h1><input id="inp"><button id="leak">Leak</button>'
            '<a id="away" href="page2.html">away</a><div style="height:3000px">tall</div>'
        )
        index = self.raw_index if self.raw_index is not None else html_page("Leak", body, _LEAK_JS + self.extra)
        files = {
            "index.html": index,
            "page2.html": html_page("Two", "<p>two</p>", "window.arlState = () => ({});"),
            "data.json": "{}",
        }
        return TaskInstance(goal={"word": word}, utterance="Leak.", files=files)

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        return Score(done=False, success=False)

    def expert(self, view, goal) -> str:
        return act("click", view.bid("#leak"))


class ReloadingLeakTask(LeakTask):
    restart_in_place = False


class FallbackLeakTask(LeakTask):
    name = "test-leak-fallbacks"  # no pooled page of an earlier test's env to restart in


@pytest.fixture(scope="module", autouse=True)
def _one_browser():
    with hold_browser():
        yield


def _bid(env: WebEnv, selector: str) -> str:
    found = env._host.call(env._resolve_async(selector))
    assert found, f"no bid for {selector}"
    return found[0]


def _after_reset(env: WebEnv, seed: int) -> list[Any]:
    """The new episode's observations and page states for a fixed action sequence (no leak click)."""
    obs, _ = env.reset(seed=seed)
    trace: list[Any] = [obs, dict(env._state)]
    for action in ("noop(wait_ms=500)", act("press", _bid(env, "#inp"), "k"), act("fill", _bid(env, "#inp"), "v")):
        obs, *_ = env.step(action)
        trace += [obs, dict(env._state)]
    return trace


def test_restarted_episode_equals_a_fresh_one_and_nothing_leaks():
    fresh_env, env = WebEnv(LeakTask()), WebEnv(LeakTask())
    try:
        expected = _after_reset(fresh_env, seed=3)
        assert fresh_env.last_reset_mode == "reload"
        clean = expected[1]
        assert clean["leakGlobal"] == "undefined" and clean["local"] is None and clean["cookie"] == ""
        assert expected[-1]["keys"] == 1 and expected[-1]["docKeys"] == 0

        env.reset(seed=1)
        old_word_bid = _bid(env, "#word")
        env.step(act("click", _bid(env, "#leak")))
        env.step(act("press", _bid(env, "#inp"), "x"))
        leaked = dict(env._state)  # the leaks are real in the episode that made them
        assert leaked["leakGlobal"] == "string" and leaked["local"] == "1" and leaked["cookie"] == "leak=1"
        assert leaked["docKeys"] == 1 and leaked["winKeys"] == 1 and leaked["focused"] == "inp"
        assert leaked["scrollY"] > 0 and leaked["title"] in ("Leaked", "late") and "data-leak" in leaked["htmlAttrs"]

        got = _after_reset(env, seed=3)
        assert env.last_reset_mode == "restart", env.last_reset_reason
        for i, (a, b) in enumerate(zip(expected, got)):
            assert a == b, f"item {i} of the restarted episode differs from a fresh one:\n{a}\n!=\n{b}"

        # an id of the previous episode is an error observation and acts on nothing
        obs, _, _, _, info = env.step(act("click", old_word_bid))
        assert "earlier episode" in info["last_action_error"], info["last_action_error"]
        assert env._state["leakCounter"] == 0
    finally:
        fresh_env.close()
        env.close()


#: (name, page code or action that makes the next reset reload, the reason's words)
_FALLBACKS = [
    ("navigation", "go-away", "navigated away"),
    ("second tab", "() => { window.open('page2.html'); }", "second tab"),
    ("dialog", "() => { alert('hi'); }", "dialog"),
    ("request", "() => fetch('data.json')", "requests"),
    ("history", "() => { history.replaceState({x: 1}, ''); }", "history"),
]


def test_untrusted_restarts_reload_and_the_next_episode_restarts_again():
    env = WebEnv(FallbackLeakTask())
    try:
        env.reset(seed=0)
        assert env.last_reset_mode == "reload" and "first episode" in env.last_reset_reason
        for name, how, reason in _FALLBACKS:
            env.reset(seed=0)
            assert env.last_reset_mode == "restart", (name, env.last_reset_reason)
            if how == "go-away":
                env.step(act("click", _bid(env, "#away")))
                assert env._state["url"] == "/page2.html"
            else:
                env._host.call(env._page.evaluate(how))
                env.step("noop(wait_ms=50)")
            obs, _ = env.reset(seed=0)
            assert env.last_reset_mode == "reload" and reason in env.last_reset_reason, (name, env.last_reset_reason)
            assert env._state["local"] is None and env._state["url"] == "/index.html" and len(env._pages) == 1
    finally:
        env.close()


def test_a_task_can_ask_for_a_reload_and_a_page_that_cannot_rerun_is_reloaded():
    env = WebEnv(ReloadingLeakTask())
    try:
        for seed in (0, 1):
            env.reset(seed=seed)
            assert env.last_reset_mode == "reload"
        assert "reloads its page every episode" in env.last_reset_reason
    finally:
        env.close()
    # top-level `let` outside html_page's function scope: running the script twice in one document throws
    raw = ("<!DOCTYPE html><html><head><title>Raw</title></head><body><p id='p'>p</p>"
           "<script>let n = 1; window.arlState = () => ({n: n, local: null, url: null});</script></body></html>")
    env = WebEnv(LeakTask(raw_index=raw))
    try:
        env.reset(seed=0)
        obs, _ = env.reset(seed=1)
        assert env.last_reset_mode == "reload" and "script error" in env.last_reset_reason, env.last_reset_reason
        assert env._state["n"] == 1 and "[" in obs
    finally:
        env.close()


def test_own_tasks_restart_in_place_with_fresh_observations():
    """A few of our tasks (single- and multi-page): expert play after a restart equals play after a fresh load."""
    for name in ("click-button", "fix-form", "login"):
        fresh_env, env = WebEnv(name), WebEnv(name)
        try:
            obs, _ = fresh_env.reset(seed=5)
            expected, actions = [obs], []
            for _ in range(fresh_env.max_turns):
                actions.append(fresh_env.expert_action())
                obs, _, term, trunc, info = fresh_env.step(actions[-1])
                expected.append(obs)
                if term or trunc:
                    break
            assert info["success"], name
            env.reset(seed=6)
            env.step(env.expert_action())  # change the page (login: still on the sign-in page)
            got = [env.reset(seed=5)[0]]
            assert env.last_reset_mode == "restart", (name, env.last_reset_reason)
            got += [env.step(a)[0] for a in actions]
            assert got == expected, name
        finally:
            fresh_env.close()
            env.close()


def test_miniwob_restarts_through_its_core_or_reloads_when_work_is_pending():
    pytest.importorskip("miniwob", reason="the miniwob package is not installed (pip install 'arl-envs[web]')")
    from arl_envs.envs.web.miniwob import MiniWoBEnv

    fresh_env, env = MiniWoBEnv("click-checkboxes"), MiniWoBEnv("click-checkboxes")
    try:
        obs, _ = fresh_env.reset(seed=4)
        expected, actions = [obs], []
        for _ in range(12):
            actions.append(fresh_env.expert_action())
            obs, _, term, trunc, info = fresh_env.step(actions[-1])
            expected.append(obs)
            if term or trunc:
                break
        assert info["success"]
        env.reset(seed=2)
        env.step(env.expert_action())
        got = [env.reset(seed=4)[0]]
        assert env.last_reset_mode == "restart", env.last_reset_reason
        got += [env.step(a)[0] for a in actions]
        assert got == expected
    finally:
        fresh_env.close()
        env.close()
    # jQuery UI's accordion leaves document listeners behind: the page's own restart is not trusted there
    env = MiniWoBEnv("click-collapsible-2-nodelay")
    try:
        env.reset(seed=0)
        env.reset(seed=1)
        assert env.last_reset_mode == "reload" and "listener" in env.last_reset_reason, env.last_reset_reason
    finally:
        env.close()

"""Our hand-written web tasks (``arl_envs/envs/web/tasks``, issue 11 item 4), in a real headless Chromium.

For every task: the same seed gives the same instance (files, goal, utterance) and the same first observation;
validators never raise on odd states; a WRONG end state reached through real actions (the task's own expert
driven by a perturbed goal: the runner-up, one checkbox short, a namesake, a wrong quantity...) is never success
and gives task reward 0; and (slow) the expert solves seeds 0-1 with each sub-goal credited at most once (seeds 0-4: the web
conformance test).
Skipped (with the reason) only when Playwright or Chromium is missing.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from arl_envs.envs.web.task import REGISTRY, ExpertView, Score, TaskInstance, WebTask
from arl_envs.envs.web.tasks import load_all

#: Our tasks (W1's click-button and enter-text are tested with the env).
OWN_TASKS = (
    "click-link",
    "tick-checkboxes",
    "login",
    "select-dropdown",
    "choose-date",
    "fix-form",
    "search-list",
    "tab-info",
    "email-inbox",
    "shop",
    "book-flight",
    "sort-table",
    "read-page",
    "pick-largest",
    "menu-navigate",
)


def _setup(name: str, seed: int) -> TaskInstance:
    load_all()
    return REGISTRY[name]().setup(np.random.default_rng(seed))


# ----------------------------------------------------------------------------- no browser needed
@pytest.mark.parametrize("name", OWN_TASKS)
def test_same_seed_same_instance_and_seeds_differ(name: str) -> None:
    a, b = _setup(name, 7), _setup(name, 7)
    assert a == b
    others = [_setup(name, s) for s in range(5)]
    assert len({(o.utterance, repr(sorted(o.goal.items()))) for o in others}) >= 4, "instances barely vary"


@pytest.mark.parametrize("name", OWN_TASKS)
def test_pages_are_self_contained(name: str) -> None:
    inst = _setup(name, 1)
    assert "index.html" in inst.files
    for path, content in inst.files.items():
        assert isinstance(content, str) and "window.arlState" in content, path
        # no external resources: no absolute URLs in src/href, no protocol-relative ones
        assert not re.search(r"""(?:src|href)\s*=\s*["'](?:[a-z]+:)?//""", content, re.IGNORECASE), path


@pytest.mark.parametrize("name", OWN_TASKS)
def test_validate_tolerates_odd_states(name: str) -> None:
    task = REGISTRY[name]()
    goal = _setup(name, 2).goal
    for state in ({}, {"page_ok": False, "url": "/", "tabs": [], "active_tab": 0},
                  {"page": "nonsense", "url": "/x", "checked": None, "values": 3, "sent": "x"}):
        score = task.validate(state, goal, None)
        assert isinstance(score, Score) and not score.success


# ----------------------------------------------------------------------------- browser tests
playwright = pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")

from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium, hold_browser  # noqa: E402
from arl_envs.envs.web.env import WebEnv  # noqa: E402

try:
    find_chromium()
except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
    pytest.skip(f"no Chromium on this machine: {exc}", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def _one_browser():
    with hold_browser():
        yield


class Saboteur(WebTask):
    """Wraps a task: the same pages and validator, but its expert acts for a perturbed (wrong) goal."""

    def __init__(self, inner: WebTask, perturb: Callable[[dict[str, Any], TaskInstance], dict[str, Any]]):
        self.inner, self.perturb = inner, perturb
        self.name, self.description = inner.name, inner.description
        self.max_turns, self.n_subgoals = inner.max_turns, inner.n_subgoals
        self._instance: TaskInstance | None = None

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        self._instance = self.inner.setup(rng)
        return self._instance

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        return self.inner.validate(state, goal, answer)

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        assert self._instance is not None
        return self.inner.expert(view, self.perturb(copy.deepcopy(goal), self._instance))


def _other_option(inst: TaskInstance, field: str, current: str) -> str:
    html = str(inst.files["index.html"])
    block = re.search(rf'<select id="{field}">(.*?)</select>', html).group(1)
    opts = [o for o in re.findall(r"<option>(.*?)</option>", block) if not o.startswith("--")]
    return next(o for o in opts if o != current)


def _p_checkboxes(g, inst):
    g["targets"] = g["targets"][:-1]  # most but not all of the requested boxes
    return g


def _p_login(g, inst):
    g["url"] = "/app/reports.html" if g["url"] != "/app/reports.html" else "/app/reports/viewed.html"
    return g


def _p_dropdown(g, inst):
    f = min(g["targets"])
    g["targets"][f] = _other_option(inst, f, g["targets"][f])
    return g


def _p_date(g, inst):
    d = dt.date.fromisoformat(g["date"])
    g["date"] = (d + dt.timedelta(days=1 if d.day == 1 else -1)).isoformat()
    return g


def _p_fix_form(g, inst):
    g["person"]["city"] = g["person"]["city"] + "ville"  # valid for the page, wrong for the goal
    return g


def _p_search(g, inst):
    g["id"] = g["namesakes"][0]
    g["url"] = f"/profile.html?id={g['id']}"
    return g


def _p_tab_info(g, inst):
    g["answer"] = str(int(g["answer"].split("|OR|")[0]) + 1)
    return g


def _p_email(g, inst):
    g["id"] = g["decoy"]  # the same sender's other email
    return g


def _p_shop(g, inst):
    pid = min(g["items"])
    g["items"][pid] += 1
    return g


def _p_flight(g, inst):
    g["flight"] = g["runner_up"]
    return g


def _p_sort(g, inst):
    g["dir"] = "ascending" if g["dir"] == "descending" else "descending"  # reports the other end of the column
    return g


def _p_read(g, inst):
    g["answer"], g["hidden"] = g["distractor"], True
    return g


def _p_pick(g, inst):
    g["id"] = g["runner_up"]  # the second largest (smallest)
    return g


def _p_menu(g, inst):
    from arl_envs.envs.web.tasks.menu_navigate import MENU, _slug

    other = next(t for t in MENU if t != g["top"] and g["entry"] in MENU[t])
    g["top"], g["url"] = other, f"/{_slug(other)}/{_slug(g['entry'])}.html"
    return g


PERTURB: dict[str, Callable[[dict[str, Any], TaskInstance], dict[str, Any]]] = {
    "click-link": lambda g, inst: {**g, "id": str((int(g["id"]) + 1) % 12)},
    "tick-checkboxes": _p_checkboxes,
    "login": _p_login,
    "select-dropdown": _p_dropdown,
    "choose-date": _p_date,
    "fix-form": _p_fix_form,
    "search-list": _p_search,
    "tab-info": _p_tab_info,
    "email-inbox": _p_email,
    "shop": _p_shop,
    "book-flight": _p_flight,
    "sort-table": _p_sort,
    "read-page": _p_read,
    "pick-largest": _p_pick,
    "menu-navigate": _p_menu,
}


def _run(env: WebEnv, seed: int) -> tuple[dict[str, Any], list[dict[str, float]], str]:
    obs, _ = env.reset(seed=seed)
    comps: list[dict[str, float]] = []
    info: dict[str, Any] = {}
    for _ in range(env.max_turns):
        obs, _, term, trunc, info = env.step(env.expert_action())
        assert info.get("env_error") is None, info["env_error"]
        assert info.get("action_error") is None, info["action_error"]
        comps.append(info["reward_components"])
        if term or trunc:
            break
    return info, comps, obs


def test_perturbations_cover_every_task() -> None:
    assert set(PERTURB) == set(OWN_TASKS)


@pytest.mark.parametrize("name", OWN_TASKS)
def test_same_seed_same_observation_and_wrong_end_state_fails(name: str) -> None:
    task = Saboteur(REGISTRY[name](), PERTURB[name])
    env = WebEnv(task=task)
    try:
        first, info1 = env.reset(seed=11)
        other, _ = env.reset(seed=12)
        again, info2 = env.reset(seed=11)
        assert first == again and info1["task_id"] == info2["task_id"]
        assert other != first
        info, comps, _ = _run(env, 0)
        assert info["success"] is False, f"{name}: a wrong end state counted as success"
        assert all(c["task"] == 0.0 for c in comps)
        assert comps and len(comps) < env.max_turns, f"{name}: the wrong end state did not end the episode"
    finally:
        env.close()


@pytest.mark.parametrize("name", ["tick-checkboxes"])
def test_an_extra_checkbox_fails_too(name: str) -> None:
    def extra(g: dict[str, Any], inst: TaskInstance) -> dict[str, Any]:
        labels = re.findall(r'type="checkbox" value="([^"]+)"', str(inst.files["index.html"]))
        g["targets"] = g["targets"] + [next(lab for lab in labels if lab not in g["targets"])]
        return g

    env = WebEnv(task=Saboteur(REGISTRY[name](), extra))
    try:
        info, comps, _ = _run(env, 3)
        assert info["success"] is False and all(c["task"] == 0.0 for c in comps)
    finally:
        env.close()


#: Seeds of the progress-accounting run below; "the expert solves seeds 0-4" itself is checked for every id by
#: arl_envs_tests/envs/web/test_web_conformance.py (check_conformance), so it is not run twice in CI.
EXPERT_SEEDS = (0, 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", OWN_TASKS)
def test_expert_solves_and_progress_is_credited_once(name: str) -> None:
    env = WebEnv(task=name)
    n = env.task.n_subgoals
    weight = env.reward_weights["progress"]
    try:
        for seed in EXPERT_SEEDS:
            info, comps, obs = _run(env, seed)
            assert info["success"] is True, f"{name} seed {seed} not solved:\n{obs}"
            assert comps[-1]["task"] == 1.0 and sum(c["task"] for c in comps) == 1.0
            progress = [c.get("progress", 0.0) for c in comps]
            # each sub-goal is credited once: never more than the full progress weight in total
            assert sum(progress) <= weight + 1e-9 and all(p >= 0 for p in progress)
            assert sum(progress) >= weight / n - 1e-9, f"{name}: the expert's run reached no sub-goal"
    finally:
        env.close()


def test_sort_table_second_largest_answer_fails() -> None:
    """Sorting right and then reporting the runner-up (the second largest / smallest) is task 0, not success."""
    env = WebEnv(task="sort-table")
    try:
        env.reset(seed=4)
        goal = env._instance.goal
        info: dict[str, Any] = {}
        for _ in range(3):
            action = env.expert_action()
            if action.startswith("answer("):
                break
            _, _, term, _, info = env.step(action)
            assert not term
        assert env._state.get("shown", [None, None])[1] == goal["runner_up"]
        _, _, term, _, info = env.step(f'answer("{goal["runner_up"]}")')
        assert term and info["success"] is False and info["reward_components"]["task"] == 0.0
    finally:
        env.close()


def test_most_but_not_all_checkboxes_is_task_zero() -> None:
    """Seed 4 asks for 4 boxes: ticking exactly 3 of them (nothing else) and submitting is task 0, not success."""
    env = WebEnv(task=Saboteur(REGISTRY["tick-checkboxes"](), _p_checkboxes))
    try:
        env.reset(seed=4)
        goal = env._instance.goal
        assert len(goal["targets"]) == 4
        info, comps, _ = _run(env, 4)
        assert env._state["submitted"] is not None and len(env._state["submitted"]) == 3
        assert set(env._state["submitted"]) < set(goal["targets"])
        assert info["success"] is False and sum(c["task"] for c in comps) == 0.0
    finally:
        env.close()


def test_pick_largest_second_largest_is_task_zero() -> None:
    """Choosing the runner-up (second largest / smallest, close in value) is task 0, not success."""
    env = WebEnv(task=Saboteur(REGISTRY["pick-largest"](), _p_pick))
    try:
        env.reset(seed=0)
        goal = env._instance.goal
        info, comps, _ = _run(env, 0)
        assert env._state["chosen"] == goal["runner_up"] != goal["id"]
        assert info["success"] is False and sum(c["task"] for c in comps) == 0.0
    finally:
        env.close()

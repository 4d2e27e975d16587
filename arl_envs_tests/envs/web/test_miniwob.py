"""``arl/web.miniwob-v0``: the miniwob package's task pages on our Chromium backend, with a real headless Chromium.

CI cost: the conformance suite runs on the 4 tasks of :data:`CONFORMANCE_TASKS` (few fuzzed actions, one random
episode); every task with an expert (38) runs the suite's expert check (seeds 0-4, step invariants) in ONE shared
env; one task without an expert runs the suite to show that only the expert check is skipped; every listed task
is loaded once (slow).

Skipped (with the reason) only when Playwright, Chromium or the miniwob package is missing on the machine.
"""

from __future__ import annotations

import re
import time

import gymnasium as gym
import pytest

pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")
pytest.importorskip("miniwob", reason="the miniwob package is not installed (pip install 'arl-envs[web]')")

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.agents import ExpertAgent, RandomAgent, run_episode
from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium, hold_browser
from arl_envs.envs.web.miniwob import (
    MINIWOB_TASKS,
    SUCCESS_RAW_REWARD,
    MiniWoBEnv,
    UnknownMiniWoBTask,
    all_task_pages,
    build_page,
    miniwob_task_rows,
    survey_task,
)
from arl_envs.envs.web.miniwob_experts import EXPERTS
from arl_envs.envs.web.task import act
from arl_envs.registration import ENVS
from arl_envs.testing import check_conformance

try:
    find_chromium()
except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
    pytest.skip(f"no Chromium on this machine: {exc}", allow_module_level=True)

ENV_ID = "arl/web.miniwob-v0"
#: Tasks that run the whole conformance suite (every check, gymnasium's ``check_env`` included). Every expert
#: task's expert runs below, jQuery UI ones whose pages reload every episode included (click-dialog-2, ...).
CONFORMANCE_TASKS = ("click-checkboxes", "enter-text", "login-user", "click-test-2")
#: A task without an expert, for the skip-only-the-expert-check test.
NO_EXPERT_TASK = "click-color"
#: Fuzzed actions and random episodes per conformance run (CI cost; fuzz must still never raise).
N_FUZZ = 8
N_RANDOM_EPISODES = 1


@pytest.fixture(scope="module", autouse=True)
def _one_browser():
    with hold_browser():
        yield


# ------------------------------------------------------------------ the table (no browser)
def test_every_package_page_is_listed_and_counts_match_the_id_description() -> None:
    assert sorted(MINIWOB_TASKS) == all_task_pages()
    assert len(EXPERTS) >= 20 and set(EXPERTS) <= set(MINIWOB_TASKS)
    row = next(r for r in ENVS if r.id == ENV_ID)
    assert f"{len(MINIWOB_TASKS)} tasks, {len(EXPERTS)} with scripted experts" in row.description
    rows = miniwob_task_rows()
    assert [r["task"] for r in rows] == sorted(MINIWOB_TASKS)
    assert {r["task"] for r in rows if r["expert"]} == set(EXPERTS)
    assert set(CONFORMANCE_TASKS) <= set(EXPERTS) and NO_EXPERT_TASK not in EXPERTS


def test_cli_lists_every_task_with_its_expert_flag() -> None:
    from typer.testing import CliRunner

    from arl_envs.cli import app

    result = CliRunner().invoke(app, ["list", "--miniwob"], terminal_width=220)
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") >= 4}
    assert set(MINIWOB_TASKS) <= set(lines)
    assert "yes" in lines["click-checkboxes"].split("│")[2] and "-" in lines[NO_EXPERT_TASK].split("│")[2]


def test_build_page_seeds_starts_and_keeps_the_page_code() -> None:
    html = build_page("click-checkboxes", "arl-42")
    assert 'Math.seedrandom("arl-42:load")' in html and 'Math.seedrandom(SEED)' in html and '"arl-42"' in html
    assert '<meta charset="utf-8">' in html and "window.arlState" in html
    assert "../core/" not in html and 'src="core/core.js"' in html
    assert html.index("core/core.js") < html.index("arl-42:load") < html.index("window.arlState")
    assert "checkboxData.toclick" in html  # the page's own code is served unchanged


def test_unknown_task_is_a_clear_error() -> None:
    with pytest.raises(UnknownMiniWoBTask, match="click-checkboxes"):
        MiniWoBEnv("click-checkbox")
    with pytest.raises(UnknownMiniWoBTask):
        MiniWoBEnv("../core/core")


# ------------------------------------------------------------------ rewards: full, partial, wrong
def _names(utterance: str) -> list[str]:
    m = re.fullmatch(r"Select (.*) and click Submit\.", utterance)
    assert m, utterance
    return [] if m.group(1) == "nothing" else m.group(1).split(", ")


def _step(env: gym.Env, action: str):
    obs, reward, term, trunc, info = env.step(action)
    assert info["action_error"] is None and info["last_action_error"] is None, (action, info)
    return obs, reward, term, trunc, info


def test_partial_checkbox_reward_is_not_success_and_full_reward_is() -> None:
    env = gym.make(ENV_ID, task="click-checkboxes")
    try:
        raw = env.unwrapped
        for seed in range(40):  # an instance asking for 2+ of 3+ boxes: one box wrong is then 0 < raw < 1
            env.reset(seed=seed)
            want = _names(raw._state["utterance"])
            if len(want) >= 2 and len(raw._state["probe"]["labels"]) >= 3:
                break
        else:
            pytest.fail("no click-checkboxes instance with 2 of 3+ boxes requested in 40 seeds")
        # tick every requested box but the last one, then submit
        labels = {lab["text"]: lab["sel"] for lab in raw._state["probe"]["labels"]}
        for name in want[:-1]:
            _step(env, act("check", _bid_of(raw, f"{labels[name]} > input")))
        obs, _, term, trunc, info = _step(env, act("click", _bid_of(raw, "#subbtn")))
        assert term and not trunc
        page_raw = info["miniwob"]["raw_reward"]
        assert 0 < page_raw < 1, info["miniwob"]  # the page's own partial credit ...
        assert info["reward_components"]["task"] == 0.0 and info["success"] is False  # ... is never success
        assert "goal was not reached" in obs

        _, info = env.reset(seed=seed)
        ep = run_episode(env, ExpertAgent(env), seed=seed)
        assert ep.success and ep.infos[-1]["miniwob"]["raw_reward"] >= SUCCESS_RAW_REWARD
        assert ep.infos[-1]["reward_components"]["task"] == 1.0
    finally:
        env.close()


def _bid_of(raw: MiniWoBEnv, css: str) -> str:
    found = raw._host.call(raw._resolve_async(css), raw.step_timeout_s)
    assert found, css
    return found[0]


def test_wrong_text_gets_the_pages_negative_reward_and_no_success() -> None:
    env = gym.make(ENV_ID, task="enter-text")
    try:
        raw = env.unwrapped
        env.reset(seed=3)
        _step(env, act("fill", _bid_of(raw, "#tt"), "definitely not the name"))
        _, _, term, _, info = _step(env, act("click", _bid_of(raw, "#subbtn")))
        assert term and info["miniwob"]["raw_reward"] == -1.0
        assert info["success"] is False and info["reward_components"]["task"] == 0.0
    finally:
        env.close()


def test_random_agent_does_not_solve_enter_text() -> None:
    env = gym.make(ENV_ID, task="enter-text", max_turns=8)
    try:
        for seed in range(3):
            ep = run_episode(env, RandomAgent(env, seed=seed, p_tool_call=1.0), seed=seed)
            assert not ep.success
            assert ep.terminated or ep.truncated
    finally:
        env.close()


# ------------------------------------------------------------------ seeding, page details
def test_same_seed_same_instance_other_seed_other_instance() -> None:
    a, b = gym.make(ENV_ID, task="click-checkboxes-large"), gym.make(ENV_ID, task="click-checkboxes-large")
    try:
        oa, ia = a.reset(seed=5)
        ob, ib = b.reset(seed=5)
        assert oa == ob and ia["task_id"] == ib["task_id"]
        oc, _ = b.reset(seed=6)
        assert oc != oa
        # the same seed after other episodes: the page is reloaded, so history does not matter
        od, _ = b.reset(seed=5)
        assert od == oa
        # the goal line is the page's own utterance
        assert f"Goal: {a.unwrapped._state['utterance']}" in oa
    finally:
        a.close()
        b.close()


def test_unicode_page_is_decoded_as_utf8() -> None:
    env = gym.make(ENV_ID, task="unicode-test")
    try:
        obs, _ = env.reset(seed=0)
        assert re.search("ÖK|Cancél|♥♥♥|确定|取消|ヘルプ", obs, re.IGNORECASE), obs[-500:]
        assert "Ã" not in obs and "â™" not in obs
    finally:
        env.close()


@pytest.mark.slow
def test_page_timer_is_cancelled() -> None:
    """use-colorwheel's page ends its episode with reward -1 after 7 s (core.EPISODE_MAX_TIME = 7000); ours waits."""
    env = gym.make(ENV_ID, task="use-colorwheel")
    try:
        env.reset(seed=0)
        time.sleep(7.5)
        _, _, term, trunc, info = env.step("noop()")
        assert not term and not trunc
        assert info["miniwob"]["done"] is False and info["miniwob"]["raw_reward"] == 0
    finally:
        env.close()


# ------------------------------------------------------------------ conformance and experts
@pytest.mark.slow
@pytest.mark.parametrize("task", CONFORMANCE_TASKS)
def test_conformance(task: str) -> None:
    report = check_conformance(ENV_ID, env_kwargs={"task": task}, n_fuzz=N_FUZZ, n_random_episodes=N_RANDOM_EPISODES)
    assert report.passed, report.summary()
    assert not any(r.message.startswith("skipped") for r in report.results), report.summary()


@pytest.fixture(scope="module")
def shared_env():
    """One env for every expert task (the task is switched between tests; CI cost)."""
    env = MiniWoBEnv(sorted(EXPERTS)[0])
    yield env
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("task", sorted(EXPERTS))
def test_expert_solves_seeds_0_to_4(task: str, shared_env: MiniWoBEnv) -> None:
    """The conformance suite's expert check (seeds 0-4, step invariants) for every task with an expert."""
    from arl_envs.testing import assert_step_invariants

    shared_env._use_task(task)
    for seed in range(5):
        ep = run_episode(shared_env, ExpertAgent(shared_env), seed=seed)
        for i in range(ep.steps):
            assert_step_invariants(shared_env, (ep.observations[i + 1], ep.rewards[i], i == ep.steps - 1 and ep.terminated,
                                                i == ep.steps - 1 and ep.truncated, ep.infos[i + 1]))
        assert ep.success, (task, seed, ep.actions, ep.infos[-1].get("miniwob"), ep.observations[-1][-600:])


@pytest.mark.slow
def test_conformance_without_expert_skips_only_the_expert_check() -> None:
    env = gym.make(ENV_ID, task=NO_EXPERT_TASK)
    assert env.unwrapped.has_expert is False
    env.close()
    report = check_conformance(ENV_ID, env_kwargs={"task": NO_EXPERT_TASK}, n_fuzz=N_FUZZ,
                               n_random_episodes=N_RANDOM_EPISODES)
    assert report.passed, report.summary()
    skipped = [r.name for r in report.results if r.message.startswith("skipped")]
    assert skipped == ["expert_solves"], report.summary()
    assert len(report.results) >= 8


# ------------------------------------------------------------------ every listed task loads
@pytest.mark.slow
def test_every_listed_task_loads_and_starts() -> None:
    """The survey (``python -m arl_envs.envs.web.miniwob --survey``) in one pass: one reset per task."""
    bad = []
    env = MiniWoBEnv("click-test")
    try:
        for name in MINIWOB_TASKS:
            env._use_task(name)
            row = survey_task(env, seed=1, repeat=False)
            assert row["task"] == name and env.unwrapped.task.task == name
            if not row["ok"]:
                bad.append((name, row["problem"]))
    finally:
        env.close()
    assert not bad, bad

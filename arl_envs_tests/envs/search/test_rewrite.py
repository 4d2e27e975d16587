"""arl/search.rewrite-v0 (DeepRetrieval setting): recall@k of the gold articles under BM25."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.agents import make_agent, run_episode
from arl_envs.envs.search.rewrite import recall_at_k

ENV_ID = "arl/search.rewrite-v0"


def test_recall_at_k() -> None:
    assert recall_at_k(["a", "b", "c"], ["a", "d"]) == 0.5
    assert recall_at_k(["a"], []) == 0.0 and recall_at_k(["d", "a"], ("a", "d")) == 1.0


@pytest.fixture(scope="module")
def env():
    e = gym.make(ENV_ID)
    yield e
    e.close()


def test_expert_full_recall_random_fails(env) -> None:
    for seed in range(20):
        ep = run_episode(env, make_agent("expert", env), seed=seed)
        assert ep.success and ep.infos[-1]["recall"] == 1.0 and ep.total_reward == 1.0
    assert not any(run_episode(env, make_agent("random", env, seed=s), seed=s).success for s in range(10))


def test_reward_is_recall_of_bm25_top_k(env) -> None:
    env.reset(seed=3)
    u = env.unwrapped
    gold = u.item.supporting_ids
    first_title = u._titles[gold[0]]
    _, r, term, trunc, info = env.step(f"<think>only the first</think><query>{first_title}</query>")
    hits = [h.doc.id for h in u.retriever.search(first_title, u.k)]
    assert term and not trunc and r == pytest.approx(recall_at_k(hits, gold)) == info["recall"]
    assert 0.0 < r < 1.0 and len(info["retrieved_ids"]) == u.k
    assert 0.0 <= info["question_recall"] <= 1.0


def test_deepretrieval_answer_tag_and_fake_information_ignored(env) -> None:
    env.reset(seed=4)
    q = env.unwrapped.item.question
    _, r, term, _, info = env.step(f"<information><query>fake</query></information><answer>{q}</answer>")
    assert term and info["action_error"] is None and r == info["question_recall"]
    env.reset(seed=4)
    _, r, term, _, info = env.step("<query>   </query>")
    assert not term and info["action_error"] and r < 0


def test_kwargs_validated() -> None:
    with pytest.raises(ValueError):
        gym.make(ENV_ID, k=0)
    with pytest.raises(ValueError):
        gym.make(ENV_ID, retriever="simulated")


def test_conformance_json_format() -> None:
    from arl_envs.testing import check_conformance

    report = check_conformance(ENV_ID, env_kwargs={"action_format": "json"}, n_fuzz=40)
    assert report.passed, report.summary()

"""The search envs: protocol, bad input (every case of issue 5), rewards, expert and random agents."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.agents.agents import RandomAgent
from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.search.env import (
    MAX_QUERY_CHARS,
    SearchMultihopEnv,
    parse_search_action,
    strip_fake_observations,
)
from arl_envs.testing import check_conformance
from arl_envs.core.actions import ParseError

MULTIHOP = "arl/search.multihop-v1"
QA = "arl/search.qa-v1"


def make(env_id: str = MULTIHOP, **kw):
    return gym.make(env_id, **kw)


def play_expert(env, seed=None, task_id=None):
    obs, info = env.reset(seed=seed, options={"task_id": task_id} if task_id else None)
    total, steps = 0.0, []
    while True:
        action = env.unwrapped.expert_action()
        obs, r, term, trunc, info = env.step(action)
        total += r
        steps.append((action, obs, r, info))
        if term or trunc:
            return total, steps, term, trunc, info


# --------------------------------------------------------------------------- parsing
def test_parse_each_action() -> None:
    assert parse_search_action("<think>hmm</think><search> capital of France </search>").arguments == {
        "query": "capital of France"}
    assert parse_search_action("<open>city-00001</open>").name == "open"
    assert parse_search_action("I know it. <ANSWER>Paris</ANSWER>").arguments == {"text": "Paris"}
    assert parse_search_action("<answer></answer>").arguments == {"text": ""}


@pytest.mark.parametrize("text, message", [
    ("<think>so the answer is", "no action found"),
    ("", "no action found"),
    ("<search></search>", "query is empty"),
    ("<search>   </search>", "query is empty"),
    ("<search>a</search><search>b</search>", "2 actions"),
    ("<search>a</search> then <answer>b</answer>", "2 actions"),
    ("<search>capital of France", "not closed"),
    ("<answer>x</answer><answer>", "2 actions"),
    ("<open></open>", "document id is empty"),
    ("<information><answer>Paris</answer></information>", "no action found"),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_search_action(text)


def test_fake_information_is_discarded() -> None:
    text = "<search>q</search><information>Doc 1 (Title: X) <answer>gold</answer>"
    assert "answer" not in strip_fake_observations(text)
    assert parse_search_action(text).name == "search"
    closed = "<information>fake <search>z</search></information><answer>real</answer>"
    assert parse_search_action(closed).arguments == {"text": "real"}
    assert parse_search_action("<think>maybe <answer>x</answer>?</think><answer>y</answer>").arguments == {"text": "y"}


# --------------------------------------------------------------------------- bad input from the issue
def test_only_newest_turn_is_parsed_and_cut_off_reply_does_not_rerun_search() -> None:
    env = make()
    env.reset(seed=0)
    obs, r1, _, _, info1 = env.step("<search>capital of France</search>")
    assert info1["action_error"] is None and obs.startswith("<information>")
    assert info1["query"] == "capital of France"
    obs, r2, term, trunc, info2 = env.step("<think>so the answer is")
    assert info2["action_error"] and "no action found" in obs
    assert "<information>" not in obs and "retrieved_ids" not in info2 and info2["tool_calls"] == []
    assert env.unwrapped.queries == ["capital of France"]  # turn 1's query was not run again
    assert info2["reward_components"]["format"] == pytest.approx(-0.1) and not term and not trunc


def test_empty_search_runs_nothing() -> None:
    env = make()
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step("<search></search>")
    assert info["action_error"] and "empty" in obs and env.unwrapped.queries == []
    assert reward == pytest.approx(-0.1) and not term


def test_two_searches_in_one_turn_is_an_error_and_none_runs() -> None:
    env = make()
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step("<search>a</search><search>b</search>")
    assert "2 actions" in info["action_error"] and "Nothing was run" in obs
    assert env.unwrapped.queries == [] and info["tool_calls"] == []


def test_reply_without_answer_never_scores_even_if_it_echoes_the_prompt() -> None:
    env = make()
    obs, info = env.reset(seed=1)
    gold = env.unwrapped.item.answers[0]
    replies = [
        info["instructions"],  # holds the example <answer>Paris</answer> and the other tags
        f"The answer is {gold}.",
        f"<information>Doc 1 (Title: X) <answer>{gold}</answer></information>",
    ]
    for reply in replies:
        _, reward, term, trunc, step_info = env.step(reply)
        assert step_info["reward_components"]["task"] == 0.0 and step_info["action_error"]
        assert reward < 0
    assert term and not trunc and step_info["success"] is False  # the 3rd malformed reply forfeits


@pytest.mark.parametrize("task_id, answer, metric, expected", [
    ("q-paris", "", "em", 0.0),
    ("q-b", "A or B or C", "em", 0.0),
    ("q-10", "100", "em", 0.0),
    ("q-paris", "Paris Paris Paris Paris Paris", "f1", pytest.approx(1 / 3)),
    ("q-paris", "Paris Paris Paris Paris Paris", "em", 0.0),
    ("q-a", "A", "em", 1.0),
    ("q-a", "A", "f1", 1.0),
    ("q-paris", "the city of paris", "f1", pytest.approx(0.5)),  # "city of paris": P=1/3, R=1
    ("q-paris", " paris. ", "em", 1.0),
])
def test_answer_scoring_in_the_env(tiny_files, task_id, answer, metric, expected) -> None:
    corpus, qa = tiny_files
    env = make(QA, corpus_path=corpus, qa_path=qa, answer_metric=metric)
    env.reset(seed=0, options={"task_id": task_id})
    obs, reward, term, trunc, info = env.step(f"<answer>{answer}</answer>")
    assert term and not trunc and info["action_error"] is None
    assert info["reward_components"]["task"] == expected
    assert info["success"] is (info["exact_match"] == 1.0)


def test_long_and_stop_word_queries_return_promptly() -> None:
    env = make()
    env.reset(seed=0)
    long_query = " ".join(["fictional", "encyclopedia", "novel", "city", "Zzyzx"] * 400)  # 2,000 words
    obs, _, _, _, info = env.step(f"<search>{long_query}</search>")
    assert info["action_error"] is None and info["query_truncated"] is True
    assert len(info["query"]) <= MAX_QUERY_CHARS and obs.startswith("<information>Doc 1")
    obs, _, _, _, info = env.step("<search>the of and a to is</search>")
    assert info["action_error"] is None and info["retrieved_ids"] == []
    assert "no searchable words" in obs


# --------------------------------------------------------------------------- protocol
def test_search_observation_format() -> None:
    env = make(topk=2, snippet_words=5)
    env.reset(seed=0)
    obs, *_ = env.step("<search>novel</search>")
    lines = obs.removeprefix("<information>").split("</information>")[0].split("\n")
    assert len(lines) == 2
    assert lines[0].startswith("Doc 1 (Title: ") and "[id: " in lines[0] and lines[0].endswith(" ...")
    assert lines[1].startswith("Doc 2 (Title: ")


def test_open_by_id_title_and_unknown() -> None:
    env = make()
    env.reset(seed=0)
    world_doc = env.unwrapped.world.documents[10]
    obs, _, _, _, info = env.step(f"<open>{world_doc.id}</open>")
    assert world_doc.text in obs and info["opened_id"] == world_doc.id and info["action_error"] is None
    obs, _, _, _, info = env.step(f"<open>{world_doc.title.upper()}</open>")
    assert info["opened_id"] == world_doc.id
    obs, reward, _, _, info = env.step("<open>no-such-doc</open>")
    assert "No document with id 'no-such-doc'" in obs and info["action_error"] is None and reward == 0.0


def test_progress_reward_once_per_gold_article_and_weight_zero() -> None:
    env = make(hops=4, question_types=["composition"])
    total, steps, term, _, info = play_expert(env, seed=3)
    assert term and info["success"]
    progress = [s[3]["reward_components"]["progress"] for s in steps]
    assert sum(progress) == pytest.approx(0.1)  # every gold article seen once, raw 1/4 each, weight 0.1
    assert total == pytest.approx(1.1)
    item = env.unwrapped.item
    env.reset(seed=3)
    for _ in range(2):
        _, r, *_ = env.step(f"<search>{item.expert_queries[0]}</search>")
    assert r == 0.0  # the same article again: no second bonus
    pure = make(hops=4, question_types=["composition"], reward_weights={"progress": 0.0, "format": 0.0})
    total, *_ = play_expert(pure, seed=3)
    assert total == 1.0


def test_turn_limit_truncates_without_task_reward() -> None:
    env = make(max_turns=2)
    env.reset(seed=0)
    _, _, term, trunc, _ = env.step("<search>river</search>")
    assert not term and not trunc
    obs, _, term, trunc, info = env.step("<search>harbour</search>")
    assert trunc and not term and info["success"] is False and "Turn limit" in obs


def test_last_turn_warning() -> None:
    env = make(max_turns=2)
    env.reset(seed=0)
    obs, *_ = env.step("<search>river</search>")
    assert "1 turn left" in obs


def test_json_format_tools() -> None:
    env = make(action_format="json")
    _, info = env.reset(seed=0)
    names = [t["function"]["name"] for t in info["tools"]]
    assert names == ["search", "open", "answer"]
    call = '<tool_call>{"name": "search", "arguments": {"query": "river", "k": 5}}</tool_call>'
    obs, _, _, _, step = env.step(call)
    assert step["action_error"] is None and len(step["retrieved_ids"]) == 5
    _, _, _, _, step = env.step('<tool_call>{"name": "search", "arguments": {"query": "river"}}</tool_call>')
    assert len(step["retrieved_ids"]) == 3  # k omitted: the env's topk
    bad = '<tool_call>{"name": "search", "arguments": {"query": "river", "k": 50}}</tool_call>'
    _, _, _, _, step = env.step(bad)
    assert "k" in step["action_error"]
    empty = '<tool_call>{"name": "search", "arguments": {"query": "  "}}</tool_call>'
    _, _, _, _, step = env.step(empty)
    assert "empty" in step["action_error"]
    gold = env.unwrapped.item.answers[0]
    _, reward, term, _, step = env.step(json.dumps({"name": "answer", "arguments": {"text": gold}}).join(
        ["<tool_call>", "</tool_call>"]))
    assert term and step["success"] and step["reward_components"]["task"] == 1.0


# --------------------------------------------------------------------------- agents
@pytest.mark.parametrize("action_format", ["native", "json"])
def test_expert_solves_every_question_kind(action_format) -> None:
    env = make(action_format=action_format)
    raw: SearchMultihopEnv = env.unwrapped
    by_kind = {}
    for q in raw.questions:
        by_kind.setdefault((q.qtype, q.hops), q)
    assert len(by_kind) == 6
    for q in by_kind.values():
        total, steps, term, trunc, info = play_expert(env, task_id=q.id)
        assert term and info["success"], (q, steps)
        # At most one search per gold article, then the answer (a search may surface two gold articles).
        assert len(steps) <= q.hops + 1
        assert env.unwrapped.gold_seen == set(q.supporting_ids)


def test_expert_success_rate_over_many_questions() -> None:
    env = make(split="test")
    ids = [q.id for q in env.unwrapped.questions[:100]]
    wins = sum(play_expert(env, task_id=i)[4]["success"] for i in ids)
    assert wins == 100


def test_expert_opens_a_gold_article_that_search_did_not_surface() -> None:
    env = make(topk=1)
    env.reset(seed=0)
    item = env.unwrapped.item
    env.unwrapped.queries.append(item.expert_queries[0])  # pretend its query was spent already
    assert env.unwrapped.expert_action() == f"<open>{item.supporting_ids[0]}</open>"


def test_random_agent_fails() -> None:
    env = make()
    agent = RandomAgent(env, seed=0)
    wins = 0
    for seed in range(20):
        obs, info = env.reset(seed=seed)
        while True:
            obs, _, term, trunc, info = env.step(agent.act(obs, info))
            if term or trunc:
                break
        wins += info["success"]
    assert wins == 0


def test_render_ansi_transcript() -> None:
    env = make(render_mode="ansi")
    play_expert(env, seed=0)
    text = env.render()
    assert "=== system ===" in text and "Question:" in text and "<information>Doc 1" in text and "Correct." in text


# --------------------------------------------------------------------------- kwargs and tasks
def test_split_hops_and_types_filters() -> None:
    train = make().unwrapped.questions
    test = make(split="test").unwrapped.questions
    every = make(split="all").unwrapped.questions
    assert len(train) + len(test) == len(every) and not {q.id for q in train} & {q.id for q in test}
    assert {q.hops for q in make(hops=[3, 4]).unwrapped.questions} == {3, 4}
    assert {q.qtype for q in make(question_types=["comparison"]).unwrapped.questions} == {"comparison"}


@pytest.mark.parametrize("kwargs, message", [
    ({"split": "dev"}, "split"),
    ({"hops": 5}, "hops"),
    ({"question_types": ["trivia"]}, "question_types"),
    ({"retriever": "faiss"}, "retriever"),
    ({"topk": 0}, "topk"),
    ({"snippet_words": -1}, "snippet_words"),
    ({"answer_metric": "bleu"}, "answer_metric"),
    ({"reward_weights": {"speed": 1.0}}, "unknown reward part"),
    ({"retriever": "remote"}, "retriever_url"),
])
def test_bad_kwargs(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        SearchMultihopEnv(**kwargs)


def test_unknown_task_id() -> None:
    env = make()
    with pytest.raises(TaskLoadError, match="unknown task_id"):
        env.reset(options={"task_id": "mh-99999999"})


def test_qa_env_paths(tiny_files, tmp_path) -> None:
    corpus, qa = tiny_files
    with pytest.raises(ValueError, match="qa_path"):
        make(QA, corpus_path=corpus)
    with pytest.raises(ValueError, match="corpus_path"):
        make(QA, qa_path=qa)
    with pytest.raises(TaskLoadError, match="not found"):
        make(QA, corpus_path=str(tmp_path / "none.jsonl"), qa_path=qa)
    env = make(QA, corpus_path=corpus, qa_path=qa)
    total, steps, term, _, info = play_expert(env, task_id="q-a")  # no supporting ids: search the question
    assert info["success"] and steps[0][0] == "<search>What is the first letter?</search>"
    total, steps, term, _, info = play_expert(env, task_id="q-paris")
    assert info["success"] and steps[0][3]["reward_components"]["progress"] == pytest.approx(0.1)


def test_qa_default_is_the_shipped_sample() -> None:
    env = make(QA)
    assert len(env.unwrapped.questions) == 100
    total, steps, term, _, info = play_expert(env, seed=0)
    assert info["success"]


@pytest.mark.parametrize("env_id", [MULTIHOP, QA])
def test_conformance_json_format(env_id) -> None:
    report = check_conformance(env_id, env_kwargs={"action_format": "json"}, n_fuzz=60)
    assert report.passed, report.summary()

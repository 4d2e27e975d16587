"""The fictional world and question generator: determinism, consistency, caching."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from arl_envs.envs.search import world as world_mod
from arl_envs.envs.search.corpus import corpus_hash
from arl_envs.envs.search.scoring import normalize_answer
from arl_envs.envs.search.world import MIN_ARTICLES, generate_world, load_world, world_cache_path


@pytest.fixture(scope="module")
def world():
    return generate_world(1000, seed=3, n_questions=800)


def test_same_arguments_same_world(world) -> None:
    again = generate_world(1000, seed=3, n_questions=800)
    assert again.to_json() == world.to_json()


def test_seed_changes_world_and_question_count_does_not_change_articles(world) -> None:
    other = generate_world(1000, seed=4, n_questions=800)
    assert corpus_hash(other.documents) != corpus_hash(world.documents)
    fewer = generate_world(1000, seed=3, n_questions=50)
    assert corpus_hash(fewer.documents) == corpus_hash(world.documents)
    assert len(fewer.questions) == 50


def test_world_is_identical_across_interpreters_with_different_hash_seeds() -> None:
    code = (
        "from arl_envs.envs.search.world import generate_world;"
        "from arl_envs.envs.search.corpus import corpus_hash;"
        "w = generate_world(300, 5, 200);"
        "import hashlib, json;"
        "print(corpus_hash(w.documents), hashlib.sha256(json.dumps(w.to_json()).encode()).hexdigest())"
    )
    outs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1


def test_articles_unique_and_sized(world) -> None:
    assert len(world.documents) == 1000
    ids = [d.id for d in world.documents]
    titles = [d.title.lower() for d in world.documents]
    assert len(set(ids)) == len(ids)
    assert len(set(titles)) == len(titles)
    kinds = Counter(i.split("-")[0] for i in ids)
    assert set(kinds) == {"country", "city", "person", "org", "work"}
    assert all(15 <= len(d.text.split()) <= 120 for d in world.documents)


def test_questions_cover_every_type_and_hop_count(world) -> None:
    kinds = {(q.qtype, q.hops) for q in world.questions}
    assert {("bridge", 2), ("comparison", 2), ("comparison", 3), ("comparison", 4),
            ("composition", 3), ("composition", 4)} <= kinds
    assert len({q.question for q in world.questions}) == len(world.questions)
    assert len({q.id for q in world.questions}) == len(world.questions)


def test_question_evidence_is_consistent(world) -> None:
    docs = {d.id: d for d in world.documents}
    for q in world.questions:
        assert q.answers and all(a.strip() for a in q.answers)
        assert len(q.supporting_ids) == q.hops == len(q.expert_queries)
        assert len(set(q.supporting_ids)) == q.hops, q
        for doc_id, query in zip(q.supporting_ids, q.expert_queries):
            assert docs[doc_id].title == query
        last = docs[q.supporting_ids[-1]]
        if q.qtype in ("bridge", "composition"):
            # The answer is stated in the last article of the chain...
            text = normalize_answer(last.title + " " + last.text)
            assert any(normalize_answer(a) in text for a in q.answers), (q, last)
            # ...and not in the first one: one article alone does not answer a chain question.
            first = docs[q.supporting_ids[0]]
            first_text = f" {normalize_answer(first.title + ' ' + first.text)} "
            assert not any(f" {normalize_answer(a)} " in first_text for a in q.answers), (q, first)
        elif q.answers[0] not in ("yes", "no"):
            titles = {docs[s].title for s in q.supporting_ids}
            assert q.answers[0] in titles, q


def test_yes_no_questions_are_balanced(world) -> None:
    yn = Counter(q.answers[0] for q in world.questions if q.answers[0] in ("yes", "no"))
    assert yn["yes"] > 0 and yn["no"] > 0


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="n_articles"):
        generate_world(MIN_ARTICLES - 1)
    with pytest.raises(ValueError, match="n_questions"):
        generate_world(100, n_questions=-1)
    tiny = generate_world(MIN_ARTICLES, seed=0, n_questions=100)
    assert len(tiny.documents) == MIN_ARTICLES and tiny.questions


def test_disk_cache_roundtrip_and_corruption(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ARL_ENVS_CACHE", str(tmp_path))
    monkeypatch.setattr(world_mod, "_MEMORY", {})
    w = load_world(200, 1, 50)
    path = world_cache_path(200, 1, 50)
    assert path.is_file() and str(path).startswith(str(tmp_path))
    world_mod._MEMORY.clear()
    assert load_world(200, 1, 50).to_json() == w.to_json()  # read back from disk
    world_mod._MEMORY.clear()
    path.write_text("{not json", encoding="utf-8")
    assert load_world(200, 1, 50).to_json() == w.to_json()  # corrupt file: regenerated
    assert json.loads(path.read_text(encoding="utf-8"))["version"] == world_mod.WORLD_VERSION

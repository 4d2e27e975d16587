"""Corpus and QA JSONL loading (wiki-18 / Search-R1 formats) and the shipped sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.search.corpus import Document, cache_root, load_corpus, load_qa, write_corpus
from arl_envs.envs.search.env import SAMPLE_CORPUS_PATH, SAMPLE_QA_PATH
from arl_envs.envs.search.sample import write_sample

from .conftest import write_jsonl


def test_wiki18_title_on_first_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "0", "contents": '"Aaron"\nAaron is a prophet.\nSecond line.'},
        {"id": 1, "title": "Bee", "text": "A bee is an insect."},
    ])
    docs = load_corpus(path)
    assert docs[0] == Document("0", "Aaron", "Aaron is a prophet.\nSecond line.")
    assert docs[1] == Document("1", "Bee", "A bee is an insect.")
    assert docs[0].contents == '"Aaron"\nAaron is a prophet.\nSecond line.'
    out = tmp_path / "round.jsonl"
    write_corpus(docs, out)
    assert load_corpus(out) == docs


@pytest.mark.parametrize("rows, message", [
    ([], "no documents"),
    ([{"contents": "x"}], "'id'"),
    ([{"id": "1"}], "neither"),
    ([{"id": "1", "contents": "a"}, {"id": "1", "contents": "b"}], "duplicate"),
])
def test_bad_corpus_files(tmp_path: Path, rows: list[dict], message: str) -> None:
    with pytest.raises(TaskLoadError, match=message):
        load_corpus(write_jsonl(tmp_path / "c.jsonl", rows))


def test_corpus_not_json_and_missing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "contents": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(TaskLoadError, match=r"bad.jsonl:2"):
        load_corpus(bad)
    with pytest.raises(TaskLoadError, match="not found"):
        load_corpus(tmp_path / "missing.jsonl")


def test_qa_rows(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "qa.jsonl", [
        {"question": "Q1?", "golden_answers": ["a", "b"]},
        {"id": "x", "question": "Q2?", "golden_answers": "c", "metadata": {"supporting_ids": ["7"]}},
    ])
    items = load_qa(path)
    assert items[0].id == "qa-000000" and items[0].answers == ("a", "b")
    assert items[1].answers == ("c",) and items[1].supporting_ids == ("7",)


@pytest.mark.parametrize("row, message", [
    ({"golden_answers": ["a"]}, "question"),
    ({"question": "Q?"}, "golden_answers"),
    ({"question": "Q?", "golden_answers": [""]}, "no non-empty"),
    ({"question": "Q?", "golden_answers": {"a": 1}}, "list of strings"),
])
def test_bad_qa_rows(tmp_path: Path, row: dict, message: str) -> None:
    with pytest.raises(TaskLoadError, match=message):
        load_qa(write_jsonl(tmp_path / "qa.jsonl", [row]))


def test_shipped_sample_is_reproducible(tmp_path: Path) -> None:
    corpus, qa = write_sample(tmp_path)
    assert corpus.read_bytes() == SAMPLE_CORPUS_PATH.read_bytes()
    assert qa.read_bytes() == SAMPLE_QA_PATH.read_bytes()
    docs, items = load_corpus(SAMPLE_CORPUS_PATH), load_qa(SAMPLE_QA_PATH)
    ids = {d.id for d in docs}
    assert len(docs) == 200 and len(items) == 100
    assert all(set(q.supporting_ids) <= ids and q.supporting_ids for q in items)


def test_cache_root_env_var(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ARL_ENVS_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    monkeypatch.delenv("ARL_ENVS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_root() == tmp_path / "x" / "arl_envs"

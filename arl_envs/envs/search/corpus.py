"""Documents, corpora and QA items for the search environments, and the on-disk cache they share.

Corpus file format (the wiki-18 format used by FlashRAG and Search-R1): JSON Lines, one object per document,
``{"id": "<doc id>", "contents": "\\"<title>\\"\\n<text>"}``: the title is the first line of ``contents``
(wiki-18 wraps it in double quotes, which are stripped). Optional ``"title"``/``"text"`` keys are honoured
when present instead of ``contents``.

QA file format (Search-R1's ``nq``/``hotpotqa`` rows): JSON Lines with ``"question"`` and ``"golden_answers"``
(a list of strings; a single string is accepted). Optional: ``"id"``, and ``"supporting_ids"`` (or
``"metadata": {"supporting_ids": [...]}``), the ids of documents that contain the evidence, used by the
``progress`` reward and the expert; and ``"expert_queries"``, the expert's chain of search queries.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from dataclasses import dataclass, field
from pathlib import Path

from arl_envs.core.errors import TaskLoadError

#: Environment variable that overrides the cache root (default ``~/.cache/arl_envs``).
CACHE_ENV_VAR = "ARL_ENVS_CACHE"


def cache_root() -> Path:
    """The directory where generated worlds, BM25 indexes and embeddings are cached.

    ``$ARL_ENVS_CACHE`` if set, else ``$XDG_CACHE_HOME/arl_envs``, else ``~/.cache/arl_envs``. Created on demand
    by the writers, not here.
    """
    env = os.environ.get(CACHE_ENV_VAR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "arl_envs"


@dataclass(frozen=True)
class Document:
    """One retrievable article.

    Attributes:
        id: Unique document id (string).
        title: Article title (one line).
        text: Article body, without the title.
    """

    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        """The wiki-18 ``contents`` field: ``"<title>"`` on the first line, then the text."""
        return f'"{self.title}"\n{self.text}'

    def to_wiki18(self) -> dict[str, str]:
        """The document as a wiki-18 JSONL row ``{"id", "contents"}`` (what the retrieval server returns)."""
        return {"id": self.id, "contents": self.contents}


def document_from_row(row: dict, line_no: int = 0) -> Document:
    """Parse one wiki-18 row (``{"id", "contents"}``, or ``{"id", "title", "text"}``).

    Raises:
        TaskLoadError: If the row has no ``id`` or neither ``contents`` nor ``text``.
    """
    if not isinstance(row, dict) or "id" not in row:
        raise TaskLoadError(f"corpus line {line_no}: expected an object with an 'id' key, got {str(row)[:80]!r}")
    doc_id = str(row["id"])
    if "contents" in row:
        title, _, text = str(row["contents"]).partition("\n")
        title = row.get("title") or title.strip().strip('"')
        return Document(doc_id, str(title), text.strip())
    if "text" in row:
        return Document(doc_id, str(row.get("title", "")), str(row["text"]))
    raise TaskLoadError(f"corpus line {line_no}: document {doc_id!r} has neither 'contents' nor 'text'")


def _jsonl_rows(p: Path, what: str) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed row)`` of each non-blank line of JSONL file ``p``.

    Raises:
        TaskLoadError: If the file is missing (``"<what> file not found"``) or a line is not JSON.
    """
    if not p.is_file():
        raise TaskLoadError(f"{what} file not found: {p}")
    with p.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield line_no, json.loads(line)
            except json.JSONDecodeError as exc:
                raise TaskLoadError(f"{p}:{line_no}: not valid JSON ({exc.msg})") from None


def load_corpus(path: str | os.PathLike[str]) -> list[Document]:
    """Load a wiki-18-format JSONL corpus.

    Args:
        path: Path to the ``.jsonl`` file.

    Returns:
        The documents in file order.

    Raises:
        TaskLoadError: If the file is missing, a line is not JSON, a row is malformed, ids repeat, or the
            file holds no document.
    """
    p = Path(path)
    docs: list[Document] = []
    seen: set[str] = set()
    for line_no, row in _jsonl_rows(p, "corpus"):
        doc = document_from_row(row, line_no)
        if doc.id in seen:
            raise TaskLoadError(f"{p}:{line_no}: duplicate document id {doc.id!r}")
        seen.add(doc.id)
        docs.append(doc)
    if not docs:
        raise TaskLoadError(f"corpus file {p} holds no documents")
    return docs


def write_corpus(docs: Iterable[Document], path: str | os.PathLike[str]) -> None:
    """Write documents as wiki-18 JSONL (``{"id", "contents"}`` per line, UTF-8)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for doc in docs:
            fh.write(json.dumps(doc.to_wiki18(), ensure_ascii=False) + "\n")


def corpus_hash(docs: Sequence[Document]) -> str:
    """SHA-256 (hex, first 16 chars) over every document's id, title and text: the key of cached indexes."""
    h = hashlib.sha256()
    for doc in docs:
        for part in (doc.id, doc.title, doc.text):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class QAItem:
    """One question with its gold answers.

    Attributes:
        id: Task id (unique within its set).
        question: The question text.
        answers: Gold answers, aliases included (non-empty).
        supporting_ids: Ids of the documents holding the evidence, in reasoning order (may be empty).
        expert_queries: The expert's search queries, one per supporting document (may be empty).
        qtype: Question type (``bridge``, ``comparison``, ``composition``; ``qa`` for loaded files).
        hops: Number of supporting documents needed (0 when unknown).
    """

    id: str
    question: str
    answers: tuple[str, ...]
    supporting_ids: tuple[str, ...] = ()
    expert_queries: tuple[str, ...] = ()
    qtype: str = "qa"
    hops: int = 0
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def to_row(self) -> dict:
        """The item as a Search-R1-style JSONL row (``golden_answers`` plus our optional keys)."""
        row: dict = {"id": self.id, "question": self.question, "golden_answers": list(self.answers)}
        if self.supporting_ids:
            row["supporting_ids"] = list(self.supporting_ids)
        if self.expert_queries:
            row["expert_queries"] = list(self.expert_queries)
        row["type"] = self.qtype
        row["hops"] = self.hops
        return row


def _str_list(value: object, what: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(str(v) for v in value)
    raise TaskLoadError(f"{where}: {what!r} must be a string or a list of strings, got {str(value)[:80]!r}")


def qa_from_row(row: dict, index: int, where: str) -> QAItem:
    """Parse one QA row (see the module docstring).

    Raises:
        TaskLoadError: If ``question`` or ``golden_answers`` is missing or empty.
    """
    if not isinstance(row, dict):
        raise TaskLoadError(f"{where}: expected a JSON object")
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise TaskLoadError(f"{where}: missing or empty 'question'")
    if "golden_answers" not in row:
        raise TaskLoadError(f"{where}: missing 'golden_answers'")
    answers = tuple(a for a in _str_list(row["golden_answers"], "golden_answers", where) if a.strip())
    if not answers:
        raise TaskLoadError(f"{where}: 'golden_answers' holds no non-empty answer")
    meta = row.get("metadata") if isinstance(row.get("metadata"), dict) else {}
    support = row.get("supporting_ids", meta.get("supporting_ids", []))
    queries = row.get("expert_queries", [])
    return QAItem(
        id=str(row.get("id", f"qa-{index:06d}")),
        question=question.strip(),
        answers=answers,
        supporting_ids=_str_list(support, "supporting_ids", where),
        expert_queries=_str_list(queries, "expert_queries", where),
        qtype=str(row.get("type", "qa")),
        hops=int(row.get("hops", len(support) if isinstance(support, list) else 0)),
    )


def load_qa(path: str | os.PathLike[str]) -> list[QAItem]:
    """Load a JSONL QA file (Search-R1 format, see the module docstring).

    Raises:
        TaskLoadError: If the file is missing, a line is not JSON or misses a required key, ids repeat, or the
            file holds no question.
    """
    p = Path(path)
    items: list[QAItem] = []
    seen: set[str] = set()
    for line_no, row in _jsonl_rows(p, "QA"):
        item = qa_from_row(row, len(items), f"{p}:{line_no}")
        if item.id in seen:
            raise TaskLoadError(f"{p}:{line_no}: duplicate question id {item.id!r}")
        seen.add(item.id)
        items.append(item)
    if not items:
        raise TaskLoadError(f"QA file {p} holds no questions")
    return items


def write_qa(items: Iterable[QAItem], path: str | os.PathLike[str]) -> None:
    """Write QA items as JSONL rows (see :meth:`QAItem.to_row`)."""
    with Path(path).open("w", encoding="utf-8") as fh:
        for item in items:
            fh.write(json.dumps(item.to_row(), ensure_ascii=False) + "\n")

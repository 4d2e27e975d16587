"""The retriever interface of the search envs: :class:`Retriever`, :class:`SearchHit`, :class:`RetrieverUnavailable`.

Implementations: :mod:`arl_envs.envs.search.retrievers` (BM25, dense, remote; ``make_retriever``) and
:mod:`arl_envs.envs.search.simulated` (documents written by a local LM).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arl_envs.core.errors import ArlError
from arl_envs.envs.search.corpus import Document

#: Largest ``k`` any retriever serves in one query.
MAX_TOPK = 100


class RetrieverUnavailable(ArlError):
    """The retriever cannot serve a request (remote server unreachable, error status, malformed response)."""


@dataclass(frozen=True)
class SearchHit:
    """One retrieved document and its score (higher is better; scale depends on the retriever)."""

    doc: Document
    score: float


class Retriever(ABC):
    """Common interface of all retrievers."""

    #: Short name used in logs and ``info`` (``bm25``, ``dense``, ``remote``).
    name: str = "retriever"

    def search(self, query: str, k: int) -> list[SearchHit]:
        """Up to ``k`` hits for one query, best first (see :meth:`batch_search`)."""
        return self.batch_search([query], k)[0]

    @abstractmethod
    def batch_search(self, queries: Sequence[str], k: int) -> list[list[SearchHit]]:
        """Up to ``k`` hits per query, best first; a query with no searchable word gets no hits.

        Args:
            queries: Query strings.
            k: Hits per query, 1 <= k <= :data:`MAX_TOPK`.

        Raises:
            ValueError: If ``k`` is out of range.
            RetrieverUnavailable: If the backing service fails.
        """

    @abstractmethod
    def get(self, doc_id: str) -> Document | None:
        """The full document with this id, or None if unknown."""

    def close(self) -> None:
        """Release resources (connections, models). Safe to call twice."""


def check_k(k: int) -> int:
    """``k`` as an int, checked to be in ``[1, MAX_TOPK]``.

    Raises:
        ValueError: ``k`` is not an integer in range.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= MAX_TOPK:
        raise ValueError(f"k must be an integer in [1, {MAX_TOPK}], got {k!r}")
    return int(k)

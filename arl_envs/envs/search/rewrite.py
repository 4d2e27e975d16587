"""``arl/search.rewrite-v0``: rewrite a question into a search query; reward = recall@k of the gold articles."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from arl_envs.core.actions import TagFormat, TagTable
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.search.corpus import QAItem
from arl_envs.envs.search.env import (
    MAX_QUERY_CHARS,
    SPLITS,
    TEST_EVERY,
    strip_fake_observations,
)
from arl_envs.envs.search.retrievers import Retriever, make_retriever
from arl_envs.envs.search.world import (
    DEFAULT_N_ARTICLES,
    DEFAULT_N_QUESTIONS,
    load_world,
)

#: Default cut-off of recall@k (DeepRetrieval reports recall@k for literature search at large k; the fictional
#: encyclopedia is small: 5, one more than the most gold articles a question has).
DEFAULT_K = 5
#: Largest k accepted.
MAX_K = 100
#: Rounds in which the expert repeats the titles of gold articles its query still misses.
EXPERT_BOOST_ROUNDS = 4
RETRIEVER_KINDS = ("bm25", "dense")
#: The native format: the last ``<query>`` block (an ``<answer>`` block where there is none), case-insensitive.
QUERY_TAGS = TagTable(
    (
        TagFormat("rewrite", "query", "query", empty_error="the query is empty"),
        TagFormat("rewrite", "answer", "query", empty_error="the query is empty", fallback=True),
    ),
    missing="no query found: write <query>your search query</query>",
    joint=False,
    ignore_case=True,
    discard=strip_fake_observations,
)


class RewriteArgs(BaseModel):
    """Arguments of ``rewrite``."""

    query: str = Field(description="The search query to run instead of the question (keywords, names).")

    @field_validator("query")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is empty")
        return value


REWRITE_TOOL = Tool("rewrite", "Submit the rewritten search query (one shot; ends the episode).", RewriteArgs)


def recall_at_k(retrieved_ids: list[str], gold_ids: tuple[str, ...] | list[str]) -> float:
    """Fraction of ``gold_ids`` among ``retrieved_ids`` (0.0 when there is no gold id)."""
    gold = set(gold_ids)
    return len(gold.intersection(retrieved_ids)) / len(gold) if gold else 0.0


class QueryRewriteEnv(AgentEnv):
    """Query rewriting for retrieval recall, one shot (the DeepRetrieval setting).

    Follows Jiang et al., 2025, "DeepRetrieval: Hacking Real Search Engines and Retrievers with Large Language
    Models via Reinforcement Learning" (pat-jj/DeepRetrieval): the policy sees a question, writes one query, the
    query runs against a fixed retriever, and the reward is the recall of the gold documents in the top k (they use
    a tiered recall reward plus a format reward; we give recall itself, so the reward is the metric).

    Description:
        A multi-hop question of ``arl/search.multihop-v1``'s fictional encyclopedia (same world, split and hops
        kwargs); the gold documents are its 2-4 supporting articles. The raw question as a query is a baseline:
        its recall is in ``info["question_recall"]``.
    Observation:
        The question; after the action, the recall and the ids retrieved.
    Action:
        Native: ``<query>...</query>`` (the last complete one; ``<think>`` blocks and fake ``<information>`` are
        ignored), or DeepRetrieval's ``<answer>...</answer>`` holding the query. JSON: ``rewrite(query)``.
    Tools:
        ``rewrite(query: str)``.
    Rewards:
        ``task`` (weight 1): recall@k in [0, 1] of the gold supporting articles under the retriever (BM25 by
        default). ``format`` (weight 0.1): raw -1 per malformed reply.
    Episode end:
        Terminated after the query (success: recall 1.0), or after more than ``max_invalid_actions`` (default 1)
        malformed replies; ``max_turns`` defaults to ``max_invalid_actions + 1``.
    Arguments:
        k (recall cut-off, default 5), n_articles, world_seed, n_questions, split ("train" | "test" | "all"),
        hops, retriever ("bm25" | "dense"), action_format, reward_weights, max_turns, max_invalid_actions,
        render_mode.
    Version history:
        v0: initial release.
    """

    #: Snapshot (arl_envs.core.snapshot): the corpus, its index and the question table are read-only: they stay the
    #: target's own.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("world", "questions", "_by_id", "retriever", "_titles")

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "format": 0.1}
    default_max_invalid_actions: ClassVar[int] = 1
    native_tags = QUERY_TAGS

    def __init__(
        self,
        *,
        k: int = DEFAULT_K,
        n_articles: int = DEFAULT_N_ARTICLES,
        world_seed: int = 0,
        n_questions: int = DEFAULT_N_QUESTIONS,
        split: str = "train",
        hops: int | list[int] | tuple[int, ...] | None = None,
        retriever: str = "bm25",
        max_turns: int | None = None,
        **kwargs: Any,
    ) -> None:
        if not 1 <= int(k) <= MAX_K:
            raise ValueError(f"k must be in [1, {MAX_K}], got {k}")
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if retriever not in RETRIEVER_KINDS:
            raise ValueError(f"retriever must be one of {RETRIEVER_KINDS} (recall needs a real index), got {retriever!r}")
        invalid = kwargs.get("max_invalid_actions")
        invalid = self.default_max_invalid_actions if invalid is None else int(invalid)
        super().__init__(max_turns=max_turns if max_turns is not None else invalid + 1, **kwargs)
        self.k = int(k)
        hop_set = None if hops is None else {int(h) for h in ([hops] if isinstance(hops, int) else hops)}
        world = load_world(int(n_articles), int(world_seed), int(n_questions))
        self.questions: list[QAItem] = [
            q for n, q in enumerate(world.questions)
            if (split == "all" or (n % TEST_EVERY == 0) == (split == "test"))
            and (hop_set is None or q.hops in hop_set) and q.supporting_ids
        ]
        if not self.questions:
            raise TaskLoadError(f"no questions for split={split}, hops={hops}")
        self._by_id = {q.id: q for q in self.questions}
        self._titles = {d.id: d.title for d in world.documents}
        self.retriever: Retriever = make_retriever(retriever, world.documents)
        self.item: QAItem | None = None

    def recall(self, query: str) -> tuple[float, list[str]]:
        """``(recall@k, retrieved ids)`` of ``query`` for the current question."""
        assert self.item is not None
        ids = [h.doc.id for h in self.retriever.search(query[:MAX_QUERY_CHARS], self.k)]
        return recall_at_k(ids, self.item.supporting_ids), ids

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [REWRITE_TOOL]

    def instructions(self) -> str:
        how = (
            "Think if you like, then write the query as <query>...</query>."
            if self.action_format == "native"
            else "Submit the query with the `rewrite` tool.\n" + self.json_format_instructions()
        )
        return (
            "Rewrite the question into ONE search query for a BM25 keyword search engine over an encyclopedia. "
            f"You are scored on how many of the articles needed to answer it appear in the top {self.k} results "
            f"(recall@{self.k}). You get one query.\n{how}"
        )

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            self.item = self.questions[int(self.np_random.integers(0, len(self.questions)))]
        elif task_id in self._by_id:
            self.item = self._by_id[task_id]
        else:
            raise TaskLoadError(f"unknown question id {task_id!r}")
        return self.item.id, f"Question: {self.item.question}"

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        assert self.item is not None
        query = str(calls[0].arguments["query"])
        score, ids = self.recall(query)
        baseline, _ = self.recall(self.item.question)
        found = sorted(set(ids) & set(self.item.supporting_ids))
        info = {"recall": score, "question_recall": baseline, "retrieved_ids": ids}
        obs = (
            f"recall@{self.k} = {score:.2f} ({len(found)} of {len(self.item.supporting_ids)} needed articles found; "
            f"the question itself scores {baseline:.2f})."
        )
        return Transition(obs, {"task": score}, terminated=True, success=score >= 1.0, info=info)

    def _expert_action(self) -> str:
        """Privileged: the gold articles' titles, boosting (repeating) the titles still missing, best recall kept."""
        item = self.item
        titles = {i: self._titles.get(i, "") for i in item.supporting_ids}
        query = " ".join(titles.values())
        best, best_score = query, -1.0
        for _ in range(EXPERT_BOOST_ROUNDS):
            score, ids = self.recall(query)
            if score > best_score:
                best, best_score = query, score
            if score >= 1.0:
                break
            query += " " + " ".join(t for i, t in titles.items() if i not in ids)
        return self.render_call("rewrite", {"query": best})

    def _close(self) -> None:
        self.retriever.close()

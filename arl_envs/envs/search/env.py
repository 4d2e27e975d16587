"""Search environments: multi-turn retrieval and answering over a local corpus (Search-R1 protocol).

Protocol source: Jin et al., 2025, "Search-R1: Training LLMs to Reason and Leverage Search Engines with
Reinforcement Learning" (PeterGriffinJin/Search-R1): the model writes ``<search>query</search>``, the env replies
``<information>Doc 1 (Title: ...) text ...</information>``, and ``<answer>...</answer>`` ends the episode; the
reward is exact match after SQuAD normalisation.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from arl_envs.core.actions import TagFormat, TagTable, find_blocks, remove_blocks
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.search.corpus import Document, QAItem, load_corpus, load_qa
from arl_envs.envs.search.retrievers import (
    RETRIEVERS,
    Retriever,
    RetrieverUnavailable,
    SearchHit,
    make_retriever,
    nfc,
    tokenize,
)
from arl_envs.envs.search.scoring import METRICS, best_score, exact_match
from arl_envs.envs.search.world import DEFAULT_N_ARTICLES, DEFAULT_N_QUESTIONS, load_world

#: Documents shown per native ``<search>`` (Search-R1 uses 3).
DEFAULT_TOPK = 3
#: Most documents one JSON ``search`` call may ask for.
MAX_TOOL_K = 10
#: Words of each document's text shown in search results; ``open`` shows the whole text.
DEFAULT_SNIPPET_WORDS = 50
#: Queries are cut to this many characters before retrieval (a 2,000-word query still runs, on its start).
MAX_QUERY_CHARS = 1_000
#: Longest answer scored, in characters; a longer answer scores 0.
MAX_ANSWER_CHARS = 1_000
#: Every ``split="test"`` question: index % TEST_EVERY == 0 (10 % held out); the rest is ``"train"``.
TEST_EVERY = 10
SPLITS = ("train", "test", "all")
QUESTION_TYPES = ("bridge", "comparison", "composition")

_PACKAGE_DATA = Path(__file__).resolve().parent / "data"
#: The shipped wiki-18-format sample corpus and QA file (regenerate with ``python -m arl_envs.envs.search.sample``).
SAMPLE_CORPUS_PATH = _PACKAGE_DATA / "sample_corpus.jsonl"
SAMPLE_QA_PATH = _PACKAGE_DATA / "sample_qa.jsonl"

_STRIP_OPEN = re.compile(r"<(information|think)>", flags=re.IGNORECASE)
_UNCLOSED_INFORMATION = re.compile(r"<information>.*\Z", flags=re.DOTALL | re.IGNORECASE)
_STRAY_CLOSE_INFORMATION = re.compile(r"</information>", flags=re.IGNORECASE)


class SearchArgs(BaseModel):
    """Arguments of search: the query and, optionally, how many documents to return."""

    query: str = Field(description="What to look up, in a few keywords (e.g. an entity name).")
    k: int | None = Field(None, ge=1, le=MAX_TOOL_K,
                          description=f"How many documents to return (1-{MAX_TOOL_K}; default: the env's topk).")

    @field_validator("query")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is empty; write some keywords to search for")
        return value


class OpenArgs(BaseModel):
    """Arguments of open: the document to read in full."""

    doc_id: str = Field(description="The id of a document, as shown in search results ([id: ...]), or its title.")

    @field_validator("doc_id")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the document id is empty")
        return value


class AnswerArgs(BaseModel):
    """Arguments of answer: the final answer."""

    text: str = Field(description="The final answer only: a short entity name, number, date or yes/no.")


SEARCH_TOOL = Tool("search", "Search the documents; returns the best matches, each cut to its first words.", SearchArgs)
OPEN_TOOL = Tool("open", "Read the full text of one document by its id.", OpenArgs)
ANSWER_TOOL = Tool("answer", "Give the final answer. Ends the episode.", AnswerArgs)


def _closing_tag(opener: re.Match[str]) -> str:
    return f"</{opener.group(1)}>"


def strip_fake_observations(text: str) -> str:
    """Remove text the model wrote in place of the env: ``<information>`` blocks (an unclosed one to the end of
    the reply) and ``<think>`` blocks, whose mentions of tags are reasoning, not actions."""
    text = remove_blocks(text, find_blocks(text, _STRIP_OPEN, _closing_tag, ignore_case=True), " ")
    text = _UNCLOSED_INFORMATION.sub(" ", text)
    return _STRAY_CLOSE_INFORMATION.sub(" ", text)


#: The native search protocol (Search-R1's tags, plus ``<open>``): exactly one case-insensitive block per reply.
SEARCH_TAGS = TagTable(
    (
        TagFormat("search", "search", "query",
                  empty_error="the search query is empty; write keywords inside <search>...</search>"),
        TagFormat("open", "open", "doc_id",
                  empty_error="the document id is empty; write <open>doc_id</open> with an id from the results"),
        TagFormat("answer", "answer", "text"),
    ),
    missing="no action found. End your reply with exactly one of <search>query</search>, <open>doc_id</open> or "
    "<answer>final answer</answer>",
    pick="only",
    ignore_case=True,
    discard=strip_fake_observations,
)


def parse_search_action(text: str) -> ToolCall:
    """Parse one native search-protocol reply into exactly one tool call.

    Rules: ``<information>`` and ``<think>`` blocks are discarded first; then the reply must hold exactly one
    complete ``<search>...</search>``, ``<open>...</open>`` or ``<answer>...</answer>`` (case-insensitive tags).
    Several actions in one reply are an error and nothing runs (we do not silently keep the first).

    Returns:
        ``ToolCall("search", {"query"})``, ``ToolCall("open", {"doc_id"})`` or ``ToolCall("answer", {"text"})``.

    Raises:
        ParseError: No action, an unclosed tag, more than one action, or an empty query / document id.
    """
    return SEARCH_TAGS.parse(text)[0]


def snippet(text: str, words: int | None) -> str:
    """The first ``words`` words of ``text`` followed by ``...`` if cut (``None`` or 0: the whole text)."""
    if not words:
        return text
    parts = text.split()
    return text if len(parts) <= words else " ".join(parts[:words]) + " ..."


class SearchEnv(AgentEnv):
    """Shared logic of the search envs (task list, retrieval, parsing, rewards, expert).

    Subclasses load ``self.questions`` and ``self.retriever`` and give :attr:`corpus_description`. The native
    format is :data:`SEARCH_TAGS`.

    Args:
        retriever: ``"bm25"`` (default), ``"dense"`` (needs ``arl-envs[search-dense]``), ``"remote"`` or
            ``"simulated"`` (ZeroSearch: documents written by a local LM, see :mod:`.simulated`).
        retriever_kwargs: Passed to the retriever, e.g. ``{"noise": 0.3, "model": "smollm2"}`` for simulated.
        retriever_url: Base URL of a Search-R1-compatible server (``retriever="remote"``).
        topk: Documents per native ``<search>`` and default ``k`` of the JSON tool (1-10).
        snippet_words: Words of text per search result (0: whole documents).
        answer_metric: ``"em"`` (exact match, default) or ``"f1"`` for the ``task`` reward.
        **kwargs: See :class:`~arl_envs.core.env.AgentEnv`.
    """

    #: Snapshot (arl_envs.core.snapshot): the corpus, its index (or retriever-server client) and the question table are
    #: read-only and equal on any instance with the same kwargs: they stay the target's own.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("world", "questions", "_by_id", "retriever", "_titles")

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = 6
    default_max_invalid_actions: ClassVar[int] = 2
    corpus_description: ClassVar[str] = "a document collection"
    native_tags = SEARCH_TAGS

    def __init__(
        self,
        *,
        retriever: str = "bm25",
        retriever_url: str | None = None,
        topk: int = DEFAULT_TOPK,
        snippet_words: int = DEFAULT_SNIPPET_WORDS,
        answer_metric: str = "em",
        retriever_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.retriever_kwargs = dict(retriever_kwargs or {})  # e.g. simulated: {"noise": 0.3, "model": "tiny"}
        if retriever not in RETRIEVERS:
            raise ValueError(f"retriever must be one of {RETRIEVERS}, got {retriever!r}")
        if not 1 <= int(topk) <= MAX_TOOL_K:
            raise ValueError(f"topk must be in [1, {MAX_TOOL_K}], got {topk}")
        if int(snippet_words) < 0:
            raise ValueError(f"snippet_words must be >= 0, got {snippet_words}")
        if answer_metric not in METRICS:
            raise ValueError(f"answer_metric must be one of {sorted(METRICS)}, got {answer_metric!r}")
        self.retriever_kind = retriever
        self.retriever_url = retriever_url
        self.topk = int(topk)
        self.snippet_words = int(snippet_words)
        self.answer_metric = answer_metric
        self.questions: list[QAItem] = []
        self._by_id: dict[str, QAItem] = {}
        self.retriever: Retriever | None = None
        self.item: QAItem | None = None
        self.gold_seen: set[str] = set()
        self.queries: list[str] = []
        self.opened: list[str] = []

    # ----------------------------------------------------------------- setup helpers for subclasses
    def _set_questions(self, questions: list[QAItem], where: str) -> None:
        if not questions:
            raise TaskLoadError(f"no questions left in {where} after filtering")
        self.questions = questions
        self._by_id = {q.id: q for q in questions}

    def _make_retriever(self, docs: list[Document] | None) -> None:
        if self.retriever_kind == "remote":
            self.retriever = make_retriever("remote", url=self.retriever_url)
        else:
            self.retriever = make_retriever(self.retriever_kind, docs, **self.retriever_kwargs)

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [SEARCH_TOOL, OPEN_TOOL, ANSWER_TOOL]

    def instructions(self) -> str:
        intro = (
            f"Answer the question using {self.corpus_description}. You cannot answer from memory: look the "
            f"facts up. You have at most {self.max_turns} turns, one action per turn; the answer ends the episode. "
            "Search results show the start of each document; open a document to read all of it. Answer with "
            "the short answer only (a name, a number, a year, yes or no), not a sentence."
        )
        if self.action_format == "native":
            how = (
                "You may think first (inside <think>...</think>). Then end your reply with exactly one action:\n"
                "<search>query</search> to search; the results come back inside <information>...</information>,\n"
                "<open>doc_id</open> to read the full document with that id,\n"
                "<answer>final answer</answer> to answer, e.g. <answer>Paris</answer>."
            )
        else:
            how = "Call exactly one tool per turn.\n" + self.json_format_instructions()
        return f"{intro}\n{how}"

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            item = self.questions[int(self.np_random.integers(0, len(self.questions)))]
        else:
            try:
                item = self._by_id[task_id]
            except KeyError:
                example = self.questions[0].id
                raise TaskLoadError(f"unknown task_id {task_id!r} (ids look like {example!r})") from None
        self.item = item
        self.gold_seen = set()
        self.queries = []
        self.opened = []
        return item.id, f"Question: {item.question}"

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        assert self.item is not None and self.retriever is not None
        call = calls[0]
        try:
            if call.name == "search":
                k = call.arguments.get("k")
                return self._do_search(str(call.arguments["query"]), self.topk if k is None else int(k))
            if call.name == "open":
                return self._do_open(str(call.arguments["doc_id"]).strip())
        except RetrieverUnavailable as exc:
            return Transition("The search service failed; this episode is not scored.", env_error=str(exc))
        return self._do_answer(str(call.arguments["text"]))

    # ----------------------------------------------------------------- actions
    def _progress(self, doc_ids: list[str]) -> float:
        """Raw ``progress``: the share of gold supporting documents seen for the first time now."""
        assert self.item is not None
        gold = self.item.supporting_ids
        new = [d for d in dict.fromkeys(doc_ids) if d in gold and d not in self.gold_seen]
        self.gold_seen.update(new)
        return len(new) / len(gold) if gold else 0.0

    def _turns_note(self) -> str:
        left = self.max_turns - self.turn
        if left == 1:
            return "\n(1 turn left: give your answer now.)"
        return ""

    def _do_search(self, query: str, k: int) -> Transition:
        assert self.retriever is not None
        query = " ".join(query.split())
        truncated = len(query) > MAX_QUERY_CHARS
        query = query[:MAX_QUERY_CHARS]
        self.queries.append(query)
        info: dict[str, Any] = {"query": query, "query_truncated": truncated}
        if not tokenize(query):
            hits: list[SearchHit] = []
            body = "No results: the query has no searchable words (only stop words or punctuation)."
        else:
            hits = self.retriever.search(query, k)
            if hits:
                body = "\n".join(
                    f"Doc {i} (Title: {h.doc.title}) [id: {h.doc.id}] {snippet(h.doc.text, self.snippet_words)}"
                    for i, h in enumerate(hits, start=1)
                )
            else:
                body = f"No results for {query!r}: no document contains these words."
        ids = [h.doc.id for h in hits]
        info["retrieved_ids"] = ids
        note = f" (query cut to its first {MAX_QUERY_CHARS} characters)" if truncated else ""
        obs = f"<information>{body}</information>{note}{self._turns_note()}"
        return Transition(obs, {"progress": self._progress(ids)}, info=info)

    def _do_open(self, doc_id: str) -> Transition:
        assert self.retriever is not None
        doc = self.retriever.get(doc_id)
        if doc is None and hasattr(self.retriever, "corpus"):
            # Accept a title as well (case-insensitive), which models often write instead of the id.
            corpus = self.retriever.corpus  # type: ignore[attr-defined]
            idx = corpus.by_title.get(nfc(doc_id.strip().strip('"')).lower())
            doc = corpus.docs[idx] if idx is not None else None
        info: dict[str, Any] = {"opened_id": doc.id if doc else None}
        if doc is None:
            obs = (f"<information>No document with id {doc_id!r}. Use an id shown in search results as "
                   f"[id: ...].</information>{self._turns_note()}")
            return Transition(obs, {"progress": 0.0}, info=info)
        self.opened.append(doc.id)
        obs = f"<information>Doc (Title: {doc.title}) [id: {doc.id}] {doc.text}</information>{self._turns_note()}"
        return Transition(obs, {"progress": self._progress([doc.id])}, info=info)

    def _do_answer(self, text: str) -> Transition:
        assert self.item is not None
        answer = text.strip()
        if len(answer) > MAX_ANSWER_CHARS:
            score, em = 0.0, 0.0
        else:
            score = best_score(answer, self.item.answers, self.answer_metric)
            em = max(exact_match(answer, g) for g in self.item.answers)
        success = em == 1.0
        verdict = "Correct." if success else f"Incorrect. The expected answer was: {self.item.answers[0]}."
        info = {"answer": answer, "score": score, "exact_match": em, "gold_answers": list(self.item.answers)}
        return Transition(f"Your answer: {answer!r}. {verdict}", {"task": score}, terminated=True,
                          success=success, info=info)

    # ----------------------------------------------------------------- expert
    def _expert_action(self) -> str:
        """The gold chain: search for each gold supporting document not yet seen, then answer.

        If a search for a gold document did not surface it, the expert opens it by id instead; on the last turn
        (or when no gold documents are known) it answers straight away with the first gold answer.

        Raises:
            ResetNeeded: If no episode is running.
        """
        item = self.item
        turns_left = self.max_turns - self.turn
        answer = self.render_call("answer", {"text": item.answers[0]})
        if turns_left <= 1:
            return answer
        queries = list(item.expert_queries)
        if item.supporting_ids:
            for i, doc_id in enumerate(item.supporting_ids):
                if doc_id in self.gold_seen:
                    continue
                query = queries[i] if i < len(queries) else self._title_of(doc_id) or item.question
                if query not in self.queries:
                    return self.render_call("search", self._search_args(query))
                if doc_id not in self.opened:
                    return self.render_call("open", {"doc_id": doc_id})
            return answer
        for query in queries or [item.question]:
            if query not in self.queries:
                return self.render_call("search", self._search_args(query))
        return answer

    def _search_args(self, query: str) -> dict[str, Any]:
        return {"query": query}

    def _title_of(self, doc_id: str) -> str | None:
        assert self.retriever is not None
        try:
            doc = self.retriever.get(doc_id)
        except RetrieverUnavailable:
            return None
        return doc.title if doc else None

    def _close(self) -> None:
        if self.retriever is not None:
            self.retriever.close()


class SearchMultihopEnv(SearchEnv):
    """Multi-hop questions over a generated fictional encyclopedia (HotpotQA/2Wiki/MuSiQue style).

    Description:
        A deterministic fictional world (countries, cities, people, organisations, works; see
        :mod:`arl_envs.envs.search.world`) of ``n_articles`` articles, and questions whose evidence is spread over
        2-4 articles: ``bridge`` (2 hops), ``comparison`` (2-4 hops) and ``composition`` (3-4 hops). The facts are
        fictional, so the agent must search. Generation and the BM25 index are cached on disk.
    Observation:
        First: ``Question: ...``. After ``<search>``: ``<information>Doc 1 (Title: T) [id: ID] text ...
        </information>`` with ``topk`` documents, each cut to ``snippet_words`` words. After ``<open>``: one whole
        document. After ``<answer>``: the verdict. Malformed replies: an error message (see Action).
    Action:
        Native (default, Search-R1): one of ``<search>query</search>``, ``<open>doc_id</open>``,
        ``<answer>text</answer>`` per reply, optionally after ``<think>...</think>``. ``<information>`` and
        ``<think>`` blocks the model writes are discarded before parsing. Only the newest reply is parsed. Zero,
        unclosed or several action tags, an empty query or an empty id are malformed (nothing runs; with several
        actions none is run, not even the first). JSON: one ``<tool_call>`` per reply.
    Tools:
        ``search(query: str, k: int | None = None)`` (k <= 10; None: ``topk``), ``open(doc_id: str)`` (id or exact title),
        ``answer(text: str)``.
    Rewards:
        ``task`` (weight 1): on the answer, exact match against the gold answers and aliases after SQuAD
        normalisation (``answer_metric="f1"``: max token F1). ``progress`` (weight 0.1): raw ``1/h`` the first time
        each of the ``h`` gold supporting articles appears in search results or is opened (sums to at most 1 per
        episode; weight 0 gives the pure outcome reward). ``format`` (weight 0.1): raw -1 per malformed reply.
    Episode end:
        Terminated by an answer (success = exact match), or by the 3rd malformed reply (``max_invalid_actions``
        =2). Truncated after ``max_turns`` (default 6) turns, or when the retriever fails (``info["env_error"]``,
        no task reward).
    Arguments:
        n_articles (default 3000), world_seed (0), n_questions (3000), split ("train": 90 %, "test": every 10th
        question, "all"), hops (int or list of ints in 2-4, default all), question_types (subset of bridge,
        comparison, composition), retriever ("bm25" | "dense" | "remote"), retriever_url, topk (3),
        snippet_words (50), answer_metric ("em" | "f1"), action_format, reward_weights, max_turns,
        max_invalid_actions, render_mode.
    Version history:
        v1: current: documents, queries, titles and answers compared in Unicode NFC (v0, retired, compared
        them as written: CHANGELOG.md).
    """

    corpus_description = "search over a fictional encyclopedia (people, places, organisations, works)"

    def __init__(
        self,
        *,
        n_articles: int = DEFAULT_N_ARTICLES,
        world_seed: int = 0,
        n_questions: int = DEFAULT_N_QUESTIONS,
        split: str = "train",
        hops: int | list[int] | tuple[int, ...] | None = None,
        question_types: list[str] | tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        hop_set = None if hops is None else {int(h) for h in ([hops] if isinstance(hops, int) else hops)}
        if hop_set is not None and (not hop_set or not hop_set <= {2, 3, 4}):
            raise ValueError(f"hops must be 2, 3, 4 or a list of them, got {hops!r}")
        types = None if question_types is None else set(question_types)
        if types is not None and (not types or not types <= set(QUESTION_TYPES)):
            raise ValueError(f"question_types must be a non-empty subset of {QUESTION_TYPES}, got {question_types!r}")
        self.world = load_world(int(n_articles), int(world_seed), int(n_questions))
        questions = [
            q for n, q in enumerate(self.world.questions)
            if (split == "all" or (n % TEST_EVERY == 0) == (split == "test"))
            and (hop_set is None or q.hops in hop_set)
            and (types is None or q.qtype in types)
        ]
        self.split = split
        self._set_questions(questions, f"the generated world (split={split}, hops={hops}, types={question_types})")
        self._make_retriever(self.world.documents)


class SearchQAEnv(SearchEnv):
    """Open-domain QA over a JSONL corpus in the wiki-18 format, with Search-R1 QA files.

    Description:
        Questions from ``qa_path`` (JSONL rows with ``question`` and ``golden_answers``, as Search-R1's NQ/HotpotQA
        files; optional ``supporting_ids``) answered by searching ``corpus_path`` (JSONL ``{"id", "contents"}``
        with the title on the first line of ``contents``: the wiki-18 format). Without paths, a tiny shipped
        sample (200 fictional articles, 100 questions, generated by :mod:`arl_envs.envs.search.sample`) is used.
        With ``retriever="remote"`` the corpus lives on the server and ``corpus_path`` may be omitted.
    Observation:
        As :class:`SearchMultihopEnv`.
    Action:
        As :class:`SearchMultihopEnv`.
    Tools:
        As :class:`SearchMultihopEnv`.
    Rewards:
        As :class:`SearchMultihopEnv`; ``progress`` is always 0 for questions without ``supporting_ids``.
    Episode end:
        As :class:`SearchMultihopEnv`.
    Arguments:
        corpus_path, qa_path (default: the shipped sample), retriever, retriever_url, topk (3), snippet_words
        (50), answer_metric ("em" | "f1"), action_format, reward_weights, max_turns (6), max_invalid_actions (2),
        render_mode.
    Version history:
        v1: current: documents, queries, titles and answers compared in Unicode NFC (v0, retired, compared
        them as written: CHANGELOG.md).
    """

    corpus_description = "search over a document collection"

    def __init__(self, *, corpus_path: str | None = None, qa_path: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if corpus_path is None and qa_path is None:
            corpus_path, qa_path = str(SAMPLE_CORPUS_PATH), str(SAMPLE_QA_PATH)
        if qa_path is None:
            raise ValueError("qa_path is required when corpus_path is given (JSONL with question, golden_answers)")
        if corpus_path is None and self.retriever_kind != "remote":
            raise ValueError("corpus_path is required unless retriever='remote' (wiki-18 JSONL: id, contents)")
        self.corpus_path = corpus_path
        self.qa_path = qa_path
        docs = load_corpus(corpus_path) if corpus_path is not None else None
        self._set_questions(load_qa(qa_path), qa_path)
        self._make_retriever(docs)

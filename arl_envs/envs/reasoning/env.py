"""reasoning-gym's procedurally generated reasoning tasks as arl-envs ids: ``arl/reasoning.<dataset>-v0``.

Questions, reference answers and scores are reasoning-gym's (Stojanovski et al., "REASONING GYM: Reasoning
Environments for Reinforcement Learning with Verifiable Rewards", 2025, https://github.com/open-thought/reasoning-gym):
the env draws one item of ``reasoning_gym.create_dataset(dataset, seed=dataset_seed, size=size, **config)`` per
episode (the index from ``self.np_random``) and scores the agent's answer with the dataset's own ``score_answer``.
The ids are generated from ``datasets.json`` (next to this module; checked against the installed package by
``arl_envs_tests/envs/reasoning/test_reasoning_gym.py``), which also lists the datasets left out and why.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_HALF_EVEN, Context, DivisionByZero, InvalidOperation, Overflow, localcontext
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, Field

from arl_envs.core.actions import TagFormat, TagTable, boxed_contents, strip_tags
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import DependencyNotInstalled, ParseError, TaskLoadError
from arl_envs.core.tools import Tool, ToolCall

#: The shipped list of datasets (``datasets``), their default sizes where not :data:`DEFAULT_SIZE` (``sizes``) and
#: the datasets left out with the reason (``excluded``), for the reasoning-gym version named in it.
DATASETS_FILE = Path(__file__).with_name("datasets.json")
#: Items per dataset (the index range an episode draws from) unless ``datasets.json`` or ``size=`` says otherwise.
DEFAULT_SIZE = 10_000
#: Longest answer scored, in characters (longer ones score 0 without calling the scorer).
MAX_ANSWER_CHARS = 20_000

_INSTALL_HINT = "pip install 'arl-envs[reasoning]'"
#: The native format's tag: the last ``<answer>`` outside ``<think>`` (a ``\boxed{}`` where there is none).
ANSWER_TAGS = TagTable(
    (TagFormat("answer", "answer", "answer"),),
    missing="no final answer found: end your reply with <answer>your answer</answer>",
    discard=lambda text: strip_tags(text, "think"),
)


@lru_cache(maxsize=1)
def dataset_table() -> dict[str, Any]:
    """The parsed ``datasets.json``: ``{"reasoning_gym_version", "datasets", "sizes", "excluded"}``."""
    return json.loads(DATASETS_FILE.read_text(encoding="utf-8"))


def _reasoning_gym() -> Any:
    try:
        import reasoning_gym  # noqa: PLC0415 - optional dependency, imported on use
    except ImportError as exc:  # pragma: no cover - exercised only where reasoning-gym is absent
        raise DependencyNotInstalled(f"the reasoning-gym ids need reasoning-gym: {_INSTALL_HINT}") from exc
    return reasoning_gym


#: Datasets whose generator draws from a process-wide generator, and which: ``"numpy"`` (pool_matrix seeds NumPy's
#: global generator and draws from it) or ``"random"`` (list_functions draws from the ``random`` module's without
#: seeding it; here it is seeded from the item's seed, so that the item depends on the seed only). Their state is
#: saved and put back around the library's calls. ``test_every_id_light_check`` fails for a dataset that changes
#: either and is not listed here.
GLOBAL_RNG_DATASETS: dict[str, str] = {"pool_matrix": "numpy", "list_functions": "random"}


def fresh_decimal_context() -> Context:
    """The decimal context of a fresh Python process (``decimal.DefaultContext`` as Python ships it: 28 digits,
    ROUND_HALF_EVEN, traps InvalidOperation, DivisionByZero and Overflow), whatever the caller has set."""
    return Context(prec=28, rounding=ROUND_HALF_EVEN, Emin=-999999, Emax=999999, capitals=1, clamp=0, flags=[],
                   traps=[InvalidOperation, DivisionByZero, Overflow])


@contextmanager
def _isolated(context: Context | None = None, global_rng: str | None = None,
              seed: int | None = None) -> Iterator[Context]:
    """Run reasoning-gym code apart from the caller's process-wide state.

    The thread's decimal context inside is a copy of ``context`` (default: :func:`fresh_decimal_context`, so an item
    depends on the seed only, not on the caller's context); it is yielded so that what a generator set there
    (``decimal_arithmetic`` sets the precision) is reused when the item is scored, and the caller's context is back
    on exit. ``global_rng`` (:data:`GLOBAL_RNG_DATASETS`): that process-wide generator's state is saved and put back
    (draws another thread makes from it meanwhile are undone with it); the ``random`` module's is seeded with
    ``seed`` inside when one is given.
    """
    saved = np.random.get_state() if global_rng == "numpy" else random.getstate() if global_rng == "random" else None
    try:
        if global_rng == "random" and seed is not None:
            random.seed(seed)
        with localcontext(context if context is not None else fresh_decimal_context()) as ctx:
            yield ctx
    finally:
        if global_rng == "numpy":
            np.random.set_state(saved)
        elif global_rng == "random":
            random.setstate(saved)


@lru_cache(maxsize=16)
def _create_dataset(name: str, seed: int, size: int, config_json: str) -> Any:
    """``reasoning_gym.create_dataset`` shared by the envs of one process with the same settings (some datasets
    load files or precompute items for seconds; items are made on demand from ``seed + index`` and never change).

    Raises:
        ValueError: reasoning-gym rejected the config.
    """
    rg = _reasoning_gym()
    config = json.loads(config_json)
    try:
        with _isolated(global_rng=GLOBAL_RNG_DATASETS.get(name)):
            return rg.create_dataset(name, seed=seed, size=size, **config)
    except (TypeError, ValueError, AssertionError, KeyError) as exc:
        raise ValueError(f"reasoning-gym rejected the config of {name!r} ({config}, size={size}): "
                         f"{type(exc).__name__}: {exc}") from exc


class AnswerArgs(BaseModel):
    """Arguments of the ``answer`` tool."""

    answer: str = Field(description="The final answer only, in the form the question asks for.")


class ReasoningGymEnv(AgentEnv):
    """One reasoning-gym item per episode, answered once.

    Description:
        ``reasoning_gym.create_dataset(dataset, seed=dataset_seed, size=size, **config)`` is built once per env;
        each ``reset`` draws an item index in ``[0, size)`` from ``self.np_random`` (same seed, same item).
        ``options={"task_id": "<index>"}`` picks an item.
    Observation:
        The instructions, a blank line and the item's question; after the answer, its score.
    Action:
        Native: free text with the final answer in ``<answer>...</answer>`` (reasoning-gym's convention; the last
        block counts) or, where there is none, the last ``\\boxed{...}``; text inside ``<think>`` is ignored.
        JSON: ``answer(answer)``.
    Tools:
        ``answer(answer: str)``.
    Rewards:
        ``task`` (weight 1): the dataset's ``score_answer(answer, item)`` in [0, 1], partial credit kept (an answer
        the scorer raises on scores 0: the agent wrote it). ``format`` (weight 0.1): raw -1 for a reply without
        a parsable answer.
    Episode end:
        Terminated after the answer; ``success`` when it scores 1. After more than ``max_invalid_actions`` (default
        1) malformed replies: terminated (forfeit). Truncated after ``max_turns`` (default 3).
    Arguments:
        dataset (a name of ``datasets.json``), config (dict: the dataset's config kwargs, e.g.
        ``{"min_terms": 3}``; ``seed`` and ``size`` are the env's), size (items, default per dataset),
        dataset_seed (int, default 0: which procedural set of ``size`` items), plus
        :class:`~arl_envs.core.env.AgentEnv`'s kwargs.
    Raises:
        ValueError: An unknown or excluded dataset, or a config reasoning-gym rejects (its message).
        DependencyNotInstalled: reasoning-gym is not installed.
    Version history:
        v0: first version.
    """

    default_max_turns: ClassVar[int] = 3
    default_max_invalid_actions: ClassVar[int] = 1
    native_tags = ANSWER_TAGS  # format_call; _parse_native adds the \boxed{} fallback
    #: Snapshot: the dataset object is rebuilt from the kwargs, not copied.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_dataset",)

    def __init__(
        self,
        *,
        dataset: str = "chain_sum",
        config: dict[str, Any] | None = None,
        size: int | None = None,
        dataset_seed: int = 0,
        **kwargs: Any,
    ) -> None:
        table = dataset_table()
        if dataset in table["excluded"]:
            raise ValueError(f"reasoning-gym dataset {dataset!r} is not offered: {table['excluded'][dataset]}")
        if dataset not in table["datasets"]:
            raise ValueError(f"unknown reasoning-gym dataset {dataset!r}; known: {', '.join(table['datasets'])}")
        cfg = dict(config or {})
        for key in ("seed", "size"):
            if key in cfg:
                raise ValueError(f"config[{key!r}] is the env's: pass {'dataset_seed' if key == 'seed' else key}=")
        size = int(table["sizes"].get(dataset, DEFAULT_SIZE) if size is None else size)
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        super().__init__(**kwargs)
        self.dataset_name, self.config, self.size, self.dataset_seed = dataset, cfg, size, int(dataset_seed)
        self._dataset: Any = None
        self._build()
        self.item: dict[str, Any] = {}
        self._item_context = fresh_decimal_context()
        self.index = 0

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles leave the dataset out (some hold unpicklable generators); it is rebuilt from the
        kwargs on first use."""
        state = dict(self.__dict__)
        state["_dataset"] = None
        return state

    def _build(self) -> Any:
        if self._dataset is None:
            key = json.dumps(self.config, sort_keys=True, default=repr)
            self._dataset = _create_dataset(self.dataset_name, self.dataset_seed, self.size, key)
        return self._dataset

    # -- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [Tool("answer", "Submit the final answer. Ends the episode.", AnswerArgs)]

    def instructions(self) -> str:
        if self.action_format == "native":
            how = ("Think it through, then give your final answer inside <answer>...</answer> at the end of your "
                   "reply (\\boxed{...} also works). Only the last answer counts.")
        else:
            how = "Think it through, then submit the final answer with the `answer` tool.\n" + \
                self.json_format_instructions()
        return f"Solve the reasoning-gym task ({self.dataset_name}). You have one answer.\n{how}"

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            self.index = int(self.np_random.integers(0, self.size))
        elif task_id.isdigit() and int(task_id) < self.size:
            self.index = int(task_id)
        else:
            raise TaskLoadError(f"task_id must be an item index in 0..{self.size - 1}, got {task_id!r}")
        dataset = self._build()
        # The item is made, and later scored, in a decimal context of its own (see _isolated): the scorer sees the
        # context the item was made in, as it does when reasoning-gym runs alone.
        with _isolated(global_rng=GLOBAL_RNG_DATASETS.get(self.dataset_name),
                       seed=self.dataset_seed + self.index) as context:
            self.item = dataset[self.index]
        self._item_context = context
        return str(self.index), str(self.item["question"])

    def _parse_native(self, text: str) -> list[ToolCall]:
        found = ANSWER_TAGS.match(text)
        if found is not None:
            return [found.checked()]
        boxes = boxed_contents(strip_tags(text, "think"))
        if boxes:
            return [ToolCall("answer", {"answer": boxes[-1].strip()})]
        raise ParseError(ANSWER_TAGS.missing)

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        answer = str(calls[0].arguments["answer"]).strip()
        feedback = None
        if len(answer) > MAX_ANSWER_CHARS:
            score, feedback = 0.0, f"the answer is longer than {MAX_ANSWER_CHARS} characters"
        else:
            try:
                dataset = self._build()
                with _isolated(self._item_context, global_rng=GLOBAL_RNG_DATASETS.get(self.dataset_name)):
                    score = float(dataset.score_answer(answer, self.item))
            except Exception as exc:  # noqa: BLE001 - the scorer failing on the agent's text is the agent's answer
                score, feedback = 0.0, f"the scorer could not read the answer ({type(exc).__name__})"
        score = min(max(score, 0.0), 1.0) if score == score else 0.0
        success = score >= 1.0
        text = "Correct." if success else f"Score {score:g}" + (f" ({feedback})." if feedback else ".")
        info = {"score": score, "answer": answer, "dataset": self.dataset_name}
        return Transition(text, {"task": score}, terminated=True, success=success, info=info)

    def _expert_action(self) -> str:
        return self.render_call("answer", {"answer": str(self.item["answer"])})

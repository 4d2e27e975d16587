"""The single-agent contract every arl-envs environment implements (``arl_envs/CONTRACT.md``, section 2).

:class:`AgentEnv` implements the contract once; a domain env supplies only its task, tools, transition and
reward parts through a few hooks (see the class docstring).
"""

from __future__ import annotations

import functools
import inspect
import typing
from abc import ABCMeta, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

import gymnasium as gym
import pydantic

from arl_envs.core import snapshot
from arl_envs.core.actions import (
    MAX_ACTION_CHARS,
    ParseError,
    TagTable,
    format_hint,
    format_json_tool_call,
    json_format_instructions,
    parse_json_tool_calls,
    parse_tool_calls,
)
from arl_envs.core.errors import (
    InfrastructureError,
    InvalidActionType,
    InvalidKwargs,
    ResetNeeded,
    SandboxUnavailable,
)
from arl_envs.core.rewards import FORMAT_PENALTY_RAW, resolve_weights, weigh
from arl_envs.core.spaces import UnicodeText
from arl_envs.core.tools import Tool, ToolCall

#: Longest observation, in characters; longer ones are cut and marked.
MAX_OBSERVATION_CHARS = 65_536
#: Marker appended to an observation cut at MAX_OBSERVATION_CHARS.
TRUNCATION_MARKER = "\n[... observation truncated ...]"
ACTION_FORMATS = ("native", "json")
#: Exceptions from ``_step_calls`` that mean a part failed (a sandbox that did not start, a dead grader or
#: retriever connection): ``step`` reports them as ``info["env_error"]`` (truncated), never raises them.
INFRASTRUCTURE_ERRORS = (InfrastructureError, SandboxUnavailable, OSError, RuntimeError, EOFError)
#: Subclasses of the above that are bugs in our code, not failures of a part: they propagate.
_BUG_ERRORS = (RecursionError, NotImplementedError)


@dataclass
class Transition:
    """What a domain env returns for one valid action.

    Attributes:
        observation: Text the agent sees next.
        parts: RAW (unweighted) reward parts for this step, e.g. ``{"task": 1.0}``; each key must be one of the
            env's ``default_reward_weights``. ``format`` is added by the base class for malformed actions.
        terminated: The task reached an end state (solved, failed, forfeited).
        success: Whether the task was solved; set it when ``terminated`` is True (None means False then).
        info: Extra env-specific info keys merged into ``info``.
        env_error: An infrastructure failure (sandbox down, grader crash...): the episode is truncated, not
            scored as the agent's failure, and the message goes to ``info["env_error"]``.
        truncated: The task's own limit cut the episode short (a game's move limit, not ``max_turns``): the step
            is ``truncated`` and not ``terminated`` (even when ``terminated`` is also set); ``success`` is kept.
    """

    observation: str
    parts: dict[str, float] = field(default_factory=dict)
    terminated: bool = False
    success: bool | None = None
    info: dict[str, Any] = field(default_factory=dict)
    env_error: str | None = None
    truncated: bool = False


class AgentEnv(gym.Env[str, str], metaclass=ABCMeta):
    """Base class of every single-agent arl-envs environment.

    Observations and actions are ``str`` (:class:`UnicodeText` spaces). ``step(action)`` takes the model's raw
    text for its newest turn. The base class:

    * raises :class:`ResetNeeded` on ``step`` before ``reset`` or after the episode ended, and
      :class:`InvalidActionType` for a non-``str`` action (API misuse);
    * parses the action (``json`` format here, ``native`` via :meth:`_parse_native`), validates tool names and
      arguments, enforces ``max_calls_per_turn``; a malformed action yields an error observation,
      ``info["action_error"]``, the ``format`` reward part (raw ``-1``) and the episode goes on; the
      ``max_invalid_actions + 1``-th malformed action ends it (``terminated``, forfeit, ``success=False``);
    * counts turns and sets ``truncated`` when ``max_turns`` steps have been taken without an end state;
    * weights reward parts into ``info["reward_components"]`` (their sum is the reward);
    * fills the info keys of the contract: ``task_id``, ``turn``, ``reward_components``, ``action_error``,
      ``tool_calls``, ``success`` (and ``tools``, ``instructions`` at reset);
    * keeps the transcript for ``render_mode="ansi"`` and makes ``close()`` idempotent.

    * turns an infrastructure exception out of :meth:`_step_calls` (:data:`INFRASTRUCTURE_ERRORS`) into
      ``info["env_error"]`` with ``truncated=True``;
    * checks that an episode is running before :meth:`_expert_action`.

    Subclasses set ``default_reward_weights``, ``default_max_turns``, ``default_max_invalid_actions`` and
    implement :meth:`tools`, :meth:`instructions`, :meth:`_reset_task`, :meth:`_step_calls`, and optionally
    :attr:`native_tags` (a native format of ``<tag>`` blocks, as a table) or :meth:`_parse_native` +
    :meth:`format_call` (default: the json format), :meth:`parse_action` (the whole parse, for an env with its
    own grammar; the work is :func:`~arl_envs.core.actions.parse_tool_calls`), :meth:`_reset_info` and
    :meth:`_step_info` (env-specific info keys), :meth:`_expert_action`, :meth:`warm_up` and :meth:`_close`.
    ``reset`` and ``step`` are the base class's alone: a subclass that overrides them (or a private ``_parse``)
    fails ``check_conformance``. Constructor kwargs are checked against the signatures of ``__init__`` along the
    class hierarchy (:meth:`check_kwargs`). ``arl_envs/envs/example/guess.py`` is a complete env in about 50 lines;
    the contract is in ``arl_envs/CONTRACT.md``.

    Args:
        action_format: ``"native"`` (the domain's own convention) or ``"json"`` (``<tool_call>`` blocks).
        reward_weights: Weights overriding ``default_reward_weights`` (unknown parts raise ``ValueError``).
        max_turns: Steps before truncation (default: the class's ``default_max_turns``).
        max_invalid_actions: Malformed actions tolerated per episode; the next one terminates the episode.
        render_mode: None or ``"ansi"`` (the transcript as text).

    Raises:
        ValueError: Unknown ``action_format`` or ``render_mode``, or non-positive ``max_turns``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}
    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "format": 0.1}
    default_max_turns: ClassVar[int] = 1
    default_max_invalid_actions: ClassVar[int] = 1
    #: Tool calls accepted in one turn; more is a malformed action.
    max_calls_per_turn: ClassVar[int] = 1
    #: The native format as a table of tags (:class:`~arl_envs.core.actions.TagTable`): the default
    #: :meth:`_parse_native` and :meth:`format_call` read and write it. None: the json format serves for both.
    native_tags: ClassVar[TagTable | None] = None
    #: Whether :meth:`json_format_instructions` lists the tools' JSON schemas. A trainer that hands the schemas to
    #: a tool-aware chat template sets it False on the instance (``ChatMessages(env, tools="template")`` does), so
    #: the instructions name the tools without repeating their schemas.
    schemas_in_instructions: bool = True
    #: How :meth:`snapshot` saves an episode: ``"copy"`` (deepcopy of the instance's state) or ``"replay"`` (the
    #: action log from the reset, for state held in another process); see :mod:`arl_envs.core.snapshot`.
    snapshot_mode: ClassVar[str] = "copy"
    #: Attributes the ``copy`` mode leaves out (handles to processes, user callables); they stay the target's own.
    snapshot_exclude: ClassVar[tuple[str, ...]] = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> AgentEnv:
        # Every construction path (gym.make, a direct call, check_conformance on a class) passes through here.
        cls.check_kwargs(kwargs)
        self = super().__new__(cls)
        self._init_kwargs = dict(kwargs)  # what snapshot()/restore()/fork() compare and rebuild from
        return self

    @classmethod
    def check_kwargs(cls, kwargs: dict[str, Any]) -> None:
        """Check constructor kwargs against the ``__init__`` signatures of the class hierarchy (:func:`check_kwargs`).

        Raises:
            InvalidKwargs: Naming the env class and the kwarg.
        """
        check_kwargs(cls, kwargs)

    def __init__(
        self,
        *,
        action_format: str = "native",
        reward_weights: dict[str, float] | None = None,
        max_turns: int | None = None,
        max_invalid_actions: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.action_format = action_format
        self.reward_weights = resolve_weights(self.default_reward_weights, reward_weights)
        self.max_turns = int(self.default_max_turns if max_turns is None else max_turns)
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")
        self.max_invalid_actions = int(
            self.default_max_invalid_actions if max_invalid_actions is None else max_invalid_actions
        )
        if self.max_invalid_actions < 0:
            raise ValueError(f"max_invalid_actions must be >= 0, got {self.max_invalid_actions}")
        self.render_mode = render_mode
        self.observation_space = UnicodeText(MAX_OBSERVATION_CHARS)
        self.action_space = UnicodeText(MAX_ACTION_CHARS)
        self._tools_by_name: dict[str, Tool] | None = None
        self._episode_active = False
        self._closed = False
        self.task_id: str | None = None
        self.turn = 0
        self.invalid_actions = 0
        self.transcript: list[tuple[str, str]] = []

    # ----------------------------------------------------------------- hooks for subclasses
    @abstractmethod
    def tools(self) -> list[Tool]:
        """Every tool of this env (the ``json`` format uses them as-is; the native format maps onto them)."""

    @abstractmethod
    def instructions(self) -> str:
        """The system prompt: the task family, the tools and the action format in use."""

    @abstractmethod
    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        """Pick a task (from ``self.np_random`` only, or by ``task_id``) and set up its state.

        Returns:
            ``(task_id, first_observation)``.

        Raises:
            TaskLoadError: Unknown ``task_id``.
        """

    def _parse_native(self, text: str) -> list[ToolCall]:
        """Parse the native format into tool calls (arguments validated by the base class).

        The default reads :attr:`native_tags`; without one (an env with no convention of its own) the ``json``
        format (``<tool_call>`` blocks), so ``action_format="native"`` and ``"json"`` then read the same.

        Raises:
            ParseError: With a message for the model.
        """
        return parse_json_tool_calls(text) if self.native_tags is None else self.native_tags.parse(text)

    @abstractmethod
    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        """Apply validated tool calls (``1 <= len(calls) <= max_calls_per_turn``) and return the transition."""

    def parse_action(self, action: str) -> list[ToolCall]:
        """The validated tool calls of one action (what ``step`` runs); a :class:`ParseError` makes it malformed.

        The default checks the length (:data:`MAX_ACTION_CHARS`), reads the ``json`` format or
        :meth:`_parse_native`, enforces ``max_calls_per_turn`` and validates each call against its :class:`Tool`.
        Override it (calling ``super().parse_action`` where it helps) for an env whose grammar is more than a
        mapping onto tool calls; it must change no episode state other than what :meth:`_step_calls` consumes.

        Raises:
            ParseError: With a message for the model.
        """
        return parse_tool_calls(action, self.action_format, self._parse_native, self._tool_map(),
                                self.max_calls_per_turn)

    def _reset_info(self) -> dict[str, Any]:
        """Env-specific keys added to ``reset``'s info (after :meth:`_reset_task`); none by default."""
        return {}

    def _step_info(self, done: bool) -> dict[str, Any]:
        """Env-specific keys added to every step's info, malformed actions included (after ``Transition.info``).

        Args:
            done: The step ended the episode (terminated or truncated).
        """
        return {}

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        """Render a tool call in the NATIVE action format (the json format is handled by :meth:`render_call`).

        The default matches the default :meth:`_parse_native`: :attr:`native_tags`, else a ``<tool_call>`` block.
        """
        if self.native_tags is not None:
            return self.native_tags.format(name, arguments)
        return format_json_tool_call(name, arguments)

    def expert_action(self) -> str:
        """The scripted expert's action for the current state, in the env's action format.

        Checks that an episode is running, then calls :meth:`_expert_action` (the hook to implement).

        Raises:
            ResetNeeded: If no episode is running.
        """
        if not self._episode_active:
            raise ResetNeeded("no running episode: call reset() first")
        return self._expert_action()

    def _expert_action(self) -> str:
        """The expert's action for the current (running) state; write it with :meth:`render_call`.

        Raises:
            NotImplementedError: The env has no scripted expert (set ``has_expert = False``).
        """
        raise NotImplementedError(f"{type(self).__name__} has no scripted expert")

    def _close(self) -> None:
        """Release resources (sandboxes, processes). Called once."""

    def warm_up(self) -> None:
        """Start now what the env otherwise starts lazily on first use (a grader worker...); a no-op by default.

        Optional: envs work without it. Throughput measurements (``arl-envs demo``) call it before timing, so a
        one-off start-up is not reported as steps/s.
        """

    # ----------------------------------------------------------------- public helpers
    def render_call(self, name: str, arguments: dict[str, Any]) -> str:
        """Render a tool call in this env's ``action_format`` (what a policy should write)."""
        if self.action_format == "json":
            return format_json_tool_call(name, arguments)
        return self.format_call(name, arguments)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI-style JSON schemas of :meth:`tools` (what ``tokenizer.apply_chat_template(tools=...)`` takes).

        The schema dicts are cached and shared between calls: treat them as read-only.
        """
        return [t.schema() for t in self._tool_map().values()]

    def json_format_instructions(self) -> str:
        """A paragraph describing the ``json`` action format and the tools, for :meth:`instructions`: their JSON
        schemas, or only their names when :attr:`schemas_in_instructions` is False."""
        schemas = self.tool_schemas() if self.schemas_in_instructions else None
        return json_format_instructions(schemas, list(self._tool_map()))

    # ----------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode.

        Args:
            seed: Seeds ``self.np_random``; the same seed gives the same task.
            options: ``{"task_id": str}`` picks a task by id.

        Returns:
            ``(observation, info)``. The observation is the instructions, a blank line, then the task (a complete
            prompt by itself); info has ``task_id``, ``task`` (the task text alone), ``turn`` (0), ``tools``,
            ``instructions`` and ``action_format``.

        Raises:
            TaskLoadError: Unknown ``task_id``.
            ResetNeeded: If the env was closed.
        """
        if self._closed:
            raise ResetNeeded("this env was closed; make a new one")
        super().reset(seed=seed)
        snapshot.record_reset(self, seed, options)
        task_id = (options or {}).get("task_id")
        self.task_id, obs = self._reset_task(None if task_id is None else str(task_id))
        self.turn = 0
        self.invalid_actions = 0
        self._episode_active = True
        instructions = self.instructions()
        task_text = obs
        # The first observation is a complete prompt on its own (instructions + task) for template-less models;
        # info["instructions"] and info["task"] give the two parts separately for chat templates.
        obs = self._cap(f"{instructions}\n\n{task_text}")
        self.transcript = [("system", instructions), ("user", task_text)]
        info = {
            "task_id": self.task_id,
            "task": task_text,
            "turn": 0,
            "tools": self.tool_schemas(),
            "instructions": instructions,
            "action_format": self.action_format,
        }
        info.update(self._reset_info())
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Take the model's newest turn (raw text) and advance the episode.

        Returns:
            ``(observation, reward, terminated, truncated, info)`` as in Gymnasium. Never both
            ``terminated`` and ``truncated``.

        Raises:
            InvalidActionType: ``action`` is not a ``str``.
            ResetNeeded: No running episode (step before reset, or after it ended).
        """
        if not isinstance(action, str):
            raise InvalidActionType(f"action must be a str (the model's text), got {type(action).__name__}")
        if not self._episode_active:
            raise ResetNeeded("call reset() before step(): no episode is running")
        self.turn += 1
        self.transcript.append(("assistant", action))

        calls: list[ToolCall] = []
        error: str | None = None
        try:
            calls = self.parse_action(action)
        except ParseError as exc:
            error = str(exc)

        extra: dict[str, Any] = {}
        env_error = None
        cut_short = False
        if error is not None:
            self.invalid_actions += 1
            raw = {"format": FORMAT_PENALTY_RAW}
            terminated = self.invalid_actions > self.max_invalid_actions
            success = False
            if terminated:
                obs = f"Invalid action: {error}\nToo many invalid actions ({self.invalid_actions}); the episode is over."
            else:
                obs = f"Invalid action: {error}\n{self._format_hint()}"
        else:
            tr = _guarded(self._step_calls, calls)
            raw, terminated, success, obs = dict(tr.parts), tr.terminated, bool(tr.success), tr.observation
            extra = tr.info
            env_error = tr.env_error
            cut_short = tr.truncated
        truncated = False
        if env_error is not None:
            terminated, truncated, success = False, True, False
            raw.pop("task", None)
        elif cut_short:
            terminated, truncated = False, True
        elif not terminated and self.turn >= self.max_turns:
            truncated = True
            obs = f"{obs}\n[Turn limit of {self.max_turns} reached: the episode is over.]"
        reward, components = weigh(raw, self.reward_weights)
        obs = self._cap(obs)
        self.transcript.append(("env", obs))
        if terminated or truncated:
            self._episode_active = False
        info: dict[str, Any] = {
            "task_id": self.task_id,
            "turn": self.turn,
            "reward_components": components,
            "action_error": error,
            "tool_calls": [c.to_dict() for c in calls],
            "success": bool(success) if (terminated or truncated) else False,
        }
        if env_error is not None:
            info["env_error"] = env_error
        info.update(extra)
        info.update(self._step_info(bool(terminated or truncated)))
        return obs, reward, bool(terminated), truncated, info

    def snapshot(self) -> snapshot.Snapshot:
        """Save the episode's state (RNG states and the turn included); see :mod:`arl_envs.core.snapshot`.

        Raises:
            ResetNeeded: No episode yet.
            SnapshotError: The state cannot be copied (the message names the attribute).
        """
        return snapshot.take_snapshot(self)

    def restore(self, snap: snapshot.Snapshot) -> None:
        """Put this env into the state of ``snap`` (taken by this env or one made with the same id and kwargs).

        Raises:
            SnapshotError: ``snap`` comes from another env class or other constructor kwargs, or this env was closed.
        """
        snapshot.restore_snapshot(self, snap)

    def render(self) -> str | None:
        """The transcript so far (``render_mode="ansi"``), else None."""
        if self.render_mode != "ansi":
            return None
        parts = [f"=== {role} ===\n{text}" for role, text in self.transcript]
        return "\n".join(parts) + "\n"

    def close(self) -> None:
        """Release resources; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        self._episode_active = False
        self._close()

    # ----------------------------------------------------------------- internals
    def _tool_map(self) -> dict[str, Tool]:
        if self._tools_by_name is None:
            self._tools_by_name = {t.name: t for t in self.tools()}
        return self._tools_by_name

    def _format_hint(self) -> str:
        return format_hint(self.action_format, self.tools()[0].name)

    @staticmethod
    def _cap(text: str) -> str:
        if len(text) <= MAX_OBSERVATION_CHARS:
            return text
        return text[: MAX_OBSERVATION_CHARS - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER


def _guarded(step_calls: Callable[[list[ToolCall]], Transition], calls: list[ToolCall]) -> Transition:
    """``step_calls(calls)`` (an env's ``_step_calls``), with an infrastructure failure turned into
    ``Transition(env_error=...)``."""
    try:
        return step_calls(calls)
    except _BUG_ERRORS:
        raise
    except INFRASTRUCTURE_ERRORS as exc:
        return Transition(
            "The environment failed (not your fault); this episode is not scored.",
            env_error=f"{type(exc).__name__}: {exc}",
        )


def check_kwargs(cls: type, kwargs: dict[str, Any]) -> None:
    """Check constructor kwargs of env class ``cls`` against the ``__init__`` signatures of its hierarchy.

    A kwarg must be a parameter of some ``__init__`` along the MRO (walking up while each one forwards
    ``**kwargs``) and its value must validate (pydantic, lax mode: ``"5"`` is an int, ``"abc"`` is no
    float) against that parameter's type hint. Ranges stay the env's own checks.

    Raises:
        InvalidKwargs: Naming the env class and the kwarg.
    """
    params = _init_params(cls)
    unknown = sorted(set(kwargs) - set(params))
    if unknown:
        raise InvalidKwargs(
            f"{cls.__name__} got unknown keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"it accepts: {', '.join(sorted(params))}"
        )
    for name, value in kwargs.items():
        adapter = params[name]
        if adapter is None:
            continue
        try:
            adapter.validate_python(value)
        except pydantic.ValidationError as exc:
            why = exc.errors()[0].get("msg", str(exc))
            raise InvalidKwargs(f"{cls.__name__}: invalid value for kwarg {name!r}: {value!r} ({why})") from None


@functools.cache
def _init_params(cls: type) -> dict[str, pydantic.TypeAdapter | None]:
    """Keyword parameters accepted by ``cls(...)``: name -> a validator of its type hint (None: not checked)."""
    params: dict[str, pydantic.TypeAdapter | None] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        sig = inspect.signature(init)
        try:
            hints = typing.get_type_hints(init)
        except Exception:  # noqa: BLE001 - an unresolvable hint (TYPE_CHECKING import) is simply not checked
            hints = {}
        forwards = False
        for p in list(sig.parameters.values())[1:]:
            if p.kind is p.VAR_KEYWORD:
                forwards = True
            elif p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in params:
                params[p.name] = _adapter(hints.get(p.name))
        if not forwards or klass is AgentEnv:
            break
    return params


def _adapter(hint: Any) -> pydantic.TypeAdapter | None:
    if hint is None or hint is Any:
        return None
    try:
        return pydantic.TypeAdapter(hint, config=pydantic.ConfigDict(arbitrary_types_allowed=True))
    except Exception:  # noqa: BLE001 - a hint pydantic cannot express is not checked
        return None


#: Methods that :class:`AgentEnv` alone defines: a domain env changes what they do through the hooks
#: (:meth:`AgentEnv.parse_action`, :meth:`AgentEnv._reset_info`, :meth:`AgentEnv._step_info`, ``Transition``).
SEALED_METHODS = ("reset", "step", "_parse")


def sealed_overrides(cls: type) -> list[str]:
    """``"Class.method"`` for every :data:`SEALED_METHODS` entry that a class of ``cls``'s MRO other than
    :class:`AgentEnv` (and its bases) defines; empty for a conforming env class. A class that sets
    ``contract_proxy = True`` in its body (``arl/remote-v0``'s client, whose ``reset``/``step`` forward to an env
    running the hooks in another process) is the one exemption."""
    found = []
    for klass in cls.__mro__:
        if klass is AgentEnv or not issubclass(klass, AgentEnv) or klass.__dict__.get("contract_proxy"):
            continue
        found += [f"{klass.__qualname__}.{name}" for name in SEALED_METHODS if name in klass.__dict__]
    return found

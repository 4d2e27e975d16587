"""Shared machinery of the text PettingZoo games.

Every game is a PettingZoo **AEC** env (:class:`TextGameEnv`, a ``pettingzoo.AECEnv``) whose observations and
actions are ``str`` (:class:`~arl_envs.core.spaces.UnicodeText` spaces, one cached object per agent). The base class
does the PettingZoo bookkeeping once (``agents``, ``agent_selection``, ``rewards``, ``_cumulative_rewards``,
``terminations``, ``truncations``, ``infos``, dead steps, removal of agents that leave), and the rules every game
shares:

* **Move parsing** (:meth:`TextGameEnv._parse_move`): a ``<tool_call>{"name": "move", "arguments": {"move": "3"}}``
  block (:func:`arl_envs.core.actions.parse_json_tool_calls`), else the last ``[3]`` bracket, else a keyword form
  (``column 3``, ``cell 4``, ``move 2``, ``play 5``), else a reply that is just a move name (``3``). ``<think>``
  blocks are ignored, and an unclosed ``<think>`` (a reply cut off by a length limit) hides everything after it.
  With ``action_format="json"`` only the tool call is accepted.
* **Invalid moves**: a reply with no parsable move, an unknown move or an illegal one is an invalid move, never a
  silent pass: the mover stays to move, ``infos[agent]["reason"]`` says what was wrong (on every invalid move,
  the first one after reset included), and its next observation starts with that reason. The
  ``max_invalid_actions + 1``-th invalid move of an agent in one game forfeits it (:meth:`TextGameEnv._forfeit`;
  zero-sum default: the forfeiter -1, the others share +1). So an agent repeating an invalid move forever ends the
  game in at most ``max_invalid_actions + 1`` of its steps.
* **What a step did**: :meth:`TextGameEnv.play` is ``step`` returning a
  :class:`~arl_envs.envs.multiagent.bookkeeping.PlayReport` (the move played or
  why it was invalid, and whether it forfeited the game), for callers such as the single-agent view.
* **Info** of every agent, refreshed each step: ``legal_moves`` (native names; empty when it is not the agent's
  turn), ``reason`` (None, or why the agent's last move was invalid), ``invalid_moves`` (count this game),
  ``to_move`` (bool), ``move_number`` (valid moves played so far), ``instructions`` (the rules and move format);
  ``action_mask`` (``np.int8``) for a game with a fixed move vocabulary (``mask_moves``), so that
  ``action_space(agent).sample(info["action_mask"])`` (a :class:`MoveText`) is a random legal move.
* **Observations** (:meth:`TextGameEnv.observe`): what happened since the agent last moved (``events``), the
  game's own view (:meth:`TextGameEnv._observation`), and, when the agent is to move, its legal moves. They
  depend on the current state only (and the events of one round), so they do not grow across moves or resets.
  They are :class:`TextObservation` objects: ``str`` with the ``dtype`` PettingZoo's ``api_test`` asks for.
* **Seeding**: ``reset(seed=s)`` reseeds ``self.np_random`` (chance events such as a card deal must use it);
  ``reset()`` continues the generator, as Gymnasium does.

How a game plugs in
-------------------
Subclass :class:`TextGameEnv`, set ``metadata["name"]`` (``"tictactoe_v0"``), ``possible_agents_default`` and
implement the hooks:

* ``_reset_game()``: set up the state (chance from ``self.np_random`` only);
* ``_current_agent() -> str``: who moves now (only called while the game runs);
* ``legal_moves(agent) -> list[str]``: the legal moves of ``agent`` now, by native name (``"3"``). The base
  caches it per (game, ``move_number``, agent), so it must depend only on state that ``_apply_move`` changes
  (call ``self._legal_cache = (None, [])`` after changing state any other way);
* ``all_moves(agent) -> Sequence[str]``: every move name of the game (so "unknown" and "illegal now" differ);
  a game whose moves are free text overrides :meth:`_parse_move` instead (and may return ``[]`` here);
* ``_apply_move(agent, move) -> MoveResult``: play a legal move (already canonical) and say what it did:
  step rewards, whether the game ended, which agents leave, and the event text the others read;
* ``_observation(agent) -> str``: the game state as ``agent`` may see it (hide private information!);
* ``instructions(agent) -> str``: rules and move format for ``agent`` (called once per instance, at the first
  reset: per-game private information such as a hand or item values belongs in the observation);
* ``expert_move(agent, rng) -> str`` and optionally ``random_move(agent, rng) -> str`` (default: uniform over
  ``legal_moves``): reference players used by the single-agent view (:mod:`arl_envs.envs.multiagent.view`);
  optionally ``counter_move(agent, rng, opponent)`` (the view's expert when it knows the opponent's kind);
* optionally ``max_moves_hint`` (most valid moves of one agent per game: the view's turn budget),
  ``_forfeit(agent) -> MoveResult`` (cooperative games), ``render_state() -> str`` (the ``ansi`` render),
  ``outcome(agent, total_return) -> str`` and ``success(agent, total_return) -> bool`` (the view's ``success``).

Then make the module the PettingZoo way (``arl_envs/envs/multiagent/<game>_v0.py``)::

    from arl_envs.envs.multiagent.base import make_module
    env, raw_env, parallel_env = make_module(MyGameEnv)

``env(**kw)`` is the AEC env (it enforces reset-before-step itself, so no PettingZoo wrapper slows it down),
``parallel_env(**kw)`` the Parallel one: ``pettingzoo.utils.conversions.turn_based_aec_to_parallel`` for turn-based
games (the default; only the mover's action is used), or pass ``parallel=MyParallelEnv`` for a game that is natively
simultaneous (then ``env`` is ``parallel_to_aec`` of it and it must fill the same info keys itself).
A single-agent gym id is one row in ``arl_envs/registration.py``:
``EnvSpecRow("arl/multiagent.<game>-v0", "arl_envs.envs.multiagent.view:GameSeatEnv", ..., kwargs={"game": "<game>"})``.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from abc import abstractmethod
from typing import Any, ClassVar, Sequence

import numpy as np
from gymnasium.utils import seeding

from arl_envs.core.actions import ParseError, parse_json_tool_calls, strip_tags
from arl_envs.core.errors import DependencyNotInstalled, ResetNeeded
from arl_envs.core.spaces import UnicodeText

# The move bookkeeping, the Parallel wrappers and the module constructors have modules of their own; their names
# are importable from here too.
from arl_envs.envs.multiagent.bookkeeping import (  # noqa: F401 - PlayReport, _action_mask: re-exported
    MoveBookkeeping,
    MoveResult,
    PlayReport,
    _action_mask,
)
from arl_envs.envs.multiagent.parallel import (  # noqa: F401 - re-exported
    GameModule,
    ParallelSnapshot,
    TurnParallelEnv,
    make_module,
)

try:
    from pettingzoo import AECEnv
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise DependencyNotInstalled("multi-agent games need PettingZoo: pip install 'arl-envs[multiagent]'") from _exc

#: Longest observation of a game, in characters (the observation space's bound).
MAX_OBSERVATION_CHARS = 16_384
#: Longest action accepted, in characters; longer replies are invalid moves (not exceptions).
MAX_ACTION_CHARS = 131_072
#: Invalid moves an agent may make in one game before the next one forfeits it.
DEFAULT_MAX_INVALID_ACTIONS = 3
#: Reward of the agent that forfeits (zero-sum games); the others share ``-FORFEIT_REWARD``.
FORFEIT_REWARD = -1.0
#: Name of the tool of the ``json`` action format.
MOVE_TOOL = "move"
ACTION_FORMATS = ("native", "json")

#: A bracket's content (no nested brackets). Unambiguous on purpose: the former ``\[\s*(...{1,40}?)\s*\]``
#: backtracked quadratically on "[" followed by a long run of spaces (a 130k-character reply took minutes).
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
#: Longest bracket content (whitespace around it stripped) taken as a move candidate, in characters.
MAX_BRACKET_CHARS = 40
_KEYWORDS = r"(?:column|col|cell|square|move|play|action)"
#: "column 3", "play cell 4", "Move: 2" (the token after the last keyword of a chain).
#: (``(?:\s*[:#=])?\s*`` rather than ``\s*[:#=]?\s*``: two adjacent ``\s*`` backtrack quadratically on long blank runs.)
_KEYWORD = re.compile(rf"\b{_KEYWORDS}\b(?:\s*[:#=])?\s*\[?(?!{_KEYWORDS}\b)([A-Za-z0-9_]{{1,20}})\]?", re.I)
_PREFIX = re.compile(r"^(?:column|col|cell|square|move|play|action)\s*[:#=]?\s*", re.I)


class TextObservation(str):
    """A ``str`` that also carries the ``dtype`` of its :class:`UnicodeText` space (``numpy.dtype(str)``).

    PettingZoo's ``api_test`` compares ``observation_space(agent).dtype`` with ``observation.dtype``
    (``_test_observation_space_compatibility``), which a plain ``str`` lacks. Observations are therefore this
    subclass: everything that takes a ``str`` takes it (``isinstance(obs, str)`` is True, ``json.dumps`` writes it
    as a string); ``str(obs)`` gives a plain ``str``.
    """

    __slots__ = ()
    dtype = np.dtype(str)


class MoveText(UnicodeText):
    """Text action space of a game: any ``str``; ``sample(mask)`` gives a random legal move.

    ``sample()`` without a mask is random Unicode text (almost always an invalid move). With ``mask`` (the
    ``np.int8`` array of ``info["action_mask"]``, one entry per move of ``moves``) it returns a uniformly drawn
    allowed move: ``moves[i]``, or the decimal index ``str(i)`` when ``moves`` is None (OpenSpiel action ids, which
    the bridge accepts as moves). PettingZoo's ``api_test`` and ``seed_test`` call ``sample(info["action_mask"])``,
    so through this space they play real games rather than only invalid moves.

    Args:
        max_length: Longest string, in characters.
        moves: The move vocabulary the mask indexes, or None for decimal ids.
    """

    def __init__(self, max_length: int, moves: Sequence[str] | None = None) -> None:
        super().__init__(max_length)
        self.moves = None if moves is None else tuple(moves)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random allowed move under ``mask``, else random text.

        An all-zero mask (an agent that is not to move) gives ``""``, the no-move reply, as Gymnasium's
        ``Discrete.sample`` gives ``start`` there: PettingZoo's conversions (``parallel_to_aec``) ask every agent
        for an action each cycle, also those whose action is ignored.

        Raises:
            ValueError: ``probability`` given.
        """
        if probability is not None:
            raise ValueError("MoveText.sample does not support probability")
        if mask is None:
            return super().sample()
        legal = np.flatnonzero(np.asarray(mask))
        if legal.size == 0:
            return ""
        i = int(legal[int(self.np_random.integers(0, legal.size))])
        return str(i) if self.moves is None else self.moves[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MoveText) and super().__eq__(other) and other.moves == self.moves

    def __hash__(self) -> int:
        return hash(("MoveText", self.max_length, self.moves))



def resolve_invalid_budget(max_invalid_actions: int | None, max_invalid_moves: int | None, default: int) -> int:
    """The invalid-action budget from ``max_invalid_actions`` or its deprecated alias ``max_invalid_moves``.

    Raises:
        ValueError: Both are given with different values, or the budget is negative.
    """
    if max_invalid_moves is not None:
        warnings.warn("max_invalid_moves is deprecated; use max_invalid_actions", DeprecationWarning, stacklevel=3)
        if max_invalid_actions is not None and int(max_invalid_actions) != int(max_invalid_moves):
            raise ValueError(f"max_invalid_actions={max_invalid_actions} and its deprecated alias "
                             f"max_invalid_moves={max_invalid_moves} disagree; pass max_invalid_actions only")
        max_invalid_actions = max_invalid_moves
    budget = default if max_invalid_actions is None else int(max_invalid_actions)
    if budget < 0:
        raise ValueError(f"max_invalid_actions must be >= 0, got {budget}")
    return budget


class TextGameEnv(MoveBookkeeping, AECEnv):
    """Base class of the text PettingZoo games (see the module docstring for how a game plugs in).

    Args:
        max_invalid_actions: Invalid moves tolerated per agent and game; the next one forfeits (default 3).
        max_invalid_moves: Deprecated alias of ``max_invalid_actions`` (a ``DeprecationWarning``).
        action_format: ``"native"`` (``[3]``, ``column 3``, ... and tool calls) or ``"json"`` (tool calls only).
        render_mode: None, ``"ansi"`` (``render()`` returns the state text) or ``"human"`` (prints it).

    Raises:
        ValueError: Unknown ``action_format``/``render_mode`` or negative ``max_invalid_actions``.
        ResetNeeded: ``step``/``observe`` before ``reset``.
        InvalidActionType: A live agent's action is not a ``str``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "name": "text_game_v0",
                                          "is_parallelizable": False, "render_fps": 1}
    #: Agent names, in seat order.
    possible_agents_default: ClassVar[tuple[str, ...]] = ("player_0", "player_1")
    #: Whether the game is zero-sum (default forfeit: -1 for the forfeiter, +1 shared by the others).
    zero_sum: ClassVar[bool] = True
    #: Whether agents move one at a time (``legal_moves`` in every info).
    turn_based: ClassVar[bool] = True
    #: A short human name used in texts ("Tic-tac-toe").
    title: ClassVar[str] = "game"
    #: Most valid moves one agent makes in one game (bounds the single-agent view's turn budget).
    max_moves_hint: ClassVar[int] = 100
    #: A game's fixed move vocabulary, or None. When set, every info has ``action_mask`` (``np.int8`` over these
    #: moves, 1 = legal now, all zero when the agent is not to move) and the action space is a :class:`MoveText`
    #: over them, so ``action_space(agent).sample(info["action_mask"])`` (what PettingZoo's ``api_test`` plays)
    #: is a random legal move. Games with other vocabularies fill their own mask and spaces.
    mask_moves: ClassVar[tuple[str, ...] | None] = None

    def __init__(
        self,
        *,
        max_invalid_actions: int | None = None,
        max_invalid_moves: int | None = None,
        action_format: str = "native",
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if action_format not in ACTION_FORMATS:
            raise ValueError(f"action_format must be one of {ACTION_FORMATS}, got {action_format!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.max_invalid_actions = resolve_invalid_budget(max_invalid_actions, max_invalid_moves,
                                                          DEFAULT_MAX_INVALID_ACTIONS)
        self.action_format = action_format
        self.render_mode = render_mode
        self.possible_agents = list(self.possible_agents_default)
        # Built on first use (most loops never ask; a fresh env per episode then pays nothing), one cached object
        # per agent as PettingZoo requires. A game may fill these dicts itself with other spaces.
        self._obs_spaces: dict[str, Any] = {}
        self._act_spaces: dict[str, Any] = {}
        self._np_random: np.random.Generator | None = None
        self._pending_seed: int | None = None
        self.np_random_seed: int | None = None
        self._seeded = False
        self._started = False
        self.agents: list[str] = []
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection: str = self.possible_agents[0]
        self.returns: dict[str, float] = {}
        self.move_number = 0
        self.invalid_moves: dict[str, int] = {}
        self.last_reason: dict[str, str | None] = {}
        self.last_moves: dict[str, str] = {}
        self._events: dict[str, list[str]] = {}
        self.forfeited: str | None = None
        self._instructions: dict[str, str] = {}
        #: ``id(all_moves(...))`` -> lower-case name -> name; only for move tuples that live as long as the class
        #: (games whose ``all_moves`` builds a new list each call get no caching, bounded at 64 entries).
        self._lookup_cache: dict[int, dict[str, str]] = {}
        self._episode_count = 0
        self._legal_cache: tuple[Any, list[str]] = (None, [])

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _reset_game(self) -> None:
        """Set up a new game (chance from ``self.np_random`` only)."""

    @abstractmethod
    def _current_agent(self) -> str:
        """The agent to move (called only while the game runs)."""

    @abstractmethod
    def legal_moves(self, agent: str) -> list[str]:
        """Legal moves of ``agent`` now, by native name (empty when it is not ``agent``'s turn)."""

    @abstractmethod
    def all_moves(self, agent: str) -> Sequence[str]:
        """Every move name of the game for ``agent`` (legal now or not)."""

    @abstractmethod
    def _apply_move(self, agent: str, move: str) -> MoveResult:
        """Play ``move`` (canonical, legal) for ``agent``."""

    @abstractmethod
    def _observation(self, agent: str) -> str:
        """The game state as ``agent`` may see it."""

    @abstractmethod
    def instructions(self, agent: str) -> str:
        """Rules and move format, for ``agent``'s seat."""

    @abstractmethod
    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """The reference strong player's move for ``agent`` now (native name)."""

    def counter_move(self, agent: str, rng: np.random.Generator, opponent: str) -> str:
        """The single-agent view's expert move against an opponent of kind ``opponent`` (``"random"``,
        ``"expert"`` or ``"callable"``): a game may exploit a known opponent here. Default: :meth:`expert_move`."""
        return self.expert_move(agent, rng)

    def random_move(self, agent: str, rng: np.random.Generator) -> str:
        """A uniformly random legal move of ``agent``."""
        moves = self.legal_moves(agent)
        return moves[int(rng.integers(0, len(moves)))]

    def _forfeit(self, agent: str) -> MoveResult:
        """Result of ``agent`` forfeiting (zero-sum default: it gets -1, the others share +1)."""
        others = [a for a in self.agents if a != agent]
        rewards = {agent: FORFEIT_REWARD}
        for a in others:
            rewards[a] = -FORFEIT_REWARD / len(others)
        return MoveResult(rewards=rewards, game_over=True, event=f"{agent} forfeited (too many invalid moves).")

    def render_state(self) -> str:
        """The public state as text (the ``ansi`` render). Default: the first agent's observation."""
        return self._observation(self.possible_agents[0])

    def outcome(self, agent: str, total_return: float) -> str:
        """``"win"``, ``"draw"`` or ``"loss"`` from ``agent``'s total return (zero-sum default)."""
        return "win" if total_return > 0 else "loss" if total_return < 0 else "draw"

    def success(self, agent: str, total_return: float) -> bool:
        """Whether ``agent`` succeeded (the single-agent view's ``info["success"]``); default: it won."""
        return self.outcome(agent, total_return) == "win"

    def move_name_for(self, candidate: str, agent: str) -> str | None:
        """Map a parsed candidate (``"3"``, ``"Column 3"``) to a canonical move name, or None if unknown."""
        moves = self.all_moves(agent)
        lookup = self._lookup_cache.get(id(moves))
        if lookup is None:
            lookup = {name.lower(): name for name in moves}
            if len(self._lookup_cache) < 64:
                self._lookup_cache[id(moves)] = lookup
        hit = lookup.get(candidate)
        if hit is not None:
            return hit
        return lookup.get(_PREFIX.sub("", candidate.strip()).strip().rstrip(".").lower())

    def format_move(self, move: str) -> str:
        """A move written in the ``action_format`` in use (what a policy should reply)."""
        if self.action_format == "json":
            from arl_envs.core.actions import format_json_tool_call

            return format_json_tool_call(MOVE_TOOL, {"move": move})
        return f"[{move}]"

    @property
    def max_invalid_moves(self) -> int:
        """Deprecated alias of ``max_invalid_actions`` (a ``DeprecationWarning``)."""
        warnings.warn("max_invalid_moves is deprecated; use max_invalid_actions", DeprecationWarning, stacklevel=2)
        return self.max_invalid_actions

    @property
    def np_random(self) -> np.random.Generator:
        """The game's generator (seeded by ``reset(seed=...)``); all chance must come from it."""
        if self._np_random is None:
            self._np_random, self.np_random_seed = seeding.np_random(self._pending_seed)
        return self._np_random

    # ------------------------------------------------------------------ PettingZoo API
    def observation_space(self, agent: str) -> UnicodeText:
        """The (cached) text observation space of ``agent``.

        Raises:
            KeyError: ``agent`` is not one of ``possible_agents``.
        """
        space = self._obs_spaces.get(agent)
        if space is None:
            if agent not in self.possible_agents:
                raise KeyError(f"unknown agent {agent!r}; agents: {self.possible_agents}")
            space = self._obs_spaces[agent] = UnicodeText(MAX_OBSERVATION_CHARS)
        return space

    def action_space(self, agent: str) -> UnicodeText:
        """The (cached) text action space of ``agent``.

        Raises:
            KeyError: ``agent`` is not one of ``possible_agents``.
        """
        space = self._act_spaces.get(agent)
        if space is None:
            if agent not in self.possible_agents:
                raise KeyError(f"unknown agent {agent!r}; agents: {self.possible_agents}")
            moves = self.mask_moves
            space = UnicodeText(MAX_ACTION_CHARS) if moves is None else MoveText(MAX_ACTION_CHARS, moves=moves)
            self._act_spaces[agent] = space
        return space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a game. ``seed`` reseeds ``np_random``; without it the generator continues."""
        if seed is not None or not self._seeded:
            # Created lazily on first use (a game without chance never pays for a generator per reset).
            self._np_random, self._pending_seed, self._seeded = None, seed, True
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.returns = dict.fromkeys(self.agents, 0.0)
        self.invalid_moves = dict.fromkeys(self.agents, 0)
        self.last_reason = dict.fromkeys(self.agents, None)
        self.last_moves: dict[str, str] = {}
        self._events = {a: [] for a in self.agents}
        self._skip_agent_selection = None
        self.move_number = 0
        self._episode_count += 1
        self.forfeited = None
        if not self._instructions:  # the rules do not change between games of one instance
            self._instructions = {a: self.instructions(a) for a in self.possible_agents}
        self._reset_game()
        self._started = True
        self.agent_selection = self._current_agent()
        self._refresh_infos()

    def observe(self, agent: str) -> TextObservation:
        """``agent``'s observation: events since it last moved, the game view, its legal moves if it is to move."""
        if not self._started:
            raise ResetNeeded("call reset() before observe()")
        reason = self.last_reason.get(agent)
        events = self._events.get(agent)
        parts = [f"Invalid move: {reason}"] if reason is not None else []
        if events:
            parts += events
        parts.append(self._observation(agent))
        if self.terminations.get(agent, True) or self.truncations[agent]:
            parts.append("The game is over.")
        elif agent == self.agent_selection:
            parts.append(self._prompt(agent))
        text = "\n".join(parts)
        if len(text) > MAX_OBSERVATION_CHARS:
            text = text[: MAX_OBSERVATION_CHARS - 20] + "\n[... truncated ...]"
        return TextObservation(text)

    def step(self, action: str | None) -> None:
        """Apply the selected agent's reply (raw model text); None only for a terminated/truncated agent."""
        self.play(action)

    def render(self) -> str | None:
        """``ansi``: the state as text; ``human``: prints it; None without a render mode."""
        if self.render_mode is None or not self._started:
            return None
        text = self.render_state()
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Nothing to release (safe to call more than once)."""

    def snapshot(self) -> Any:
        """Save the game's state (board, chance RNG, returns, the agent to move) as a
        :class:`~arl_envs.core.snapshot.Snapshot` (a deep copy; pickles where the game's state does).

        Raises:
            ResetNeeded: No game yet.
        """
        from arl_envs.core.snapshot import snapshot_object

        if not self._started:
            raise ResetNeeded(f"{type(self).__name__}.snapshot(): no game yet, call reset() first")
        return snapshot_object(self, self.move_number)

    def restore(self, snap: Any) -> None:
        """Put this game into the state of ``snap`` (from :meth:`snapshot` of the same game class; the game's
        settings are part of the copied state).

        Raises:
            SnapshotError: ``snap`` comes from another class.
        """
        from arl_envs.core.snapshot import restore_object

        restore_object(self, snap)

    def state(self) -> str:
        """The full public state as text (what :meth:`render_state` shows)."""
        return self.render_state()

    def _legal(self, agent: str) -> list[str]:
        """:meth:`legal_moves`, computed once per state and agent (the state changes only by a valid move)."""
        key = (self._episode_count, self.move_number, agent)
        cache = self._legal_cache
        if cache[0] == key:
            return cache[1]
        moves = self.legal_moves(agent)
        self._legal_cache = (key, moves)
        return moves

    # ------------------------------------------------------------------ parsing
    def _parse_move(self, agent: str, text: str) -> str:
        """The canonical legal move in ``text``.

        Raises:
            ParseError: No move found, an unknown move, or an illegal one (the message is the ``reason``).
        """
        if len(text) > MAX_ACTION_CHARS:
            raise ParseError(f"your reply is {len(text)} characters long; the limit is {MAX_ACTION_CHARS}")
        if self.action_format == "native" and len(text) <= 42 and text[:1] == "[" and text[-1:] == "]":
            fast = self.move_name_for(text[1:-1], agent)  # the common "[4]": skip the general parse
            if fast is not None and fast in self._legal(agent):
                return fast
        text = _visible(text)
        candidate: str | None = None
        if "<tool_call>" in text or "</tool_call>" in text:
            calls = parse_json_tool_calls(text)
            if len(calls) != 1:
                raise ParseError(f"write exactly one move per turn; found {len(calls)} tool calls")
            call = calls[0]
            if call.name != MOVE_TOOL:
                raise ParseError(f"unknown tool {call.name!r}; the only tool is {MOVE_TOOL!r}")
            value = call.arguments.get("move")
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise ParseError('the move tool takes {"move": "<move name>"}')
            candidate = str(value)
        elif self.action_format == "json":
            raise ParseError(f'no <tool_call> in your reply; write <tool_call>{{"name": "{MOVE_TOOL}", '
                             f'"arguments": {{"move": "<move>"}}}}</tool_call>')
        else:
            brackets = bracket_candidates(text)
            for cand in reversed(brackets):
                if self.move_name_for(cand, agent) is not None:
                    candidate = cand
                    break
            if candidate is None and brackets:
                candidate = brackets[-1]
            if candidate is None:
                keywords = _KEYWORD.findall(text)
                if keywords:
                    candidate = keywords[-1]
            if candidate is None:
                stripped = text.strip()
                if stripped and len(stripped) <= 40 and self.move_name_for(stripped, agent) is not None:
                    candidate = stripped
        if candidate is None:
            raise ParseError(f"no move found in your reply; write your move like {self.format_move(self._example(agent))}")
        move = self.move_name_for(candidate, agent)
        if move is None:
            shown = candidate if len(candidate) <= 40 else candidate[:40] + "..."
            raise ParseError(f"{shown!r} is not a move of this game")
        if move not in self._legal(agent):
            raise ParseError(f"{move} is not legal now{self._illegal_detail(agent, move)}")
        return move

    def _illegal_detail(self, agent: str, move: str) -> str:
        """Why ``move`` is illegal now, appended to the reason (default: nothing)."""
        return ""

    def _example(self, agent: str) -> str:
        legal = self.legal_moves(agent)
        return legal[0] if legal else (list(self.all_moves(agent)) or ["..."])[0]

    def _prompt(self, agent: str) -> str:
        legal = self._legal(agent)
        if not legal:
            return "Your move."
        if self.action_format == "native":
            return "Your move. Legal moves: [" + "] [".join(legal) + "]"
        return "Your move. Legal moves: " + ", ".join(legal)

    # ------------------------------------------------------------------ bookkeeping
    def _format_tool_paragraph(self) -> str:
        """The move-format paragraph for :meth:`instructions`."""
        if self.action_format == "json":
            return ('Reply with exactly one tool call: <tool_call>{"name": "move", "arguments": {"move": "<move>"}}'
                    "</tool_call>. An invalid reply is an invalid move.")
        return ("Reply with your move in square brackets, e.g. [3] (the last bracketed move counts); a tool call "
                '<tool_call>{"name": "move", "arguments": {"move": "3"}}</tool_call> works too. '
                "A reply without a legal move is an invalid move.")

    def _limits_paragraph(self) -> str:
        n = self.max_invalid_actions
        return (f"After an invalid move you are asked again; invalid move number {n + 1} in one game "
                "forfeits it (a loss).")


#: Bidirectional-override and isolate characters (they reorder how the text around them is displayed).
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def clean_message(text: str, max_chars: int) -> str:
    """Free text one agent sends another, made safe to show: control characters (ANSI escapes, NUL, bell),
    lone surrogates (not encodable as UTF-8) and bidirectional overrides removed, whitespace runs (newlines
    included) collapsed to one space, double quotes turned into single ones (the message is shown in double
    quotes, so it cannot close them and pose as the game's text), cut to ``max_chars`` characters."""
    kept = "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or (unicodedata.category(ch) not in ("Cc", "Cs") and ch not in _BIDI_CONTROLS))
    return " ".join(kept.replace('"', "'").split())[:max_chars]



def bracket_candidates(text: str) -> list[str]:
    """Contents of the ``[...]`` brackets of ``text`` in order, whitespace around them stripped, keeping those of
    1 to :data:`MAX_BRACKET_CHARS` characters on one line (linear time in ``len(text)``)."""
    out = []
    for raw in _BRACKET.findall(text):
        cand = raw.strip()
        if 0 < len(cand) <= MAX_BRACKET_CHARS and "\n" not in cand:
            out.append(cand)
    return out


def _visible(text: str) -> str:
    """``text`` without ``<think>`` blocks; an unclosed ``<think>`` hides everything after it."""
    if "<think>" not in text and "</think>" not in text:
        return text
    text = strip_tags(text, "think")
    cut = text.find("<think>")
    if cut >= 0:
        text = text[:cut]
    close = text.rfind("</think>")
    if close >= 0:  # a reply that starts inside a think block (template opened it)
        text = text[close + len("</think>"):]
    return text

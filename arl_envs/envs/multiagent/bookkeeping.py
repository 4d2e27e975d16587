"""What one move does to a text game's PettingZoo state: the bookkeeping half of
:class:`~arl_envs.envs.multiagent.base.TextGameEnv`.

:class:`MoveResult` is what a game's ``_apply_move`` reports; :class:`PlayReport` is what one ``play`` (``step``)
did for the mover. :class:`MoveBookkeeping` (a base class of ``TextGameEnv``) applies a reply: a valid move pays
the step rewards, sets the termination flags and passes the turn; an invalid move is counted, its reason kept for
the mover's next observation, and the ``max_invalid_actions + 1``-th one forfeits the game. It then refreshes every
agent's info (``legal_moves``, ``reason``, ``invalid_moves``, ``to_move``, ``move_number``, ``instructions``, and
``action_mask`` for games with a fixed move vocabulary).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from arl_envs.core.actions import ParseError
from arl_envs.core.errors import InvalidActionType, ResetNeeded

__all__ = ["MoveBookkeeping", "MoveResult", "PlayReport"]


@dataclass(slots=True)
class MoveResult:
    """What a game's ``_apply_move`` (a :class:`~arl_envs.envs.multiagent.base.TextGameEnv` hook) did.

    Attributes:
        rewards: Step rewards by agent (missing agents get 0).
        game_over: The game ended: every remaining agent is terminated.
        leaving: Agents that leave the game now (terminated individually while the others go on).
        truncated: The game was cut short (every remaining agent is truncated).
        event: One line the other agents read in their next observation (e.g. ``"X played [4]."``).
    """

    rewards: dict[str, float] = field(default_factory=dict)
    game_over: bool = False
    leaving: tuple[str, ...] = ()
    truncated: bool = False
    event: str = ""


@dataclass(frozen=True, slots=True)
class PlayReport:
    """What one :meth:`~arl_envs.envs.multiagent.base.TextGameEnv.play` did for the agent that moved.

    Attributes:
        agent: The agent whose reply it was.
        move: The canonical move played, or None when the reply was an invalid move.
        reason: Why the reply was invalid (None for a valid move).
        invalid_moves: The agent's invalid moves in this game so far.
        forfeit: This invalid move forfeited the game.
    """

    agent: str
    move: str | None
    reason: str | None = None
    invalid_moves: int = 0
    forfeit: bool = False

    @property
    def valid(self) -> bool:
        """A move was played."""
        return self.move is not None


class MoveBookkeeping:
    """The move bookkeeping of :class:`~arl_envs.envs.multiagent.base.TextGameEnv` (its base class).

    It works on the PettingZoo state that ``TextGameEnv`` sets up (``agents``, ``rewards``, ``infos``, ...) and
    calls the game's hooks (``_parse_move``, ``_apply_move``, ``_forfeit``, ``_current_agent``, ``_legal``).
    """

    agents: list[str]
    agent_selection: str
    rewards: dict[str, float]
    _cumulative_rewards: dict[str, float]
    terminations: dict[str, bool]
    truncations: dict[str, bool]
    infos: dict[str, dict[str, Any]]
    returns: dict[str, float]
    move_number: int
    invalid_moves: dict[str, int]
    last_reason: dict[str, str | None]
    last_moves: dict[str, str]
    forfeited: str | None
    max_invalid_actions: int
    mask_moves: tuple[str, ...] | None
    _events: dict[str, list[str]]
    _instructions: dict[str, str]
    _started: bool

    def play(self, action: str | None) -> PlayReport | None:
        """``step``, saying what it did: the :class:`PlayReport` of the agent that moved (None for the dead
        step of a terminated/truncated agent).

        Raises:
            ResetNeeded: No game was started, or the game is over.
            InvalidActionType: A live agent's action is not a ``str``.
        """
        if not self._started:
            raise ResetNeeded("call reset() before step()")
        agent = self.agent_selection
        if self.terminations.get(agent) or self.truncations.get(agent):
            self._was_dead_step(action)
            return None
        if not self.agents:
            raise ResetNeeded("the game is over; call reset()")
        if not isinstance(action, str):
            raise InvalidActionType(f"action must be a str (the model's text), got {type(action).__name__}")
        self._cumulative_rewards[agent] = 0.0
        try:
            move = self._parse_move(agent, action)
        except ParseError as exc:
            return self._invalid(agent, str(exc))
        self.last_reason[agent] = None
        self._events[agent] = []
        self.last_moves[agent] = move
        result = self._apply_move(agent, move)
        self.move_number += 1
        self._finish_step(agent, result)
        return PlayReport(agent, move, invalid_moves=self.invalid_moves[agent])

    def _invalid(self, agent: str, reason: str) -> PlayReport:
        self.invalid_moves[agent] += 1
        self.last_reason[agent] = reason
        count = self.invalid_moves[agent]
        if count > self.max_invalid_actions:
            self.forfeited = agent
            self.last_reason[agent] = f"{reason}. That was invalid move {count}: you forfeit."
            self._finish_step(agent, self._forfeit(agent))
            return PlayReport(agent, None, self.last_reason[agent], count, forfeit=True)
        for a in self.agents:
            self.rewards[a] = 0.0
        self._refresh_infos()
        return PlayReport(agent, None, reason, count)

    def _finish_step(self, agent: str, result: MoveResult) -> None:
        agents = self.agents
        rewards = self.rewards
        if result.rewards:
            returns, cumulative, paid = self.returns, self._cumulative_rewards, result.rewards
            for a in agents:
                r = float(paid.get(a, 0.0))
                rewards[a] = r
                returns[a] += r
                cumulative[a] += r  # what AECEnv._accumulate_rewards does
        else:
            for a in agents:
                rewards[a] = 0.0
        event = result.event
        if event:
            events = self._events
            for a in agents:
                if a != agent:
                    events[a].append(event)
        over = result.game_over or result.truncated
        if over:
            flags = self.truncations if (result.truncated and not result.game_over) else self.terminations
            for a in agents:
                flags[a] = True
        else:
            for a in result.leaving:
                self.terminations[a] = True
            if not result.leaving or any(not (self.terminations[a] or self.truncations[a]) for a in agents):
                self.agent_selection = self._current_agent()
        self._refresh_infos()
        if not over and result.leaving:
            self._deads_step_first()

    def _refresh_infos(self) -> None:
        mover = self.agent_selection
        terminations, truncations = self.terminations, self.truncations
        reasons, invalid, instructions, n = self.last_reason, self.invalid_moves, self._instructions, self.move_number
        infos = {}
        for a in self.agents:
            to_move = a == mover and not (terminations[a] or truncations[a])
            infos[a] = {
                # a copy: a caller that edits its info (pops a move it tried) must not change the rules
                "legal_moves": list(self._legal(a)) if to_move else [],
                "reason": reasons[a],
                "invalid_moves": invalid[a],
                "to_move": to_move,
                "move_number": n,
                "instructions": instructions[a],
            }
        moves = self.mask_moves
        if moves is not None:
            for info in infos.values():
                legal = info["legal_moves"]
                info["action_mask"] = _action_mask(moves, legal) if legal else np.zeros(len(moves), dtype=np.int8)
        self.infos = infos



#: Most distinct legal-move lists whose mask is cached per vocabulary (tic-tac-toe has at most 2**9).
_MASK_CACHE_SIZE = 4096
_MASKS: dict[tuple[str, ...], dict[tuple[str, ...], np.ndarray]] = {}


def _action_mask(moves: tuple[str, ...], legal: Sequence[str]) -> np.ndarray:
    """A new ``np.int8`` mask over ``moves`` with 1 at each move of ``legal`` (each name must be in ``moves``).

    Masks are built once per distinct ``legal`` list and copied (a copy is several times cheaper than filling a
    new array, and the caller may edit its info's array)."""
    cache = _MASKS.get(moves)
    if cache is None:
        cache = _MASKS[moves] = {}
    key = tuple(legal)
    mask = cache.get(key)
    if mask is None:
        index = {m: i for i, m in enumerate(moves)}
        mask = np.zeros(len(moves), dtype=np.int8)
        for m in key:
            mask[index[m]] = 1
        if len(cache) < _MASK_CACHE_SIZE:
            cache[key] = mask
        else:
            return mask
    return mask.copy()


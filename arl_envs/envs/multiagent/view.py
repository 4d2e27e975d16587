"""Single-agent gym views of the text games: ``gym.make("arl/multiagent.<game>-v0", opponent=..., seat=...)``.

:class:`GameSeatEnv` seats the learning agent in one seat of a :class:`~arl_envs.envs.multiagent.base.TextGameEnv`
game and plays every other seat with an ``opponent``: ``"random"`` (uniform legal moves), ``"expert"`` (the
game's reference strong player) or any callable ``(observation: str, info: dict) -> str`` (the ``act`` signature
of :mod:`arl_envs.agents`; ``info["legal_moves"]`` lists the legal moves in native form), e.g. a frozen copy of
the policy being trained, for self-play. The opponent's moves appear in the agent's next observation.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, ClassVar

import numpy as np
from pydantic import BaseModel, Field

from arl_envs.core.actions import format_json_tool_call
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import ArlError
from arl_envs.core.rewards import FORMAT_PENALTY_RAW
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.multiagent.base import resolve_invalid_budget

SEATS = ("first", "second", "random")
OPPONENTS = ("random", "expert")
#: Extra steps allowed per game beyond its moves and invalid moves before truncation (never reached by the
#: games shipped here, which end by themselves).
TURN_SLACK = 2


class OpponentError(ArlError):
    """A seat played by the view's ``opponent`` failed: its callable raised or returned something other than a
    ``str``, or the seat forfeited (``max_invalid_actions + 1`` invalid moves in one game).

    Not the learning agent's doing, so never scored for or against it: in ``step`` it becomes
    ``info["env_error"]`` with ``truncated=True`` and no ``task`` reward; in ``reset`` (an opponent that moves
    before the agent) it is raised.
    """


class MoveArgs(BaseModel):
    """Arguments of the ``move`` tool."""

    move: str = Field(description="The move, by its name as listed in 'Legal moves' (e.g. '4', 'call').")


def load_game(game: str) -> Any:
    """The module ``arl_envs.envs.multiagent.<game>_v0`` (its ``raw_env`` builds the game).

    Raises:
        ValueError: No such game module.
    """
    try:
        return importlib.import_module(f"arl_envs.envs.multiagent.{game}_v0")
    except ModuleNotFoundError as exc:
        if exc.name == f"arl_envs.envs.multiagent.{game}_v0":
            raise ValueError(f"unknown game {game!r}: no module arl_envs.envs.multiagent.{game}_v0") from None
        raise


class GameSeatEnv(AgentEnv):
    """One seat of a multi-agent text game against a fixed opponent (the single-agent view).

    Description:
        The agent plays ``seat`` of ``game`` (a :class:`~arl_envs.envs.multiagent.base.TextGameEnv`); the other
        seats are played by ``opponent``. An episode is a match of ``games`` games (seats alternate between games
        when ``alternate_seats``); each game is dealt from the episode's seed.

    Observation:
        First: the game's instructions for the seat, then its view of the board/hand. After each move: the
        opponent's replies, the new state, and the legal moves; at the end of a game its result.

    Action:
        A move in the game's native form (``[4]``, ``column 3``, ``[call]``) or a ``move`` tool call with
        ``action_format="json"``. An unparsable, unknown or illegal move is an invalid move: an error
        observation, ``info["action_error"]`` and ``info["reason"]``, the ``format`` part, and a retry; the
        ``max_invalid_actions + 1``-th in one game forfeits it and ends the episode.

    Tools:
        ``move(move: str)``.

    Rewards:
        ``task``: the seat's game reward when it is paid (zero-sum games: +1 win, 0 draw, -1 loss; Kuhn poker:
        chips), summed over the match; ``format``: -1 per invalid move (weight 0.1).

    Episode end:
        ``terminated`` after the last game of the match or the agent's forfeit; ``truncated`` when the last game
        was cut short by the game's own limit (gridpath's cycle limit) or the view's ``max_turns``. ``success`` is
        the game's ``success`` of the match return (win for Connect Four and Kuhn poker, not losing for
        tic-tac-toe, a drawn game). ``info["outcome"]`` is ``"win"``, ``"draw"`` or ``"loss"`` on the final step.

    Opponent failures:
        A callable opponent that raises or returns a non-``str`` fails at once; one whose replies are invalid moves
        is asked again with the reason (as the agent is) and fails at its forfeit. A failure is not scored (it
        would reward or punish the agent for the opponent's fault, and invite the agent to provoke it): the step
        returns ``truncated=True``, ``info["env_error"]`` naming the failure, no ``task`` reward, ``success``
        False. A failure before the agent's first move (the opponent moves first) raises :class:`OpponentError`
        from ``reset``. The callable's reply is parsed in the env's ``action_format``, like the agent's.

    Arguments:
        game: Game module name (``"tictactoe"`` -> ``arl_envs.envs.multiagent.tictactoe_v0``).
        opponent: ``"random"``, ``"expert"``, a kind of the game's own (its ``opponent_kinds``, e.g. ``"mcts"`` for
            OpenSpiel games) or a callable ``(observation, info) -> str`` (or an object with such an ``act``
            method).
        seat: ``"first"``, ``"second"``, ``"random"`` (drawn from the seed) or a seat index.
        games: Games per episode (a match), default 1.
        alternate_seats: Switch seats between the games of a match (default True).
        game_kwargs: Keyword arguments of the game (e.g. ``{"expert_depth": 5}``).
        max_invalid_actions: Invalid moves tolerated per game (passed to the game).
        max_invalid_moves: Deprecated alias of ``max_invalid_actions`` (a ``DeprecationWarning``).
        action_format, reward_weights, max_turns, render_mode: As :class:`~arl_envs.core.env.AgentEnv`.

    Raises:
        ValueError: Unknown game, opponent or seat (``"second"`` in a one-seat game), or ``games < 1``; at reset, a
            configuration where the game ends before the agent's first move (e.g. negotiation with
            ``max_turns=1`` and the second seat).
        OpponentError: From ``reset``, when the opponent fails before the agent's first move.

    Version history:
        v1: current: an opponent's failure is void (``env_error``, truncated), never a win or loss for the agent
        (v0, retired: CHANGELOG.md).
    """

    #: Snapshot (arl_envs.core.snapshot): the whole match (both seats, the opponent's RNG) is copied; a callable
    #: opponent is the caller's object and stays the target's own (its internal state, if any, is not saved).
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_opponent_fn",)

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "format": 0.1}

    def __init__(
        self,
        game: str = "tictactoe",
        *,
        opponent: str | Callable[[str, dict[str, Any]], str] | Any = "random",
        seat: str | int = "first",
        games: int = 1,
        alternate_seats: bool = True,
        game_kwargs: dict[str, Any] | None = None,
        max_invalid_actions: int | None = None,
        max_invalid_moves: int | None = None,
        action_format: str = "native",
        reward_weights: dict[str, float] | None = None,
        max_turns: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        module = load_game(game)
        gkw = dict(game_kwargs or {})
        if max_invalid_actions is not None or max_invalid_moves is not None:
            gkw["max_invalid_actions"] = resolve_invalid_budget(max_invalid_actions, max_invalid_moves, 0)
        self.game = module.raw_env(action_format=action_format, **gkw)
        self.game_name = game
        kinds = tuple(getattr(self.game, "opponent_kinds", OPPONENTS))
        if isinstance(opponent, str):
            if opponent not in kinds:
                raise ValueError(f"opponent must be one of {kinds} or a callable, got {opponent!r}")
            self.opponent_kind = opponent
            self._opponent_fn = None
        else:
            fn = getattr(opponent, "act", opponent)
            if not callable(fn):
                raise ValueError(f"opponent must be one of {kinds} or a callable, got {type(opponent).__name__}")
            self.opponent_kind = "callable"
            self._opponent_fn = fn
        n_seats = len(self.game.possible_agents)
        if isinstance(seat, int) and not isinstance(seat, bool):
            if not 0 <= seat < n_seats:
                raise ValueError(f"seat index must be in [0, {n_seats}), got {seat}")
        elif seat not in SEATS:
            raise ValueError(f"seat must be one of {SEATS} or an index, got {seat!r}")
        elif seat == "second" and n_seats < 2:
            raise ValueError(f"seat 'second' needs a game of at least 2 seats; this one has {n_seats}")
        self.seat_option = seat
        if int(games) < 1:
            raise ValueError(f"games must be >= 1, got {games}")
        self.games = int(games)
        self.alternate_seats = bool(alternate_seats)
        per_game = int(getattr(self.game, "max_moves_hint", 100)) + self.game.max_invalid_actions + TURN_SLACK
        super().__init__(
            action_format=action_format,
            reward_weights=reward_weights,
            max_turns=max_turns if max_turns is not None else self.games * per_game,
            max_invalid_actions=self.game.max_invalid_actions,
            render_mode=render_mode,
        )
        self.seat_index = 0
        self.game_index = 0
        self.match_return = 0.0
        self._opp_rng = np.random.default_rng(0)
        self._expert_seed = 0

    # ------------------------------------------------------------------ AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [Tool("move", "Play one move of the game, named as in the 'Legal moves' list.", MoveArgs)]

    @property
    def seat(self) -> str:
        """The agent name of the learning agent's current seat (e.g. ``"player_0"``)."""
        return self.game.possible_agents[self.seat_index]

    def instructions(self) -> str:
        text = self.game.instructions(self.seat)
        if self.games > 1:
            alt = " Seats alternate between games." if self.alternate_seats else ""
            text += (f" This episode is a match of {self.games} games; your reward is summed over them and the match "
                     f"is a success when the total is {self._success_phrase()}.{alt}")
        return text

    def _success_phrase(self) -> str:
        return "at least 0" if self.game.success(self.seat, 0.0) else "above 0"

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        rng = self.np_random
        n_seats = len(self.game.possible_agents)
        if self.seat_option == "random":
            self.seat_index = int(rng.integers(0, n_seats))
        elif self.seat_option == "first":
            self.seat_index = 0
        elif self.seat_option == "second":
            self.seat_index = 1
        else:
            self.seat_index = int(self.seat_option)
        game_seed = int(rng.integers(0, 2**31 - 1))
        self._opp_rng = np.random.default_rng(int(rng.integers(0, 2**63 - 1)))
        self._expert_seed = int(rng.integers(0, 2**63 - 1))
        self.first_seat_index = self.seat_index
        self.game_index = 0
        self.match_return = 0.0
        self.game.reset(seed=game_seed)
        self._run_opponents()  # an OpponentError here goes out of reset (documented)
        self._check_seat_to_move()
        tid = f"{self.game_name}:{self.seat}:{self.opponent_kind}"
        return tid, self._game_header() + self.game.observe(self.seat)

    def parse_action(self, action: str) -> list[ToolCall]:
        """The raw text as one ``move`` call: the game parses moves itself (one parser for the AEC env and this
        view) and reports an invalid one in :meth:`_step_calls`."""
        return [ToolCall("move", {"text": action})]

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"[{arguments.get('move', '')}]"

    def _expert_action(self) -> str:
        rng = np.random.default_rng([self._expert_seed, self.turn, self.game_index])
        move = self.game.counter_move(self.seat, rng, self.opponent_kind)
        return self.render_call("move", {"move": move})

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        text = calls[0].arguments["text"]
        game, seat = self.game, self.seat
        before = game.returns[seat]
        report = game.play(text)
        assert report is not None and report.agent == seat, "the view steps only while its seat is to move"
        parts: dict[str, float] = {}
        info: dict[str, Any] = {"reason": None, "seat": seat, "opponent": self.opponent_kind}
        if not report.valid:
            parts["format"] = FORMAT_PENALTY_RAW
            info["reason"] = info["action_error"] = report.reason or "invalid move"
            info["tool_calls"] = []
        else:
            info["tool_calls"] = [{"name": "move", "arguments": {"move": report.move}}]
            try:
                self._run_opponents()
            except OpponentError as exc:
                return self._opponent_failed(exc, info)
        obs_parts = []
        game_over = seat not in game.agents or all(game.terminations[a] or game.truncations[a] for a in game.agents)
        # The game's own limit (gridpath's cycles) ended it: the agent's episode is truncated, not terminated.
        game_truncated = game_over and bool(game.agents) and all(game.truncations[a] for a in game.agents)
        forfeit = report.forfeit
        delta = game.returns.get(seat, 0.0) - before
        obs_parts.append(game.observe(seat))
        terminated = False
        if game_over:
            self.match_return += game.returns[seat]
            obs_parts.append(self._result_line(game.returns[seat], forfeit))
            self.game_index += 1
            if forfeit or self.game_index >= self.games:
                terminated = True
            else:
                if self.alternate_seats:
                    self.seat_index = (self.seat_index + 1) % len(game.possible_agents)
                game.reset()
                try:
                    self._run_opponents()
                except OpponentError as exc:
                    return self._opponent_failed(exc, info)
                self._check_seat_to_move()
                game_truncated = False
                obs_parts.append("")
                obs_parts.append(self._game_header() + game.observe(self.seat))
        if delta:
            parts["task"] = float(delta)
        info["legal_moves"] = list(game.infos[self.seat]["legal_moves"]) if (
            not terminated and self.seat in game.infos) else []
        info["games_played"] = self.game_index
        info["match_return"] = self.match_return
        success = None
        if terminated:
            info["outcome"] = "loss" if forfeit else game.outcome(seat, self.match_return)
            success = (not forfeit) and game.success(seat, self.match_return)
        # A match whose last game hit the game's own limit is truncated, not terminated.
        return Transition("\n".join(obs_parts), parts=parts, terminated=terminated, success=success, info=info,
                          truncated=terminated and game_truncated)

    def _reset_info(self) -> dict[str, Any]:
        """``legal_moves``, ``seat`` and ``opponent`` at reset."""
        return {
            "legal_moves": list(self.game.infos[self.seat]["legal_moves"]),
            "seat": self.seat,
            "opponent": self.opponent_kind,
        }

    # ------------------------------------------------------------------ internals
    def _game_header(self) -> str:
        return f"Game {self.game_index + 1} of {self.games}.\n" if self.games > 1 else ""

    def _result_line(self, r: float, forfeit: bool) -> str:
        if forfeit:
            return f"Result: you forfeit this game ({r:+g})."
        word = {"win": "you win", "loss": "you lose", "draw": "a draw"}[self.game.outcome(self.seat, r)]
        return f"Result: {word} ({r:+g})."

    def _run_opponents(self) -> None:
        """Let the opponent seats move until it is the agent's turn or the game is over (bounded: each
        opponent move is valid or counts towards its forfeit).

        Raises:
            OpponentError: A callable opponent raised or returned a non-str, or an opponent seat forfeited.
        """
        game, seat = self.game, self.seat
        while game.agents:
            current = game.agent_selection
            if game.terminations[current] or game.truncations[current]:
                if all(game.terminations[a] or game.truncations[a] for a in game.agents):
                    return
                game.step(None)  # an agent that left (possibly the seat): the others play on
                continue
            if current == seat:
                return
            report = game.play(self._opponent_reply(current))
            if report is not None and report.forfeit:
                raise OpponentError(f"The opponent ({current}) forfeited after {report.invalid_moves} "
                                    "invalid moves.")

    def _opponent_failed(self, exc: OpponentError, info: dict[str, Any]) -> Transition:
        info["legal_moves"] = []
        info["games_played"] = self.game_index
        info["match_return"] = self.match_return
        text = f"{exc} This game is void and not scored; the episode is over."
        return Transition(text, info=info, env_error=str(exc))

    def _check_seat_to_move(self) -> None:
        game, seat = self.game, self.seat
        if seat not in game.agents or game.terminations[seat] or game.truncations[seat]:
            raise ValueError(f"the game ended before the agent's seat ({seat}) had a turn; check seat and "
                             f"game_kwargs (e.g. negotiation max_turns=1 with the second seat)")

    def _opponent_reply(self, agent: str) -> str:
        game = self.game
        if self._opponent_fn is not None:
            try:
                reply = self._opponent_fn(game.observe(agent), dict(game.infos[agent]))
            except Exception as exc:  # a user's policy (e.g. a model server) failing is not the agent's doing
                raise OpponentError(f"The opponent ({agent}) raised {type(exc).__name__}: {exc}.") from exc
            if not isinstance(reply, str):
                raise OpponentError(f"The opponent ({agent}) returned {type(reply).__name__}, not a str.")
            return reply
        if self.opponent_kind == "expert":
            move = game.expert_move(agent, self._opp_rng)
        elif self.opponent_kind == "random":
            move = game.random_move(agent, self._opp_rng)
        else:  # a game's own opponent kind (``opponent_kinds``, e.g. OpenSpiel's "mcts")
            move = game.opponent_move(self.opponent_kind, agent, self._opp_rng)
        return format_json_tool_call("move", {"move": move}) if game.action_format == "json" else f"[{move}]"

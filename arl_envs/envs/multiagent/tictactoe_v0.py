"""Tic-tac-toe as a text PettingZoo game: ``from arl_envs.envs.multiagent import tictactoe_v0``.

Rules as OpenSpiel's ``tic_tac_toe`` (cells 0-8 row by row, X = ``player_0`` moves first, three in a row wins,
a full board without a line is a draw); ``arl_envs_tests/envs/multiagent/test_rules_vs_openspiel.py`` checks
returns, legal moves and terminal states against ``pyspiel`` on random playouts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import ClassVar, Sequence

import numpy as np

from arl_envs.envs.multiagent.base import MoveResult, TextGameEnv, make_module

#: The eight lines of three cells.
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6),
)
#: Lines through each cell.
LINES_THROUGH: tuple[tuple[tuple[int, int, int], ...], ...] = tuple(
    tuple(line for line in LINES if c in line) for c in range(9)
)
MOVES: tuple[str, ...] = tuple(str(i) for i in range(9))
MARKS = (".", "X", "O")
WIN_REWARD = 1.0
_BOARD = "\n---+---+---\n".join([" {} | {} | {}"] * 3)
_EVENT = {(agent, c): f"{mark} ({agent}) played [{c}]." for agent, mark in (("player_0", "X"), ("player_1", "O"))
          for c in range(9)}
#: The (read-only, shared) results of the non-final moves of the default agents.
_MOVE_RESULT = {e: MoveResult(event=e) for e in _EVENT.values()}
_HEADER = {"player_0": "Tic-tac-toe. You play X.\n", "player_1": "Tic-tac-toe. You play O.\n"}


def winner(board: Sequence[int]) -> int:
    """1 (X) or 2 (O) if that mark has a line on ``board`` (9 ints: 0 empty, 1 X, 2 O), else 0."""
    for a, b, c in LINES:
        if board[a] and board[a] == board[b] == board[c]:
            return board[a]
    return 0


@lru_cache(maxsize=None)
def _solve(board: tuple[int, ...], mark: int) -> tuple[int, float]:
    """``(minimax value, P(win) against a uniformly random opponent under value-preserving play)`` for ``mark``
    to move on ``board``; value is +1 win, 0 draw, -1 loss under perfect play of both sides."""
    empties = [i for i in range(9) if board[i] == 0]
    best = (-2, -1.0)
    other = 3 - mark
    for c in empties:
        child = list(board)
        child[c] = mark
        if any(child[a] == child[b] == child[d] == mark for a, b, d in LINES_THROUGH[c]):
            return (1, 1.0)
        score = _child_score(tuple(child), other)
        if score > best:
            best = score
    return best if empties else (0, 0.0)


def _child_score(child: tuple[int, ...], other: int) -> tuple[int, float]:
    """Score for the player who just moved into ``child``: (-opponent's minimax value, P(win) if the opponent
    then plays uniformly at random and we keep playing :func:`best_move`)."""
    empties = [i for i in range(9) if child[i] == 0]
    if not empties:
        return (0, 0.0)
    value = -_solve(child, other)[0]
    me = 3 - other
    p_win = 0.0
    for c in empties:
        grand = list(child)
        grand[c] = other
        if any(grand[a] == grand[b] == grand[d] == other for a, b, d in LINES_THROUGH[c]):
            continue  # the random opponent won
        if all(grand):
            continue  # draw
        p_win += _solve(tuple(grand), me)[1]
    return (value, p_win / len(empties))


@lru_cache(maxsize=None)
def best_move(board: tuple[int, ...], mark: int) -> int:
    """Minimax-optimal move for ``mark`` (never loses); among optimal moves the one most likely to win against a
    uniformly random opponent (lowest cell on ties)."""
    other = 3 - mark
    best_c, best = -1, (-3, -1.0)
    for c in range(9):
        if board[c]:
            continue
        child = list(board)
        child[c] = mark
        if any(child[a] == child[b] == child[d] == mark for a, b, d in LINES_THROUGH[c]):
            return c
        score = _child_score(tuple(child), other)
        if score > best:
            best_c, best = c, score
    return best_c


class TicTacToeEnv(TextGameEnv):
    """Tic-tac-toe for two text agents (PettingZoo AEC).

    Description:
        X (``player_0``, moves first) and O (``player_1``) mark cells 0-8 of a 3x3 board (row by row); three in a
        row, column or diagonal wins; a full board without a line is a draw. Rules as OpenSpiel's ``tic_tac_toe``.

    Observation:
        The board (``X``/``O``/cell number for empty cells), the agent's mark, the opponent's last move, and on the
        agent's turn its legal moves. ``infos[agent]["legal_moves"]``: the empty cells as ``"0"``-``"8"``.

    Action:
        ``[4]`` (or ``cell 4``, ``4``, or a ``move`` tool call). See :class:`TextGameEnv` for invalid moves.

    Rewards:
        At the end only: +1 / -1 to the winner / loser, 0 each for a draw; a forfeit is a loss (-1/+1).

    Episode end:
        A line, a full board, or a forfeit (``max_invalid_actions + 1`` invalid moves of one agent). At most 9
        moves, so never truncated.

    Arguments:
        See :class:`~arl_envs.envs.multiagent.base.TextGameEnv` (``max_invalid_actions``, ``action_format``,
        ``render_mode``).

    Version history:
        v0: first version.
    """

    metadata: ClassVar[dict] = {**TextGameEnv.metadata, "name": "tictactoe_v0"}
    max_moves_hint: ClassVar[int] = 5
    mask_moves = MOVES  # info["action_mask"] over MOVES; sample(mask) plays a random legal move
    title: ClassVar[str] = "Tic-tac-toe"

    def _reset_game(self) -> None:
        self.board = [0] * 9
        self._cells = [str(i) for i in range(9)]  # display text of each cell, kept in step with the board
        self.to_play = 0
        self.last_move: int | None = None

    def _current_agent(self) -> str:
        return self.possible_agents[self.to_play]

    def legal_moves(self, agent: str) -> list[str]:
        if agent != self.possible_agents[self.to_play] or agent not in self.agents:
            return []
        board = self.board
        return [MOVES[i] for i in range(9) if not board[i]]

    def all_moves(self, agent: str) -> Sequence[str]:
        return MOVES

    def _illegal_detail(self, agent: str, move: str) -> str:
        cell = int(move)
        return f": cell {cell} is taken by {MARKS[self.board[cell]]}"

    def _apply_move(self, agent: str, move: str) -> MoveResult:
        cell = int(move)
        mark = self.to_play + 1
        board = self.board
        board[cell] = mark
        self._cells[cell] = MARKS[mark]
        self.last_move = cell
        event = _EVENT.get((agent, cell)) or f"{MARKS[mark]} ({agent}) played [{cell}]."
        for a, b, c in LINES_THROUGH[cell]:
            if board[a] == board[b] == board[c]:
                loser = self.possible_agents[1 - self.to_play]
                return MoveResult({agent: WIN_REWARD, loser: -WIN_REWARD}, game_over=True,
                                  event=f"{event} {MARKS[mark]} completes a line and wins.")
        if 0 not in board:
            return MoveResult(game_over=True, event=f"{event} The board is full: a draw.")
        self.to_play = 1 - self.to_play
        return _MOVE_RESULT.get(event) or MoveResult(event=event)

    def board_text(self) -> str:
        """The board: marks, and the cell number in each empty cell."""
        return _BOARD.format(*self._cells)

    def _observation(self, agent: str) -> str:
        return _HEADER[agent] + _BOARD.format(*self._cells)

    def render_state(self) -> str:
        w = winner(self.board)
        status = f"{MARKS[w]} wins" if w else ("draw" if 0 not in self.board else f"{MARKS[self.to_play + 1]} to move")
        return f"{self.board_text()}\n({status})"

    def instructions(self, agent: str) -> str:
        mark = MARKS[self.possible_agents.index(agent) + 1]
        first = "You move first." if mark == "X" else "X moves first."
        return (f"You play tic-tac-toe as {mark}. {first} Cells are numbered 0-8 row by row (0 1 2 / 3 4 5 / 6 7 8); "
                "an empty cell shows its number. Three of your marks in a row, column or diagonal wins; a full board "
                f"without a line is a draw. Win +1, draw 0, loss -1. {self._format_tool_paragraph()} "
                f"{self._limits_paragraph()}")

    def success(self, agent: str, total_return: float) -> bool:
        """Not losing: tic-tac-toe is a draw under perfect play, so a draw is what optimal play guarantees."""
        return total_return >= 0

    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """Minimax (never loses), exploiting a random opponent among equally optimal moves."""
        return MOVES[best_move(tuple(self.board), self.to_play + 1)]


env, raw_env, parallel_env = make_module(TicTacToeEnv)

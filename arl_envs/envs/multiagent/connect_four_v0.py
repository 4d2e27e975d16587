"""Connect Four as a text PettingZoo game: ``from arl_envs.envs.multiagent import connect_four_v0``.

Rules as OpenSpiel's ``connect_four`` (7 columns x 6 rows, columns 0-6, ``x`` = ``player_0`` moves first, four in a
row horizontally, vertically or diagonally wins, a full board without a line is a draw; a move that fills the
board AND completes a line is a win). ``arl_envs_tests/envs/multiagent/test_rules_vs_openspiel.py`` checks returns,
legal moves and terminal states against ``pyspiel`` on random playouts.

The board is a pair of bitboards (the classic 7-bits-per-column layout: bit ``7 * col + row``, row 0 at the
bottom, one sentinel bit on top of each column), so a move and its win test are a few integer operations.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import numpy as np

from arl_envs.envs.multiagent.base import MoveResult, TextGameEnv, make_module

COLUMNS = 7
ROWS = 6
MOVES: tuple[str, ...] = tuple(str(c) for c in range(COLUMNS))
MARKS = ("x", "o")
WIN_REWARD = 1.0
_H1 = ROWS + 1  # bits per column, with the sentinel
_BOTTOM = tuple(1 << (_H1 * c) for c in range(COLUMNS))
_TOP = tuple(1 << (_H1 * c + ROWS - 1) for c in range(COLUMNS))
_FULL = sum(((1 << ROWS) - 1) << (_H1 * c) for c in range(COLUMNS))
#: Search depth (plies) of the expert's alpha-beta search.
DEFAULT_EXPERT_DEPTH = 4
#: Score of a won position in the expert's search (minus the plies to reach it).
_WIN_SCORE = 1_000_000
#: Heuristic value of a window of four holding 1, 2 or 3 of one side's pieces and none of the other's.
_WINDOW_VALUE = (0, 1, 8, 64, 0)
_CENTER_FIRST = (3, 2, 4, 1, 5, 0, 6)
_COLUMN_LINE = "\n" + " ".join(MOVES)


def _windows() -> tuple[int, ...]:
    out = []
    for c in range(COLUMNS):
        for r in range(ROWS):
            for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
                cells = [(c + k * dc, r + k * dr) for k in range(4)]
                if all(0 <= cc < COLUMNS and 0 <= rr < ROWS for cc, rr in cells):
                    out.append(sum(1 << (_H1 * cc + rr) for cc, rr in cells))
    return tuple(out)


#: The 69 windows of four cells, as bitmasks.
WINDOWS = _windows()


def has_four(bits: int) -> bool:
    """Whether the bitboard ``bits`` holds four in a row (shifts 1: vertical, 7: horizontal, 6/8: diagonals)."""
    for shift in (1, _H1, _H1 - 1, _H1 + 1):
        m = bits & (bits >> shift)
        if m & (m >> (2 * shift)):
            return True
    return False


def _evaluate(me: int, opp: int) -> int:
    score = 0
    for w in WINDOWS:
        a = w & me
        b = w & opp
        if a and not b:
            score += _WINDOW_VALUE[a.bit_count()]
        elif b and not a:
            score -= _WINDOW_VALUE[b.bit_count()]
    return score


def _negamax(me: int, opp: int, mask: int, depth: int, alpha: int, beta: int) -> int:
    """Value for the side to move (``me``), alpha-beta, ``depth`` plies, window heuristic at the leaves."""
    if mask == _FULL:
        return 0
    if depth == 0:
        return _evaluate(me, opp)
    best = -_WIN_SCORE * 2
    for c in _CENTER_FIRST:
        if mask & _TOP[c]:
            continue
        bit = (mask + _BOTTOM[c]) & ~mask & (((1 << ROWS) - 1) << (_H1 * c))
        mine = me | bit
        if has_four(mine):
            return _WIN_SCORE + depth
        v = -_negamax(opp, mine, mask | bit, depth - 1, -beta, -alpha)
        if v > best:
            best = v
        if best > alpha:
            alpha = best
        if alpha >= beta:
            break
    return best


def search_move(me: int, opp: int, mask: int, depth: int = DEFAULT_EXPERT_DEPTH) -> int:
    """The expert's column: win now if possible, else block the opponent's immediate win, else alpha-beta
    negamax to ``depth`` plies (centre-first move order, window-count heuristic; ties to the centre)."""
    legal = [c for c in _CENTER_FIRST if not mask & _TOP[c]]
    drops = {c: (mask + _BOTTOM[c]) & ~mask & (((1 << ROWS) - 1) << (_H1 * c)) for c in legal}
    for c in legal:
        if has_four(me | drops[c]):
            return c
    threats = [c for c in legal if has_four(opp | drops[c])]
    if threats:
        return threats[0]
    best_c, best = legal[0], -_WIN_SCORE * 3
    alpha, beta = -_WIN_SCORE * 3, _WIN_SCORE * 3
    for c in legal:
        bit = drops[c]
        v = -_negamax(opp, me | bit, mask | bit, depth - 1, -beta, -alpha)
        if v > best:
            best_c, best = c, v
        if v > alpha:
            alpha = v
    return best_c


class ConnectFourEnv(TextGameEnv):
    """Connect Four for two text agents (PettingZoo AEC).

    Description:
        ``x`` (``player_0``, moves first) and ``o`` (``player_1``) drop pieces into columns 0-6 of a 6-row board;
        four in a row (horizontal, vertical, diagonal) wins; a full board without a line is a draw (the 42nd move
        that completes a line is a win). Rules as OpenSpiel's ``connect_four``.

    Observation:
        The board (row 6 at the top, ``.`` empty) with column numbers, the agent's mark, the opponent's last move
        and, on its turn, the legal columns. ``infos[agent]["legal_moves"]``: the open columns ``"0"``-``"6"``.

    Action:
        ``[3]`` (or ``column 3``, ``3``, or a ``move`` tool call). See :class:`TextGameEnv` for invalid moves.

    Rewards:
        At the end only: +1 / -1 to the winner / loser, 0 each for a draw; a forfeit is a loss (-1/+1).

    Episode end:
        A line, a full board (42 moves), or a forfeit. Never truncated.

    Arguments:
        expert_depth: Plies of the expert's alpha-beta search (default 4).
        Others: see :class:`~arl_envs.envs.multiagent.base.TextGameEnv`.

    Version history:
        v0: first version.
    """

    metadata: ClassVar[dict] = {**TextGameEnv.metadata, "name": "connect_four_v0"}
    max_moves_hint: ClassVar[int] = 21
    mask_moves = MOVES  # info["action_mask"] over MOVES; sample(mask) plays a random legal move
    title: ClassVar[str] = "Connect Four"

    def __init__(self, *, expert_depth: int = DEFAULT_EXPERT_DEPTH, **kwargs) -> None:
        super().__init__(**kwargs)
        if int(expert_depth) < 1:
            raise ValueError(f"expert_depth must be >= 1, got {expert_depth}")
        self.expert_depth = int(expert_depth)

    def _reset_game(self) -> None:
        self.bits = [0, 0]
        self.mask = 0
        self.to_play = 0
        self.moves_played = 0
        self.heights = [0] * COLUMNS
        #: Display rows, top row first: each a list of 7 marks.
        self._rows = [["."] * COLUMNS for _ in range(ROWS)]

    def _current_agent(self) -> str:
        return self.possible_agents[self.to_play]

    def legal_moves(self, agent: str) -> list[str]:
        if agent != self.possible_agents[self.to_play] or agent not in self.agents:
            return []
        mask = self.mask
        return [MOVES[c] for c in range(COLUMNS) if not mask & _TOP[c]]

    def all_moves(self, agent: str) -> Sequence[str]:
        return MOVES

    def _illegal_detail(self, agent: str, move: str) -> str:
        return f": column {move} is full"

    def _apply_move(self, agent: str, move: str) -> MoveResult:
        c = int(move)
        mask = self.mask
        bit = (mask + _BOTTOM[c]) & ~mask & (((1 << ROWS) - 1) << (_H1 * c))
        p = self.to_play
        self.mask = mask | bit
        self.bits[p] |= bit
        self.moves_played += 1
        self._rows[ROWS - 1 - self.heights[c]][c] = MARKS[p]
        self.heights[c] += 1
        event = f"{MARKS[p]} ({agent}) played [{c}]."
        if has_four(self.bits[p]):  # checked before the draw test: a 42nd move that completes a line wins
            loser = self.possible_agents[1 - p]
            return MoveResult({agent: WIN_REWARD, loser: -WIN_REWARD}, game_over=True,
                              event=f"{event} {MARKS[p]} connects four and wins.")
        if self.mask == _FULL:
            return MoveResult(game_over=True, event=f"{event} The board is full: a draw.")
        self.to_play = 1 - p
        return MoveResult(event=event)

    def cell(self, col: int, row: int) -> str:
        """``"x"``, ``"o"`` or ``"."`` at ``(col, row)``, row 0 at the bottom."""
        bit = 1 << (_H1 * col + row)
        return "x" if self.bits[0] & bit else "o" if self.bits[1] & bit else "."

    def board_text(self) -> str:
        """The board, top row first, with the column numbers underneath."""
        return "\n".join([" ".join(row) for row in self._rows]) + _COLUMN_LINE

    def _observation(self, agent: str) -> str:
        mark = MARKS[self.possible_agents.index(agent)]
        return f"Connect Four. You play {mark}.\n{self.board_text()}"

    def render_state(self) -> str:
        if has_four(self.bits[0]) or has_four(self.bits[1]):
            status = f"{'x' if has_four(self.bits[0]) else 'o'} wins"
        elif self.mask == _FULL:
            status = "draw"
        else:
            status = f"{MARKS[self.to_play]} to move"
        return f"{self.board_text()}\n({status})"

    def instructions(self, agent: str) -> str:
        mark = MARKS[self.possible_agents.index(agent)]
        first = "You move first." if mark == "x" else "x moves first."
        return (f"You play Connect Four as {mark}. {first} Drop a piece into one of the columns 0-6 of a 6-row board; "
                "it falls to the lowest empty cell. Four of your pieces in a row (horizontally, vertically or "
                "diagonally) wins; a full board without a line is a draw. Win +1, draw 0, loss -1. "
                f"{self._format_tool_paragraph()} {self._limits_paragraph()}")

    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """Win now, block, else alpha-beta search of ``expert_depth`` plies."""
        p = self.to_play
        return MOVES[search_move(self.bits[p], self.bits[1 - p], self.mask, self.expert_depth)]


env, raw_env, parallel_env = make_module(ConnectFourEnv)

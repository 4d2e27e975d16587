"""Multi-agent path finding on a grid as a text PettingZoo game: ``from arl_envs.envs.multiagent import gridpath_v0``.

N agents move to their own goals on a grid with walls. Moves are simultaneous: each cycle every agent still in the
game chooses a move (in the AEC env one after another, in seat order, without seeing the others' choices of that
cycle); when the last one has chosen, all moves happen at once, conflicts are resolved as in multi-agent path
finding (vertex and swap conflicts, Stern et al., "Multi-Agent Pathfinding: Definitions, Variants, and Benchmarks",
SoCS 2019, https://arxiv.org/abs/1906.08291), and agents standing on their goal leave the game while the others go
on. ``parallel_env()`` is the natural simultaneous form (one ``step`` = one cycle); the AEC env is not
``is_parallelizable`` (an invalid move is retried by the same agent), so use it rather than ``aec_to_parallel``.
"""

from __future__ import annotations

from collections import deque
from typing import Any, ClassVar, Sequence

import numpy as np
from arl_envs.envs.multiagent.base import (
    FORFEIT_REWARD,
    MAX_ACTION_CHARS,
    MoveResult,
    TextGameEnv,
)
from arl_envs.envs.multiagent.base import MoveText
from arl_envs.envs.multiagent.cycle_parallel import CycleParallelEnv

#: Moves and their (row, column) steps.
DELTAS: dict[str, tuple[int, int]] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1), "stay": (0, 0)}
MOVES: tuple[str, ...] = tuple(DELTAS)
DEFAULT_NUM_AGENTS = 3
DEFAULT_SIZE = 5
DEFAULT_NUM_WALLS = 3
MAX_AGENTS = 10
#: Cycles per grid side before truncation (default ``max_cycles = CYCLES_PER_SIDE * size``).
CYCLES_PER_SIDE = 4
#: Reward of an agent when it reaches its goal (and leaves).
GOAL_REWARD = 1.0
#: Reward of an agent whose move was blocked by a conflict with another agent.
COLLISION_PENALTY = -0.25
#: Cycles an expert may be stuck in place before it side-steps at random.
EXPERT_PATIENCE = 2
WALL, EMPTY = "#", "."

Cell = tuple[int, int]


def _bfs(size: int, walls: frozenset[Cell], start: Cell) -> dict[Cell, int]:
    """Distances (moves) from ``start`` to every reachable cell, walls excluded."""
    dist = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for dr, dc in DELTAS.values():
            n = (r + dr, c + dc)
            if n not in dist and 0 <= n[0] < size and 0 <= n[1] < size and n not in walls:
                dist[n] = dist[(r, c)] + 1
                queue.append(n)
    return dist


def resolve_moves(pos: dict[str, Cell], want: dict[str, Cell]) -> tuple[dict[str, Cell], set[str]]:
    """Simultaneous moves with conflicts: two agents into one cell (vertex conflict), two agents swapping
    cells (swap conflict), or a move into a cell whose agent does not leave it: the agents whose moves conflict
    stay where they are; repeated until no conflict is left.

    Args:
        pos: Current cell of each agent.
        want: Desired cell of each agent (its current cell for ``stay``).

    Returns:
        ``(new positions, agents whose move was blocked by another agent)``.
    """
    target = dict(want)
    blocked: set[str] = set()
    changed = True
    while changed:
        changed = False
        claims: dict[Cell, list[str]] = {}
        for a, t in target.items():
            claims.setdefault(t, []).append(a)
        for a, t in list(target.items()):
            if t == pos[a]:
                continue
            others = [b for b in claims[t] if b != a]
            swap = any(target[b] == pos[a] and pos[b] == t for b in target if b != a)
            if others or swap:
                target[a] = pos[a]
                blocked.add(a)
                changed = True
        if changed:
            continue
    return target, blocked


class GridPathEnv(TextGameEnv):
    """N agents move to their goals on a grid; agents that arrive leave while the others go on.

    Description:
        A ``size x size`` grid with ``num_walls`` walls, and for each agent a start and a goal (all distinct, every
        goal reachable from its start), drawn from the seed (or given as ``layout``). Each cycle every agent still
        in the game moves ``up``/``down``/``left``/``right``/``stay``, in seat order, without seeing the choices of
        that cycle; the moves then happen at once. Conflicts (two agents into one cell, two agents swapping, a move
        into an agent that does not leave) block the conflicting moves. An agent on its goal after a cycle leaves.
        After an agent leaves, every remaining agent still moves exactly once per cycle, in seat order.

    Observation:
        The grid (``#`` wall, ``.`` free, digit ``i`` = ``agent_i``, letter = goal: ``a`` for ``agent_0``, ...), the
        agent's own position and goal, the cycle count, and what happened in the last cycle (collisions,
        arrivals). Fully observable.

    Action:
        ``[up]``, ``[down]``, ``[left]``, ``[right]``, ``[stay]`` (or the word alone, ``move up``, a ``move`` tool
        call). Moves into a wall or off the grid are illegal (an invalid move, with the reason).

    Tools:
        ``move(move: str)`` as a ``<tool_call>`` block (the only form with ``action_format="json"``).

    Info (per agent, besides the base keys): ``position``, ``goal``, ``cycle``, ``arrived`` (agents that left),
    ``action_mask`` (``np.int8`` over :data:`MOVES`; ``action_space(agent).sample(mask)`` is a random legal move).

    Rewards:
        ``+1`` to an agent when it reaches its goal (paid as it leaves: PettingZoo gives no rewards to agents that
        left); ``-0.25`` to an agent whose move was blocked by another agent. A forfeit (``max_invalid_actions + 1``
        invalid moves of one agent) ends the game for the team: the forfeiter gets -1.

    Episode end:
        Each agent terminates when it arrives; the game ends (terminated) when all have arrived, or on a forfeit,
        and is truncated for the agents left after ``max_cycles`` cycles. The team succeeds (``success``, shared by
        every seat) when all agents arrive.

    Arguments:
        num_agents: Agents (1-10, default 3).
        size: Grid side (default 5).
        num_walls: Walls drawn at random (default 3).
        max_cycles: Cycles before truncation (default ``4 * size``).
        layout: Optional fixed map: rows of ``#``/``.``, digits for starts and letters for goals (``a`` = goal of
            ``agent_0``); overrides ``num_agents``, ``size`` and ``num_walls``.
        max_invalid_actions, action_format, render_mode: As :class:`~arl_envs.envs.multiagent.base.TextGameEnv`.

    Raises:
        ValueError: Bad sizes, or a layout that is not square, lacks a start/goal, or has an unreachable goal.

    Version history:
        v0: first version.
    """

    # Not parallelizable in PettingZoo's sense (``aec_to_parallel`` needs every agent to act exactly once per
    # cycle, in order): an invalid move is retried by the same agent, and only the selected agent's info carries
    # its legal moves. ``parallel_env()`` is the Parallel form; it handles both.
    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "name": "gridpath_v0",
                                          "is_parallelizable": False, "render_fps": 1}
    zero_sum = False
    title = "Grid path finding"

    def __init__(
        self,
        *,
        num_agents: int = DEFAULT_NUM_AGENTS,
        size: int = DEFAULT_SIZE,
        num_walls: int = DEFAULT_NUM_WALLS,
        max_cycles: int | None = None,
        layout: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.layout = None if layout is None else tuple(layout)
        if self.layout is not None:
            size = len(self.layout)
            num_agents = sum(ch.isdigit() for row in self.layout for ch in row)
            num_walls = sum(ch == WALL for row in self.layout for ch in row)
        if not 1 <= int(num_agents) <= MAX_AGENTS:
            raise ValueError(f"num_agents must be in [1, {MAX_AGENTS}], got {num_agents}")
        if int(size) < 2:
            raise ValueError(f"size must be >= 2, got {size}")
        if 2 * int(num_agents) + int(num_walls) > int(size) ** 2:
            raise ValueError("the grid is too small for the agents, goals and walls")
        self.size, self.n, self.num_walls = int(size), int(num_agents), int(num_walls)
        self.max_cycles = CYCLES_PER_SIDE * self.size if max_cycles is None else int(max_cycles)
        if self.max_cycles < 1:
            raise ValueError(f"max_cycles must be >= 1, got {max_cycles}")
        self.possible_agents_default = tuple(f"agent_{i}" for i in range(self.n))
        self.max_moves_hint = self.max_cycles * self.n
        super().__init__(**kwargs)
        self._act_spaces = {a: MoveText(MAX_ACTION_CHARS, moves=MOVES) for a in self.possible_agents}
        self.walls: frozenset[Cell] = frozenset()
        self.pos: dict[str, Cell] = {}
        self.goal: dict[str, Cell] = {}
        self.pending: dict[str, str] = {}
        self.arrived: list[str] = []
        self.cycle = 0
        self.collisions = 0
        self._stuck: dict[str, int] = {}
        self._goal_dist: dict[str, dict[Cell, int]] = {}
        if self.layout is not None:
            self._parse_layout()  # validate at construction

    # ------------------------------------------------------------------ setup
    def _parse_layout(self) -> None:
        assert self.layout is not None
        if any(len(row) != self.size for row in self.layout):
            raise ValueError("layout must be square (every row as long as there are rows)")
        walls, pos, goal = set(), {}, {}
        for r, row in enumerate(self.layout):
            for c, ch in enumerate(row):
                if ch == WALL:
                    walls.add((r, c))
                elif ch.isdigit():
                    pos[f"agent_{ch}"] = (r, c)
                elif ch.isalpha():
                    goal[f"agent_{ord(ch.lower()) - ord('a')}"] = (r, c)
                elif ch != EMPTY:
                    raise ValueError(f"unknown layout character {ch!r}")
        if set(pos) != set(self.possible_agents_default) or set(goal) != set(pos):
            raise ValueError("layout needs digits 0..n-1 (starts) and letters a.. (their goals), one each")
        self.walls, self.pos, self.goal = frozenset(walls), pos, goal
        for a in pos:
            if goal[a] not in _bfs(self.size, self.walls, pos[a]):
                raise ValueError(f"layout: the goal of {a} is unreachable")

    def _reset_game(self) -> None:
        if self.layout is not None:
            self._parse_layout()
        else:
            cells = [(r, c) for r in range(self.size) for c in range(self.size)]
            while True:  # rejection sampling: almost every draw is connected on these sizes
                pick = self.np_random.permutation(len(cells))
                walls = frozenset(cells[int(i)] for i in pick[: self.num_walls])
                free = [cells[int(i)] for i in pick[self.num_walls:]]
                starts, goals = free[: self.n], free[self.n: 2 * self.n]
                if all(g in _bfs(self.size, walls, s) for s, g in zip(starts, goals)):
                    break
            self.walls = walls
            self.pos = dict(zip(self.possible_agents_default, starts))
            self.goal = dict(zip(self.possible_agents_default, goals))
        self._goal_dist = {a: _bfs(self.size, self.walls, g) for a, g in self.goal.items()}
        self.pending = {}
        self.arrived = []
        self.cycle = 0
        self.collisions = 0
        self._stuck = dict.fromkeys(self.possible_agents_default, 0)

    # ------------------------------------------------------------------ rules
    def _live(self) -> list[str]:
        return [a for a in self.possible_agents if a in self.pos and a not in self.arrived]

    def _current_agent(self) -> str:
        for a in self._live():
            if a not in self.pending:
                return a
        return self._live()[0]  # pragma: no cover - a cycle is resolved as soon as it is complete

    def _free(self, cell: Cell) -> bool:
        return 0 <= cell[0] < self.size and 0 <= cell[1] < self.size and cell not in self.walls

    def legal_moves(self, agent: str) -> list[str]:
        if agent not in self._live() or agent in self.pending or agent != self.agent_selection:
            return []
        r, c = self.pos[agent]
        return [m for m, (dr, dc) in DELTAS.items() if self._free((r + dr, c + dc))]

    def all_moves(self, agent: str) -> Sequence[str]:
        return MOVES

    @property
    def round_index(self) -> int:
        """Cycles completed (the round counter :class:`CycleParallelEnv` reads)."""
        return self.cycle

    def round_info(self, agent: str) -> dict[str, Any]:
        """Info entries for ``agent`` if it is still to choose in this cycle (its moves depend on its position only),
        else {}: ``{"legal_moves", "action_mask"}``. The Parallel form prompts every agent of the cycle with it."""
        if agent not in self._live() or agent in self.pending:
            return {}
        r, c = self.pos[agent]
        moves = [m for m, (dr, dc) in DELTAS.items() if self._free((r + dr, c + dc))]
        mask = np.zeros(len(MOVES), dtype=np.int8)
        mask[[MOVES.index(m) for m in moves]] = 1
        return {"legal_moves": moves, "action_mask": mask}

    def _illegal_detail(self, agent: str, move: str) -> str:
        r, c = self.pos[agent]
        dr, dc = DELTAS[move]
        where = "off the grid" if not (0 <= r + dr < self.size and 0 <= c + dc < self.size) else "into a wall"
        return f": it would take you {where}"

    def _apply_move(self, agent: str, move: str) -> MoveResult:
        self.pending[agent] = move
        live = self._live()
        if any(a not in self.pending for a in live):
            return MoveResult()  # the others of this cycle have not chosen yet; nothing is revealed
        want = {}
        for a in live:
            dr, dc = DELTAS[self.pending[a]]
            want[a] = (self.pos[a][0] + dr, self.pos[a][1] + dc)
        current = {a: self.pos[a] for a in live}
        new, blocked = resolve_moves(current, want)
        for a in live:
            self._stuck[a] = self._stuck[a] + 1 if new[a] == current[a] else 0
        self.pos.update(new)
        self.pending = {}
        self.cycle += 1
        self.collisions += len(blocked)
        rewards = {a: COLLISION_PENALTY for a in blocked}
        arriving = tuple(a for a in live if new[a] == self.goal[a])
        for a in arriving:
            rewards[a] = rewards.get(a, 0.0) + GOAL_REWARD
            self.arrived.append(a)
        lines = [f"Cycle {self.cycle}: " + ", ".join(f"{a} {self.pending_text(a, current, new)}" for a in live) + "."]
        if blocked:
            lines.append("Blocked by a conflict: " + ", ".join(sorted(blocked)) + f" ({COLLISION_PENALTY:+g} each).")
        if arriving:
            lines.append("Reached their goal and left: " + ", ".join(arriving) + ".")
        event = " ".join(lines)
        # The last mover of the cycle sees the summary too (the base shows an event to the others only).
        self._events[agent].append(event)
        everyone = len(self.arrived) == self.n
        truncated = not everyone and self.cycle >= self.max_cycles
        if truncated:
            event += f" Cycle limit {self.max_cycles} reached."
            self._events[agent][-1] = event
        return MoveResult(rewards=rewards, game_over=everyone, leaving=() if everyone else arriving,
                          truncated=truncated, event=event)

    @staticmethod
    def pending_text(agent: str, before: dict[str, Cell], after: dict[str, Cell]) -> str:
        """How ``agent`` moved in the cycle just resolved (``"-> (2, 3)"`` or ``"stayed at (1, 1)"``)."""
        return f"stayed at {after[agent]}" if before[agent] == after[agent] else f"-> {after[agent]}"

    def _forfeit(self, agent: str) -> MoveResult:
        rewards = {a: (FORFEIT_REWARD if a == agent else 0.0) for a in self.agents}
        return MoveResult(rewards=rewards, game_over=True,
                          event=f"{agent} forfeited (too many invalid moves): the team's game is over.")

    def outcome(self, agent: str, total_return: float) -> str:
        return "win" if len(self.arrived) == self.n else "loss"

    def success(self, agent: str, total_return: float) -> bool:
        """The team succeeded: every agent reached its goal."""
        return len(self.arrived) == self.n

    # ------------------------------------------------------------------ text
    def grid_text(self) -> str:
        """The grid: ``#`` wall, ``.`` free, digit = agent, letter = that agent's goal (agents on top)."""
        rows = [[WALL if (r, c) in self.walls else EMPTY for c in range(self.size)] for r in range(self.size)]
        for a in self._live():
            i = int(a.split("_")[1])
            gr, gc = self.goal[a]
            rows[gr][gc] = chr(ord("a") + i)
        for a in self._live():
            r, c = self.pos[a]
            rows[r][c] = a.split("_")[1]
        return "\n".join("".join(row) for row in rows)

    def _observation(self, agent: str) -> str:
        i = int(agent.split("_")[1])
        shown = min(self.cycle + 1, self.max_cycles)  # the cycle being played (the last one once the game ends)
        head = f"Grid path finding, cycle {shown} of {self.max_cycles}. You are {agent} (digit {i})."
        if agent in self.arrived:
            where = f"You reached your goal {self.goal[agent]} and left the game."
        else:
            where = (f"You are at (row, col) {self.pos[agent]}; your goal '{chr(ord('a') + i)}' is at "
                     f"{self.goal[agent]}.")
        others = [a for a in self._live() if a != agent]
        rest = f" Still moving: {', '.join(others)}." if others else ""
        return f"{head}\n{self.grid_text()}\n{where}{rest}"

    def _prompt(self, agent: str) -> str:
        return "Your move: " + " ".join(f"[{m}]" for m in self.legal_moves(agent))

    def instructions(self, agent: str) -> str:
        return (
            f"Cooperative path finding: {self.n} agents on a {self.size}x{self.size} grid each walk to their own "
            f"goal. You are {agent}. Each cycle every agent still in the game picks one move, [up], [down], [left], "
            "[right] or [stay], without seeing the others' picks; then all moves happen at once. Two agents moving "
            "into one cell, two agents swapping cells, or moving into an agent that stays, blocks those moves "
            f"({COLLISION_PENALTY:+g} each). Reaching your goal gives {GOAL_REWARD:+g} and you leave the game; the "
            f"team succeeds when every agent arrives within {self.max_cycles} cycles. Rows count down from 0 at the "
            'top, columns right from 0. Tool-call form: <tool_call>{"name": "move", "arguments": {"move": "up"}}'
            "</tool_call>. " + self._limits_paragraph()
        )

    def render_state(self) -> str:
        return f"cycle {self.cycle}/{self.max_cycles}, arrived {self.arrived}\n{self.grid_text()}"

    def _refresh_infos(self) -> None:
        super()._refresh_infos()
        for a, info in self.infos.items():
            mask = np.zeros(len(MOVES), dtype=np.int8)
            for m in info["legal_moves"]:
                mask[MOVES.index(m)] = 1
            info["action_mask"] = mask
            info["position"] = self.pos.get(a)
            info["goal"] = self.goal.get(a)
            info["cycle"] = self.cycle
            info["arrived"] = list(self.arrived)

    # ------------------------------------------------------------------ reference players
    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """Path planner: the legal move that most shortens the wall-aware BFS distance to the goal without
        entering a cell another agent holds or has already claimed this cycle (nor swapping with it); it waits
        when blocked, and side-steps at random after being stuck ``EXPERT_PATIENCE`` cycles (breaks deadlocks)."""
        legal = self.legal_moves(agent)
        if not legal:
            raise ValueError(f"it is not {agent}'s turn")
        me = self.pos[agent]
        claimed: set[Cell] = set()
        for b in self._live():
            if b == agent:
                continue
            if b in self.pending:
                dr, dc = DELTAS[self.pending[b]]
                dest = (self.pos[b][0] + dr, self.pos[b][1] + dc)
                claimed.add(dest)
                if dest == me:
                    claimed.add(self.pos[b])  # no swap with an agent coming into my cell
            else:
                claimed.add(self.pos[b])  # it may stay
        dist = self._goal_dist[agent]
        options = []
        for m in legal:
            dr, dc = DELTAS[m]
            cell = (me[0] + dr, me[1] + dc)
            if m != "stay" and cell in claimed:
                continue
            options.append((dist.get(cell, 10**6), MOVES.index(m), m))
        options.sort()
        best = options[0][2] if options else "stay"
        if best == "stay" and me != self.goal[agent] and self._stuck.get(agent, 0) >= EXPERT_PATIENCE:
            moves = [o[2] for o in options if o[2] != "stay"]
            if moves:
                return moves[int(rng.integers(0, len(moves)))]
        return best


class GridPathParallelEnv(CycleParallelEnv):
    """The simultaneous form of :class:`GridPathEnv`: one ``step(actions)`` is one cycle.

    It drives the AEC game (one set of rules, parsing and invalid-move handling) through
    :class:`~arl_envs.envs.multiagent.cycle_parallel.CycleParallelEnv`: each step feeds every agent that has not yet
    chosen in the current cycle its action, in seat order. An invalid move stops the cycle there
    (``infos[agent]["reason"]`` says why); the next ``step`` continues with that agent's retry, and the actions of
    agents that already chose in this cycle are ignored. Agents that arrive are removed from ``agents``.

    Arguments:
        As :class:`GridPathEnv`.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "name": "gridpath_v0",
                                          "render_fps": 1}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(GridPathEnv(**kwargs))


def raw_env(**kwargs: Any) -> GridPathEnv:
    """The AEC env (see :class:`GridPathEnv`)."""
    return GridPathEnv(**kwargs)


def env(**kwargs: Any) -> GridPathEnv:
    """The AEC env, PettingZoo style (see :class:`GridPathEnv`); it checks reset-before-step itself."""
    return GridPathEnv(**kwargs)


def parallel_env(**kwargs: Any) -> GridPathParallelEnv:
    """The Parallel env: one step = one cycle of simultaneous moves (see :class:`GridPathParallelEnv`)."""
    return GridPathParallelEnv(**kwargs)

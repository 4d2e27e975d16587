"""``arl/embodied.frozenlake-v0``: Gymnasium's toy-text FrozenLake as a text grid, with a value-iteration expert.

The dynamics are gymnasium's own :class:`gymnasium.envs.toy_text.frozen_lake.FrozenLakeEnv` (its ``step``, its
transition table ``P``, its ``generate_random_map``); this env adds the text rendering, the command grammar and an
expert. The expert is finite-horizon value iteration over ``P`` (Bellman 1957; Sutton & Barto 2018, section 4.4)
maximising the probability of reaching the goal within the turns left; the value at the start state is the optimal
success probability, reported in ``info["optimal_success_prob"]``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from arl_envs.core.env import Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.envs.embodied.command_env import CommandEnv
from arl_envs.envs.embodied.grid import MOVE_HELP, MOVES, parse_move

#: Gymnasium's FrozenLake action numbers.
GYM_ACTIONS = {"left": 0, "down": 1, "right": 2, "up": 3}
_GYM_NAMES = {v: k for k, v in GYM_ACTIONS.items()}
SYMBOLS = {"F": "_", "H": "O", "G": "G", "S": "S"}
PLAYER, PLAYER_IN_HOLE, PLAYER_ON_GOAL = "P", "X", "*"
LEGEND = ("Legend: P you, _ frozen ice (safe), O hole, G goal, S start, X you in a hole, * you on the goal.")
DEFAULT_SIZE = 4
#: Probability that a cell of a random map is frozen (gymnasium's generate_random_map ``p``).
DEFAULT_P_FROZEN = 0.8
#: Default turn budget (gymnasium registers FrozenLake-v1 with a 100-step limit for 4x4).
DEFAULT_MAX_TURNS = 100
MIN_SIZE, MAX_SIZE = 2, 12
TASK_REWARD = 1.0
#: Discount used only to break ties between equally likely routes (prefer the faster one).
TIE_BREAK_DISCOUNT = 0.95
_TASK_ID = re.compile(r"^frozenlake-(\d+)-(slippery|still)-(\d+)$|^frozenlake-(4x4|8x8)-(slippery|still)$")
_SEED_LIMIT = 2**31 - 1
#: Value-iteration plans kept per process (oldest dropped first).
_PLAN_CACHE_SIZE = 512
_PLAN_CACHE: dict[tuple[Any, ...], tuple[np.ndarray, np.ndarray]] = {}


def _gym_frozenlake() -> Any:
    from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake, generate_random_map

    return GymFrozenLake, generate_random_map


class FrozenLakeEnv(CommandEnv):
    """FrozenLake: walk from the start to the goal over a frozen lake without falling into a hole.

    Description:
        Gymnasium's toy-text FrozenLake (``gymnasium.envs.toy_text.frozen_lake``) on a random map of ``size``
        (``generate_random_map(size, p_frozen)``, which guarantees a path) or gymnasium's fixed ``map_name``
        map. With ``slippery=True`` a move goes in the intended direction with probability 1/3 and to either
        perpendicular direction with 1/3 each (gymnasium's rule). Default ``slippery=False``: then the expert
        always succeeds, which is the setting RAGEN-style multi-turn RL studies commonly use; with slippery on,
        even the optimal policy fails sometimes (see ``info["optimal_success_prob"]``).

    Observation:
        The grid as text (one row per line) with the legend (``P`` you, ``_`` ice, ``O`` hole, ``G`` goal, ``S``
        start), and what the last move did (including a slip). Fully observable.

    Action:
        One move per turn: ``up``, ``down``, ``left``, ``right`` (synonyms ``move up``, ``north``, ``u`` ...),
        native (bare or the last ``<action>`` outside ``<think>``) or json ``act(command)``. A move off the edge
        keeps you in place (a valid turn). Several moves in one reply are a malformed action.

    Tools:
        ``act(command: str)``.

    Rewards:
        ``task`` (weight 1): raw 1 on reaching the goal (gymnasium's reward). ``format`` (weight 0.1): raw -1 per
        malformed action. No shaping part: FrozenLake has no sub-goals.

    Episode end:
        ``terminated``: the goal (success) or a hole (failure), as in gymnasium; also at the
        ``max_invalid_actions + 1``-th malformed action (default 10 tolerated). ``truncated`` at ``max_turns``
        (default 100).

    Info:
        ``optimal_success_prob``: the probability that an optimal policy reaches the goal from the current state
        within the turns left (1.0 or 0.0 unless slippery), from finite-horizon value iteration; also at reset.
        ``slipped`` (bool): the move went elsewhere than intended.

    Arguments:
        size: Random-map side (2-12, default 4). Ignored when ``map_name`` is given.
        p_frozen: Probability a random-map cell is frozen (default 0.8).
        map_name: ``"4x4"`` or ``"8x8"``: gymnasium's fixed maps instead of random ones.
        slippery: Gymnasium's ``is_slippery`` (default False).
        show_admissible, action_format, reward_weights, max_turns, max_invalid_actions, render_mode: see
            ``CommandEnv`` / ``AgentEnv``.

    Task ids:
        ``frozenlake-<size>-<slippery|still>-<map seed>`` or ``frozenlake-<4x4|8x8>-<slippery|still>``.

    Version history:
        v0: initial version.
    """

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "format": 0.1}
    default_max_turns: ClassVar[int] = DEFAULT_MAX_TURNS
    example_command: ClassVar[str] = "up"

    def __init__(self, *, size: int = DEFAULT_SIZE, p_frozen: float = DEFAULT_P_FROZEN, map_name: str | None = None,
                 slippery: bool = False, **kwargs: Any) -> None:
        if not MIN_SIZE <= int(size) <= MAX_SIZE:
            raise ValueError(f"size must be in {MIN_SIZE}-{MAX_SIZE}, got {size}")
        if not 0.0 < float(p_frozen) <= 1.0:
            raise ValueError(f"p_frozen must be in (0, 1], got {p_frozen}")
        if map_name not in (None, "4x4", "8x8"):
            raise ValueError(f"map_name must be None, '4x4' or '8x8', got {map_name!r}")
        super().__init__(**kwargs)
        self.size, self.p_frozen, self.map_name, self.slippery = int(size), float(p_frozen), map_name, bool(slippery)
        self._lake: Any = None
        self._lake_key: Any = None
        self._desc: list[str] = []
        self._state = 0
        self._values: np.ndarray | None = None  # (max_turns + 1, n_states): reach probability with t turns left
        self._policy: np.ndarray | None = None  # (max_turns + 1, n_states): best gym action with t turns left
        self._last: str = ""

    # ----------------------------------------------------------------- CommandEnv hooks
    def describe_task(self) -> str:
        slip = (" The ice is slippery: a move may slide you to a side instead." if self.slippery else "")
        return ("You are on a frozen lake. Walk from the start S to the goal G without stepping into a hole O."
                + slip + " " + LEGEND)

    def command_help(self) -> str:
        return MOVE_HELP

    def _new_episode(self, task_id: str | None) -> tuple[str, str]:
        gym_lake, random_map = _gym_frozenlake()
        slippery_word = "slippery" if self.slippery else "still"
        if task_id is None:
            if self.map_name is not None:
                tid, desc = f"frozenlake-{self.map_name}-{slippery_word}", None
            else:
                seed = int(self.np_random.integers(0, _SEED_LIMIT))
                tid = f"frozenlake-{self.size}-{slippery_word}-{seed}"
                desc = random_map(size=self.size, p=self.p_frozen, seed=seed)
            slippery = self.slippery
        else:
            m = _TASK_ID.match(task_id)
            if m is None:
                raise TaskLoadError(f"unknown FrozenLake task id {task_id!r}")
            if m.group(4):
                tid, desc, slippery = task_id, None, m.group(5) == "slippery"
            else:
                size = int(m.group(1))
                if not MIN_SIZE <= size <= MAX_SIZE:
                    raise TaskLoadError(f"FrozenLake task id {task_id!r}: size out of range")
                tid, slippery = task_id, m.group(2) == "slippery"
                desc = random_map(size=size, p=self.p_frozen, seed=int(m.group(3)))
        name = m.group(4) if task_id is not None and m and m.group(4) else self.map_name
        key = (tuple(desc) if desc is not None else name, slippery)
        if self._lake is None or self._lake_key != key:  # a fixed map keeps its gymnasium env between episodes
            if self._lake is not None:
                self._lake.close()
            self._lake = gym_lake(desc=desc, map_name=name if desc is None else None, is_slippery=slippery)
            self._lake_key = key
        self._state, _ = self._lake.reset(seed=int(self.np_random.integers(0, _SEED_LIMIT)))
        self._desc = ["".join(ch.decode() for ch in row) for row in self._lake.desc]
        self._plan_values()
        self._last = ""
        return tid, self._board_text()

    def _interpret(self, command: str) -> tuple[str, Any]:
        move = parse_move(command)
        return move, move

    def _execute(self, parsed: Any) -> Transition:
        before = self._state
        state, reward, terminated, _truncated, _ = self._lake.step(GYM_ACTIONS[parsed])
        self._state = int(state)
        actual = self._direction(before, self._state)
        slipped = actual is not None and actual != parsed
        cell = self._cell(self._state)
        if slipped:
            head = f"You try to move {parsed} but slip and slide {actual}."
        elif actual is None and self._lake_key[1]:
            head = f"You try to move {parsed} but end up where you were: the edge of the lake stopped you."
        elif actual is None:
            head = f"You cannot move {parsed}: that is the edge of the lake. You stay where you are."
        else:
            head = f"You move {parsed}."
        if cell == "H":
            head += " You fall into a hole!"
        elif cell == "G":
            head += " You reach the goal!"
        success = bool(terminated and reward > 0)
        parts = {"task": TASK_REWARD} if success else {}
        info = {"optimal_success_prob": self.optimal_success_prob(), "slipped": bool(slipped)}
        return Transition(f"{head}\n{self._board_text()}", parts, terminated=bool(terminated), success=success,
                          info=info)

    def admissible_actions(self) -> list[str]:
        return list(MOVES)

    def expert_command(self) -> str:
        assert self._policy is not None
        left = max(self.max_turns - self.turn, 0)
        return _GYM_NAMES[int(self._policy[left, self._state])]

    def _reset_info(self) -> dict[str, Any]:
        """:meth:`CommandEnv._reset_info`, plus ``optimal_success_prob`` for the whole turn budget."""
        return {**super()._reset_info(), "optimal_success_prob": self.optimal_success_prob()}

    # ----------------------------------------------------------------- planning
    def _plan_values(self) -> None:
        """Finite-horizon value iteration: ``V[t, s]`` = max probability of reaching G from s within t moves.

        Plans are cached per (map, slippery, horizon): a fixed map is planned once per process.
        """
        key = ("".join(self._desc), len(self._desc[0]), self._lake_key[1], self.max_turns)
        cached = _PLAN_CACHE.get(key)
        if cached is not None:
            self._values, self._policy = cached
            return
        n_s, n_a = self._lake.observation_space.n, self._lake.action_space.n
        trans = np.zeros((n_s, n_a, n_s))
        goal = np.zeros((n_s, n_a, n_s))
        flat = "".join(self._desc)
        for s in range(n_s):
            for a in range(n_a):
                for p, s2, _r, _done in self._lake.P[s][a]:
                    if flat[s2] == "G":
                        goal[s, a, s2] += p
                    elif flat[s2] != "H":
                        trans[s, a, s2] += p
        horizon = self.max_turns
        values = np.zeros((horizon + 1, n_s))
        policy = np.zeros((horizon + 1, n_s), dtype=np.int64)
        # Ties in reach probability (every safe move keeps V = 1 on a still lake) are broken by a discounted
        # value, so the expert takes the fastest of the optimal routes instead of idling against a wall.
        discounted = np.zeros((horizon + 1, n_s))
        reach_now = goal.sum(axis=2)  # (n_s, n_a)
        rows = np.arange(n_s)
        for t in range(1, horizon + 1):
            q = reach_now + trans @ values[t - 1]  # (n_s, n_a)
            qd = reach_now + TIE_BREAK_DISCOUNT * (trans @ discounted[t - 1])
            best = q.max(axis=1, keepdims=True)
            choice = np.argmax(np.where(q >= best - 1e-12, qd, -np.inf), axis=1)
            policy[t] = choice
            values[t] = q[rows, choice]
            discounted[t] = qd[rows, choice]
        for s, ch in enumerate(flat):  # terminal cells: nothing left to reach
            if ch in "GH":
                values[:, s] = 1.0 if ch == "G" else 0.0
        self._values, self._policy = values, policy
        if len(_PLAN_CACHE) >= _PLAN_CACHE_SIZE:
            _PLAN_CACHE.pop(next(iter(_PLAN_CACHE)))
        _PLAN_CACHE[key] = (values, policy)

    def optimal_success_prob(self) -> float:
        """Probability that an optimal policy reaches the goal from the current state in the turns left."""
        assert self._values is not None
        left = max(self.max_turns - self.turn, 0)
        return float(self._values[left, self._state])

    # ----------------------------------------------------------------- rendering
    def _cell(self, s: int) -> str:
        n = len(self._desc[0])
        return self._desc[s // n][s % n]

    def _direction(self, a: int, b: int) -> str | None:
        if a == b:
            return None
        n = len(self._desc[0])
        dr, dc = b // n - a // n, b % n - a % n
        for name, delta in MOVES.items():
            if delta == (dr, dc):
                return name
        return None

    def _board_text(self) -> str:
        n = len(self._desc[0])
        rows = []
        for r, line in enumerate(self._desc):
            row = []
            for c, ch in enumerate(line):
                if r * n + c == self._state:
                    row.append(PLAYER_IN_HOLE if ch == "H" else PLAYER_ON_GOAL if ch == "G" else PLAYER)
                else:
                    row.append(SYMBOLS[ch])
            rows.append("".join(row))
        return "\n".join(rows)

    def _close(self) -> None:
        if self._lake is not None:
            self._lake.close()


__all__ = ["FrozenLakeEnv", "GYM_ACTIONS"]

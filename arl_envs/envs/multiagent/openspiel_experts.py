"""The reference players of the OpenSpiel bridge: OpenSpiel's (IS-)MCTS search, an exact minimax solver and a CFR+
equilibrium for small imperfect-information games.

:class:`OpenSpielExperts` (a base class of :class:`~arl_envs.envs.multiagent.openspiel_v0.OpenSpielEnv`) gives the
bridge its ``expert_move`` (search with ``expert_simulations``, or the solver), ``search_move`` (OpenSpiel's
``MCTSBot`` for perfect-information games, ``ISMCTSBot`` otherwise, random rollouts, seeded from the caller's
generator), ``solver_move`` (exact minimax over the whole tree, values memoised per game in a shared table),
``cfr_move`` (a move drawn from the average policy of OpenSpiel's CFR+ solver, computed once per game and process)
and ``opponent_move`` for the single-agent view's opponent kinds.

Reproducibility: OpenSpiel's IS-MCTS is not reproducible across processes for a fixed seed (its search walks hash
maps whose iteration order changes from one process to the next); MCTS on perfect-information games, the solver and
CFR+ (deterministic iterations, then a draw from the caller's seeded generator) are.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from arl_envs.core.errors import DependencyNotInstalled

#: Simulations per move of the reference (IS-)MCTS expert.
EXPERT_SIMULATIONS = 200
#: UCT exploration constant of the expert (OpenSpiel's examples use 2).
EXPERT_UCT_C = 2.0
#: Memory cap of the expert's search tree, in MB.
EXPERT_MAX_MEMORY_MB = 256

#: Simulations per move of the ``"mcts"`` opponent (a weaker budget than the expert's).
MCTS_OPPONENT_SIMULATIONS = 50
#: Expert kinds: OpenSpiel's search (``"mcts"``), an exact game-tree solve (``"solver"``, small perfect-information
#: games) or a CFR+ equilibrium (``"cfr"``, small two-player zero-sum games, hidden information allowed).
EXPERTS = ("mcts", "solver", "cfr")
#: CFR+ iterations of the ``"cfr"`` expert (OpenSpiel's ``CFRPlusSolver``). On leduc_poker 40 iterations take
#: ~1-3 s once per process and reach an exploitability of 0.048 chips per hand (``pyspiel.exploitability``).
CFR_ITERATIONS = 40
#: Most histories (nodes of the game tree, chance nodes included) a game may have for the ``"cfr"`` expert: each
#: CFR+ iteration walks the whole tree (leduc_poker: 9,457; liars_dice: 294,883, ~8 s for the first move;
#: tic_tac_toe: 549,946, ~30 s; connect_four would never finish). Larger games are refused (``ValueError``).
CFR_MAX_STATES = 300_000
#: Most states the exact solver memoises per game before it gives up (``NotImplementedError``).
SOLVER_MAX_STATES = 2_000_000

_INSTALL_HINT = "pip install 'arl-envs[openspiel]'"

#: Exact values solved so far: game string -> {state key: value for player 0}. A read-only cache of game-theoretic
#: facts (the same for every instance), filled on use.
_SOLVED: dict[str, dict[str, float]] = {}
#: CFR+ solvers run so far: game string -> ``(solver, average policy)`` (read-only, filled on use; the policy reads
#: the solver's tables, so the solver is kept alive beside it).
_CFR_POLICIES: dict[str, tuple[Any, Any]] = {}
#: Game strings whose tree is within CFR_MAX_STATES (checked once per game and process).
_CFR_SMALL: set[str] = set()


def check_cfr_tree(game: Any, game_string: str) -> None:
    """Raise ``ValueError`` when ``game``'s tree has more than :data:`CFR_MAX_STATES` histories (a bounded walk:
    under a second at the limit)."""
    if game_string in _CFR_SMALL:
        return
    stack, n = [game.new_initial_state()], 0
    while stack:
        state = stack.pop()
        n += 1
        if n > CFR_MAX_STATES:
            raise ValueError(f"expert='cfr' solves the whole game tree; {game_string} has more than "
                             f"{CFR_MAX_STATES:,} histories: use expert='mcts' (or 'solver' for small "
                             "perfect-information games)")
        if state.is_terminal():
            continue
        moves = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        stack.extend(state.child(a) for a in moves)
    _CFR_SMALL.add(game_string)


def _pyspiel() -> Any:
    try:
        import pyspiel  # noqa: PLC0415 - optional dependency, imported on use
    except ImportError as exc:  # pragma: no cover - exercised only where open-spiel is absent
        raise DependencyNotInstalled(f"the OpenSpiel bridge needs open-spiel: {_INSTALL_HINT}") from exc
    return pyspiel


class OpenSpielExperts:
    """The search and solver players of :class:`~arl_envs.envs.multiagent.openspiel_v0.OpenSpielEnv` (its base
    class). They read the bridge's state: ``game``, ``spiel_state``, ``game_string``, ``agent_index``,
    ``perfect_information``, ``expert``, ``expert_simulations``, ``mcts_simulations`` and ``legal(agent)``.
    """

    game: Any
    spiel_state: Any
    game_string: str
    agent_index: dict[str, int]
    perfect_information: bool
    expert: str
    expert_simulations: int
    mcts_simulations: int

    #: Opponent kinds of the single-agent view (:class:`~arl_envs.envs.multiagent.view.GameSeatEnv`): ``"mcts"``
    #: is OpenSpiel's (IS-)MCTS bot with ``mcts_simulations`` simulations per move.
    opponent_kinds: ClassVar[tuple[str, ...]] = ("random", "expert", "mcts")

    def opponent_move(self, kind: str, agent: str, rng: np.random.Generator) -> str:
        """A move of the view's opponent of kind ``kind`` (``"mcts"``: :meth:`search_move` with
        ``mcts_simulations``).

        Raises:
            ValueError: An unknown kind, or not ``agent``'s turn.
        """
        if kind == "mcts":
            return self.search_move(agent, rng, self.mcts_simulations)
        if kind == "expert":
            return self.expert_move(agent, rng)
        if kind == "random":
            return self.random_move(agent, rng)
        raise ValueError(f"unknown opponent kind {kind!r}; known: {self.opponent_kinds}")

    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """The reference expert's move: with ``expert="solver"`` an exact minimax move (:meth:`solver_move`),
        otherwise :meth:`search_move` with ``expert_simulations``.

        Raises:
            ValueError: It is not ``agent``'s turn.
            NotImplementedError: No search or solve for this game (see :meth:`search_move`, :meth:`solver_move`).
        """
        if self.expert == "solver":
            return self.solver_move(agent)
        if self.expert == "cfr":
            return self.cfr_move(agent, rng)
        return self.search_move(agent, rng, self.expert_simulations)

    def cfr_move(self, agent: str, rng: np.random.Generator) -> str:
        """A move drawn (with ``rng``) from the average policy of :data:`CFR_ITERATIONS` iterations of OpenSpiel's
        CFR+ solver at ``agent``'s information state; the policy is computed once per game and process.

        Raises:
            ValueError: It is not ``agent``'s turn.
        """
        names, ids = self.legal(agent)
        if not ids:
            raise ValueError(f"it is not {agent}'s turn")
        if len(ids) == 1:
            return names[0]
        solved = _CFR_POLICIES.get(self.game_string)
        if solved is None:
            solver = _pyspiel().CFRPlusSolver(self.game)
            for _ in range(CFR_ITERATIONS):
                solver.evaluate_and_update_policy()
            solved = _CFR_POLICIES[self.game_string] = (solver, solver.average_policy())
        policy = solved[1]
        probs = dict(policy.get_state_policy(self.spiel_state))
        weights = np.array([max(probs.get(a, 0.0), 0.0) for a in ids], dtype=np.float64)
        total = float(weights.sum())
        weights = weights / total if total > 0 else np.full(len(ids), 1.0 / len(ids))
        return names[int(rng.choice(len(ids), p=weights))]

    def solver_move(self, agent: str) -> str:
        """An optimal move by exact minimax over the whole game tree (memoised per game in a shared table of
        values; at most :data:`SOLVER_MAX_STATES` states). Among optimal moves, the first in OpenSpiel's order.

        Raises:
            ValueError: It is not ``agent``'s turn.
            NotImplementedError: The tree has more than :data:`SOLVER_MAX_STATES` states, or chance nodes.
        """
        names, ids = self.legal(agent)
        if not ids:
            raise ValueError(f"it is not {agent}'s turn")
        table = _SOLVED.setdefault(self.game_string, {})
        player = self.agent_index[agent]
        sign = 1.0 if player == 0 else -1.0
        best, best_value = ids[0], -np.inf
        for a in ids:
            child = self.spiel_state.child(a)
            value = sign * _solve(child, table)
            if value > best_value + 1e-12:
                best, best_value = a, value
        return names[ids.index(best)]

    def search_move(self, agent: str, rng: np.random.Generator, simulations: int) -> str:
        """OpenSpiel's MCTS (perfect information) or IS-MCTS (imperfect information) with random rollouts,
        ``simulations`` simulations per move (seeded from ``rng``). Cost grows with the game's length
        (about 0.5 s per move in othello, seconds in backgammon, at 200 simulations).

        Raises:
            ValueError: It is not ``agent``'s turn.
            NotImplementedError: OpenSpiel's searches do not support the game (IS-MCTS needs
                ``ResampleFromInfostate``, missing e.g. in liars_dice, battleship, phantom_ttt and turn-based
                simultaneous games; MCTS needs terminal rewards, missing e.g. in 2048).
        """
        names, ids = self.legal(agent)
        if not ids:
            raise ValueError(f"it is not {agent}'s turn")
        if len(ids) == 1:
            return names[0]
        pyspiel = _pyspiel()
        seed = int(rng.integers(0, 2**31 - 1))
        try:
            evaluator = pyspiel.RandomRolloutEvaluator(1, seed)
            if self.perfect_information:
                bot = pyspiel.MCTSBot(self.game, evaluator, EXPERT_UCT_C, int(simulations),
                                      EXPERT_MAX_MEMORY_MB, True, seed, False)
            else:
                bot = pyspiel.ISMCTSBot(seed, evaluator, EXPERT_UCT_C, int(simulations))
            action = int(bot.step(self.spiel_state))
        except pyspiel.SpielError as exc:
            raise NotImplementedError(f"no OpenSpiel search expert for {self.game_string}: {exc}") from exc
        return names[ids.index(action)]


def _solve(state: Any, table: dict[str, float]) -> float:
    """Game value of ``state`` for player 0 under optimal play (two-player zero-sum, perfect information, no
    chance), memoised in ``table`` by the state's string plus the player to move.

    Raises:
        NotImplementedError: A chance node, or more than :data:`SOLVER_MAX_STATES` states.
    """
    if state.is_terminal():
        return float(state.returns()[0])
    key = f"{state.current_player()}|{state}"
    hit = table.get(key)
    if hit is not None:
        return hit
    if state.is_chance_node():
        raise NotImplementedError("the exact solver does not handle chance nodes")
    if len(table) >= SOLVER_MAX_STATES:
        raise NotImplementedError(f"the game tree has more than {SOLVER_MAX_STATES} states: too large to solve")
    values = [_solve(state.child(a), table) for a in state.legal_actions()]
    value = max(values) if state.current_player() == 0 else min(values)
    table[key] = value
    return value

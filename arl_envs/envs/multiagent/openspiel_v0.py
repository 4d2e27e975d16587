"""OpenSpiel bridge: any turn-based OpenSpiel game as a PettingZoo text environment.

``openspiel_v0.env(game="leduc_poker")`` is a PettingZoo AEC env (a
:class:`~arl_envs.envs.multiagent.base.TextGameEnv`) whose observations are text (each player's OpenSpiel
observation string, or its information-state string where the game has no observation string) and whose moves
are text: a legal move's ``action_to_string`` name, or its OpenSpiel action id. Chance nodes are sampled from the
env's seeded RNG, so the same seed and the same moves give the same episode. ``openspiel_v0.parallel_env(...)`` is
PettingZoo's ``turn_based_aec_to_parallel`` of it (only the mover's action is used each step).

Game rules, legal moves, chance outcomes and returns are OpenSpiel's (Lanctot et al., "OpenSpiel: A Framework for
Reinforcement Learning in Games", 2019, https://github.com/google-deepmind/open_spiel); this module maps them onto
PettingZoo's AEC protocol (https://pettingzoo.farama.org/api/aec/) through the shared base class, which owns move
parsing, invalid-move retries and forfeits.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from arl_envs.envs.multiagent.base import (
    FORFEIT_REWARD,
    MAX_ACTION_CHARS,
    MoveResult,
    MoveText,
    TextGameEnv,
    _PREFIX,
    _visible,
)
from arl_envs.envs.multiagent.cycle_parallel import CycleParallelEnv
from arl_envs.envs.multiagent.openspiel_experts import (  # noqa: F401 - the expert settings, importable from here too
    EXPERT_MAX_MEMORY_MB,
    EXPERT_SIMULATIONS,
    EXPERT_UCT_C,
    EXPERTS,
    MCTS_OPPONENT_SIMULATIONS,
    SOLVER_MAX_STATES,
    OpenSpielExperts,
    _pyspiel,
    check_cfr_tree,
)
from arl_envs.envs.multiagent.parallel import TurnParallelEnv

__all__ = ["OpenSpielEnv", "MoveText", "CycleParallelEnv", "env", "raw_env", "parallel_env", "load_game"]

#: Longest reply tried as a bare move name, in characters (battleship's names are ~60).
MAX_BARE_MOVE_CHARS = 200


def load_game(game: str, game_params: dict[str, Any] | None = None) -> Any:
    """Load an OpenSpiel game by name (``"hex"``), by full string (``"hex(board_size=5)"``) or name + params.

    Args:
        game: An OpenSpiel short name, optionally with parameters in OpenSpiel's string form.
        game_params: Game parameters (``{"board_size": 5}``); not allowed together with a parameterised string.

    Returns:
        The ``pyspiel.Game``.

    Raises:
        DependencyNotInstalled: ``open-spiel`` is not installed.
        ValueError: Unknown game or bad parameters (with OpenSpiel's message).
    """
    pyspiel = _pyspiel()
    if game_params and "(" in game:
        raise ValueError(f"give game parameters either in the game string or in game_params, not both: {game!r}")
    try:
        return pyspiel.load_game(game, dict(game_params)) if game_params else pyspiel.load_game(game)
    except pyspiel.SpielError as exc:
        raise ValueError(f"OpenSpiel cannot load game {game!r} with params {game_params}: {exc}") from exc


class OpenSpielEnv(OpenSpielExperts, TextGameEnv):
    """Any turn-based OpenSpiel game as a PettingZoo AEC text environment.

    Description:
        The game's rules, legal moves, chance events and returns are OpenSpiel's. Agents are ``player_0`` ..
        ``player_{n-1}`` (OpenSpiel players 0 .. n-1). After each move the next agent is OpenSpiel's current
        player (it may be the same agent again, e.g. in dots-and-boxes). Chance nodes are resolved at once with
        outcomes drawn from ``self.np_random`` (seeded by ``reset(seed)``), so the same seed and the same moves give
        the same episode, deal included. Simultaneous-move games (``goofspiel``, ``matrix_rps``) are played turn
        by turn with the earlier moves of the round hidden (OpenSpiel's ``turn_based_simultaneous_game``).

    Observation:
        ``str`` per agent: the base class's frame (an invalid-move reason, the moves of others since the agent
        last moved in perfect-information games, the legal moves when it is the agent's turn) around a header
        (game, seat) and the agent's OpenSpiel observation string, or its information-state string where the game
        provides no observation string (``liars_dice``, ``hearts``). Only what OpenSpiel lets that player see.

    Action:
        ``str``: a legal move's OpenSpiel ``action_to_string`` name (``"x(1,1)"``, ``"Raise"``, ``"a5a4"``; case
        ignored when unambiguous), as the whole reply, in ``[...]`` or in a ``move`` tool call; or the move's
        OpenSpiel action id as digits (``"4"``, ``"[4]"``). A dead agent steps with ``None``.

    Tools:
        ``move(move: str)`` (``<tool_call>{"name": "move", "arguments": {"move": "x(1,1)"}}</tool_call>``; the only
        form with ``action_format="json"``).

    Info (per agent, besides the base keys ``legal_moves``, ``reason``, ``invalid_moves``, ``to_move``,
    ``move_number``, ``instructions``):
        ``legal_actions`` (OpenSpiel ids of ``legal_moves``, same order), ``action_mask`` (``np.int8``, shape
        ``(num_distinct_actions,)``, all zero when it is not the agent's turn; ``action_space(agent).sample(mask)``
        returns a random legal move), ``player`` (OpenSpiel player id), ``returns`` (OpenSpiel returns so far).

    Rewards:
        OpenSpiel's: each step, each agent's change in ``state.returns()`` (terminal-reward games pay at the end,
        per-step-reward games as they go). A forfeit gives the forfeiter ``-1`` and, in zero-sum and
        constant-sum games, the others share ``+1``; in other games the others get 0.

    Episode end:
        Terminated for every agent at an OpenSpiel terminal state or a forfeit (an agent's
        ``max_invalid_actions + 1``-th invalid move). Truncated for every agent after ``max_moves`` moves, if set.

    Arguments:
        game: OpenSpiel game name, optionally with parameters (``"hex(board_size=5)"``).
        game_params: Game parameters as a dict, instead of the string form.
        max_invalid_actions: Invalid moves tolerated per agent per game.
        max_invalid_moves: Deprecated alias of ``max_invalid_actions``.
        max_moves: Player moves (chance excluded) before truncation; None: the game's own end.
        expert_simulations: (IS-)MCTS simulations per move of :meth:`expert_move` (default 200).
        expert: ``"mcts"`` (default: (IS-)MCTS with ``expert_simulations``), ``"solver"`` (exact minimax; small
            two-player zero-sum perfect-information games without chance) or ``"cfr"`` (a draw from a CFR+ average
            policy; small two-player zero-sum games, hidden information and chance allowed).
        mcts_simulations: Simulations per move of the single-agent view's ``"mcts"`` opponent (default 50).
        action_format: ``"native"`` or ``"json"`` (``move`` tool calls only), as the base class.
        render_mode: None, ``"ansi"`` or ``"human"``: OpenSpiel's full state string (hidden information included).

    Raises:
        DependencyNotInstalled: ``open-spiel`` is missing.
        ValueError: Unknown game, bad parameters, or a game with neither observation nor information-state strings.

    Attributes:
        game: The (turn-based) ``pyspiel.Game``; ``spiel_state``: the current ``pyspiel.State`` (``state()`` is
            PettingZoo's global-state method: the full state as text).

    Version history:
        v0: initial version.
    """

    metadata = {"render_modes": ["ansi", "human"], "name": "openspiel_v0", "is_parallelizable": False,
                "render_fps": 1}
    title = "OpenSpiel game"

    def __init__(
        self,
        game: str = "tic_tac_toe",
        game_params: dict[str, Any] | None = None,
        *,
        max_invalid_actions: int | None = None,
        max_invalid_moves: int | None = None,
        max_moves: int | None = None,
        expert_simulations: int = EXPERT_SIMULATIONS,
        expert: str = "mcts",
        mcts_simulations: int = MCTS_OPPONENT_SIMULATIONS,
        action_format: str = "native",
        render_mode: str | None = None,
    ) -> None:
        pyspiel = _pyspiel()
        if int(expert_simulations) < 1:
            raise ValueError(f"expert_simulations must be >= 1, got {expert_simulations}")
        if int(mcts_simulations) < 1:
            raise ValueError(f"mcts_simulations must be >= 1, got {mcts_simulations}")
        if expert not in EXPERTS:
            raise ValueError(f"expert must be one of {EXPERTS}, got {expert!r}")
        self.expert_simulations = int(expert_simulations)
        self.mcts_simulations = int(mcts_simulations)
        self.expert = expert
        spiel = load_game(game, game_params)
        gtype = spiel.get_type()
        self.simultaneous = gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
        if self.simultaneous:
            spiel = pyspiel.convert_to_turn_based(spiel)
            gtype = spiel.get_type()
        if gtype.provides_observation_string:
            self.view = "observation"
        elif gtype.provides_information_state_string:
            self.view = "information_state"
        else:
            raise ValueError(f"OpenSpiel game {game!r} has neither an observation nor an information-state string")
        if max_moves is not None and int(max_moves) < 1:
            raise ValueError(f"max_moves must be >= 1 or None, got {max_moves}")
        self.game = spiel
        self.game_name = load_game(game, game_params).get_type().short_name
        self.game_string = str(load_game(game, game_params)).removesuffix("()")
        self.num_players = spiel.num_players()
        self.num_actions = spiel.num_distinct_actions()
        self.perfect_information = gtype.information == pyspiel.GameType.Information.PERFECT_INFORMATION
        self.zero_sum = gtype.utility in (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM)
        self.max_moves = None if max_moves is None else int(max_moves)
        if expert == "solver" and not (self.perfect_information and self.zero_sum and self.num_players == 2):
            raise ValueError(f"expert='solver' needs a two-player zero-sum perfect-information game; "
                             f"{self.game_name} is not one")
        if expert == "cfr" and not (self.zero_sum and self.num_players == 2 and not self.simultaneous):
            raise ValueError(f"expert='cfr' needs a two-player zero-sum turn-based game; {self.game_name} is not one")
        if expert == "cfr":
            check_cfr_tree(spiel, self.game_string)
        #: Most moves of one game (OpenSpiel's max_game_length): the single-agent view's turn budget.
        self.max_moves_hint = int(spiel.max_game_length())
        self.title = f"OpenSpiel {self.game_name}"
        # Class-level possible_agents_default is read by the base __init__; set the instance's before calling it.
        self.possible_agents_default = tuple(f"player_{i}" for i in range(self.num_players))
        super().__init__(max_invalid_actions=max_invalid_actions, max_invalid_moves=max_invalid_moves,
                         action_format=action_format, render_mode=render_mode)
        self.metadata = {**type(self).metadata, "name": f"openspiel_v0({self.game_name})"}
        self._act_spaces = {a: MoveText(MAX_ACTION_CHARS) for a in self.possible_agents}
        self.agent_index = {a: i for i, a in enumerate(self.possible_agents)}
        self.spiel_state: Any = None
        #: Rounds completed this game (a round ends when the next mover does not come later in seat order).
        self.round_index = 0
        self._forced_chance: list[int] = []
        self._state_version = 0
        self._spiel_returns = np.zeros(self.num_players)
        self._spiel_cache: tuple[int, int, list[str], list[int]] | None = None
        self._experts: dict[int, Any] = {}

    # ------------------------------------------------------------------ OpenSpiel helpers
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start a game. ``seed`` seeds the chance events; ``options={"chance_outcomes": [a, ...]}`` fixes the
        first chance outcomes (OpenSpiel action ids, e.g. a known deal), the rest are sampled.

        Raises:
            ValueError: A forced chance outcome that is not possible at its chance node.
        """
        forced = (options or {}).get("chance_outcomes") or ()
        self._forced_chance = [int(a) for a in forced]
        super().reset(seed=seed, options=options)

    def _sample_chance(self) -> None:
        while self.spiel_state.is_chance_node():
            outcomes, probs = zip(*self.spiel_state.chance_outcomes())
            if self._forced_chance:
                a = self._forced_chance.pop(0)
                if a not in outcomes:
                    raise ValueError(f"chance outcome {a} is not possible here; possible: {list(outcomes)}")
                self.spiel_state.apply_action(a)
                continue
            p = np.asarray(probs, dtype=np.float64)
            self.spiel_state.apply_action(int(outcomes[int(self.np_random.choice(len(outcomes), p=p / p.sum()))]))

    def legal(self, agent: str) -> tuple[list[str], list[int]]:
        """``(names, action_ids)`` of ``agent``'s legal moves now (empty when it is not its turn)."""
        if self.spiel_state is None or self.spiel_state.is_terminal():
            return [], []
        player = self.agent_index[agent]
        cache = self._spiel_cache
        if cache is not None and cache[0] == self._state_version and cache[1] == player:
            return cache[2], cache[3]
        if self.spiel_state.current_player() != player:
            return [], []
        ids = list(self.spiel_state.legal_actions(player))
        names = [self.spiel_state.action_to_string(player, a) for a in ids]
        self._spiel_cache = (self._state_version, player, names, ids)
        return names, ids

    def round_info(self, agent: str) -> dict[str, Any]:
        """Info entries for ``agent`` if it is still to move in the current round (simultaneous-move games played
        turn by turn: a player's options never depend on the hidden choices made before it in the round), else {}.

        Returns:
            ``{"legal_moves", "legal_actions", "action_mask"}`` of ``agent``, or ``{}`` (it moved this round, the
            game is sequential, or it is over).
        """
        if self.spiel_state is None or self.spiel_state.is_terminal() or not self.simultaneous:
            return {}
        player, current = self.agent_index[agent], self.spiel_state.current_player()
        if current < 0 or current > player:
            return {}
        probe = self.spiel_state.clone()
        while probe.current_player() != player:
            if probe.is_terminal() or probe.current_player() < 0 or probe.current_player() > player:
                return {}
            probe.apply_action(probe.legal_actions()[0])  # any choice: hidden from `agent`, and irrelevant to it
        ids = list(probe.legal_actions(player))
        mask = np.zeros(self.num_actions, dtype=np.int8)
        mask[ids] = 1
        return {"legal_moves": [probe.action_to_string(player, x) for x in ids], "legal_actions": ids,
                "action_mask": mask}

    def view_string(self, agent: str) -> str:
        """OpenSpiel's observation (or information-state) string of ``agent``'s player."""
        player = self.agent_index[agent]
        if self.view == "observation":
            return self.spiel_state.observation_string(player)
        return self.spiel_state.information_state_string(player)

    # ------------------------------------------------------------------ TextGameEnv hooks
    def _reset_game(self) -> None:
        self.spiel_state = self.game.new_initial_state()
        self.round_index = 0
        self._state_version = 0
        self._spiel_cache = None
        self._sample_chance()
        self._spiel_returns = np.zeros(self.num_players)

    def _current_agent(self) -> str:
        return self.possible_agents[self.spiel_state.current_player()]

    def legal_moves(self, agent: str) -> list[str]:
        return self.legal(agent)[0]

    def all_moves(self, agent: str) -> Sequence[str]:
        # OpenSpiel move names can depend on the state (chess SAN), so only the legal ones are known by name.
        return self.legal(agent)[0]

    def move_name_for(self, candidate: str, agent: str) -> str | None:
        """A legal move's name for ``candidate``: the name (case ignored when unambiguous) or a legal action id."""
        names, ids = self.legal(agent)
        text = candidate.strip()
        if text in names:
            return text
        low = text.lower()
        hits = [n for n in names if n.lower() == low]
        if len(hits) == 1:
            return hits[0]
        stripped = _PREFIX.sub("", text).strip().rstrip(".")  # "move 4", "action: x(1,1)"
        if stripped != text:
            low = stripped.lower()
            hits = [n for n in names if n.lower() == low]
            if len(hits) == 1:
                return hits[0]
            text = stripped
        digits = text.lstrip("+")
        if digits.isdigit() and len(digits) <= 9:
            a = int(digits)
            if a in ids:
                return names[ids.index(a)]
        return None

    def _parse_move(self, agent: str, text: str) -> str:
        # A whole reply that is a move name is tried first: OpenSpiel names may be long (battleship) or contain
        # brackets (goofspiel's "[P0]Bid: 1"), which the base's bracket rule cannot see. Then the base's rules.
        if len(text) <= MAX_BARE_MOVE_CHARS and self.action_format == "native":
            visible = _visible(text).strip()
            names = self.legal(agent)[0]
            if visible in names:
                return visible
            if visible.startswith("[") and visible.endswith("]") and visible[1:-1].strip() in names:
                return visible[1:-1].strip()  # "[[P0]Bid: 1]", as the prompt writes it
        return super()._parse_move(agent, text)

    def _apply_move(self, agent: str, move: str) -> MoveResult:
        names, ids = self.legal(agent)
        action = ids[names.index(move)]
        player = self.agent_index[agent]
        self.spiel_state.apply_action(action)
        self._state_version += 1
        self._sample_chance()
        if self.spiel_state.is_terminal() or self.spiel_state.current_player() <= player:
            self.round_index += 1  # the round of moves is complete (turn-based simultaneous games: joint move)
        returns = np.asarray(self.spiel_state.returns(), dtype=np.float64)
        delta = returns - self._spiel_returns
        self._spiel_returns = returns
        rewards = {a: float(delta[i]) for i, a in enumerate(self.possible_agents)}
        over = bool(self.spiel_state.is_terminal())
        truncated = not over and self.max_moves is not None and self.move_number + 1 >= self.max_moves
        # Others learn a move only where OpenSpiel makes it public (perfect information); otherwise their
        # observation string says what they may know.
        event = f"{agent} played {move}." if self.perfect_information else ""
        return MoveResult(rewards=rewards, game_over=over, truncated=truncated, event=event)

    def _forfeit(self, agent: str) -> MoveResult:
        if self.zero_sum:
            return super()._forfeit(agent)
        rewards = {a: (FORFEIT_REWARD if a == agent else 0.0) for a in self.agents}
        return MoveResult(rewards=rewards, game_over=True, event=f"{agent} forfeited (too many invalid moves).")

    def _observation(self, agent: str) -> str:
        i = self.agent_index[agent]
        head = f"OpenSpiel game {self.game_string}. You are {agent} (player {i} of {self.num_players})."
        body = self.view_string(agent)
        legend = _LEGENDS.get(self.game_name)
        if legend is not None:
            body = f"{body}\n{legend(body)}"
        if self.spiel_state.is_terminal() or self.forfeited is not None:
            return f"{head}\n{body}\nYour return: {self.returns.get(agent, 0.0):+g}."
        return f"{head}\n{body}"

    def instructions(self, agent: str) -> str:
        i = self.agent_index[agent]
        return (
            f"You play the OpenSpiel game {self.game_string} as {agent} (OpenSpiel player {i} of "
            f"{self.num_players}); the rules are OpenSpiel's. Each turn you see your observation of the game and "
            "your legal moves by name. Reply with one legal move name, e.g. [name] or the name alone; the move's "
            "OpenSpiel action id also works. "
            + self._format_tool_paragraph() + " " + self._limits_paragraph()
        )

    def _refresh_infos(self) -> None:
        super()._refresh_infos()
        for a, info in self.infos.items():
            names, ids = self.legal(a) if info["to_move"] else ([], [])
            mask = np.zeros(self.num_actions, dtype=np.int8)
            if ids:
                mask[ids] = 1
            info["legal_actions"] = list(ids)  # a copy of the cached list (a caller may edit its info)
            info["action_mask"] = mask
            info["player"] = self.agent_index[a]
            info["returns"] = [float(r) for r in self._spiel_returns]

    def render_state(self) -> str:
        if self.spiel_state is None:
            return ""
        return f"{self.game_string} (move {self.move_number})\n{self.spiel_state}"


def _leduc_legend(view: str) -> str:
    """Leduc poker's card ids in words: OpenSpiel's card ``c`` is rank ``c // 2`` of J, Q, K (two suits)."""
    ranks = "JQK"

    def card(tag: str) -> str | None:
        m = re.search(rf"\[{tag}: (\d+)\]", view)
        return ranks[int(m.group(1)) // 2] if m and int(m.group(1)) >= 0 else None

    own, public = card("Private"), card("Public")
    return (f"Your card: {own or '?'}" + (f"; public card: {public}" if public else "; no public card yet")
            + " (ranks J < Q < K; a pair with the public card beats any single card).")


#: Readable lines appended to a game's observation where OpenSpiel's string uses ids (game short name -> function
#: of the observation string, which shows only what that player may see).
_LEGENDS: dict[str, Any] = {"leduc_poker": _leduc_legend}


def raw_env(**kwargs: Any) -> OpenSpielEnv:
    """The AEC env (see :class:`OpenSpielEnv` for the keyword arguments)."""
    return OpenSpielEnv(**kwargs)


def env(**kwargs: Any) -> OpenSpielEnv:
    """The AEC env, PettingZoo style: ``openspiel_v0.env(game="leduc_poker")`` (see :class:`OpenSpielEnv`).

    No PettingZoo wrappers are stacked: the env validates its own moves (an invalid move is an observation, not an
    exception) and enforces reset-before-step itself.
    """
    return OpenSpielEnv(**kwargs)


def parallel_env(**kwargs: Any) -> Any:
    """The Parallel env.

    Simultaneous-move games (``goofspiel``, ``matrix_rps``, ...): :class:`CycleParallelEnv`, one ``step`` = one
    simultaneous move of every player (each player's observation never shows the others' moves of that round).
    Sequential games: :class:`~arl_envs.envs.multiagent.base.TurnParallelEnv` (PettingZoo's ``turn_based_aec_to_parallel``) of :func:`env` (each step only the mover's action
    is used).
    """
    aec = OpenSpielEnv(**kwargs)
    if aec.simultaneous:
        return CycleParallelEnv(aec)
    return TurnParallelEnv(aec)

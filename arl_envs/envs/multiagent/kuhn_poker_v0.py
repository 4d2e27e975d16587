"""Kuhn poker as a text PettingZoo game: ``from arl_envs.envs.multiagent import kuhn_poker_v0``.

Rules as OpenSpiel's ``kuhn_poker`` (Kuhn 1950): a deck of three cards J < Q < K, each player antes 1 chip and
gets one card (dealt from the env's seeded ``np_random``, so the same seed gives the same deal); ``player_0``
acts first; each may check/bet (1 chip) or, facing a bet, fold/call. Terminal histories (``p`` = check/fold,
``b`` = bet/call): ``pp`` showdown for 1, ``bp``/``pbp`` the bettor wins 1, ``bb``/``pbb`` showdown for 2.
Each player sees only its own card (the opponent's is shown after a showdown).
``arl_envs_tests/envs/multiagent/test_rules_vs_openspiel.py`` checks returns, legality and terminal states
against ``pyspiel`` on random playouts (moves map to OpenSpiel's actions: check/fold = Pass 0, bet/call = Bet 1).
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from typing import ClassVar, Sequence

import numpy as np

from arl_envs.envs.multiagent.base import _PREFIX, MoveResult, TextGameEnv, make_module

CARDS = ("J", "Q", "K")
CARD_NAMES = ("Jack", "Queen", "King")
ANTE = 1
BET = 1
TERMINAL = ("pp", "bp", "bb", "pbp", "pbb")
#: Move names: check/bet with no bet pending, fold/call facing one; "pass" is accepted for check or fold.
MOVES: tuple[str, ...] = ("check", "bet", "fold", "call")
_ALIASES = {"pass": "p", "check": "p", "fold": "p", "bet": "b", "call": "b", "raise": "b"}
#: The equilibrium parameter alpha (player_0 bluffs a Jack with probability alpha; any alpha in [0, 1/3] is an
#: equilibrium, Kuhn 1950); 1/3 exploits weak opponents the most within the family.
EQUILIBRIUM_ALPHA = 1.0 / 3.0


def terminal_returns(history: str, cards: Sequence[int]) -> tuple[float, float]:
    """Chips won by ``(player_0, player_1)`` at a terminal ``history`` with ``cards`` (0=J, 1=Q, 2=K)."""
    sd = 1.0 if cards[0] > cards[1] else -1.0
    r0 = {"pp": sd, "bp": 1.0, "bb": 2.0 * sd, "pbp": -1.0, "pbb": 2.0 * sd}[history]
    return r0, -r0


def equilibrium_bet_probability(player: int, card: int, history: str, alpha: float = EQUILIBRIUM_ALPHA) -> float:
    """Probability of bet/call of the Kuhn-poker Nash equilibrium (Kuhn 1950; Wikipedia "Kuhn poker").

    player_0: J bets alpha, folds to a bet; Q checks, calls a bet w.p. alpha + 1/3; K bets 3*alpha, calls.
    player_1: facing a bet: K calls, Q calls 1/3, J folds; facing a check: K bets, Q checks, J bets 1/3.
    """
    if player == 0:
        if history == "":
            return (alpha, 0.0, 3.0 * alpha)[card]
        return (0.0, alpha + 1.0 / 3.0, 1.0)[card]  # history "pb"
    if history == "b":
        return (0.0, 1.0 / 3.0, 1.0)[card]
    return (1.0 / 3.0, 0.0, 1.0)[card]  # history "p"


@lru_cache(maxsize=None)
def best_response_vs_random(seat: int) -> dict[tuple[int, str], str]:
    """Best response of ``seat`` to an opponent that picks each legal action with probability 1/2.

    Returns:
        ``{(card, history): "b" | "p"}`` for every decision of ``seat`` (ties to ``"p"``). Exact expected
        values: +0.5 chips per hand as player_0, +5/12 as player_1 (the tests recompute them).
    """
    policy: dict[tuple[int, str], str] = {}

    def value(h: str, cards: tuple[int, int]) -> float:
        if h in TERMINAL:
            return terminal_returns(h, cards)[seat]
        mover = len(h) % 2
        if mover != seat:
            return 0.5 * value(h + "b", cards) + 0.5 * value(h + "p", cards)
        key = (cards[seat], h)
        if key not in policy:
            totals = {}
            for act in "bp":
                total = 0.0
                for other in range(3):
                    if other == cards[seat]:
                        continue
                    cc = (cards[seat], other) if seat == 0 else (other, cards[seat])
                    total += value(h + act, cc)
                totals[act] = total
            policy[key] = "b" if totals["b"] > totals["p"] else "p"
        return value(h + policy[key], cards)

    for deal in itertools.permutations(range(3), 2):
        value("", deal)
    return policy


class KuhnPokerEnv(TextGameEnv):
    """Kuhn poker for two text agents (PettingZoo AEC): imperfect information and chance.

    Description:
        Three cards J < Q < K; both players ante 1 and get one private card, dealt from the seeded ``np_random``.
        ``player_0`` acts first: check or bet 1; facing a bet: fold or call. Rules as OpenSpiel's ``kuhn_poker``.

    Observation:
        The agent's own card only (never the opponent's until a showdown), the pot and each side's chips in it,
        the betting so far, and on its turn the legal moves. ``infos[agent]["legal_moves"]``: ``["check", "bet"]``
        or, facing a bet, ``["fold", "call"]``.

    Action:
        ``[bet]``, ``[call]``, ``[check]``, ``[fold]`` (``pass`` = check or fold), a bare word, or a ``move`` tool
        call. See :class:`TextGameEnv` for invalid moves.

    Rewards:
        At the end only: the chips won (+-1 or +-2); zero-sum. A forfeit is -1/+1.

    Episode end:
        A fold, a showdown, or a forfeit. At most 3 moves.

    Arguments:
        See :class:`~arl_envs.envs.multiagent.base.TextGameEnv`.

    Version history:
        v0: first version.
    """

    metadata: ClassVar[dict] = {**TextGameEnv.metadata, "name": "kuhn_poker_v0"}
    max_moves_hint: ClassVar[int] = 2
    mask_moves = MOVES  # info["action_mask"] over MOVES; sample(mask) plays a random legal move
    title: ClassVar[str] = "Kuhn poker"

    def _reset_game(self) -> None:
        deal = self.np_random.permutation(3)
        self.cards = (int(deal[0]), int(deal[1]))
        self.history = ""
        self.contrib = [ANTE, ANTE]
        self.showdown = False

    def _current_agent(self) -> str:
        return self.possible_agents[len(self.history) % 2]

    def _facing_bet(self) -> bool:
        return "b" in self.history

    def legal_moves(self, agent: str) -> list[str]:
        if agent not in self.agents or self.history in TERMINAL or agent != self._current_agent():
            return []
        return ["fold", "call"] if self._facing_bet() else ["check", "bet"]

    def all_moves(self, agent: str) -> Sequence[str]:
        return MOVES

    def move_name_for(self, candidate: str, agent: str) -> str | None:
        key = _PREFIX.sub("", candidate.strip()).strip().rstrip(".!").lower()
        if key not in _ALIASES:
            return None
        if key == "pass":
            return self._code_to_move("p")
        if key == "raise":
            return self._code_to_move("b")
        return key

    def _illegal_detail(self, agent: str, move: str) -> str:
        if self._facing_bet():
            return ": you face a bet, so fold or call"
        return ": no bet to answer, so check or bet"

    def _apply_move(self, agent: str, move: str) -> MoveResult:
        p = len(self.history) % 2
        code = "b" if move in ("bet", "call") else "p"
        if code == "b":
            self.contrib[p] += BET
        self.history += code
        verb = {"check": "checks", "bet": "bets 1", "fold": "folds", "call": "calls"}[move]
        event = f"{agent} {verb}."
        if self.history not in TERMINAL:
            return MoveResult(event=event)
        r0, r1 = terminal_returns(self.history, self.cards)
        self.showdown = self.history in ("pp", "bb", "pbb")
        a0, a1 = self.possible_agents
        if self.showdown:
            winner = a0 if r0 > 0 else a1
            event += (f" Showdown: {a0} has {CARD_NAMES[self.cards[0]]}, {a1} has {CARD_NAMES[self.cards[1]]}; "
                      f"{winner} wins {abs(r0):g}.")
        else:
            event += f" {a0 if r0 > 0 else a1} wins {abs(r0):g}."
        return MoveResult({a0: r0, a1: r1}, game_over=True, event=event)

    def _history_text(self, agent: str) -> str:
        if not self.history:
            return "No bets yet."
        words = []
        facing = False
        for i, code in enumerate(self.history):
            who = "you" if self.possible_agents[i % 2] == agent else "opponent"
            if code == "b":
                words.append(f"{who} {'called' if facing else 'bet 1'}")
                facing = True
            else:
                words.append(f"{who} {'folded' if facing else 'checked'}")
        return "Betting: " + ", ".join(words) + "."

    def _observation(self, agent: str) -> str:
        i = self.possible_agents.index(agent)
        pos = "first" if i == 0 else "second"
        text = (f"Kuhn poker. You act {pos}. Your card: {CARD_NAMES[self.cards[i]]}. "
                f"Pot: {sum(self.contrib)} (you {self.contrib[i]}, opponent {self.contrib[1 - i]}). "
                f"{self._history_text(agent)}")
        if self.showdown:
            text += f" Opponent's card: {CARD_NAMES[self.cards[1 - i]]}."
        return text

    def render_state(self) -> str:
        a0, a1 = self.possible_agents
        cards = f"{a0}: {CARDS[self.cards[0]]}, {a1}: {CARDS[self.cards[1]]}"
        return f"Kuhn poker ({cards}); history {self.history or '-'}; pot {sum(self.contrib)}"

    def instructions(self, agent: str) -> str:
        pos = "first" if self.possible_agents.index(agent) == 0 else "second"
        return ("You play one hand of Kuhn poker. The deck has three cards: Jack < Queen < King. Both players put 1 "
                f"chip in the pot and get one private card; you act {pos}. With no bet to answer you may check or "
                "bet 1 chip; facing a bet you may fold (the bettor takes the pot) or call 1 chip. If both check, or "
                "a bet is called, the higher card takes the pot. Your reward is the chips you win or lose (+-1 or "
                f"+-2). Moves: [check], [bet], [fold], [call]. {self._format_tool_paragraph()} "
                f"{self._limits_paragraph()}")

    def _code_to_move(self, code: str) -> str:
        if self._facing_bet():
            return "call" if code == "b" else "fold"
        return "bet" if code == "b" else "check"

    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """The Nash equilibrium strategy (alpha = 1/3), sampled with ``rng``."""
        p = self.possible_agents.index(agent)
        prob = equilibrium_bet_probability(p, self.cards[p], self.history)
        return self._code_to_move("b" if rng.random() < prob else "p")

    def counter_move(self, agent: str, rng: np.random.Generator, opponent: str) -> str:
        """The view's expert: the exact best response to a uniformly random opponent when ``opponent`` is
        ``"random"``, else the equilibrium strategy."""
        if opponent != "random":
            return self.expert_move(agent, rng)
        p = self.possible_agents.index(agent)
        return self._code_to_move(best_response_vs_random(p)[(self.cards[p], self.history)])


env, raw_env, parallel_env = make_module(KuhnPokerEnv)

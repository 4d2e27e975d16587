"""Multi-issue bargaining as a text PettingZoo game: ``from arl_envs.envs.multiagent import negotiation_v0``.

Two agents split a pool of books, hats and balls. Each has private values for the item types; a message is a
proposal, an acceptance or a rejection, with free text alongside. The setup (three item types, 5-7 items, each
agent's values summing to 10 over the pool, every item type valued by someone) follows Lewis et al., "Deal or No
Deal? End-to-End Learning for Negotiation Dialogues" (EMNLP 2017, https://arxiv.org/abs/1706.05125).
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from typing import Any, ClassVar, Sequence

import numpy as np

from arl_envs.core.actions import ParseError, parse_json_tool_calls, strip_tags
from arl_envs.envs.multiagent.base import (
    FORFEIT_REWARD,
    MAX_ACTION_CHARS,
    MoveResult,
    TextGameEnv,
    _visible,
    clean_message,
    make_module,
)
from arl_envs.envs.multiagent.openspiel_v0 import MoveText

ITEMS: tuple[str, ...] = ("book", "hat", "ball")
#: Most items of one type in a pool; fixes the move vocabulary ("propose a b c" with 0 <= a, b, c <= 4).
MAX_COUNT = 4
#: Pool sizes (total items), as in Lewis et al. (2017).
MIN_TOTAL_ITEMS, MAX_TOTAL_ITEMS = 5, 7
#: Each agent's value of the whole pool.
VALUE_TOTAL = 10
#: Messages (moves of both agents together) before the game ends without a deal.
DEFAULT_MAX_TURNS = 20
#: Longest free-text message passed on, in characters (longer ones are cut).
MAX_MESSAGE_CHARS = 300
#: Share of its pool value an agent must get for a "win" (the view's success).
SUCCESS_SHARE = 0.5
#: The value-greedy expert's lowest aspiration, as a share of its pool value (reached at its last proposal).
EXPERT_FLOOR = 0.5

ACCEPT, REJECT = "accept", "reject"
PROPOSALS: tuple[str, ...] = tuple(f"propose {a} {b} {c}" for a, b, c in
                                   itertools.product(range(MAX_COUNT + 1), repeat=len(ITEMS)))
MOVES: tuple[str, ...] = PROPOSALS + (ACCEPT, REJECT)
_MOVE_INDEX = {m: i for i, m in enumerate(MOVES)}
_INTS = re.compile(r"\d+")
_BRACKET = re.compile(r"\[([^\[\]\n]{1,40})\]")


@lru_cache(maxsize=None)
def _pools() -> tuple[tuple[int, ...], ...]:
    return tuple(c for c in itertools.product(range(1, MAX_COUNT + 1), repeat=len(ITEMS))
                 if MIN_TOTAL_ITEMS <= sum(c) <= MAX_TOTAL_ITEMS)


@lru_cache(maxsize=None)
def _value_pairs(counts: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """Value vectors (a, b) with counts . a == counts . b == VALUE_TOTAL, every type valued by someone and some
    type valued by both (Lewis et al. 2017)."""
    vecs = [v for v in itertools.product(range(VALUE_TOTAL + 1), repeat=len(ITEMS))
            if sum(c * x for c, x in zip(counts, v)) == VALUE_TOTAL]
    return tuple((a, b) for a in vecs for b in vecs
                 if all(x or y for x, y in zip(a, b)) and any(x and y for x, y in zip(a, b)))


def _plural(n: int, item: str) -> str:
    return f"{n} {item}" + ("" if n == 1 else "s")


def describe_share(share: Sequence[int]) -> str:
    """``(1, 0, 2)`` -> ``"1 book, 0 hats, 2 balls"``."""
    return ", ".join(_plural(n, item) for n, item in zip(share, ITEMS))


class NegotiationEnv(TextGameEnv):
    """Two agents split a pool of items with private values, by proposals, acceptances and rejections.

    Description:
        A pool of books, hats and balls (5-7 items, 1-4 of each) is drawn from the seed, and for each agent a
        private value per item type such that its value of the whole pool is 10 (every type valued by one agent
        at least, one type valued by both). ``player_0`` writes first; the agents alternate for at most
        ``max_turns`` messages. A message proposes a split, or accepts or rejects the other's standing proposal,
        and may carry free text, which the other agent reads.

    Observation:
        The pool, the agent's own values (never the other's), the turn count, the other's standing proposal and
        what it is worth to the agent, the other's last move and message, and the move format.

    Action:
        ``[propose B H L]`` (the mover keeps B books, H hats and L balls; the other gets the rest), ``[accept]``
        (only when the other has a standing proposal), ``[reject]`` (likewise; the turn passes without a
        counter-proposal). Text outside the brackets is the message (first ``300`` characters). A ``move`` tool
        call ``{"move": "propose 1 0 2", "message": "..."}`` works too. Anything else is an invalid move.

    Tools:
        ``move(move: str, message: str = "")`` as a ``<tool_call>`` block (the only form with ``action_format="json"``).

    Info (per agent, besides the base keys): ``pool`` (counts), ``values`` (the agent's own values),
    ``offer`` (the standing proposal as the share the agent would get, or None), ``action_mask`` (``np.int8`` over
    the fixed vocabulary of ``propose a b c`` / ``accept`` / ``reject``; ``action_space(agent).sample(mask)`` gives
    a random legal move).

    Rewards:
        On acceptance each agent gets its value of its share (0-10); no deal within ``max_turns`` messages gives
        both 0. A forfeit (``max_invalid_actions + 1`` invalid moves of one agent) ends the game without a deal:
        the forfeiter gets -1, the other 0. Not zero-sum.

    Episode end:
        Terminated for both at an acceptance, after ``max_turns`` messages, or at a forfeit.
        ``outcome``: ``"win"`` with at least half of the agent's pool value, ``"loss"`` with nothing, else
        ``"draw"``; the single-agent view's ``success`` is a win.

    Arguments:
        max_turns: Messages of both agents together before the game ends without a deal (default 20).
        max_invalid_actions, action_format, render_mode: As :class:`~arl_envs.envs.multiagent.base.TextGameEnv`.

    Version history:
        v0: first version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "name": "negotiation_v0",
                                          "is_parallelizable": False, "render_fps": 1}
    possible_agents_default = ("player_0", "player_1")
    zero_sum = False
    title = "Negotiation"

    def __init__(self, *, max_turns: int = DEFAULT_MAX_TURNS, **kwargs: Any) -> None:
        if int(max_turns) < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        self.max_turns = int(max_turns)
        self.max_moves_hint = self.max_turns
        super().__init__(**kwargs)
        self._act_spaces = {a: MoveText(MAX_ACTION_CHARS, moves=MOVES) for a in self.possible_agents}
        self.counts: tuple[int, ...] = (1,) * len(ITEMS)
        self.values: dict[str, tuple[int, ...]] = {}
        self.offer: tuple[str, tuple[int, ...]] | None = None  # (proposer, what the proposer keeps)
        self.deal: dict[str, tuple[int, ...]] | None = None
        self._pending_message = ""

    # ------------------------------------------------------------------ rules
    def _reset_game(self) -> None:
        pools = _pools()
        self.counts = pools[int(self.np_random.integers(0, len(pools)))]
        pairs = _value_pairs(self.counts)
        a, b = pairs[int(self.np_random.integers(0, len(pairs)))]
        self.values = {"player_0": a, "player_1": b}
        self.offer = None
        self.deal = None
        self._pending_message = ""

    def _other(self, agent: str) -> str:
        return "player_1" if agent == "player_0" else "player_0"

    def _current_agent(self) -> str:
        return self.possible_agents[self.move_number % 2]

    def value(self, agent: str, share: Sequence[int]) -> int:
        """``agent``'s value of ``share`` (counts per item type)."""
        return int(sum(v * n for v, n in zip(self.values[agent], share)))

    def offered_share(self, agent: str) -> tuple[int, ...] | None:
        """What ``agent`` would get by accepting the other's standing proposal (None without one)."""
        if self.offer is None or self.offer[0] == agent:
            return None
        kept = self.offer[1]
        return tuple(c - k for c, k in zip(self.counts, kept))

    def legal_moves(self, agent: str) -> list[str]:
        if agent not in self.agents or agent != self.agent_selection or self.terminations.get(agent):
            return []
        moves = [f"propose {a} {b} {c}" for a, b, c in
                 itertools.product(*(range(n + 1) for n in self.counts))]
        if self.offered_share(agent) is not None:
            moves += [ACCEPT, REJECT]
        return moves

    def all_moves(self, agent: str) -> Sequence[str]:
        return MOVES

    def move_name_for(self, candidate: str, agent: str) -> str | None:
        """``"propose 1, 0, 2"``, ``"Propose: 1 0 2"``, ``"ACCEPT"`` -> canonical names (None if not a move)."""
        text = re.sub(r"^(?:move|action)\s*[:#=]?\s*", "", candidate.strip().lower()).strip().rstrip(".!")
        if text in (ACCEPT, REJECT):
            return text
        if text.startswith("propose"):
            nums = _INTS.findall(text[len("propose"):])
            if len(nums) == len(ITEMS) and all(len(n) <= 2 for n in nums):
                name = "propose " + " ".join(str(int(n)) for n in nums)
                return name if name in _MOVE_INDEX else None
        return None

    def _illegal_detail(self, agent: str, move: str) -> str:
        if move in (ACCEPT, REJECT):
            return ": there is no standing proposal from the other player to answer"
        return f": the pool has only {describe_share(self.counts)}"

    def _parse_move(self, agent: str, text: str) -> str:
        move = super()._parse_move(agent, text)
        visible = _visible(text) if len(text) <= MAX_ACTION_CHARS else ""
        message = ""
        if "<tool_call>" in visible:
            calls = parse_json_tool_calls(visible)
            if calls and isinstance(calls[0].arguments.get("message"), str):
                message = calls[0].arguments["message"]
            visible = strip_tags(visible, "tool_call")
        if not message:
            for m in reversed(list(_BRACKET.finditer(visible))):
                if self.move_name_for(m.group(1), agent) == move:
                    visible = visible[: m.start()] + visible[m.end():]
                    break
            else:
                if self.move_name_for(visible, agent) == move:
                    visible = ""
            message = visible
        self._pending_message = clean_message(message, MAX_MESSAGE_CHARS)
        return move

    def _apply_move(self, agent: str, move: str) -> MoveResult:
        other = self._other(agent)
        message = self._pending_message
        said = f' Message: "{message}"' if message else ""
        turns_left = self.max_turns - (self.move_number + 1)
        if move == ACCEPT:
            share = self.offered_share(agent)
            if share is None:  # pragma: no cover - legal_moves rules it out
                raise ParseError("there is no standing proposal to accept")
            kept = self.offer[1] if self.offer else share
            self.deal = {agent: share, other: kept}
            rewards = {a: float(self.value(a, s)) for a, s in self.deal.items()}
            return MoveResult(rewards=rewards, game_over=True,
                              event=f"{agent} accepted your proposal: you get {describe_share(kept)}.{said}")
        if move == REJECT:
            self.offer = None
            event = f"{agent} rejected your proposal.{said}"
        else:
            kept = tuple(int(x) for x in move.split()[1:])
            self.offer = (agent, kept)
            you = tuple(c - k for c, k in zip(self.counts, kept))
            event = (f"{agent} proposes: they take {describe_share(kept)}; you get {describe_share(you)} "
                     f"(worth {self.value(other, you)} to you).{said}")
        if turns_left <= 0:
            return MoveResult(game_over=True, event=f"{event}\nNo deal within {self.max_turns} messages: "
                                                    "both players get 0.")
        return MoveResult(event=event)

    def _forfeit(self, agent: str) -> MoveResult:
        rewards = {a: (FORFEIT_REWARD if a == agent else 0.0) for a in self.agents}
        return MoveResult(rewards=rewards, game_over=True,
                          event=f"{agent} forfeited (too many invalid moves): no deal.")

    def outcome(self, agent: str, total_return: float) -> str:
        if total_return >= SUCCESS_SHARE * VALUE_TOTAL:
            return "win"
        return "loss" if total_return <= 0 else "draw"

    # ------------------------------------------------------------------ text
    def _observation(self, agent: str) -> str:
        vals = ", ".join(f"{item}={v}" for item, v in zip(ITEMS, self.values[agent]))
        lines = [
            f"Negotiation, message {min(self.move_number + 1, self.max_turns)} of {self.max_turns}. You are {agent}.",
            f"Pool: {describe_share(self.counts)}.",
            f"Your private values per item: {vals} (the whole pool is worth {VALUE_TOTAL} to you). "
            "The other player's values are private.",
        ]
        if self.deal is not None:
            share = self.deal[agent]
            lines.append(f"Deal: you get {describe_share(share)}, worth {self.value(agent, share)} to you.")
        else:
            share = self.offered_share(agent)
            if share is not None:
                lines.append(f"Standing proposal from {self._other(agent)}: you would get {describe_share(share)} "
                             f"(worth {self.value(agent, share)} to you).")
            elif self.offer is not None:
                lines.append(f"Your standing proposal: you keep {describe_share(self.offer[1])}.")
        return "\n".join(lines)

    def _prompt(self, agent: str) -> str:
        c = self.counts
        answer = ", [accept] or [reject]" if self.offered_share(agent) is not None else ""
        return (f"Your move: [propose B H L] to keep B books (0-{c[0]}), H hats (0-{c[1]}) and L balls (0-{c[2]}) "
                f"and give the rest{answer}. Text outside the brackets is sent to the other player.")

    def instructions(self, agent: str) -> str:
        fmt = ('Reply with one move in square brackets: [propose B H L] (you keep B books, H hats and L balls; '
               "the other player gets the rest), [accept] or [reject] (the other player's standing proposal). "
               "Any text outside the brackets is a message to the other player (at most "
               f'{MAX_MESSAGE_CHARS} characters). Tool-call form: <tool_call>{{"name": "move", "arguments": '
               '{"move": "propose 1 0 2", "message": "..."}}</tool_call>.')
        if self.action_format == "json":
            fmt = ('Reply with exactly one tool call: <tool_call>{"name": "move", "arguments": {"move": '
                   '"propose 1 0 2", "message": "..."}}</tool_call> (moves: "propose B H L", "accept", "reject").')
        return (f"You are {agent} in a negotiation over a pool of books, hats and balls. You and the other player "
                "value the items differently; you know only your own values. Take turns (player_0 first) for at "
                f"most {self.max_turns} messages. If one of you accepts the other's proposal, each gets their "
                "value of their share; with no deal, both get 0. " + fmt + " " + self._limits_paragraph())

    def render_state(self) -> str:
        offer = "none" if self.offer is None else f"{self.offer[0]} keeps {describe_share(self.offer[1])}"
        return (f"pool {describe_share(self.counts)} | values p0={self.values.get('player_0')} "
                f"p1={self.values.get('player_1')} | message {self.move_number}/{self.max_turns} | offer: {offer}"
                + (f" | deal {self.deal}" if self.deal else ""))

    def _refresh_infos(self) -> None:
        super()._refresh_infos()
        for a, info in self.infos.items():
            mask = np.zeros(len(MOVES), dtype=np.int8)
            for m in info["legal_moves"]:
                mask[_MOVE_INDEX[m]] = 1
            info["action_mask"] = mask
            info["pool"] = list(self.counts)
            info["values"] = list(self.values.get(a, ()))
            share = self.offered_share(a)
            info["offer"] = None if share is None else list(share)

    # ------------------------------------------------------------------ reference players
    def aspiration(self) -> float:
        """The expert's target value now: the whole pool at the first message, falling linearly to
        ``EXPERT_FLOOR`` of it at the last."""
        frac = self.move_number / max(1, self.max_turns - 1)
        return VALUE_TOTAL * (1.0 - (1.0 - EXPERT_FLOOR) * frac)

    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """Value-greedy negotiator: accept a proposal worth at least its aspiration (anything worth more than 0 at
        the last message), else propose the most generous split still worth its aspiration (items it values
        least are given away first)."""
        target = self.aspiration()
        share = self.offered_share(agent)
        last = self.move_number >= self.max_turns - 1
        if share is not None:
            got = self.value(agent, share)
            if got >= target or (last and got > 0):
                return ACCEPT
        best: tuple[float, int, str] | None = None
        for move in self.legal_moves(agent):
            if not move.startswith("propose"):
                continue
            kept = tuple(int(x) for x in move.split()[1:])
            v = self.value(agent, kept)
            if v < target:
                continue
            key = (v, sum(kept), move)  # least value above the target, then fewest items kept
            if best is None or key < best:
                best = key
        if best is None:  # the target is above what the pool is worth: keep everything valued
            keep = tuple(c if v > 0 else 0 for c, v in zip(self.counts, self.values[agent]))
            return "propose " + " ".join(map(str, keep))
        return best[2]

    def random_move(self, agent: str, rng: np.random.Generator) -> str:
        """Uniform over the kinds of move available (propose / accept / reject), then over proposals."""
        moves = self.legal_moves(agent)
        kinds = ["propose"] + ([ACCEPT, REJECT] if ACCEPT in moves else [])
        kind = kinds[int(rng.integers(0, len(kinds)))]
        if kind != "propose":
            return kind
        proposals = [m for m in moves if m.startswith("propose")]
        return proposals[int(rng.integers(0, len(proposals)))]


env, raw_env, parallel_env = make_module(NegotiationEnv)

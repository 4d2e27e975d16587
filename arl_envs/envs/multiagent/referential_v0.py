"""A referential game as a text PettingZoo game: ``from arl_envs.envs.multiagent import referential_v0``.

A speaker sees a target object among distractors and sends a short message; a listener, who sees the same objects
in another order without knowing the target, picks one. Both get the same reward. The setup is the Lewis
signalling game as used for emergent communication (Lazaridou et al., "Multi-Agent Cooperation and the Emergence of
(Natural) Language", ICLR 2017, https://arxiv.org/abs/1612.07182), here with symbolic objects and words.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, ClassVar, Sequence

import numpy as np

from arl_envs.core.actions import ParseError, parse_json_tool_calls
from arl_envs.envs.multiagent.base import (
    FORFEIT_REWARD,
    MAX_ACTION_CHARS,
    MoveResult,
    TextGameEnv,
    _visible,
    make_module,
)
from arl_envs.envs.multiagent.openspiel_v0 import MoveText

#: Object attributes: every object has one value of each.
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "size": ("small", "large"),
    "color": ("red", "green", "blue", "yellow"),
    "shape": ("circle", "square", "triangle", "star"),
}
ATTRIBUTE_ORDER = ("size", "color", "shape")
#: Every attribute word (the vocabulary the action mask of the speaker indexes).
VOCABULARY: tuple[str, ...] = tuple(w for k in ATTRIBUTE_ORDER for w in ATTRIBUTES[k])
DEFAULT_NUM_OBJECTS = 4
MAX_OBJECTS = 8
#: Words the speaker may use per message by default.
DEFAULT_MAX_WORDS = 3
#: Longest message, in characters.
MAX_MESSAGE_CHARS = 80
#: Shared reward when the listener picks the target.
SUCCESS_REWARD = 1.0
SPEAKER, LISTENER = "speaker_0", "listener_0"
_WORD = re.compile(r"[a-z]+")
_BRACKET = re.compile(r"\[([^\[\]\n]{1,80})\]")

Obj = tuple[str, str, str]  # (size, color, shape)


def name_of(obj: Obj) -> str:
    """``("small", "red", "circle")`` -> ``"small red circle"``."""
    return " ".join(obj)


def distinguishing_words(target: Obj, others: Sequence[Obj]) -> list[str]:
    """The fewest attribute words (in size/color/shape order) that only ``target`` among ``others`` has."""
    for k in range(1, len(ATTRIBUTE_ORDER) + 1):
        for idx in itertools.combinations(range(len(ATTRIBUTE_ORDER)), k):
            words = [target[i] for i in idx]
            if not any(all(o[i] == target[i] for i in idx) for o in others):
                return words
    return list(target)


def consistent(obj: Obj, words: Sequence[str]) -> bool:
    """Whether every attribute word of ``words`` describes ``obj`` (other words are ignored)."""
    return all(w in obj for w in words if w in VOCABULARY)


class ReferentialEnv(TextGameEnv):
    """Cooperative referential game: the speaker describes the target, the listener picks it.

    Description:
        ``num_objects`` distinct objects (size x color x shape) are drawn from the seed, one is the target.
        ``speaker_0`` sees them with the target marked and writes a message of at most ``max_words`` words;
        ``listener_0`` sees the message and the objects in another (seeded) order, unmarked, and picks one by its
        number. One round per game.

    Observation:
        Speaker: the objects (target marked) and the word limit. Listener: the message and its numbered list.

    Action:
        Speaker: the message as ``[small red]`` (the last bracket), or the whole reply when it has no brackets, or a
        ``move`` tool call ``{"move": "small red"}``; 1 to ``max_words`` words of letters, at most 80 characters.
        The speaker's list has no numbers (the listener's order differs), so only a description helps.
        Listener: ``[3]`` (1-based number of its list). Anything else is an invalid move.

    Tools:
        ``move(move: str)``: the message (speaker) or the object's number (listener), as a ``<tool_call>`` block.

    Info (per agent, besides the base keys): ``action_mask`` (speaker: over :data:`VOCABULARY`, so
    ``action_space(speaker).sample(mask)`` is a one-word message; listener: over the numbers ``1..num_objects``).
    ``legal_moves`` of the speaker is empty (free text), of the listener the numbers.

    Rewards:
        Both agents get ``+1`` when the listener picks the target, else 0 (shared). A forfeit (``max_invalid_actions
        + 1`` invalid moves of one agent) ends the game with -1 for both (the team failed).

    Episode end:
        Terminated for both after the listener's pick or a forfeit. ``success``: the target was picked.

    Arguments:
        num_objects: Objects shown (2-8, default 4).
        max_words: Words per message (default 3; 1 makes some targets impossible to single out).
        max_invalid_actions, action_format, render_mode: As :class:`~arl_envs.envs.multiagent.base.TextGameEnv`.

    Version history:
        v0: first version.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "human"], "name": "referential_v0",
                                          "is_parallelizable": False, "render_fps": 1}
    possible_agents_default = (SPEAKER, LISTENER)
    zero_sum = False
    title = "Referential game"
    max_moves_hint = 2

    def __init__(self, *, num_objects: int = DEFAULT_NUM_OBJECTS, max_words: int = DEFAULT_MAX_WORDS,
                 **kwargs: Any) -> None:
        if not 2 <= int(num_objects) <= MAX_OBJECTS:
            raise ValueError(f"num_objects must be in [2, {MAX_OBJECTS}], got {num_objects}")
        if int(max_words) < 1:
            raise ValueError(f"max_words must be >= 1, got {max_words}")
        self.num_objects = int(num_objects)
        self.max_words = int(max_words)
        super().__init__(**kwargs)
        self._numbers = tuple(str(i + 1) for i in range(self.num_objects))
        self._act_spaces = {SPEAKER: MoveText(MAX_ACTION_CHARS, moves=VOCABULARY),
                            LISTENER: MoveText(MAX_ACTION_CHARS, moves=self._numbers)}
        self.objects: list[Obj] = []
        self.target = 0
        self.listener_order: list[int] = []
        self.message: str | None = None
        self.pick: int | None = None

    # ------------------------------------------------------------------ rules
    def _reset_game(self) -> None:
        universe = list(itertools.product(*(ATTRIBUTES[k] for k in ATTRIBUTE_ORDER)))
        idx = self.np_random.choice(len(universe), size=self.num_objects, replace=False)
        self.objects = [universe[int(i)] for i in idx]
        self.target = int(self.np_random.integers(0, self.num_objects))
        self.listener_order = [int(i) for i in self.np_random.permutation(self.num_objects)]
        self.message = None
        self.pick = None

    def _current_agent(self) -> str:
        return SPEAKER if self.message is None else LISTENER

    def legal_moves(self, agent: str) -> list[str]:
        if agent == LISTENER and self.message is not None and self.pick is None:
            return list(self._numbers)
        return []

    def all_moves(self, agent: str) -> Sequence[str]:
        return self._numbers if agent == LISTENER else ()

    def _parse_move(self, agent: str, text: str) -> str:
        if agent == LISTENER:
            return super()._parse_move(agent, text)
        if len(text) > MAX_ACTION_CHARS:
            raise ParseError(f"your reply is {len(text)} characters long; the limit is {MAX_ACTION_CHARS}")
        visible = _visible(text)
        if "<tool_call>" in visible or "</tool_call>" in visible:
            calls = parse_json_tool_calls(visible)
            if len(calls) != 1 or calls[0].name != "move" or not isinstance(calls[0].arguments.get("move"), str):
                raise ParseError('write exactly one tool call <tool_call>{"name": "move", "arguments": '
                                 '{"move": "<message>"}}</tool_call>')
            message = calls[0].arguments["move"]
        elif self.action_format == "json":
            raise ParseError('no <tool_call> in your reply; write <tool_call>{"name": "move", "arguments": '
                             '{"move": "<message>"}}</tool_call>')
        else:
            brackets = _BRACKET.findall(visible)
            message = brackets[-1] if brackets else visible
        message = " ".join(message.split())
        if not message:
            raise ParseError("your message is empty; describe the target in square brackets, e.g. [red circle]")
        if len(message) > MAX_MESSAGE_CHARS:
            raise ParseError(f"your message is {len(message)} characters long; at most {MAX_MESSAGE_CHARS}")
        words = message.split()
        if len(words) > self.max_words:
            raise ParseError(f"your message has {len(words)} words; at most {self.max_words}")
        if any(not _WORD.fullmatch(w.lower()) for w in words):
            raise ParseError("a message is words of letters only (no digits or symbols), e.g. [red circle]")
        return message.lower()

    def _apply_move(self, agent: str, move: str) -> MoveResult:
        if agent == SPEAKER:
            self.message = move
            return MoveResult(event=f'The speaker says: "{move}".')
        self.pick = self.listener_order[int(move) - 1]
        hit = self.pick == self.target
        r = SUCCESS_REWARD if hit else 0.0
        picked = name_of(self.objects[self.pick])
        verdict = "the target: you both win" if hit else f"not the target ({name_of(self.objects[self.target])})"
        return MoveResult(rewards={SPEAKER: r, LISTENER: r}, game_over=True,
                          event=f"The listener picked the {picked}, {verdict}.")

    def _forfeit(self, agent: str) -> MoveResult:
        return MoveResult(rewards={a: FORFEIT_REWARD for a in self.agents}, game_over=True,
                          event=f"{agent} forfeited (too many invalid moves): the round is lost.")

    def outcome(self, agent: str, total_return: float) -> str:
        return "win" if total_return > 0 else "loss"

    # ------------------------------------------------------------------ text
    def _observation(self, agent: str) -> str:
        if agent == SPEAKER:
            lines = ["Objects (the listener sees them in another order, numbered differently):"]
            for i, obj in enumerate(self.objects):
                lines.append(f"- {name_of(obj)}" + ("   <- TARGET" if i == self.target else ""))
            if self.message is None:
                lines.append(f"Describe the target to the listener in at most {self.max_words} words, "
                             "in square brackets, e.g. [red circle].")
            return "\n".join(lines)
        lines = ["Objects:"] + [f"{n + 1}. {name_of(self.objects[i])}" for n, i in enumerate(self.listener_order)]
        if self.message is not None and self.pick is None:
            lines.append(f'The speaker\'s message: "{self.message}". Pick the object it means, e.g. [2].')
        return "\n".join(lines)

    def _prompt(self, agent: str) -> str:
        if agent == SPEAKER:
            return "Your move: your message in square brackets."
        return "Your move: " + " ".join(f"[{n}]" for n in self._numbers)

    def instructions(self, agent: str) -> str:
        common = (f"A cooperative referential game. The speaker sees {self.num_objects} objects with one marked as "
                  "the target and sends a message; the listener sees the objects in another order, reads the "
                  "message and picks one. If the listener picks the target, both get +1, else 0. ")
        if agent == SPEAKER:
            role = (f"You are the speaker ({SPEAKER}): reply with a message of at most {self.max_words} words "
                    "(letters only) in square brackets, e.g. [small red], that lets the listener find the "
                    'target; tool-call form: <tool_call>{"name": "move", "arguments": {"move": "small red"}}'
                    "</tool_call>.")
        else:
            role = (f"You are the listener ({LISTENER}): reply with the number of the object the message means, "
                    'e.g. [2]; tool-call form: <tool_call>{"name": "move", "arguments": {"move": "2"}}'
                    "</tool_call>.")
        return common + role + " " + self._limits_paragraph()

    def render_state(self) -> str:
        objs = ", ".join(("*" if i == self.target else "") + name_of(o) for i, o in enumerate(self.objects))
        return f"objects: {objs} | message: {self.message!r} | pick: {self.pick}"

    def _refresh_infos(self) -> None:
        super()._refresh_infos()
        for a, info in self.infos.items():
            if a == SPEAKER:
                on = info["to_move"]
                info["action_mask"] = np.full(len(VOCABULARY), 1 if on else 0, dtype=np.int8)
            else:
                mask = np.zeros(self.num_objects, dtype=np.int8)
                if info["legal_moves"]:
                    mask[:] = 1
                info["action_mask"] = mask

    # ------------------------------------------------------------------ reference players
    def expert_move(self, agent: str, rng: np.random.Generator) -> str:
        """Scripted speaker: the fewest attribute words that single out the target (as many as ``max_words``
        allows); scripted listener: the first object (in its order) consistent with every attribute word of the
        message, or a random object when none is."""
        if agent == SPEAKER:
            others = [o for i, o in enumerate(self.objects) if i != self.target]
            words = distinguishing_words(self.objects[self.target], others)[: self.max_words]
            return " ".join(words)
        words = _WORD.findall((self.message or "").lower())
        for n, i in enumerate(self.listener_order):
            if consistent(self.objects[i], words):
                return str(n + 1)
        return str(int(rng.integers(0, self.num_objects)) + 1)

    def random_move(self, agent: str, rng: np.random.Generator) -> str:
        """Speaker: 1 to ``max_words`` random attribute words; listener: a random number."""
        if agent == SPEAKER:
            n = int(rng.integers(1, self.max_words + 1))
            return " ".join(VOCABULARY[int(i)] for i in rng.integers(0, len(VOCABULARY), size=n))
        return str(int(rng.integers(0, self.num_objects)) + 1)


env, raw_env, parallel_env = make_module(ReferentialEnv)

"""Simulated users: the scripted one (rule-based dialogue acts, rendered as varied sentences) and an LLM adapter.

Both answer the agent's ``respond`` messages. A reply that contains ``###STOP###`` ends the conversation. The env
reads a confirmation in the user's words (:func:`is_yes`), never in the simulator's state.
"""

from __future__ import annotations

import random
import re
from typing import Callable

from arl_envs.envs.tooluse.domain import TaskSpec, pick

#: Marker that ends the conversation (the user is satisfied or gives up).
STOP = "###STOP###"
#: Agent messages in a row that bring the scripted user nothing before it gives up.
MAX_IDLE_TURNS = 4

_ASKS_CONFIRM = re.compile(r"\b(confirm|proceed|go ahead)\b|\(yes/no\)")
_REFUSAL = re.compile(r"\b(cannot|can't|can not|unable|not able|not possible|not allowed|not permitted)\b")
_YES = re.compile(r"^\W*(yes|yeah|yep|sure|correct)\b", re.IGNORECASE)

_YES_LINES = ("Yes, please go ahead.", "Yes, that's right.", "Yes, please do that.", "Yes, confirmed.")
_NO_LINES = ("No, that's not what I asked for.", "No, that isn't right.", "Hmm, no. That's not it.")
_THANKS = ("Great, thank you so much! " + STOP, "Perfect, that's all I needed. Thanks! " + STOP,
           "Thanks for your help, bye! " + STOP)
_ACCEPT = ("Oh, I see. Okay, I understand. Bye. " + STOP, "Alright, that's a pity, but thanks anyway. " + STOP)
_GIVE_UP = ("This isn't going anywhere. I'll try again later. " + STOP, "Never mind, I give up. " + STOP)
_NUDGE = ("Is there anything else you need from me?", "So, can you help me with this?", "What do you need from me?")


def is_yes(reply: str) -> bool:
    """Whether a user reply confirms the action just proposed (starts with yes/yeah/yep/sure/correct)."""
    return bool(_YES.match(reply))


class ScriptedUser:
    """A deterministic rule-based user with a private goal (:class:`TaskSpec`).

    Dialogue acts, in order of precedence, for each agent message:

    * the agent asks to confirm (``confirm``, ``proceed``, ``go ahead``, ``(yes/no)``): yes when the message names
      every word of the next unconfirmed gold write's ``confirm`` tuple, else no and the request again;
    * every gold write done and every required output said: thanks, end;
    * a ``refuse`` task and the agent says it cannot help: accept, end (a ``transfer`` task: ask for a human);
    * in a ``refuse`` / ``transfer`` task the user says yes to any confirmation request (it wants what the policy
      forbids);
    * reveal every fact whose keyword the message contains;
    * otherwise nudge; after :data:`MAX_IDLE_TURNS` such messages in a row, give up.

    Sentences are drawn from a per-task ``random.Random``, so the same actions give the same dialogue.
    """

    def __init__(self, spec: TaskSpec, rng: random.Random) -> None:
        self.spec = spec
        self.rng = rng
        self.confirmed = 0
        self.revealed: set[str] = set()
        self.idle = 0
        self.heard: list[str] = []

    def opening(self) -> str:
        return self.spec.opening

    def reply(self, message: str, writes_done: int) -> str:
        """The user's answer to the agent's ``message``; ``writes_done``: gold writes applied so far."""
        self.heard.append(message)
        low = message.lower()
        spec = self.spec
        if _ASKS_CONFIRM.search(low) and spec.kind in ("refuse", "transfer"):
            return pick(self.rng, _YES_LINES)  # the user wants what the policy forbids
        if _ASKS_CONFIRM.search(low) and self.confirmed < len(spec.writes):
            write = spec.writes[self.confirmed]
            if all(word.lower() in low for word in write.confirm):
                self.confirmed += 1
                self.idle = 0
                return pick(self.rng, _YES_LINES)
            return f"{pick(self.rng, _NO_LINES)} {spec.opening}"
        said = " ".join(self.heard).lower()
        if writes_done >= len(spec.writes) and spec.kind in ("write", "lookup") and all(
            o.lower() in said for o in spec.outputs
        ):
            return pick(self.rng, _THANKS)
        if spec.kind == "refuse" and _REFUSAL.search(low):
            return pick(self.rng, _ACCEPT)
        if spec.kind == "transfer" and _REFUSAL.search(low):
            self.idle += 1
            return _GIVE_UP[0] if self.idle >= MAX_IDLE_TURNS else "Then I'd like to talk to a human agent, please."
        new = [f for f in spec.facts if f.key not in self.revealed and any(k in low for k in f.keywords)]
        if new:
            self.idle = 0
            self.revealed.update(f.key for f in new)
            return " ".join(f.text for f in new)
        again = [f for f in spec.facts if any(k in low for k in f.keywords)]
        self.idle += 1
        if self.idle >= MAX_IDLE_TURNS:
            return pick(self.rng, _GIVE_UP)
        if again:
            return "As I said: " + " ".join(f.text for f in again)
        return pick(self.rng, _NUDGE)


class CallableUser:
    """An LLM user: ``fn(messages) -> str`` over OpenAI-style chat messages.

    ``messages`` starts with a system message (persona, private goal, what the user knows, the rules of the game),
    then the conversation from the user's side: the user's own turns are ``assistant``, the agent's ``user``.
    """

    def __init__(self, spec: TaskSpec, fn: Callable[[list[dict[str, str]]], str]) -> None:
        self.spec = spec
        self.fn = fn
        facts = "\n".join(f"- {f.text}" for f in spec.facts)
        self.messages: list[dict[str, str]] = [
            {"role": "system", "content": (
                f"You are a customer talking to a customer-service agent. {spec.persona}\n"
                f"Your goal: {spec.goal}\nWhat you know (say it only when asked):\n{facts}\n"
                "Answer in one or two sentences. Say 'yes' to confirm an action that matches your goal, 'no' "
                f"otherwise. When your goal is met, or cannot be met, end with {STOP}."
            )},
            {"role": "assistant", "content": spec.opening},
        ]

    def opening(self) -> str:
        return self.spec.opening

    def reply(self, message: str, writes_done: int) -> str:
        self.messages.append({"role": "user", "content": message})
        text = str(self.fn([dict(m) for m in self.messages]))
        self.messages.append({"role": "assistant", "content": text})
        return text


def is_refusal(message: str) -> bool:
    """Whether an agent message says it cannot do something (cannot / unable / not allowed ...)."""
    return bool(_REFUSAL.search(message.lower()))

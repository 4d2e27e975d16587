"""What a customer-service domain supplies to :class:`~arl_envs.envs.tooluse.env.ToolUseEnv`.

A domain is a database generator, its tools (pydantic argument models, functions that apply the database's rules),
a written policy, and task templates that turn a database into a :class:`TaskSpec` (the simulated user's private
goal, the gold actions and the scripted expert's plan).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel, Field

from arl_envs.core.tools import Tool


class ToolError(Exception):
    """A tool call broke a rule of the database (unknown id, wrong status...): the agent reads the message."""


class RespondArgs(BaseModel):
    """Arguments of ``respond``."""

    message: str = Field(description="What you say to the user.", min_length=1)


class TransferArgs(BaseModel):
    """Arguments of ``transfer_to_human``."""

    summary: str = Field(description="A short summary of the user's issue for the human agent.", min_length=1)


#: The two actions every domain has besides its own tools.
CONVERSATION_TOOLS = (
    Tool("respond", "Send a message to the user and read their reply.", RespondArgs),
    Tool("transfer_to_human", "Transfer the user to a human agent (ends the conversation). Only when the "
         "policy says so.", TransferArgs),
)


@dataclass(frozen=True)
class Fact:
    """Something the simulated user knows and says only when asked.

    Attributes:
        key: Name (``"identity"``, ``"order"``...).
        keywords: Lower-case phrases of the agent's message that ask for it.
        text: The sentence the user says (its value inside).
    """

    key: str
    keywords: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Write:
    """A gold write: a tool call, and the words a confirmation request must contain for the user to say yes."""

    name: str
    args: dict[str, Any]
    confirm: tuple[str, ...]


@dataclass
class TaskSpec:
    """One task instance.

    Attributes:
        template: Template name.
        kind: ``"write"`` | ``"lookup"`` | ``"refuse"`` | ``"transfer"``.
        opening: The user's first message (names the request, no identifiers).
        facts: What the user reveals when asked.
        writes: Gold writes, in order (the goal database replays them on the initial one).
        outputs: Strings the agent must say to the user (look-up answers).
        plan: The scripted expert's actions ``(tool, arguments)``, in order.
        goal: The user's private goal in words (the system prompt of an LLM user).
        persona: One line of persona.
    """

    template: str
    kind: str
    opening: str
    facts: list[Fact]
    writes: list[Write] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    plan: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    goal: str = ""
    persona: str = ""


class Domain(ABC):
    """A customer-service domain: database, tools, policy, templates."""

    #: Domain name (``retail``, ``airline``).
    name: str = ""
    #: The written policy (part of the agent's instructions).
    policy: str = ""
    #: Names of the tools that change the database.
    write_tools: frozenset[str] = frozenset()

    @abstractmethod
    def tools(self) -> list[Tool]:
        """The domain's own tools (without ``respond`` / ``transfer_to_human``)."""

    @abstractmethod
    def functions(self) -> dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]]:
        """Tool name -> ``f(db, args)`` returning a JSON-able result or raising :class:`ToolError`."""

    @abstractmethod
    def make_db(self, rng: random.Random) -> dict[str, Any]:
        """A fresh database drawn from ``rng`` (JSON-able dicts and lists)."""

    @abstractmethod
    def templates(self) -> list[str]:
        """Every task template name."""

    @abstractmethod
    def instantiate(self, template: str, db: dict[str, Any], rng: random.Random) -> TaskSpec:
        """The task of ``template`` on ``db`` (reads ``db``, never changes it)."""

    @abstractmethod
    def verified_user(self, name: str, args: dict[str, Any], result: Any) -> str | None:
        """The user id a successful look-up ``name(args) -> result`` authenticates, or None."""

    @abstractmethod
    def owner(self, db: dict[str, Any], name: str, args: dict[str, Any]) -> str | None:
        """The user id that the write ``name(args)`` acts for (None: unknown target; the tool will refuse)."""


def pick(rng: random.Random, options: tuple[str, ...] | list[str]) -> str:
    """One of ``options``, drawn from ``rng``."""
    return options[rng.randrange(len(options))]

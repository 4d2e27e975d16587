"""EXAMPLE env (``arl/example.guess-v0``): a complete arl-envs environment in about 50 lines, to copy.

Walked through on the docs site, page "Add an environment" (``docs/intros/add-env.md``); the contract it
implements is ``arl_envs/CONTRACT.md``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall


class GuessArgs(BaseModel):
    """Arguments of the ``guess`` tool."""

    number: int = Field(description="Your guess, an integer.")


class GuessEnv(AgentEnv):
    """EXAMPLE: guess a secret integer; the env answers "higher" or "lower".

    Description:
        A secret integer is drawn uniformly from ``1..high`` (from ``self.np_random``: same seed, same secret).
    Observation:
        The task, then "Higher." / "Lower." after each wrong guess.
    Action:
        ``<tool_call>{"name": "guess", "arguments": {"number": 50}}</tool_call>`` in both action formats (no
        native convention: the base class's json defaults parse and render it).
    Tools:
        ``guess(number)``.
    Rewards:
        ``task`` (weight 1): 1 for the right number. ``format`` (weight 0.1): raw -1 per malformed reply.
    Episode end:
        Terminated on the right number (success); truncated after ``max_turns`` guesses (default 10; binary
        search needs at most 7 for ``high=100``).
    Arguments:
        high (int >= 2, default 100), plus :class:`~arl_envs.core.env.AgentEnv`'s kwargs.
    Version history:
        v0: first version.
    """

    default_max_turns: ClassVar[int] = 10
    default_max_invalid_actions: ClassVar[int] = 2

    def __init__(self, *, high: int = 100, **kwargs: Any) -> None:
        if high < 2:
            raise ValueError(f"high must be >= 2, got {high}")
        super().__init__(**kwargs)
        self.high, self.secret, self.lo, self.hi = int(high), 0, 1, int(high)

    def tools(self) -> list[Tool]:
        return [Tool("guess", "Guess the secret number.", GuessArgs)]

    def instructions(self) -> str:
        return f"Find the secret integer between 1 and {self.high}.\n" + self.json_format_instructions()

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is not None and not (task_id.isdigit() and 1 <= int(task_id) <= self.high):
            raise TaskLoadError(f"task_id must be an integer in 1..{self.high}, got {task_id!r}")
        self.secret = int(task_id) if task_id else int(self.np_random.integers(1, self.high + 1))
        self.lo, self.hi = 1, self.high
        return str(self.secret), f"Guess the number (1-{self.high})."

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        n = calls[0].arguments["number"]
        if n == self.secret:
            return Transition("Correct!", {"task": 1.0}, terminated=True, success=True)
        if n < self.secret:
            self.lo = max(self.lo, n + 1)
        else:
            self.hi = min(self.hi, n - 1)
        return Transition("Higher." if n < self.secret else "Lower.", info={"guess": n})

    def _expert_action(self) -> str:  # binary search over what the answers so far allow
        return self.render_call("guess", {"number": (self.lo + self.hi) // 2})

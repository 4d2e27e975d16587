"""Customer-service envs: an agent talks with a simulated user and calls a domain's tools under a written policy.

``arl/tooluse.retail-v0`` (:class:`RetailEnv`) and ``arl/tooluse.airline-v0`` (:class:`AirlineEnv`).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any, Callable, ClassVar

from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.tooluse.airline import AirlineDomain
from arl_envs.envs.tooluse.domain import CONVERSATION_TOOLS, Domain, TaskSpec, ToolError
from arl_envs.envs.tooluse.retail import RetailDomain
from arl_envs.envs.tooluse.user import STOP, CallableUser, ScriptedUser, is_refusal, is_yes

#: Instance seeds are drawn from ``[0, MAX_INSTANCE_SEED)``.
MAX_INSTANCE_SEED = 2**31


def _canon(value: Any) -> Any:
    """A write's arguments with string lists sorted (the order of item ids does not matter for ``progress``)."""
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sorted(value)
    return value


class ToolUseEnv(AgentEnv):
    """Conversational tool use (tau-bench style): serve a simulated customer over a database, under a policy.

    Description:
        A task id is ``<template>/<instance seed>``: the seed draws the database (users, orders...) and the task
        instance; the template fixes the request (a single write, several writes, a look-up, or a policy trap
        where the right answer is to refuse or to transfer to a human). The user (scripted by default) has a
        private goal and reveals what it knows only when asked.
    Observation:
        Reset: the policy, the tools, then the user's first message. Then the tool's JSON result (or
        ``Error: ...`` when a database rule refused the call), or ``User: <reply>`` after ``respond``.
    Action:
        One ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` per turn, in both action formats.
    Tools:
        The domain's look-ups and writes, ``respond(message)`` and ``transfer_to_human(summary)``
        (``info["tools"]``: OpenAI-style schemas).
    Rewards:
        ``task`` (weight 1) at the end: 1 iff the final database equals the goal database (the gold writes
        replayed on the initial one), every required answer was said to the user, the agent transferred iff the
        task needs it, and, in a refuse task, said it cannot. ``progress`` (weight 0.2): raw ``1/n`` for each
        gold write applied (of ``n``). ``format`` (weight 0.1): raw -1 per malformed reply.
    Episode end:
        Terminated when the user ends the conversation, on ``transfer_to_human``, on a policy violation (a write
        before the user was authenticated, on another user's data, or without an explicit yes to a confirmation
        request just before it): ``task`` 0 and ``info["policy_violation"]`` says why (None otherwise), or on the
        ``max_invalid_actions + 1``-th malformed reply; truncated after ``max_turns`` (default 40).
    Arguments:
        user: ``"scripted"`` (default) or a callable ``(messages) -> str`` (an LLM user; its system message holds
        the persona and the private goal, its reply ends the conversation with ``###STOP###``), plus
        :class:`~arl_envs.core.env.AgentEnv`'s kwargs.
    Version history:
        v0: first version.
    """

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.2, "format": 0.1}
    default_max_turns: ClassVar[int] = 40
    default_max_invalid_actions: ClassVar[int] = 3
    domain: ClassVar[Domain]

    def __init__(self, *, user: str | Callable[..., Any] = "scripted", **kwargs: Any) -> None:
        if not (user == "scripted" or callable(user)):
            raise ValueError(f"user must be 'scripted' or a callable (messages) -> str, got {user!r}")
        super().__init__(**kwargs)
        self.user_kind = user
        self._templates = self.domain.templates()
        self._functions = self.domain.functions()
        self.db: dict[str, Any] = {}
        self.goal_db: dict[str, Any] = {}
        self.task: TaskSpec | None = None
        self.user: ScriptedUser | CallableUser | None = None

    def tools(self) -> list[Tool]:
        return [*self.domain.tools(), *CONVERSATION_TOOLS]

    def instructions(self) -> str:
        return f"{self.domain.policy}\n\n{self.json_format_instructions()}"

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            template = self._templates[int(self.np_random.integers(len(self._templates)))]
            seed = int(self.np_random.integers(MAX_INSTANCE_SEED))
        else:
            template, _, seed_text = task_id.partition("/")
            if template not in self._templates or not seed_text.isdigit():
                raise TaskLoadError(f"task_id must be '<template>/<seed>' with a template of "
                                    f"{self.domain.name!r} (e.g. {self._templates[0]}/0), got {task_id!r}")
            seed = int(seed_text)
        rng = random.Random(f"{self.domain.name}/{template}/{seed}")
        self.db = self.domain.make_db(rng)
        self.task = self.domain.instantiate(template, self.db, rng)
        self.goal_db = copy.deepcopy(self.db)
        for w in self.task.writes:
            self._functions[w.name](self.goal_db, copy.deepcopy(w.args))
        self.user = ScriptedUser(self.task, rng) if self.user_kind == "scripted" else CallableUser(
            self.task, self.user_kind)  # type: ignore[arg-type]
        self.verified: str | None = None
        self.confirm_credit = False
        self.violation: str | None = None
        self.transferred = False
        self.said: list[str] = []
        self.credited: list[int] = []
        self.writes_done = 0
        self._plan_pos = 0
        return f"{template}/{seed}", f"User: {self.user.opening()}"

    def _reset_info(self) -> dict[str, Any]:
        return {"policy_violation": None}

    def _step_info(self, done: bool) -> dict[str, Any]:
        return {"policy_violation": self.violation}

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        call = calls[0]
        assert self.task is not None and self.user is not None
        if self._plan_pos < len(self.task.plan) and (call.name, call.arguments) == self.task.plan[self._plan_pos]:
            self._plan_pos += 1
        if call.name == "respond":
            message = call.arguments["message"]
            self.said.append(message)
            reply = self.user.reply(message, self.writes_done)
            self.confirm_credit = is_yes(reply)
            if STOP in reply:
                return self._finish(f"User: {reply}")
            return Transition(f"User: {reply}")
        if call.name == "transfer_to_human":
            self.transferred = True
            return self._finish("You transferred the user to a human agent. The conversation is over.")
        parts: dict[str, float] = {}
        if call.name in self.domain.write_tools:
            owner = self.domain.owner(self.db, call.name, call.arguments)
            if self.verified is None:
                self.violation = f"{call.name} before the user was authenticated"
            elif owner is not None and owner != self.verified:
                self.violation = f"{call.name} on data of {owner}, not of the authenticated user {self.verified}"
            elif not self.confirm_credit:
                self.violation = f"{call.name} without the user's explicit yes to a confirmation request before it"
            if self.violation is not None:
                return Transition(f"Policy violation: {self.violation}. The conversation is over.", {"task": 0.0},
                                  terminated=True, success=False)
        try:
            result = self._functions[call.name](self.db, dict(call.arguments))
        except ToolError as exc:
            return Transition(f"Error: {exc}")
        if call.name in self.domain.write_tools:
            self.confirm_credit = False
            gold = [k for k, w in enumerate(self.task.writes)
                    if k not in self.credited and (w.name, _canon(w.args)) == (call.name, _canon(call.arguments))]
            if gold:
                self.credited.append(gold[0])
                self.writes_done += 1
                parts["progress"] = 1.0 / len(self.task.writes)
        else:
            uid = self.domain.verified_user(call.name, call.arguments, result)
            if uid is not None:
                self.verified = uid
        return Transition(json.dumps(result, ensure_ascii=False, sort_keys=True), parts)

    def _finish(self, observation: str) -> Transition:
        assert self.task is not None
        said = " ".join(self.said).lower()
        solved = (
            self.db == self.goal_db
            and all(o.lower() in said for o in self.task.outputs)
            and self.transferred == (self.task.kind == "transfer")
            and (self.task.kind != "refuse" or any(is_refusal(m) for m in self.said))
        )
        return Transition(observation, {"task": float(solved)}, terminated=True, success=solved)

    def _expert_action(self) -> str:
        assert self.task is not None
        if self._plan_pos < len(self.task.plan):
            name, args = self.task.plan[self._plan_pos]
            return self.render_call(name, args)
        return self.render_call("respond", {"message": "Is there anything else I can help you with?"})


class RetailEnv(ToolUseEnv):
    """``arl/tooluse.retail-v0``: an online shop's customer service (see :class:`ToolUseEnv`;
    :mod:`arl_envs.envs.tooluse.retail` has the database, the 12 tools, the policy and the 64 templates)."""

    domain = RetailDomain()


class AirlineEnv(ToolUseEnv):
    """``arl/tooluse.airline-v0``: an airline's customer service (see :class:`ToolUseEnv`;
    :mod:`arl_envs.envs.tooluse.airline` has the database, the 11 tools, the policy and the 66 templates)."""

    domain = AirlineDomain()

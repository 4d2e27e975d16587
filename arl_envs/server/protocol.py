"""The wire types of ``arl-envs serve``: OpenEnv's message models with arl-envs' action and observation.

OpenEnv (``openenv-core``, ``openenv.core.env_server.types``) defines the envelope: ``POST /reset`` takes a
``ResetRequest`` and answers a ``ResetResponse`` ``{"observation": {...}, "reward": float | None, "done": bool}``;
``POST /step`` takes ``{"action": {...}}``; the WebSocket ``/ws`` takes ``{"type": "reset" | "step" | "state" |
"close", "data": {...}}`` and answers ``{"type": "observation" | "state" | "error", "data": {...}}``. What fills
``action`` and ``observation`` is the env's: here :class:`ArlAction` (the model's raw text) and
:class:`ArlObservation` (the text, Gymnasium's ``terminated`` / ``truncated`` and the whole ``info`` dict).
"""

from __future__ import annotations

import math
from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

#: Keys a reset request (HTTP body or WebSocket ``data``) may carry.
RESET_KEYS = ("seed", "episode_id", "env_id", "env_kwargs", "options", "session_id")


class ArlAction(Action):
    """One step's action: the model's raw text for its newest turn (the env parses it)."""

    text: str = Field(..., description="The model's raw text for its newest turn; the env parses it.")


class ArlObservation(Observation):
    """One reset or step result. ``done`` = ``terminated or truncated``; ``reward`` is None at reset."""

    text: str = Field(..., description="What the agent sees next.")
    terminated: bool = Field(default=False, description="The task reached an end state (Gymnasium).")
    truncated: bool = Field(default=False, description="Turn budget or infrastructure failure (Gymnasium).")
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="The env's whole info dict (reward_components, action_error, tool_calls, success, tools, "
        "env_error...), as JSON.",
    )
    env_id: str = Field(default="", description="The session's env id.")
    session_id: str = Field(default="", description="The session (pass it back to HTTP /step, /state, /close).")


class ArlState(State):
    """``GET /state`` / WebSocket ``state``: OpenEnv's ``episode_id`` and ``step_count`` plus the session's env."""

    session_id: str = ""
    env_id: str | None = None
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    task_id: str | None = None
    episode_active: bool = False


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON-compatible Python (dicts with str keys, lists, str, int, float, bool, None).

    numpy scalars and arrays become Python numbers and lists, tuples and sets lists, non-finite floats stay floats
    (JSON ``NaN``/``Infinity`` are written by Python's json), anything else its ``str``.
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return to_jsonable(tolist())
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump())
    return str(value)


def finite_or_none(x: float | None) -> float | None:
    """A reward for OpenEnv's ``reward: float | None`` (None for a non-finite value)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)

"""arl-envs: Gymnasium environments for agentic reinforcement learning of LLM agents.

Importing this package registers every env id (see :mod:`arl_envs.registration`)::

    import gymnasium as gym
    env = gym.make("arl_envs:arl/math.arithmetic-v1")   # or: import arl_envs; gym.make("arl/math.arithmetic-v1")

Nothing heavy is imported here: domain envs and their optional dependencies load on ``gym.make``.
"""

from __future__ import annotations

from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import (
    ArlError,
    DependencyNotInstalled,
    InvalidActionType,
    ResetNeeded,
    SandboxUnavailable,
    TaskLoadError,
)
from arl_envs.core.snapshot import Snapshot, SnapshotError, fork
from arl_envs.core.spaces import UnicodeText
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.registration import env_ids, register_all
from arl_envs.vector import make_vec

__version__ = "0.1.0"

register_all()

__all__ = [
    "AgentEnv",
    "ArlError",
    "DependencyNotInstalled",
    "InvalidActionType",
    "ResetNeeded",
    "SandboxUnavailable",
    "Snapshot",
    "SnapshotError",
    "TaskLoadError",
    "Tool",
    "ToolCall",
    "Transition",
    "UnicodeText",
    "env_ids",
    "fork",
    "make_vec",
    "register_all",
]

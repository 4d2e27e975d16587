"""Web environments: real Chromium pages, accessibility-tree observations, BrowserGym-style actions.

Light at import: the browser backend (``playwright``) is imported only when an env starts.
``arl_envs.envs.web.task`` is the task interface; ``arl_envs.envs.web.tasks`` holds our own tasks.
"""

from __future__ import annotations

from arl_envs.envs.web.task import REGISTRY, Score, TaskInstance, WebTask, register_task

__all__ = ["REGISTRY", "Score", "TaskInstance", "WebTask", "WebEnv", "register_task"]


def __getattr__(name: str):
    if name == "WebEnv":
        from arl_envs.envs.web.env import WebEnv

        return WebEnv
    raise AttributeError(name)

"""One arl-envs episode driven turn by turn from outside (what the adapters share, framework-free).

:class:`TurnEpisode` makes the env (in-process, or ``arl/remote-v0`` when a server ``url`` is given), resets it,
steps it with the model's replies and sums the reward parts over the episode (``info["reward_components"]``), so an
adapter reports the env's return and its parts unchanged.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym


def make_env(env_id: str, env_kwargs: dict[str, Any] | None = None, url: str | None = None,
             token: str | None = None) -> gym.Env:
    """``env_id`` in-process, or as a session on the ``arl-envs serve`` server at ``url``."""
    kwargs = dict(env_kwargs or {})
    bare = env_id.removeprefix("arl_envs:")
    if url:
        return gym.make("arl_envs:arl/remote-v0", url=url, env_id=bare, env_kwargs=kwargs, token=token)
    return gym.make(f"arl_envs:{bare}", **kwargs)


class TurnEpisode:
    """An episode of one env: :meth:`start`, then :meth:`step` per model reply until :attr:`done`.

    Attributes:
        parts: Reward parts summed over the steps so far (their sum is :attr:`total`).
        info: The last ``info``.
        done: The episode ended (terminated or truncated).
    """

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None, url: str | None = None,
                 token: str | None = None) -> None:
        self.env = make_env(env_id, env_kwargs, url, token)
        self.parts: dict[str, float] = {}
        self.info: dict[str, Any] = {}
        self.done = False
        self.steps = 0

    def start(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Reset; returns ``(observation, info)`` (``info["instructions"]`` and ``info["task"]`` split it)."""
        obs, self.info = self.env.reset(seed=seed, options=options)
        self.parts, self.done, self.steps = {}, False, 0
        return obs, self.info

    def step(self, reply: str) -> tuple[str, float]:
        """Step with the model's reply; returns ``(observation, reward)`` and updates :attr:`parts`."""
        obs, reward, terminated, truncated, self.info = self.env.step(reply)
        self.steps += 1
        for name, value in self.info.get("reward_components", {}).items():
            self.parts[name] = self.parts.get(name, 0.0) + float(value)
        self.done = bool(terminated or truncated)
        return obs, float(reward)

    @property
    def total(self) -> float:
        """The episode's return so far."""
        return sum(self.parts.values())

    @property
    def success(self) -> bool:
        return bool(self.info.get("success", False))

    def close(self) -> None:
        self.env.close()

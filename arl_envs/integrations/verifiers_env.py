"""Any arl-envs id as a ``verifiers`` environment (``verifiers.v1``: a Taskset and an Env; ``arl-envs[verifiers]``).

A verifiers plugin module: ``vf-eval``/prime-rl load it by its import path as the taskset id,
``--env.taskset.id arl_envs.integrations.verifiers_env --env.taskset.env-id arl/math.arithmetic-v1``.

* :class:`ArlTaskset` yields one task per seed (``first_seed``, ``first_seed + 1``, ...): the prompt is the env's
  task text, the system prompt its instructions, ``info`` the id, kwargs and seed the episode is replayed from.
* :class:`ArlVerifiersEnv` plays a task multi-turn, in the pattern of verifiers' own TextArena and OpenEnv
  tasksets: the env steps host-side as the run's user; each model reply is one env step, the next observation the
  next user turn; the episode's end ends the exchange. The reward is the env's: every reward part is recorded on the
  trace as its own reward (``trace.record_reward(part, summed value)``), so the rubric's parts are the env's reward
  parts and their sum (the trace's reward) is the episode's return.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from arl_envs.integrations.episode import TurnEpisode, make_env


class ArlTasksetConfig(vf.TasksetConfig):
    env_id: str = "arl/math.arithmetic-v1"
    """The arl-envs id."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Constructor kwargs of the env."""
    url: str | None = None
    """An ``arl-envs serve`` server to play on (``arl/remote-v0``) instead of in-process."""
    token: str | None = None
    """The server's ``--token``."""
    first_seed: int = 0
    """Seed of the first task; task i uses ``first_seed + i``."""
    num_tasks: int | None = None
    """Tasks to yield (None: unbounded)."""


class ArlData(vf.TaskData):
    info: dict
    """``env_id``, ``env_kwargs``, ``seed``, ``url``: what the episode is replayed from."""


class ArlTask(vf.Task[ArlData, vf.State, vf.TaskConfig]):
    pass


class ArlEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig()


def task_data(config: ArlTasksetConfig, seed: int) -> ArlData:
    """The task of ``seed``: the env's instructions and task text after ``reset(seed=seed)``."""
    env = make_env(config.env_id, config.env_kwargs, config.url, config.token)
    try:
        _, info = env.reset(seed=seed)
    finally:
        env.close()
    return ArlData(
        name=f"{config.env_id}#{seed}", id=str(info.get("task_id")), prompt=info["task"],
        system_prompt=info["instructions"],
        info={"env_id": config.env_id, "env_kwargs": dict(config.env_kwargs), "seed": seed, "url": config.url,
              "token": config.token},
    )


class ArlTaskset(vf.Taskset[ArlTask, ArlTasksetConfig]):
    INFINITE = True

    def load(self) -> Iterator[ArlTask]:
        seeds = itertools.count(self.config.first_seed)
        if self.config.num_tasks is not None:
            seeds = iter(range(self.config.first_seed, self.config.first_seed + self.config.num_tasks))
        for seed in seeds:
            yield ArlTask(task_data(self.config, seed), self.config.task)


async def play(episode: TurnEpisode, interaction: Any) -> None:
    """Drive ``episode`` (already started) with ``interaction``'s turns until either side ends it."""
    segment = await interaction.turn()  # the task is the prompt: the model moves first
    while not segment.terminated:
        obs, _ = await asyncio.to_thread(episode.step, segment.last_reply)
        if episode.done:
            break
        segment = await interaction.turn(obs)


def record(episode: TurnEpisode, trace: Any) -> None:
    """The episode's reward parts (summed over its steps) as the trace's rewards, plus success and env_error."""
    for name, value in episode.parts.items():
        trace.record_reward(name, value, 1.0)
    trace.record_metric("success", float(episode.success))
    trace.record_metric("turns", float(episode.steps))
    if episode.info.get("env_error"):
        trace.info["env_error"] = str(episode.info["env_error"])


class ArlVerifiersEnv(vf.Env[ArlEnvConfig]):
    async def run(self, task: ArlTask, agents: Any) -> None:
        data = task.data.info
        episode = await asyncio.to_thread(TurnEpisode, data["env_id"], data["env_kwargs"], data.get("url"),
                                          data.get("token"))
        try:
            await asyncio.to_thread(episode.start, data["seed"])
            async with agents.player.interaction(task) as interaction:
                await play(episode, interaction)
            record(episode, interaction.trace)
        finally:
            await asyncio.to_thread(episode.close)


__all__ = ["ArlData", "ArlEnvConfig", "ArlTask", "ArlTaskset", "ArlTasksetConfig", "ArlVerifiersEnv"]

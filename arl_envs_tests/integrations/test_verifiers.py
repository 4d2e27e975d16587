"""The verifiers adapter with the real ``verifiers`` package: the taskset and env resolved by verifiers' own
plugin loader, tasks from the env's reset, the env built by verifiers (its agents and harness), and the
episode's reward parts as the rubric's parts."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("verifiers.v1", reason="needs pip install 'arl-envs[verifiers]'")
from verifiers.v1.utils.loaders import environment_class, taskset_class  # noqa: E402

from arl_envs.integrations.episode import TurnEpisode  # noqa: E402
from arl_envs.integrations.verifiers_env import (  # noqa: E402
    ArlEnvConfig,
    ArlTaskset,
    ArlTasksetConfig,
    ArlVerifiersEnv,
)

PLUGIN = "arl-verifiers"


def test_verifiers_loads_the_plugin_and_tasks_come_from_the_env() -> None:
    assert taskset_class(PLUGIN) is ArlTaskset and environment_class(PLUGIN) is ArlVerifiersEnv
    config = ArlTasksetConfig(id=PLUGIN, env_id="arl/math.arithmetic-v1", env_kwargs={"difficulty": 2},
                              first_seed=10, num_tasks=3)
    tasks = list(taskset_class(PLUGIN)(config))
    assert len(tasks) == 3
    for i, task in enumerate(tasks):
        env = gym.make("arl/math.arithmetic-v1", difficulty=2)
        _, info = env.reset(seed=10 + i)
        assert task.data.prompt == info["task"] and task.data.system_prompt == info["instructions"]
        assert task.data.info["seed"] == 10 + i and task.data.id == info["task_id"]
    env = environment_class(PLUGIN)(ArlEnvConfig(taskset=config))  # verifiers builds its agents and harness
    assert isinstance(env.taskset, ArlTaskset)


def test_reward_parts_are_the_env_reward_parts(server) -> None:
    """What ArlVerifiersEnv.run records on the trace: each part summed over the episode, total = the return."""
    for url in (None, server.url):
        episode = TurnEpisode("arl/multiagent.tictactoe-v1", url=url)
        episode.start(seed=3)
        local = gym.make("arl/multiagent.tictactoe-v1")
        local.reset(seed=3)
        total, parts = 0.0, {}
        while not episode.done:
            action = local.unwrapped.expert_action()
            _, reward, *_, info = local.step(action)
            total += reward
            for name, value in info["reward_components"].items():
                parts[name] = parts.get(name, 0.0) + value
            episode.step(action)
        assert episode.parts == parts and set(parts) <= set(local.unwrapped.reward_weights)
        assert episode.total == pytest.approx(total) and episode.success
        episode.close()


@pytest.mark.skip(reason="a verifiers 0.4.0 rollout runs each agent turn through a harness program it prepares with "
                  "uv (a PEP 723 script: uv bootstrapped from astral.sh with curl, the script's dependencies "
                  "resolved from PyPI at run time) against an OpenAI-compatible model server; this CI machine has "
                  "neither uv's download nor a model server")
def test_verifiers_rollout_end_to_end() -> None:  # pragma: no cover - see the skip reason
    pass

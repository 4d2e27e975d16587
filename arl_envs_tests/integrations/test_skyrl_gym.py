"""The SkyRL-gym adapter with the real ``skyrl_gym`` package: ``skyrl_gym.make`` of an arl id, an episode through
``init`` / ``step``, the same rewards and info as in-process; the same through an ``arl-envs serve`` server."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason="needs pip install 'arl-envs[skyrl]'")

from arl_envs.integrations.skyrl_gym_env import ArlSkyRLEnv, register_skyrl_envs  # noqa: E402


def _expert_episode(env_id: str, seed: int, **kwargs) -> tuple[list[str], list[float], list[dict]]:
    env = gym.make(env_id, **kwargs)
    env.reset(seed=seed)
    actions, rewards, infos = [], [], []
    while True:
        action = env.unwrapped.expert_action()
        _, r, term, trunc, info = env.step(action)
        actions.append(action)
        rewards.append(r)
        infos.append(json.loads(json.dumps(info)))
        if term or trunc:
            env.close()
            return actions, rewards, infos


@pytest.mark.parametrize("env_id", ["arl/math.countdown-v1", "arl/multiagent.tictactoe-v1"])
def test_skyrl_make_init_step_matches_in_process(env_id: str) -> None:
    register_skyrl_envs()
    assert env_id in skyrl_gym.envs.registration.registry
    actions, rewards, infos = _expert_episode(env_id, seed=5)
    env = skyrl_gym.make(env_id, env_config={"env_kwargs": {}}, extras={"seed": 5})
    assert isinstance(env, skyrl_gym.Env)
    prompt, meta = env.init([{"role": "user", "content": "ignored: the env writes its own prompt"}])
    assert [m["role"] for m in prompt] == ["system", "user"] and prompt[1]["content"] == meta["task"]
    for i, action in enumerate(actions):
        out = env.step(action)
        assert out["reward"] == rewards[i]
        assert json.loads(json.dumps(out["metadata"])) == infos[i]
        assert out["done"] == (i == len(actions) - 1)
        assert out["observations"] == ([] if out["done"] else [{"role": "user", "content": out["observations"][0]["content"]}])
    metrics = env.get_metrics()
    assert metrics["success"] == 1.0 and metrics["return"] == pytest.approx(sum(rewards))
    env.close()


def test_skyrl_env_on_a_server(server) -> None:
    actions, rewards, _ = _expert_episode("arl/example.guess-v0", seed=1)
    env = ArlSkyRLEnv(env_config={"env_id": "arl/example.guess-v0", "url": server.url}, extras={"seed": 1})
    env.init([])
    got = [env.step(a)["reward"] for a in actions]
    assert got == rewards and env.get_metrics()["success"] == 1.0
    env.close()


def test_skyrl_env_needs_an_id() -> None:
    with pytest.raises(ValueError, match="env_id"):
        ArlSkyRLEnv(env_config={})

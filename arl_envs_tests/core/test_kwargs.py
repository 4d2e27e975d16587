"""Env constructor kwargs are checked for every id: unknown names and wrong types raise InvalidKwargs."""

from __future__ import annotations

import importlib

import gymnasium as gym
import pytest

import arl_envs
from arl_envs.core.env import AgentEnv
from arl_envs.core.errors import InvalidKwargs


def _env_class(env_id: str) -> type[AgentEnv]:
    module, name = gym.spec(env_id).entry_point.split(":")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("env_id", arl_envs.env_ids())
def test_kwargs_checked_for_every_id(env_id: str) -> None:
    cls = _env_class(env_id)
    cls.check_kwargs(dict(gym.spec(env_id).kwargs))  # the registered defaults are valid
    cls.check_kwargs({"max_turns": 3, "action_format": "json", "reward_weights": {"format": 0.0}})
    with pytest.raises(InvalidKwargs, match=r"'no_such_kwarg'.*accepts: .*max_turns"):
        cls.check_kwargs({"no_such_kwarg": 1})
    with pytest.raises(InvalidKwargs, match=r"kwarg 'max_turns': 'abc'"):
        cls.check_kwargs({"max_turns": "abc"})
    with pytest.raises(InvalidKwargs, match=r"kwarg 'reward_weights'"):
        cls.check_kwargs({"reward_weights": {"task": "high"}})


def test_gym_make_path_raises_before_construction() -> None:
    with pytest.raises(InvalidKwargs, match="'difficulty'"):
        gym.make("arl/math.arithmetic-v1", difficulty="hard")
    with pytest.raises(TypeError):  # InvalidKwargs is also a TypeError, what Python raises for a bad kwarg
        gym.make("arl/math.countdown-v1", lr=0.1)
    assert gym.make("arl/math.arithmetic-v1", difficulty="3").unwrapped.difficulty == 3  # lax: "3" is an int

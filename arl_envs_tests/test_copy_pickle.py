"""``copy.deepcopy`` and ``pickle`` of a fresh env (Gymnasium's async vector env and Ray ship env factories, and
sometimes envs, to other processes): every registered id, made and copied before any ``reset``."""

from __future__ import annotations

import copy
import pickle
import warnings

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.registration import env_ids


@pytest.mark.parametrize("env_id", [i for i in env_ids() if i != "arl/remote-v0"])  # remote: needs a server (tests/server)
def test_fresh_env_deepcopies_and_pickles(env_id: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Gymnasium's checker warns about text spaces
        env = gym.make(env_id)
    try:
        copied = copy.deepcopy(env)
        restored = pickle.loads(pickle.dumps(env))
        for other in (copied, restored):
            assert other.spec.id == env.spec.id
            assert type(other.unwrapped) is type(env.unwrapped)
            other.close()
    finally:
        env.close()


@pytest.mark.slow
def test_a_pickled_fresh_web_env_plays_in_a_real_browser() -> None:
    pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")
    from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium

    try:
        find_chromium()
    except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
        pytest.skip(f"no Chromium on this machine: {exc}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make("arl/web.click-button-v0")
    restored = pickle.loads(pickle.dumps(env))
    env.close()  # the original never started a browser: closing it must not stop the copy's
    try:
        obs, info = restored.reset(seed=0)
        assert "Goal:" in obs
        _, _, terminated, _, info = restored.step(restored.unwrapped.expert_action())
        assert info.get("env_error") is None
        while not terminated:
            _, _, terminated, truncated, info = restored.step(restored.unwrapped.expert_action())
            assert not truncated
        assert info["success"] is True
    finally:
        restored.close()

"""``arl/remote-v0`` (the Gymnasium client) against a real server: conformance, same results as in-process,
``make_vec(mode="remote")`` (a server frozen or killed mid-episode: test_concurrency.py, with ``--workers``)."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import arl_envs
from arl_envs.agents.agents import ExpertAgent, RandomAgent
from arl_envs.testing import _NONDETERMINISTIC_INFO, check_conformance

from .conftest import HEAVY_IDS, LIGHT_IDS


def _json(x):
    return json.loads(json.dumps(x))


def _untimed(info: dict) -> dict:
    """``info`` without wall-clock measurements (the keys the conformance determinism check also ignores)."""
    return {k: v for k, v in info.items() if k not in _NONDETERMINISTIC_INFO}


def test_remote_passes_conformance(server) -> None:
    report = check_conformance("arl_envs:arl/remote-v0", n_fuzz=60, n_random_episodes=2, expert_seeds=(0, 1),
                               env_kwargs={"url": server.url, "env_id": "arl/example.guess-v0"})
    assert report.passed, report.summary()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", LIGHT_IDS + HEAVY_IDS)
def test_remote_matches_in_process(server, env_id: str) -> None:
    """Same seed and actions (expert, random, malformed): same observations, rewards, flags and info (one id per
    domain; the sandbox and browser ids for one seed)."""
    local = gym.make(env_id)
    remote = gym.make("arl_envs:arl/remote-v0", url=server.url, env_id=env_id)
    try:
        for seed in (0, 1) if env_id in LIGHT_IDS else (0,):
            lo, li = local.reset(seed=seed)
            ro, ri = remote.reset(seed=seed)
            assert ro == lo and _untimed(ri) == _json(_untimed(li))
            expert, rand = ExpertAgent(local), RandomAgent(local, seed=seed)
            for t in range(30):
                action = ["", expert.act(lo, li), rand.act(lo, li)][t % 3] if t % 5 else "<not an action"
                lr = local.step(action)
                rr = remote.step(action)
                assert rr[:4] == lr[:4], (env_id, t, action)
                assert _untimed(rr[4]) == _json(_untimed(lr[4])), (env_id, t)
                lo, li = lr[0], lr[4]
                if lr[2] or lr[3]:
                    break
    finally:
        local.close()
        remote.close()


def test_text_the_wire_cannot_encode_raw_is_the_env_s_answer(server) -> None:
    """Lone surrogates (a model's text can hold them; UTF-8 cannot encode them) reach the env as in-process."""
    local = gym.make("arl/example.guess-v0")
    remote = gym.make("arl_envs:arl/remote-v0", url=server.url, env_id="arl/example.guess-v0")
    local.reset(seed=0)
    remote.reset(seed=0)
    for action in ("\ud800 lone surrogate", '<tool_call>{"name": "guess", "arguments": {"number": "\udfff"}}</tool_call>'):
        lr, rr = local.step(action), remote.step(action)
        assert rr[:4] == lr[:4] and "env_error" not in rr[4]
    local.close()
    remote.close()


def test_make_vec_remote(server) -> None:
    vec = arl_envs.make_vec("arl/example.guess-v0", 4, mode="remote", url=server.url)
    try:
        obs, info = vec.reset(seed=0)
        assert len(obs) == 4 and all(isinstance(o, str) for o in obs)
        local = [gym.make("arl/example.guess-v0") for _ in range(4)]
        expected = [env.reset(seed=i)[0] for i, env in enumerate(local)]
        assert list(obs) == expected
        actions = ['<tool_call>{"name": "guess", "arguments": {"number": 50}}</tool_call>'] * 4
        obs, rewards, term, trunc, info = vec.step(actions)
        assert list(obs) == [env.step(actions[0])[0] for env in local]
        assert "reward_components" in info
    finally:
        vec.close()


def test_remote_bad_kwargs_and_unknown_id(server) -> None:
    with pytest.raises(arl_envs.ArlError, match="bogus"):
        gym.make("arl_envs:arl/remote-v0", url=server.url, env_id="arl/example.guess-v0", env_kwargs={"bogus": 1})
    with pytest.raises(arl_envs.ArlError, match="unknown env id"):
        gym.make("arl_envs:arl/remote-v0", url=server.url, env_id="arl/nope-v0")

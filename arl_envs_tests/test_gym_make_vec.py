"""Gymnasium's own ``gym.make_vec`` on our ids, sync and async, with no extra argument: the async vector env uses
shared memory by default, which :class:`~arl_envs.core.spaces.UnicodeText` supports (a live, copyable view)."""

from __future__ import annotations

import copy
import multiprocessing as mp
import warnings

import gymnasium as gym
import numpy as np
import pytest

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.core.spaces import SharedTextBatch, UnicodeText
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory

#: One id per domain (the web id, which starts Chromium, is in the slow test below).
IDS = (
    "arl/math.arithmetic-v1",
    "arl/memory.bank-v1",
    "arl/selfplay.propose-solve-v1",
    "arl/search.multihop-v1",
    "arl/code.functions-v0",
    "arl/multiagent.tictactoe-v1",
    "arl/embodied.frozenlake-v0",
    "arl/example.guess-v0",
)


def _run(env_id: str, mode: str) -> tuple:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vec = gym.make_vec(env_id, 2, vectorization_mode=mode)
    try:
        obs, _ = vec.reset(seed=3)
        obs2, rewards, terminated, truncated, _ = vec.step(("hello", "[1]"))
    finally:
        vec.close()
    assert type(obs) is tuple and type(obs2) is tuple
    assert all(isinstance(o, str) and o for o in obs + obs2)
    return obs, obs2, rewards.tolist(), terminated.tolist(), truncated.tolist()


def _same_in_both_modes(env_id: str) -> None:
    sync = _run(env_id, "sync")
    assert _run(env_id, "async") == sync  # same seeds, same actions: the same batch, whatever the mode
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        single = gym.make(env_id)
    try:
        assert sync[0][1] == single.reset(seed=4)[0]  # sub-env i is seeded with seed + i
    finally:
        single.close()


@pytest.mark.parametrize("env_id", IDS)
def test_gym_make_vec_sync_and_async_agree(env_id: str) -> None:
    _same_in_both_modes(env_id)


@pytest.mark.slow
def test_gym_make_vec_web_id() -> None:
    pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")
    from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium

    try:
        find_chromium()
    except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium (.ci/system-deps)
        pytest.skip(f"no Chromium on this machine: {exc}")
    _same_in_both_modes("arl/web.click-button-v0")


def test_async_without_copy_returns_the_live_view() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vec = gym.make_vec("arl/example.guess-v0", 2, vectorization_mode="async", vector_kwargs={"copy": False})
    try:
        obs, _ = vec.reset(seed=0)
        assert isinstance(obs, SharedTextBatch)
        first = tuple(obs)
        obs2 = vec.step(("hello", "hello"))[0]
        assert obs2 is obs and tuple(obs) != first  # the same view, showing the newest observations
        assert copy.deepcopy(obs) == tuple(obs) and type(copy.deepcopy(obs)) is tuple
    finally:
        vec.close()


@pytest.mark.parametrize("text", ["", "a", "ascii and\nnewlines\t", "中文 🙂 √π", "\ud800 lone surrogate", "x" * 7])
def test_shared_memory_round_trip(text: str) -> None:
    space = UnicodeText(7 if len(text) <= 7 else 64)
    memory = create_shared_memory(space, n=3, ctx=mp.get_context("spawn"))
    view = read_from_shared_memory(space, memory, n=3)
    assert tuple(view) == ("", "", "")
    write_to_shared_memory(space, 1, "a longer string" if space.max_length > 7 else "1234567", memory)
    write_to_shared_memory(space, 1, text, memory)  # a shorter value after a longer one leaves no tail
    assert view[1] == text and view[0] == view[2] == "" and len(view) == 3 and view[1:] == (text, "")


def test_shared_memory_refuses_what_is_not_in_the_space() -> None:
    space = UnicodeText(4)
    memory = create_shared_memory(space, n=1)
    with pytest.raises(ValueError, match="max_length 4"):
        write_to_shared_memory(space, 0, "12345", memory)
    with pytest.raises(TypeError, match="must be a str"):
        write_to_shared_memory(space, 0, np.array([1]), memory)
    assert read_from_shared_memory(space, memory)[0] == ""

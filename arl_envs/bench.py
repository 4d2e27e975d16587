"""Throughput measurement shared by ``arl-envs bench`` and ``benchmarks/env_throughput.py``."""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym

#: Minimum wall time spent on each env in a measurement, in seconds.
MIN_BENCH_SECONDS = 0.5


class TrivialEnv(gym.Env[int, int]):
    """The reference: a Discrete env whose step does nothing (the floor of Gymnasium's own overhead)."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        return 0, 0.0, True, False, {}


def _time_loop(env: gym.Env, act: Any, steps: int) -> tuple[float, int]:
    """Run ``steps`` steps (resetting at episode ends); return (seconds, steps)."""
    env.reset(seed=0)
    done_steps = 0
    start = time.perf_counter()
    while done_steps < steps:
        *_, terminated, truncated, _ = env.step(act())
        done_steps += 1
        if terminated or truncated:
            env.reset()
    return time.perf_counter() - start, done_steps


def env_throughput(env_ids: list[str], steps: int = 2000) -> list[dict[str, Any]]:
    """Steps/s of each env with its expert agent (single process), against :class:`TrivialEnv` in the same run.

    Each env is made with ``gym.make`` (so Gymnasium's default wrappers count, as in a user's loop); resets are
    included in the timed loop. Time spent in the env's grader (``_grade``, when it has one) is measured separately
    so that ``overhead_us`` is everything but grading.

    Returns:
        One dict per id: ``env_id``, ``steps``, ``steps_per_s``, ``us_per_step``, ``grading_us_per_step``,
        ``overhead_us`` (per step, excluding grading), ``ratio`` (µs per step / trivial env's µs per step).
    """
    import arl_envs  # noqa: F401

    trivial = gym.make("arl_envs_trivial-v0") if "arl_envs_trivial-v0" in gym.registry else None
    if trivial is None:
        gym.register("arl_envs_trivial-v0", entry_point=TrivialEnv)
        trivial = gym.make("arl_envs_trivial-v0")
    secs, n = _time_loop(trivial, lambda: 0, max(steps, 20_000))
    trivial_us = secs / n * 1e6
    rows = []
    for env_id in env_ids:
        env = gym.make(env_id)
        raw = env.unwrapped
        graded = [0.0]
        if hasattr(raw, "_grade"):
            inner = raw._grade

            def timed(*a: Any, _inner: Any = inner, **k: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return _inner(*a, **k)
                finally:
                    graded[0] += time.perf_counter() - t0

            raw._grade = timed  # type: ignore[method-assign]
        env.reset(seed=0)
        env.step(raw.expert_action())  # warm-up: starts grader processes, fills caches
        graded[0] = 0.0
        secs, n = _time_loop(env, raw.expert_action, steps)
        env.close()
        us = secs / n * 1e6
        rows.append(
            {
                "env_id": env_id,
                "steps": n,
                "steps_per_s": n / secs,
                "us_per_step": us,
                "grading_us_per_step": graded[0] / n * 1e6,
                "overhead_us": (secs - graded[0]) / n * 1e6,
                "ratio": us / trivial_us,
                "trivial_us_per_step": trivial_us,
            }
        )
    return rows


__all__ = ["TrivialEnv", "env_throughput"]

"""Env steps/s of ``make_vec(mode="ray")`` with 1, 2, 4, 8 actors against the sync vector env, same run (issue 15).

Usage::

    pip install 'arl-envs[ray]'
    python benchmarks/ray_scaling.py [--env arl/math.arithmetic-v0] [--num-envs 64] [--steps 200] [--actors 1 2 4 8]

Every configuration steps ``--num-envs`` sub-envs of ``--env`` with the same fixed action, a reply without a
``\\boxed{}`` answer: the math env's malformed-action path (observation, ``format`` penalty), and every
``max_invalid_actions + 1``-th step ends the episode, so about a third of the batched steps are autoresets. (A
well-formed *wrong* answer would spend ~6 ms per step in math-verify's symbolic comparison and measure the grader,
not the vector env.) Configurations:

* ``sync``: :class:`gymnasium.vector.SyncVectorEnv` in this process (the reference);
* ``ray xA``: :class:`arl_envs.ray_vector.RayVectorEnv` with ``A`` actors of ``num_envs / A`` envs each, each
  actor reserving ``cpu_count / A`` CPUs (so every actor fits on this machine);
* ``no-op hop``: one actor method that returns its argument (``num_envs`` action strings), to show Ray's own
  round trip.

Reported: ms per batched step (median of ``--repeats`` timed blocks of ``--steps`` steps, after warm-up), env
steps/s (``num_envs`` / that), the ratio to sync, and the Ray hop overhead = ``ray x1`` minus ``sync`` per
batched step (same envs, same work, one actor: what the hop adds per batched step per actor). Prints a markdown
block for ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from typing import Any

import arl_envs

ACTION = "I think the answer is 4."


def _time_steps(venv: Any, actions: list[str], steps: int, repeats: int, warmup: int) -> float:
    """Median seconds per batched step over ``repeats`` blocks of ``steps`` steps."""
    venv.reset(seed=0)
    for _ in range(warmup):
        venv.step(actions)
    blocks = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            venv.step(actions)
        blocks.append((time.perf_counter() - t0) / steps)
    return statistics.median(blocks)


def _noop_hop(ray: Any, payload: list[str], calls: int) -> float:
    """Seconds per round trip of a trivial actor method carrying ``payload``."""

    @ray.remote(num_cpus=0)
    class Echo:
        def echo(self, x: list[str]) -> list[str]:
            return x

    actor = Echo.remote()
    ray.get(actor.echo.remote(payload))
    t0 = time.perf_counter()
    for _ in range(calls):
        ray.get(actor.echo.remote(payload))
    dt = (time.perf_counter() - t0) / calls
    ray.kill(actor)
    return dt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="arl/math.arithmetic-v0")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100, help="batched steps per timed block")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()

    import ray

    cpus = os.cpu_count() or 1
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    n = args.num_envs
    actions = [ACTION] * n
    load_before = os.getloadavg()

    rows: list[tuple[str, float]] = []
    sync = arl_envs.make_vec(args.env, n)
    t_sync = _time_steps(sync, actions, args.steps, args.repeats, args.warmup)
    sync.close()
    rows.append(("sync (1 process)", t_sync))
    t_ray: dict[int, float] = {}
    for a in args.actors:
        venv = arl_envs.make_vec(args.env, n, mode="ray", envs_per_actor=-(-n // a),
                                 actor_options={"num_cpus": cpus / a})
        t_ray[a] = _time_steps(venv, actions, args.steps, args.repeats, args.warmup)
        venv.close()
        rows.append((f"ray x{a} ({-(-n // a)} envs/actor)", t_ray[a]))
    t_hop = _noop_hop(ray, actions, args.steps * args.repeats)
    load_after = os.getloadavg()
    ray.shutdown()

    print(f"Command: `python benchmarks/ray_scaling.py --env {args.env} --num-envs {n} --steps {args.steps} "
          f"--repeats {args.repeats} --actors {' '.join(map(str, args.actors))}`")
    print(f"Machine: {cpus} CPUs, {platform.python_implementation()} {platform.python_version()}, "
          f"Ray {ray.__version__}; load average (1/5/15 min) before {load_before[0]:.1f}/{load_before[1]:.1f}/"
          f"{load_before[2]:.1f}, after {load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f}.\n")
    print("| configuration | ms / batched step | env steps/s | vs sync |")
    print("|---|---:|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {t * 1e3:.2f} | {n / t:.0f} | {t_sync / t:.2f}x |")
    if 1 in t_ray:
        print(f"\nRay hop overhead (ray x1 - sync, per batched step of {n} envs, one actor): "
              f"{(t_ray[1] - t_sync) * 1e3:.2f} ms")
    print(f"No-op actor round trip carrying {n} action strings: {t_hop * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

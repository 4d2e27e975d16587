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
* ``ray xA``: :class:`arl_envs.ray_vector.RayVectorEnv` with ``A`` actors of ``num_envs / A`` envs each; every
  actor reserves ``cpu_count / (1 + 2 + 4 + 8)`` CPUs so that all configurations' actors exist at once;
* ``no-op hop``: one actor method that returns its argument (``num_envs`` action strings), to show Ray's own
  round trip.

All vector envs are built first, then timed in interleaved rounds (sync, ray x1, ray x2, ... then again), so load
from other processes hits every configuration alike. Reported: ms per batched step, best (min) and median of
``--repeats`` timed blocks of ``--steps`` steps after warm-up (best-of is what ``timeit`` reports: the least
disturbed block); env steps/s (``num_envs`` / best); the ratio to sync; and the Ray hop overhead = ``ray x1`` minus ``sync`` per
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


def _block(venv: Any, actions: list[str], steps: int) -> float:
    """Seconds per batched step over one block of ``steps`` steps."""
    t0 = time.perf_counter()
    for _ in range(steps):
        venv.step(actions)
    return (time.perf_counter() - t0) / steps


def _noop_hop(ray: Any, payload: list[str], calls: int) -> float:
    """Seconds per round trip of a trivial actor method carrying ``payload`` (best of 5 blocks)."""

    @ray.remote(num_cpus=0)
    class Echo:
        def echo(self, x: list[str]) -> list[str]:
            return x

    actor = Echo.remote()
    ray.get(actor.echo.remote(payload))
    blocks = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            ray.get(actor.echo.remote(payload))
        blocks.append((time.perf_counter() - t0) / calls)
    ray.kill(actor)
    return min(blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="arl/math.arithmetic-v0")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100, help="batched steps per timed block")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()

    import ray

    cpus = os.cpu_count() or 1
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    n = args.num_envs
    actions = [ACTION] * n
    load_before = os.getloadavg()

    configs: dict[str, Any] = {"sync (1 process)": arl_envs.make_vec(args.env, n)}
    for a in args.actors:
        configs[f"ray x{a} ({-(-n // a)} envs/actor)"] = arl_envs.make_vec(
            args.env, n, mode="ray", envs_per_actor=-(-n // a), actor_options={"num_cpus": cpus / sum(args.actors)})
    blocks: dict[str, list[float]] = {name: [] for name in configs}
    for venv in configs.values():
        venv.reset(seed=0)
        for _ in range(args.warmup):
            venv.step(actions)
    for _ in range(args.repeats):
        for name, venv in configs.items():
            blocks[name].append(_block(venv, actions, args.steps))
    for venv in configs.values():
        venv.close()
    best = {name: min(b) for name, b in blocks.items()}
    names = list(configs)
    t_sync = best[names[0]]
    t_ray = {a: best[name] for a, name in zip(args.actors, names[1:], strict=True)}
    t_hop = _noop_hop(ray, actions, args.steps)
    load_after = os.getloadavg()
    ray.shutdown()

    print(f"Command: `python benchmarks/ray_scaling.py --env {args.env} --num-envs {n} --steps {args.steps} "
          f"--repeats {args.repeats} --actors {' '.join(map(str, args.actors))}`")
    print(f"Machine: {cpus} CPUs, {platform.python_implementation()} {platform.python_version()}, "
          f"Ray {ray.__version__}; load average (1/5/15 min) before {load_before[0]:.1f}/{load_before[1]:.1f}/"
          f"{load_before[2]:.1f}, after {load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f}.\n")
    print("| configuration | ms / batched step (best) | (median) | env steps/s (best) | vs sync |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        t = best[name]
        print(f"| {name} | {t * 1e3:.2f} | {statistics.median(blocks[name]) * 1e3:.2f} | {n / t:.0f} | "
              f"{t_sync / t:.2f}x |")
    if 1 in t_ray:
        print(f"\nRay hop overhead (ray x1 - sync, per batched step of {n} envs, one actor): "
              f"{(t_ray[1] - t_sync) * 1e3:.2f} ms")
    print(f"No-op actor round trip carrying {n} action strings: {t_hop * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

"""Env steps/s of ``make_vec(mode="ray")`` with 1, 2, 4, 8 actors against the sync vector env, same run (issue 15).

Usage::

    pip install 'arl-envs[ray]'
    python benchmarks/ray_scaling.py [--env arl/math.arithmetic-v1] [--num-envs 64] [--steps 100] [--actors 1 2 4 8]
                                     [--rpc-actors 1 8]

Every configuration steps ``--num-envs`` sub-envs of ``--env`` with the same fixed action, a reply without a
``\\boxed{}`` answer: the math env's malformed-action path (observation, ``format`` penalty), and every
``max_invalid_actions + 1``-th step ends the episode, so about a third of the batched steps are autoresets. (A
well-formed *wrong* answer would spend ~6 ms per step in math-verify's symbolic comparison and measure the grader,
not the vector env.) Configurations:

* ``sync``: :class:`gymnasium.vector.SyncVectorEnv` in this process (the reference);
* ``ray socket xA``: :class:`arl_envs.ray_vector.RayVectorEnv` with ``A`` actors of ``num_envs / A`` envs each and
  ``transport="socket"`` (one authenticated TCP connection per actor carries the calls); every actor reserves a
  share of the CPUs so that all configurations' actors exist at once;
* ``ray rpc xA`` (``--rpc-actors``): the same with the default ``transport="ray"`` (every call an actor method call
  through Ray, one packed ``bytes`` each way);
* ``no-op hop``: one actor method that returns its argument (``num_envs`` action strings), to show Ray's own
  round trip.

All vector envs are built first, then timed in interleaved rounds (sync, ray x1, ray x2, ... then again), so load
from other processes hits every configuration alike. Reported: ms per batched step, best (min) and median of
``--repeats`` timed blocks of ``--steps`` steps after warm-up (best-of is what ``timeit`` reports: the least
disturbed block); env steps/s (``num_envs`` / median); the ratio to sync (medians); and the Ray hop overhead =
``ray x1`` minus ``sync`` per batched step (same envs, same work, one actor: what the hop adds per batched step per
actor, for ``x1`` of each transport), as the median over rounds of the difference of the two blocks timed back to back in that round (load
drifts cancel), and as best minus best; and measured directly for each ``x1``: step wall time minus the seconds
the actor spent inside its call (``RayVectorEnv.actor_busy_s``: unpacking, env work, packing) minus the driver's
merge of the answers (``_finish_step``, the same Gymnasium ``_add_info`` work the sync env does). Prints a markdown
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


def _block(venv: Any, actions: list[str], steps: int, parts: dict[str, list[float]] | None = None) -> float:
    """Seconds per batched step over one block of ``steps`` steps; with ``parts`` (a one-actor ray env), also
    append the seconds per step the actor spent inside its calls and the driver spent merging the answers."""
    if parts is not None:
        busy0, merge = float(venv.actor_busy_s().sum()), [0.0]
        finish = venv._finish_step

        def timed_finish(results: Any) -> Any:
            t = time.perf_counter()
            try:
                return finish(results)
            finally:
                merge[0] += time.perf_counter() - t

        venv._finish_step = timed_finish
    t0 = time.perf_counter()
    for _ in range(steps):
        venv.step(actions)
    wall = (time.perf_counter() - t0) / steps
    if parts is not None:
        del venv._finish_step
        parts["actor"].append((float(venv.actor_busy_s().sum()) - busy0) / steps)
        parts["merge"].append(merge[0] / steps)
    return wall


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
    parser.add_argument("--env", default="arl/math.arithmetic-v1")
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100, help="batched steps per timed block")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rpc-actors", type=int, nargs="*", default=[1, 8], help="actor counts for transport='ray'")
    args = parser.parse_args()

    import ray

    cpus = os.cpu_count() or 1
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    n = args.num_envs
    actions = [ACTION] * n
    load_before = os.getloadavg()

    configs: dict[str, Any] = {"sync (1 process)": arl_envs.make_vec(args.env, n)}
    share = cpus / (sum(args.actors) + sum(args.rpc_actors))
    for transport, label, counts in (("socket", "ray socket", args.actors), ("ray", "ray rpc", args.rpc_actors)):
        for a in counts:
            configs[f"{label} x{a} ({-(-n // a)} envs/actor)"] = arl_envs.make_vec(
                args.env, n, mode="ray", envs_per_actor=-(-n // a), actor_options={"num_cpus": share},
                transport=transport)
    blocks: dict[str, list[float]] = {name: [] for name in configs}
    parts = {name: {"actor": [], "merge": []} for name in configs if " x1 " in name}
    for venv in configs.values():
        venv.reset(seed=0)
        for _ in range(args.warmup):
            venv.step(actions)
    for _ in range(args.repeats):
        for name, venv in configs.items():
            blocks[name].append(_block(venv, actions, args.steps, parts.get(name)))
    for venv in configs.values():
        venv.close()
    best = {name: min(b) for name, b in blocks.items()}
    med = {name: statistics.median(b) for name, b in blocks.items()}
    names = list(configs)
    sync_name = names[0]
    t_sync = med[sync_name]
    t_hop = _noop_hop(ray, actions, args.steps)
    load_after = os.getloadavg()
    ray.shutdown()

    print(f"Command: `python benchmarks/ray_scaling.py --env {args.env} --num-envs {n} --steps {args.steps} "
          f"--repeats {args.repeats} --actors {' '.join(map(str, args.actors))}`")
    print(f"Machine: {cpus} CPUs, {platform.python_implementation()} {platform.python_version()}, "
          f"Ray {ray.__version__}; load average (1/5/15 min) before {load_before[0]:.1f}/{load_before[1]:.1f}/"
          f"{load_before[2]:.1f}, after {load_after[0]:.1f}/{load_after[1]:.1f}/{load_after[2]:.1f}.\n")
    print("| configuration | ms / batched step (median) | (best) | env steps/s (median) | vs sync (median) |")
    print("|---|---:|---:|---:|---:|")
    for name in names:
        print(f"| {name} | {med[name] * 1e3:.2f} | {best[name] * 1e3:.2f} | {n / med[name]:.0f} | "
              f"{t_sync / med[name]:.2f}x |")
    print()
    for label in ("ray socket", "ray rpc"):
        name = next((x for x in names if x.startswith(f"{label} x1 ")), None)
        if name is None:
            continue
        paired = statistics.median(r - s for r, s in zip(blocks[name], blocks[sync_name], strict=True))
        print(f"Ray hop overhead, {label} x1 - sync per batched step of {n} envs (one actor): median of paired "
              f"rounds {paired * 1e3:.2f} ms; best - best {(best[name] - best[sync_name]) * 1e3:.2f} ms  ")
        direct = [w - a - m for w, a, m in zip(blocks[name], parts[name]["actor"], parts[name]["merge"], strict=True)]
        print(f"Ray hop, {label} x1 measured directly (step wall time - time inside the actor's call - driver merge,"
              f" median of blocks): {statistics.median(direct) * 1e3:.2f} ms (actor "
              f"{statistics.median(parts[name]['actor']) * 1e3:.2f} ms, merge "
              f"{statistics.median(parts[name]['merge']) * 1e3:.2f} ms per step)  ")
    print(f"No-op Ray actor call (ray.get of a method returning its argument, {n} action strings): "
          f"{t_hop * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

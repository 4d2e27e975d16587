"""How often a step sent right after ``ray.kill`` is still answered by the killed actor (issue 15).

Usage::

    python benchmarks/ray_kill_race.py [--transport ray|socket] [--tries 40]

A :class:`~arl_envs.ray_vector.RayVectorEnv` of 4 math envs in 2 actors steps once, ``ray.kill`` hits actor 0,
and the next step either already sees the death (its sub-envs' slot restarts in that step) or is answered by the
dying actor (the death shows one step later; nothing is lost either way, the episode counters stay consistent).
Prints the count of the second kind. Without ``--transport`` the vector env's default is used, so the same script
runs against an older revision (``git archive <rev> arl_envs | tar -x -C /tmp/old; PYTHONPATH=/tmp/old python
benchmarks/ray_kill_race.py``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import arl_envs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transport", default=None)
    parser.add_argument("--tries", type=int, default=40)
    args = parser.parse_args()

    import ray

    ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address="127.0.0.1")
    extra: dict[str, Any] = {} if args.transport is None else {"transport": args.transport}
    venv = arl_envs.make_vec("arl/math.arithmetic-v1", 4, mode="ray", envs_per_actor=2,
                             actor_options={"num_cpus": 0.25}, max_restarts=args.tries + 1, **extra)
    venv.reset(seed=0)
    late = 0
    for _ in range(args.tries):
        before = int(venv.episode_counters()["restarts"][0])
        venv.step(["x"] * 4)
        ray.kill(venv.actors[0])
        venv.step(["x"] * 4)
        if int(venv.episode_counters()["restarts"][0]) == before:
            late += 1
            venv.step(["x"] * 4)  # now the death shows
    venv.close()
    ray.shutdown()
    print(f"transport={args.transport or 'default'}: the killed actor still answered the next step in {late} of "
          f"{args.tries} tries; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

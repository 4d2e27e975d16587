"""Held-out check of ``arl/code.swe-v0``: the expert and a random agent over test-split instances.

Expert: the instance's fix patch, then submit. Random: uniformly drawn actions from a fixed menu that an agent
without a plan could take (list files, run the tests, read the README, a no-op edit, submit), seeded. Reports
success rate, mean return and episode wall time per agent.

    python benchmarks/swe_agents.py --n 50 --split test
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.envs.code.swe import list_instances

RANDOM_MENU = [
    "<bash>ls</bash>",
    "<run_tests></run_tests>",
    "<read_file>README.rst</read_file>",
    '<write_file path="NOTES.txt">looked around</write_file>',
    "<submit/>",
]


def episode(env: gym.Env, instance_id: str, agent: str, rng: np.random.Generator) -> tuple[bool, float, float]:
    start = time.perf_counter()
    env.reset(seed=0, options={"task_id": instance_id})
    total, done, info = 0.0, False, {}
    while not done:
        action = env.unwrapped.expert_action() if agent == "expert" else RANDOM_MENU[int(rng.integers(len(RANDOM_MENU)))]
        _, r, term, trunc, info = env.step(action)
        total += r
        done = term or trunc
    return bool(info.get("success")), total, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--split", default="test")
    args = ap.parse_args()
    ids = [r["instance_id"] for r in list_instances(args.split)][: args.n]
    env = gym.make("arl_envs:arl/code.swe-v0", split=args.split, max_turns=10)
    print(f"{len(ids)} {args.split}-split instances")
    print("| agent | episodes | success | mean return | episode time p50 (s) | p90 (s) |")
    print("|---|---|---|---|---|---|")
    for agent in ("expert", "random"):
        rng = np.random.default_rng(0)
        rows = [episode(env, i, agent, rng) for i in ids]
        times = sorted(t for _, _, t in rows)
        print(f"| {agent} | {len(rows)} | {sum(s for s, _, _ in rows) / len(rows):.0%} | "
              f"{statistics.mean(r for _, r, _ in rows):+.2f} | {statistics.median(times):.2f} | "
              f"{times[max(0, int(0.9 * len(times)) - 1)]:.2f} |", flush=True)
    env.close()


if __name__ == "__main__":
    main()

"""Env throughput: steps/s per env id with the expert agent in one process, vs a trivial Gymnasium env.

Usage:
    python benchmarks/env_throughput.py [--steps 5000] [ENV_ID ...]

Prints a markdown table: steps/s, µs per step (reset included: each math episode is one step), µs of that spent
in grading, the env overhead (everything but grading) and the ratio to a trivial Discrete env stepped through
``gym.make`` in the same run.
"""

from __future__ import annotations

import argparse
import platform

import arl_envs
from arl_envs.bench import env_throughput


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env_ids", nargs="*", help="ids (default: every registered id)")
    parser.add_argument("--steps", type=int, default=5000, help="expert steps per env")
    args = parser.parse_args()
    rows = env_throughput(args.env_ids or arl_envs.env_ids(), args.steps)
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(f"trivial env: {rows[0]['trivial_us_per_step']:.2f} µs/step\n")
    print("| env id | steps/s | µs/step | grading µs/step | overhead µs/step | ratio to trivial |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['env_id']} | {r['steps_per_s']:.0f} | {r['us_per_step']:.1f} | {r['grading_us_per_step']:.1f} | "
            f"{r['overhead_us']:.1f} | {r['ratio']:.0f}x |"
        )


if __name__ == "__main__":
    main()

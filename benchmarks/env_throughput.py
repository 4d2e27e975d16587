"""Env throughput: steps/s per env id with the expert agent in one process, vs a trivial Gymnasium env.

Usage:
    python benchmarks/env_throughput.py [--steps 5000] [ENV_ID ...]
    python benchmarks/env_throughput.py --math-grading [--rounds 3]
    python benchmarks/env_throughput.py --cpu-vs REV [--rounds 3] [ENV_ID ...]

``--cpu-vs REV``: CPU µs per expert step (``time.process_time``, so load on a shared machine matters much less than
for wall time; the minimum over 5 loops of 2,000 steps, resets included) of this checkout and of git revision
``REV`` (exported with ``git archive`` to a temporary dir), each in a fresh subprocess, alternating for
``--rounds`` rounds; prints the median of the rounds per env and tree.

``--math-grading``: graded steps/s on ``arl/math.dataset-v1`` (GSM8K) with WRONG answers (the grader's real work:
a wrong answer is never the identical-string shortcut): today's path (every answer to math-verify,
``numeric_fast_path=False``) against the exact numeric fast path, single env and ``make_vec`` batches, and GEM's
``MathEnv`` on the same problems and replies (peer; set-up: ``pip install gem-llm pylatexenc``). Rounds are interleaved; the
median per series is reported.

Prints a markdown table: steps/s, µs per step (reset included: each math episode is one step), µs of that spent
in grading, the env overhead (everything but grading) and the ratio to a trivial Discrete env stepped through
``gym.make`` in the same run.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import arl_envs
from arl_envs.bench import env_throughput

MATH_ID = "arl/math.dataset-v1"


def _wrong(gold: str, symbolic: bool) -> str:
    """A wrong reply: gold + 1 as a plain number, or as a sum math-verify must evaluate (``symbolic``)."""
    v = int(gold.replace(",", "")) + 1
    answer = f"{v - 1} + 1 + 1" if symbolic else str(v)
    return f"Adding the amounts step by step gives the total. The final answer is \\boxed{{{answer}}}."


def _timed(fn: Callable[[], int], min_s: float) -> float:
    """Steps/s of ``fn`` (which runs some steps and returns how many), repeated for at least ``min_s`` seconds."""
    fn()  # warm-up: starts grader workers
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_s:
        n += fn()
    return n / (time.perf_counter() - start)


def _single(symbolic: bool, **kwargs: Any) -> Callable[[], int]:
    import gymnasium as gym

    env = gym.make(MATH_ID, **kwargs)
    env.reset(seed=0)

    def run(steps: int = 20) -> int:
        for _ in range(steps):
            env.step(_wrong(env.unwrapped.task.answer, symbolic))
            env.reset()
        return steps

    return run


def _vector(symbolic: bool, num_envs: int, batched: bool, **kwargs: Any) -> Callable[[], int]:
    import gymnasium as gym

    from arl_envs.vector import make_vec

    if batched:
        vec = make_vec(MATH_ID, num_envs, **kwargs)
    else:  # today's sync vector env: sub-envs stepped, and graded, one after another
        vec = gym.vector.SyncVectorEnv([lambda: gym.make(MATH_ID, **kwargs) for _ in range(num_envs)])
    vec.reset(seed=0)

    def run(rounds: int = 4) -> int:
        graded = 0
        for _ in range(rounds):
            live = [e.unwrapped._episode_active for e in vec.envs]
            vec.step([_wrong(e.unwrapped.task.answer, symbolic) for e in vec.envs])
            graded += sum(live)  # next-step autoreset: a sub-env that just ended is reset, not graded
        return graded

    return run


def _gem(symbolic: bool) -> Callable[[], int] | None:
    try:
        from datasets import Dataset
        from gem.envs.math_env import MathEnv as GemMathEnv
    except ImportError:
        return None
    from arl_envs.envs.math.tasks import GSM8K_TEST_PATH, load_dataset

    tasks = load_dataset(str(GSM8K_TEST_PATH))
    data = Dataset.from_list([{"problem": t.question, "answer": t.answer} for t in tasks])
    env = GemMathEnv(dataset=data, seed=0)  # use_mp=True: grading in a 1-process pool with a 1 s timeout
    env.reset()

    def run(steps: int = 20) -> int:
        for _ in range(steps):
            env.step(_wrong(env.answer, symbolic))
            env.reset()
        return steps

    return run


def math_grading(rounds: int, min_s: float, num_envs: int) -> None:
    """Print the ``--math-grading`` table (see the module docstring)."""
    import logging

    logging.getLogger("gem").setLevel(logging.ERROR)
    series: dict[str, Callable[[], int] | None] = {
        "today: single env, every answer to math-verify": _single(False, numeric_fast_path=False),
        "fast path: single env": _single(False),
        f"today: SyncVectorEnv x{num_envs}, math-verify": _vector(False, num_envs, False, numeric_fast_path=False),
        f"fast path: make_vec x{num_envs}": _vector(False, num_envs, True),
        "GEM MathEnv (peer)": _gem(False),
        f"symbolic wrong answers: SyncVectorEnv x{num_envs} (one at a time)": _vector(True, num_envs, False),
        f"symbolic wrong answers: make_vec x{num_envs} (batch over the pool)": _vector(True, num_envs, True),
        "symbolic wrong answers: GEM MathEnv (peer)": _gem(True),
    }
    results: dict[str, list[float]] = {k: [] for k, v in series.items() if v is not None}
    for _ in range(rounds):
        for name, fn in series.items():
            if fn is not None:
                results[name].append(_timed(fn, min_s))
    base = statistics.median(results["today: single env, every answer to math-verify"])
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(f"{MATH_ID}, wrong answers, {rounds} interleaved rounds of >= {min_s} s, median\n")
    print("| series | graded steps/s | vs today (single env) | rounds |")
    print("|---|---:|---:|---|")
    for name, values in results.items():
        med = statistics.median(values)
        print(f"| {name} | {med:,.0f} | {med / base:.1f}x | {', '.join(f'{v:,.0f}' for v in values)} |")
    if "GEM MathEnv (peer)" not in results:
        print("\nGEM MathEnv not installed (pip install gem-llm pylatexenc): peer rows omitted.")


_CPU_SNIPPET = """
import sys, time
import gymnasium as gym
import arl_envs
for env_id in sys.argv[1:]:
    env = gym.make(env_id)
    env.reset(seed=0)
    def run(n):
        for _ in range(n):
            env.step(env.unwrapped.expert_action())
            env.reset()
    run(200)
    best = float("inf")
    for _ in range(5):
        t = time.process_time()
        run(2000)
        best = min(best, (time.process_time() - t) / 2000 * 1e6)
    print(env_id, best)
"""


def cpu_versus(rev: str, env_ids: list[str], rounds: int) -> None:
    """Print the ``--cpu-vs`` table (see the module docstring)."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    here = Path(__file__).resolve().parents[1]
    old = tempfile.mkdtemp(prefix="arl-bench-rev-")
    archive = subprocess.run(["git", "-C", str(here), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
    trees = {f"{rev} (before)": old, "this checkout": str(here)}
    results: dict[str, dict[str, list[float]]] = {name: {e: [] for e in env_ids} for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": tree}
            out = subprocess.run([sys.executable, "-c", _CPU_SNIPPET, *env_ids], cwd=tree, env=env, check=True,
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                env_id, us = line.rsplit(" ", 1)
                results[name][env_id].append(float(us))
    print(f"CPU µs per expert step (reset included), median of {rounds} alternating rounds of min-of-5 loops\n")
    print("| env id | " + " | ".join(trees) + " | speed-up |")
    print("|---|" + "---:|" * (len(trees) + 1))
    for env_id in env_ids:
        before, now = (statistics.median(results[name][env_id]) for name in trees)
        print(f"| {env_id} | {before:.1f} | {now:.1f} | {before / now:.2f}x |")
    import shutil

    shutil.rmtree(old, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env_ids", nargs="*", help="ids (default: every registered id)")
    parser.add_argument("--steps", type=int, default=5000, help="expert steps per env")
    parser.add_argument("--math-grading", action="store_true", help="wrong-answer grading throughput, see above")
    parser.add_argument("--rounds", type=int, default=3, help="--math-grading: interleaved rounds")
    parser.add_argument("--min-s", type=float, default=2.0, help="--math-grading: seconds per series per round")
    parser.add_argument("--num-envs", type=int, default=8, help="--math-grading: vector env size")
    parser.add_argument("--cpu-vs", metavar="REV", help="CPU µs/step of this checkout vs git revision REV")
    args = parser.parse_args()
    if args.cpu_vs:
        cpu_versus(args.cpu_vs, args.env_ids or ["arl/math.countdown-v1", "arl/math.arithmetic-v1",
                                                 "arl/math.dataset-v1"], args.rounds)
        return
    if args.math_grading:
        math_grading(args.rounds, args.min_s, args.num_envs)
        return
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

"""Throughput of the code envs: episodes/s and sandbox time per step (issue 4).

Usage::

    python benchmarks/code_envs.py [--episodes 20] [--humaneval]

For ``arl/code.functions-v0`` (generated tasks) and ``arl/code.repo-v1``, one process, default (bubblewrap)
sandbox, the script plays

* ``expert``: the reference solution / the reverting patch then ``submit``;
* ``wrong``: a fixed wrong solution every turn until the turn limit (functions: 4 submissions, the last one also
  scored on the hidden tests); for repo: ``bash`` reads, a wrong edit, and ``submit``;

and reports episodes/s, steps/s, and the mean wall seconds per step spent inside sandbox runs (the harness run:
start-up, calibration on an episode's first run, the tests) as the env reports them in ``info["timing"]``
and the CPU seconds of that run as the sandbox's cgroup measured them (less sensitive to machine load); ``ms/step``
is the whole ``env.step`` (repo ``bash``/``apply_patch`` runs included). With ``--humaneval``
it also times the batched check of all 164 HumanEval reference solutions (one sandbox call). Prints a markdown
block for ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from typing import Any

import gymnasium as gym

import arl_envs  # noqa: F401 - registers the ids

WRONG_FUNCTION = "```python\ndef solution(*args):\n    return None\n```"


def _play(env: Any, actions: Any, episodes: int) -> dict[str, float]:
    """Play ``episodes`` episodes; ``actions(env, step_index) -> str``. Returns timing statistics."""
    steps = 0
    sandbox_s: list[float] = []
    sandbox_cpu_s: list[float] = []
    step_s: list[float] = []
    start = time.perf_counter()
    for ep in range(episodes):
        env.reset(seed=1000 + ep)
        for i in range(100):
            t0 = time.perf_counter()
            *_, term, trunc, info = env.step(actions(env, i))
            step_s.append(time.perf_counter() - t0)
            steps += 1
            timing = info.get("timing") or {}
            if "sandbox_s" in timing:
                sandbox_s.append(float(timing["sandbox_s"]))
            if "sandbox_cpu_s" in timing:
                sandbox_cpu_s.append(float(timing["sandbox_cpu_s"]))
            if term or trunc:
                break
    wall = time.perf_counter() - start
    return {
        "episodes_per_s": episodes / wall,
        "steps_per_s": steps / wall,
        "steps_per_episode": steps / episodes,
        "step_ms": 1000 * statistics.mean(step_s),
        "harness_ms": 1000 * statistics.mean(sandbox_s) if sandbox_s else float("nan"),
        "harness_runs_per_step": len(sandbox_s) / steps,
        "harness_cpu_ms": 1000 * statistics.mean(sandbox_cpu_s) if sandbox_cpu_s else float("nan"),
    }


def bench_functions(episodes: int) -> dict[str, dict[str, float]]:
    env = gym.make("arl/code.functions-v0")
    try:
        env.reset(seed=0)
        env.step(env.unwrapped.expert_action())  # start the sandbox outside the timing
        return {
            "expert": _play(env, lambda e, i: e.unwrapped.expert_action(), episodes),
            "wrong": _play(env, lambda e, i: WRONG_FUNCTION, episodes),
        }
    finally:
        env.close()


def _repo_wrong(env: Any, i: int) -> str:
    task = env.unwrapped.task
    plan = [
        "<bash>python3 -m unittest discover -s tests -t . 2>&1 | tail -3</bash>",
        f"<read_file>{task.bug_path}</read_file>",
        f"<bash>echo '# touched' >> {task.bug_path}</bash>",
        "<submit/>",
    ]
    return plan[min(i, len(plan) - 1)]


def bench_repo(episodes: int) -> dict[str, dict[str, float]]:
    env = gym.make("arl/code.repo-v1")
    try:
        env.reset(seed=0)
        env.step("<bash>true</bash>")
        return {
            "expert": _play(env, lambda e, i: e.unwrapped.expert_action(), episodes),
            "wrong": _play(env, _repo_wrong, episodes),
        }
    finally:
        env.close()


def bench_humaneval() -> tuple[float, int]:
    from arl_envs.envs.code.harness import Harness, Job
    from arl_envs.envs.code.tasks import load_humaneval
    from arl_envs.sandbox import get_sandbox

    tasks = load_humaneval()
    jobs = [
        Job(source=t.reference, cases=list(t.visible + t.hidden), cpu_limits_s=[5.0] * (len(t.visible) + len(t.hidden)),
            entry_point=t.entry_point, prelude=t.prelude, test_prelude=t.test_prelude)
        for t in tasks
    ]
    with get_sandbox("bwrap") as sb:
        h = Harness(sb)
        h.run(jobs[:1])
        start = time.perf_counter()
        run = h.run(jobs)
        secs = time.perf_counter() - start
    assert run.env_error is None and all(j.n_passed == len(j.cases) for j in run.jobs), "a reference failed"
    return secs, sum(len(j.cases) for j in jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--humaneval", action="store_true", help="also time the 164 HumanEval references")
    args = parser.parse_args()
    results = {"arl/code.functions-v0": bench_functions(args.episodes), "arl/code.repo-v1": bench_repo(args.episodes)}
    cpu = platform.processor() or platform.machine()
    print(f"Command: `python benchmarks/code_envs.py --episodes {args.episodes}"
          f"{' --humaneval' if args.humaneval else ''}`. Date: {time.strftime('%Y-%m-%d')}. "
          f"{os.cpu_count()} CPUs ({cpu}), CPython {platform.python_version()}, bubblewrap sandbox.\n")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Load average during the run (1/5/15 min): {load}.\n")
    print("| env id | agent | episodes/s | steps/episode | ms/step | harness runs/step | harness ms/run | harness CPU ms/run |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for env_id, by_agent in results.items():
        for agent, r in by_agent.items():
            print(f"| {env_id} | {agent} | {r['episodes_per_s']:.2f} | {r['steps_per_episode']:.1f} | "
                  f"{r['step_ms']:.0f} | {r['harness_runs_per_step']:.2f} | {r['harness_ms']:.0f} | "
                  f"{r['harness_cpu_ms']:.0f} |")
    if args.humaneval:
        secs, n_cases = bench_humaneval()
        print(f"\nAll 164 HumanEval reference solutions ({n_cases} test cases), one sandbox call: {secs:.2f} s.")


if __name__ == "__main__":
    main()

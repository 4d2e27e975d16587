"""Throughput of the issue-13 envs, and Coq check time per proof against bare coqc.

Usage:
    python benchmarks/agent_settings.py [--episodes 10] [--coq-lemmas 78] [--sim-queries 10]

* steps/s of the expert and random agents on each new id (env and agent together, one process);
* ``arl/math.formal-v0``: wall seconds of one check (pre-check, coqc on the proof, coqc on the statement check, two
  sandbox runs) for each shipped lemma's reference proof, cache off, p50/p99, against the same two coqc runs
  without the sandbox (a subprocess in a temp dir) measured in the same run;
* ``retriever="simulated"``: seconds per query (3 documents of 48 tokens, the tiny model) against BM25 on the
  same queries.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import arl_envs  # noqa: F401
from arl_envs.agents import make_agent, run_episode

IDS = ("arl/math.formal-v0", "arl/memory.bank-v1", "arl/search.rewrite-v0", "arl/selfplay.propose-solve-v0")


def throughput(env_id: str, episodes: int) -> dict[str, float]:
    env = gym.make(env_id)
    out = {}
    try:
        for agent in ("expert", "random"):
            steps, secs, ok = 0, 0.0, 0
            for i in range(episodes):
                ep = run_episode(env, make_agent(agent, env, seed=i), seed=100 + i)
                steps, secs, ok = steps + ep.steps, secs + ep.seconds, ok + ep.success
            out[agent] = steps / secs
            out[f"{agent}_success"] = ok / episodes
    finally:
        env.close()
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def coq_times(n: int) -> tuple[list[float], list[float]]:
    from arl_envs.envs.math.coq import CoqChecker
    from arl_envs.envs.math.formal import load_lemmas

    lemmas = load_lemmas()[:n]
    checker = CoqChecker()
    sandboxed, bare = [], []
    try:
        for lemma in lemmas:
            CoqChecker._cache.clear()
            src = lemma.skeleton(lemma.proof)
            t = time.perf_counter()
            out = checker.check(lemma, src)
            sandboxed.append(time.perf_counter() - t)
            assert out.accepted, (lemma.id, out.message)
            with tempfile.TemporaryDirectory() as d:
                files = {"Submission.v": src, "ArlCheck.v": lemma.check_file()}
                if lemma.defs:
                    files["ArlDefs.v"] = lemma.defs_file()
                for name, text in files.items():
                    Path(d, name).write_text(text)
                t = time.perf_counter()
                for name in (["ArlDefs.v"] if lemma.defs else []) + ["Submission.v", "ArlCheck.v"]:
                    subprocess.run(["coqc", "-q", name], cwd=d, check=True, capture_output=True)
                bare.append(time.perf_counter() - t)
    finally:
        checker.close()
    return sandboxed, bare


def simulated(n: int) -> tuple[float, float]:
    from arl_envs.envs.search.retrievers import make_retriever
    from arl_envs.envs.search.world import load_world

    world = load_world()
    queries = [q.question for q in world.questions[:n]]
    sim = make_retriever("simulated", world.documents)
    bm25 = make_retriever("bm25", world.documents)
    sim.search("warm up", 3)
    t = time.perf_counter()
    for q in queries:
        sim.search(q, 3)
    t_sim = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for q in queries:
        bm25.search(q, 3)
    return t_sim, (time.perf_counter() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--coq-lemmas", type=int, default=78)
    ap.add_argument("--sim-queries", type=int, default=10)
    args = ap.parse_args()
    print("| env id | expert steps/s | random steps/s | expert success | random success |")
    print("|---|---:|---:|---:|---:|")
    for env_id in IDS:
        r = throughput(env_id, args.episodes)
        print(f"| {env_id} | {r['expert']:.1f} | {r['random']:.1f} | {r['expert_success']:.0%} | {r['random_success']:.0%} |")
    sb, bare = coq_times(args.coq_lemmas)
    print(f"\nCoq check per proof ({len(sb)} reference proofs): sandboxed p50 {pct(sb, 50):.2f} s, p99 {pct(sb, 99):.2f} s, "
          f"mean {statistics.mean(sb):.2f} s; bare coqc (same files, no sandbox) p50 {pct(bare, 50):.2f} s, "
          f"p99 {pct(bare, 99):.2f} s; ratio of medians {pct(sb, 50) / pct(bare, 50):.2f}x")
    t_sim, t_bm25 = simulated(args.sim_queries)
    print(f"\nsimulated retriever (tiny model, 3 docs x 48 tokens): {t_sim * 1000:.0f} ms/query; "
          f"BM25 on the same queries: {t_bm25 * 1000:.2f} ms/query ({t_sim / t_bm25:.0f}x)")


if __name__ == "__main__":
    main()

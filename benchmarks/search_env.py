"""Search env throughput: steps/s of ``arl/search.*-v0`` with the expert and random agents, local and remote.

Usage:
    python benchmarks/search_env.py [--steps 3000] [--n-articles 3000]

Rows:
* ``arl/search.multihop-v1`` (``n_articles`` world, BM25 in process), expert agent and random agent;
* the same with ``retriever="remote"`` against our retrieval server on 127.0.0.1 (one HTTP request per search),
  with the client's keep-alive connection (now) and with a new connection per request (before), in interleaved
  rounds;
* ``arl/search.qa-v1`` (the shipped 200-article sample), expert agent.

Every row steps a ``gym.make`` env (default wrappers included) for ``--steps`` steps, resets included in the
timed loop; agent time (trivial for both agents) is included. Env creation (world load and BM25 index, from the
disk cache after the first run) is timed separately. Prints a markdown block for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import gymnasium as gym

import arl_envs  # noqa: F401  (registers ids)
from arl_envs.agents.agents import ExpertAgent, RandomAgent


def _run(env: gym.Env, agent, steps: int) -> tuple[float, int, int]:
    obs, info = env.reset(seed=0)
    episodes = successes = 0
    start = time.perf_counter()
    for _ in range(steps):
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            episodes += 1
            successes += info["success"]
            obs, info = env.reset()
    return time.perf_counter() - start, episodes, successes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3000, help="timed steps per row")
    parser.add_argument("--n-articles", type=int, default=3000, help="world size of search.multihop-v1")
    parser.add_argument("--remote-rounds", type=int, default=5, help="interleaved rounds of the two remote clients")
    args = parser.parse_args()

    from arl_envs.envs.search.server import RetrievalServer
    from arl_envs.envs.search.world import load_world
    from arl_envs.envs.search.retrievers import BM25Retriever

    rows = []
    t0 = time.perf_counter()
    env = gym.make("arl/search.multihop-v1", n_articles=args.n_articles)
    make_s = time.perf_counter() - t0
    for name, agent in (("expert", ExpertAgent(env)), ("random", RandomAgent(env, seed=0))):
        secs, eps, wins = _run(env, agent, args.steps)
        rows.append(("arl/search.multihop-v1", "bm25 (in process)", name, args.steps / secs, eps, wins, make_s))
        make_s = float("nan")
    env.close()

    server = RetrievalServer(BM25Retriever(load_world(args.n_articles).documents), port=0).start()
    remote_envs = {}
    for keep_alive in (False, True):
        t0 = time.perf_counter()
        env = gym.make("arl/search.multihop-v1", n_articles=args.n_articles, retriever="remote",
                       retriever_url=server.url)
        env.reset(seed=0)
        env.unwrapped.retriever.keep_alive = keep_alive  # False: a new connection per request, as before
        remote_envs[keep_alive] = (env, time.perf_counter() - t0)
    remote: dict[bool, list[tuple[float, int, int]]] = {False: [], True: []}
    for _ in range(args.remote_rounds):  # interleaved rounds: machine noise hits both clients
        for keep_alive, (env, _) in remote_envs.items():
            remote[keep_alive].append(_run(env, ExpertAgent(env), args.steps // args.remote_rounds))
    for keep_alive, (env, made) in remote_envs.items():
        runs = remote[keep_alive]
        secs = sum(r[0] for r in runs)
        label = "remote, keep-alive (now)" if keep_alive else "remote, new connection per request (before)"
        rows.append(("arl/search.multihop-v1", label, "expert", (args.steps // args.remote_rounds) * len(runs) / secs,
                     sum(r[1] for r in runs), sum(r[2] for r in runs), made))
        env.close()
    server.stop()

    t0 = time.perf_counter()
    env = gym.make("arl/search.qa-v1")
    make_s = time.perf_counter() - t0
    secs, eps, wins = _run(env, ExpertAgent(env), args.steps)
    rows.append(("arl/search.qa-v1", "bm25 (in process)", "expert", args.steps / secs, eps, wins, make_s))
    env.close()

    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.python_implementation()} "
          f"{platform.python_version()}; {args.steps} steps per row; multihop world: {args.n_articles} articles")
    print()
    print("| env id | retriever | agent | steps/s | episodes | success | env creation s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for env_id, retr, agent, sps, eps, wins, make_s in rows:
        made = "-" if make_s != make_s else f"{make_s:.2f}"
        print(f"| {env_id} | {retr} | {agent} | {sps:,.0f} | {eps} | {wins / max(eps, 1):.0%} | {made} |")


if __name__ == "__main__":
    main()

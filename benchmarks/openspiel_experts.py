"""Strength of the OpenSpiel ids' experts: win rate of ``expert_action()`` against the ``random`` (and optionally
``mcts``) opponent, seats drawn from the seed, per id of ``arl_envs.registration.OPENSPIEL_GAMES``.

``python benchmarks/openspiel_experts.py [--games 20] [--opponents random mcts] [name ...]``; prints a Markdown
table (win / draw / loss counts, mean seconds per episode).
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.registration import OPENSPIEL_GAMES
from arl_envs.envs.multiagent.openspiel_experts import CFR_ITERATIONS


def play(env_id: str, opponent: str, seed: int) -> str:
    env = gym.make(env_id, opponent=opponent)
    env.reset(seed=seed)
    done, info = False, {}
    while not done:
        _, _, term, trunc, info = env.step(env.unwrapped.expert_action())
        done = term or trunc
    env.close()
    return info.get("outcome", "void")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=[row[0] for row in OPENSPIEL_GAMES])
    ap.add_argument("--games", type=int, default=20)
    ap.add_argument("--opponents", nargs="+", default=["random"])
    args = ap.parse_args()
    experts = {row[0]: (row[2], row[3], row[4]) for row in OPENSPIEL_GAMES}
    print("| id | expert | opponent | episodes | win | draw | loss | win rate | s/episode |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name in args.names:
        kind, sims, hands = experts[name]
        label = {"solver": "exact solver", "cfr": f"CFR+ {CFR_ITERATIONS} iterations"}.get(kind, f"MCTS {sims} sims")
        if hands > 1:
            label += f", match of {hands} hands"
        for opponent in args.opponents:
            t = time.perf_counter()
            outcomes = [play(f"arl/multiagent.{name}-v0", opponent, seed) for seed in range(args.games)]
            dt = (time.perf_counter() - t) / args.games
            w, d, lo = (outcomes.count(k) for k in ("win", "draw", "loss"))
            print(f"| arl/multiagent.{name}-v0 | {label} | {opponent} | {args.games} | {w} | {d} | {lo} | "
                  f"{w / args.games:.0%} | {dt:.1f} |", flush=True)


if __name__ == "__main__":
    main()

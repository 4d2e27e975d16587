"""Where branching helps: a noisy base policy alone vs ``LookaheadAgent`` over the same policy, one id per domain.

Base policy ("noisy expert"): the env's scripted expert action with probability ``--p-expert``, else a random
well-formed tool call (``RandomAgent(p_tool_call=1)``). Lookahead: ``--k`` candidates drawn from that policy per
turn, each scored on a branch (snapshot/restore) by its step reward plus ``--horizon`` further steps of the same
policy; the best is played. Both play the same seeds, interleaved per seed. Reported: success rate, mean return,
env steps on the played env and on branches (the cost of lookahead).

Usage::

    python benchmarks/lookahead.py --episodes 20
    python benchmarks/lookahead.py arl/web.login-v0 arl/code.functions-v0 --episodes 5
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import Any

import gymnasium as gym
import numpy as np

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.agents import Agent, ExpertAgent, LookaheadAgent, RandomAgent, run_episode

DOMAIN_IDS = (
    "arl/math.arithmetic-v1",
    "arl/search.multihop-v1",
    "arl/memory.bank-v1",
    "arl/multiagent.tictactoe-v1",
    "arl/embodied.sokoban-v0",
    "arl/embodied.household-v0",
)


class NoisyExpert(Agent):
    """The expert's action with probability ``p_expert``, else a random well-formed tool call."""

    def __init__(self, env: gym.Env, p_expert: float, seed: int) -> None:
        self.expert = ExpertAgent(env)
        self.random = RandomAgent(env, seed=seed, p_tool_call=1.0)
        self.p_expert = p_expert
        self.rng = np.random.default_rng(seed + 10_000)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if self.rng.random() < self.p_expert:
            return self.expert.act(observation, info)
        return self.random.act(observation, info)


def run(env_id: str, episodes: int, p_expert: float, k: int, horizon: int) -> dict[str, Any]:
    env = gym.make(env_id)
    out: dict[str, Any] = {"id": env_id}
    try:
        stats = {"base": [], "lookahead": []}
        branch_steps = 0
        start = time.perf_counter()
        for seed in range(episodes):
            base = NoisyExpert(env, p_expert, seed)
            stats["base"].append(run_episode(env, base, seed=1000 + seed))
            la = LookaheadAgent(env, NoisyExpert(env, p_expert, seed), k=k, horizon=horizon,
                                rollout=lambda b, s=seed: NoisyExpert(b, p_expert, s + 1))
            try:
                stats["lookahead"].append(run_episode(env, la, seed=1000 + seed))
                branch_steps += la.branch_steps
            finally:
                la.close()
        for name, eps in stats.items():
            out[f"{name}_success"] = float(np.mean([e.success for e in eps]))
            out[f"{name}_return"] = float(np.mean([e.total_reward for e in eps]))
            out[f"{name}_steps"] = int(sum(e.steps for e in eps))
        out["branch_steps"] = branch_steps
        out["seconds"] = time.perf_counter() - start
    finally:
        env.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*", default=list(DOMAIN_IDS))
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--p-expert", type=float, default=0.3)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--horizon", type=int, default=3)
    args = ap.parse_args(argv)
    hold: contextlib.AbstractContextManager = contextlib.nullcontext()
    if any(i.startswith("arl/web.") for i in args.ids):
        from arl_envs.envs.web.browser import hold_browser

        hold = hold_browser()
    print(f"episodes={args.episodes} p_expert={args.p_expert} k={args.k} horizon={args.horizon}")
    print("| env id | base success | lookahead success | base return | lookahead return | played steps (base / "
          "lookahead) | branch steps | s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with hold:
        for env_id in args.ids:
            r = run(env_id, args.episodes, args.p_expert, args.k, args.horizon)
            print(f"| {env_id} | {r['base_success']:.2f} | {r['lookahead_success']:.2f} | {r['base_return']:.3f} | "
                  f"{r['lookahead_return']:.3f} | {r['base_steps']} / {r['lookahead_steps']} | {r['branch_steps']} | "
                  f"{r['seconds']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

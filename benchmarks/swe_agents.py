"""Held-out check of ``arl/code.swe-v0``: the expert, a random agent and the scripted search-and-patch agent.

Expert: the instance's fix patch, then submit. Random: uniformly drawn actions from a fixed menu that an agent
without a plan could take (list files, run the tests, read the README, a no-op edit, submit), seeded. Scripted:
:class:`arl_envs.agents.search_patch.SearchPatchAgent` (traceback, grep, one-token reversals, tests; env tools
only). The instances are taken round-robin over the split's projects and, within each, over the mutation
families (:func:`round_robin`); for each instance
the agents play one after the other, so a run cut short has the same instances for every agent. Each episode is
appended to ``--out`` (JSON lines) as it ends; the summary table is computed from that file (``--summary`` only
prints it). A second worker can take the tail of the list (``--start``) into its own file; ``--summary`` over the
concatenated files counts each (instance, agent) once.

    python benchmarks/swe_agents.py --n 50 --split test --out /tmp/swe_agents.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import gymnasium as gym
import numpy as np

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.agents.agents import Agent, ExpertAgent, run_episode
from arl_envs.envs.code.swe import list_instances
from arl_envs.agents.search_patch import SearchPatchAgent

RANDOM_MENU = [
    "<bash>ls</bash>",
    "<run_tests></run_tests>",
    "<read_file>README.rst</read_file>",
    '<write_file path="NOTES.txt">looked around</write_file>',
    "<submit/>",
]
AGENTS = ("expert", "random", "scripted")


class MenuAgent(Agent):
    """Uniform over :data:`RANDOM_MENU`."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: str, info: dict) -> str:
        return RANDOM_MENU[int(self.rng.integers(len(RANDOM_MENU)))]


def _interleave(groups: list[list[dict]]) -> list[dict]:
    queues = [list(g) for g in groups]
    out: list[dict] = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out


def round_robin(split: str, n: int) -> list[dict]:
    """Up to ``n`` instances of ``split``: within each project round-robin over the mutation families (sorted ids
    within a family), then alternating over the projects (so a prefix covers every family of every project)."""
    by_project: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for r in list_instances(split):
        by_project[r["project"]][r["family"]].append(r)
    per_project = [_interleave([fams[f] for f in sorted(fams)]) for _, fams in sorted(by_project.items())]
    return _interleave(per_project)[:n]


def summary(rows: list[dict]) -> str:
    lines = ["| agent | episodes | success | mean return | mean steps | episode time p50 (s) | p90 (s) |",
             "|---|---|---|---|---|---|---|"]
    for agent in AGENTS:
        rs = [r for r in rows if r["agent"] == agent]
        if not rs:
            continue
        times = sorted(r["seconds"] for r in rs)
        lines.append(f"| {agent} | {len(rs)} | {sum(r['success'] for r in rs) / len(rs):.0%} | "
                     f"{statistics.mean(r['return'] for r in rs):+.2f} | "
                     f"{statistics.mean(r['steps'] for r in rs):.1f} | {statistics.median(times):.2f} | "
                     f"{times[max(0, int(0.9 * len(times)) - 1)]:.2f} |")
    by_family: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        if r["agent"] == "scripted":
            by_family[r["family"]].append(r["success"])
    if by_family:
        lines.append("")
        lines.append("scripted by family: " + ", ".join(
            f"{f} {sum(v)}/{len(v)}" for f, v in sorted(by_family.items())))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--split", default="test")
    ap.add_argument("--max-turns", type=int, default=30)
    ap.add_argument("--start", type=int, default=0, help="Skip the first START instances (a second worker).")
    ap.add_argument("--out", default="swe_agents.jsonl", help="Episode rows (JSON lines), appended; resumed from.")
    ap.add_argument("--agents", nargs="+", default=list(AGENTS), choices=AGENTS, help="Which agents play.")
    ap.add_argument("--summary", action="store_true", help="Only print the table of --out.")
    args = ap.parse_args()
    out = Path(args.out)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    rows = list({(r["instance_id"], r["agent"]): r for r in reversed(rows)}.values())[::-1]  # first of duplicates
    if not args.summary:
        done = {(r["instance_id"], r["agent"]) for r in rows}
        instances = round_robin(args.split, args.n)[args.start:]
        env = gym.make("arl_envs:arl/code.swe-v0", split=args.split, max_turns=args.max_turns)
        agents: dict[str, Agent] = {"expert": ExpertAgent(env), "random": MenuAgent(0),
                                    "scripted": SearchPatchAgent(env)}
        print(f"{len(instances)} {args.split}-split instances, max_turns={args.max_turns}", flush=True)
        with out.open("a") as f:
            for inst in instances:
                for name in args.agents:
                    if (inst["instance_id"], name) in done:
                        continue
                    start = time.perf_counter()
                    ep = run_episode(env, agents[name], seed=0, options={"task_id": inst["instance_id"]})
                    row = {"instance_id": inst["instance_id"], "family": inst["family"], "agent": name,
                           "success": ep.success, "return": ep.total_reward, "steps": ep.steps,
                           "seconds": round(time.perf_counter() - start, 3)}
                    rows.append(row)
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    print(json.dumps(row), flush=True)
        env.close()
    sample = {r["instance_id"] for r in round_robin(args.split, args.n)}
    rows = [r for r in rows if r["instance_id"] in sample]
    print(f"{len({r['instance_id'] for r in rows})} of the {len(sample)} instances of the sample played")
    print(summary(rows))


if __name__ == "__main__":
    main()

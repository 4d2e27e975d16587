"""Episode-level GRPO against branched step-level (GiGPO-style) GRPO at an equal env-step budget, over seeds.

    python benchmarks/gigpo_branching.py [--env arl/embodied.frozenlake-v0] [--seeds 0 1 2] [--budget 6000]
        [--branch-k 4] [--branch-points 2] [--model tiny] [--out runs/gigpo_branching] [-s KEY=VALUE ...]

Per seed, in one process:

1. one SFT phase of the tiny model on ``sft_episodes`` expert episodes (the settings of
   ``benchmarks/grpo_multiturn.py``, with 8 x 8 episodes per GRPO step); held-out evaluation after it;
2. two GRPO arms from those SFT weights, each with a fresh optimiser and the same task-seed and sampling streams:
   ``episode`` (``advantage_level="episode"``) and ``branch`` (``advantage_level="step"``, ``branch_k`` actions
   sampled at one snapshotted turn of ``branch_points`` episodes per group, :mod:`arl_baselines.grpo.branching`);
3. the arms are interleaved step by step: the arm that has used fewer env steps so far (``env_steps`` of
   metrics.jsonl: every ``env.step`` of trunk and branch episodes; held-out evaluation not counted) takes the
   next GRPO step, until each has used ``--budget`` env steps (the last step may go past it; the exact counts are
   reported);
4. held-out evaluation of each arm (``eval_tasks`` maps x ``eval_samples`` sampled episodes, the same seeds and
   sampling stream for both arms).

Writes ``OUT/results.json`` and prints a markdown table for benchmarks/RESULTS.md (held-out success = pass@1 at
temperature 1). Run seeds in parallel as separate processes (``--seeds 0``, ``--seeds 1``, ...) to use more cores;
``--merge`` then prints the table over ``OUT/seed*.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "baselines", ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from grpo_multiturn import SETTINGS as MULTITURN_SETTINGS  # noqa: E402

#: ``benchmarks/grpo_multiturn.py``'s FrozenLake settings with 8 x 8 episodes per step (sized for 2 CPU cores).
SETTINGS: dict[str, Any] = {**MULTITURN_SETTINGS, "num_groups": 8, "group_size": 8, "num_threads": 1}
ARMS = ("episode", "branch")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def run_seed(env_id: str, seed: int, budget: int, out: Path, settings: dict[str, Any], branch: dict[str, Any],
             model: str = "tiny") -> dict[str, Any]:
    """Both arms of one seed from one SFT checkpoint; returns their held-out evaluations, env steps and timings."""
    import torch

    from arl_baselines.grpo.train import _trainer

    arm_settings = {"episode": {"advantage_level": "episode"}, "branch": {"advantage_level": "step", **branch}}
    trs = {a: _trainer(env_id, model, out / f"seed{seed}_{a}", {**settings, **arm_settings[a], "seed": seed})
           for a in ARMS}
    t0 = time.perf_counter()
    trs["episode"].sft()
    sft_s = time.perf_counter() - t0
    after = trs["episode"].evaluate("after_sft")
    trs["branch"].policy.model.load_state_dict(trs["episode"].sft_snapshot()["model"])
    for tr in trs.values():
        tr.setup_grpo()
        tr.task_rng = np.random.default_rng(seed)  # the same training maps, step for step
        tr.gen = torch.Generator(device=tr.device).manual_seed(seed)
    env_steps = dict.fromkeys(ARMS, 0)
    wall = dict.fromkeys(ARMS, 0.0)
    steps = dict.fromkeys(ARMS, 0)
    while min(env_steps.values()) < budget:
        arm = min((a for a in ARMS if env_steps[a] < budget), key=lambda a: env_steps[a])
        t = time.perf_counter()
        row = trs[arm].grpo_step()
        wall[arm] += time.perf_counter() - t
        env_steps[arm] += int(row["env_steps"])
        steps[arm] += 1
        print(f"seed {seed} {arm} step {steps[arm]} env_steps {env_steps[arm]} success {row['success']:.3f} "
              f"{wall[arm]:.0f}s", flush=True)
    res: dict[str, Any] = {"seed": seed, "after_sft": after, "sft_s": sft_s}
    for a in ARMS:
        trs[a].gen = torch.Generator(device=trs[a].device).manual_seed(seed + 1)  # same evaluation samples
        ev = trs[a].evaluate("final")
        res[a] = {"eval": ev, "env_steps": env_steps[a], "grpo_steps": steps[a], "grpo_s": wall[a],
                  "branch_episodes": sum(r["branch_episodes"] for r in trs[a].history)}
        trs[a].finish()
    return res


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of per-seed results and the mean ± std over seeds."""
    lines = ["| seed | after SFT | episode-level | branched step-level | diff | env steps (ep / br) | GRPO steps "
             "(ep / br) | GRPO wall s (ep / br) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        e, b = r["episode"], r["branch"]
        lines.append(f"| {r['seed']} | {r['after_sft']['success']:.3f} | {e['eval']['success']:.3f} | "
                     f"{b['eval']['success']:.3f} | {b['eval']['success'] - e['eval']['success']:+.3f} | "
                     f"{e['env_steps']} / {b['env_steps']} | {e['grpo_steps']} / {b['grpo_steps']} | "
                     f"{e['grpo_s']:.0f} / {b['grpo_s']:.0f} |")

    def ms(xs: list[float]) -> str:
        return f"{statistics.fmean(xs):.3f} ± {statistics.stdev(xs) if len(xs) > 1 else 0.0:.3f}"

    sa = [r["after_sft"]["success"] for r in rows]
    se = [r["episode"]["eval"]["success"] for r in rows]
    sb = [r["branch"]["eval"]["success"] for r in rows]
    lines.append(f"| mean ± std | {ms(sa)} | {ms(se)} | {ms(sb)} | {ms([b - e for b, e in zip(sb, se)])} | | | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run ``--seeds`` (or merge earlier runs with ``--merge``); returns the per-seed results."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="arl/embodied.frozenlake-v0")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--budget", type=int, default=6000, help="env steps per arm")
    ap.add_argument("--branch-k", type=int, default=4)
    ap.add_argument("--branch-points", type=int, default=2)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--out", default="runs/gigpo_branching")
    ap.add_argument("--merge", action="store_true", help="print the table over OUT/seed*.json and exit")
    ap.add_argument("-s", "--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a GRPOConfig field (JSON value), e.g. -s lr=3e-4")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        rows = [json.loads(p.read_text()) for p in sorted(out.glob("seed*.json"))]
        if not rows:
            print(f"no seed*.json under {out}", file=sys.stderr)
            sys.exit(2)
    else:
        settings = dict(SETTINGS)
        for item in args.set:
            key, _, value = item.partition("=")
            settings[key] = _value(value)
        branch = {"branch_k": args.branch_k, "branch_points": args.branch_points}
        rows = []
        for s in args.seeds:
            r = run_seed(args.env, s, args.budget, out, settings, branch, args.model)
            r.update(env=args.env, model=args.model, budget=args.budget, settings=settings, branch_settings=branch)
            (out / f"seed{s}.json").write_text(json.dumps(r, indent=2, default=str))
            rows.append(r)
    print(table(rows))
    return rows


if __name__ == "__main__":
    main()

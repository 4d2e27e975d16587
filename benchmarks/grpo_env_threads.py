"""GRPO rollouts with envs stepped from threads vs in turn (``GRPOConfig.env_threads``, issue 16 item 1).

Command (what benchmarks/RESULTS.md records; a quiet machine, one torch thread)::

    python benchmarks/grpo_env_threads.py [--threads 4] [--rounds 2] [--steps 4]

On ``arl/code.functions-v0`` with its tiny defaults, from the shipped ``code_sft.pt`` (weights only), alternating
``env_threads=1`` and ``env_threads=N`` ``--rounds`` times: a 32-episode rollout (8 tasks x 4, fixed seeds and
sampling generator; every env step grades the policy's code in a bubblewrap sandbox), then ``--steps`` GRPO steps
and a held-out evaluation. Prints seconds per part, the ratios (in turn / threaded) and whether the rollouts of both
settings hold the same episodes (token ids, rewards, success); writes ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "baselines")]

ENV = "arl/code.functions-v0"


def measure(env_threads: int, steps: int, out: Path) -> dict[str, Any]:
    """One round: rollout, ``steps`` GRPO steps and an evaluation with ``env_threads``; seconds and the episodes."""
    import torch

    from arl_baselines.grpo.train import CODE_SFT_CHECKPOINT, _trainer

    tr = _trainer(ENV, "tiny", out / f"threads{env_threads}",
                  {"progress": False, "log_samples": 0, "num_threads": 1, "env_threads": env_threads})
    try:
        tr.load_sft_checkpoint(CODE_SFT_CHECKPOINT, demonstrations=False)
        tr.engine.run([1, 2], 2, generator=torch.Generator().manual_seed(0))  # warm-up: sandbox and decoder
        t = time.perf_counter()
        eps = tr.engine.run(list(range(100, 108)), 4, generator=torch.Generator().manual_seed(1))
        rollout_s = time.perf_counter() - t
        tr.setup_grpo()
        t = time.perf_counter()
        for _ in range(steps):
            tr.grpo_step()
        step_s = (time.perf_counter() - t) / steps
        t = time.perf_counter()
        tr.evaluate("bench")
        eval_s = time.perf_counter() - t
    finally:
        tr.engine.close()
    return {"rollout_s": rollout_s, "grpo_step_s": step_s, "eval_s": eval_s, "eval_episodes": len(tr.eval_seeds)
            * tr.cfg.eval_samples, "episodes": [(e.ids, e.reward, e.success) for e in eps]}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the comparison; returns (and writes) the result."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=4, help="env_threads of the threaded setting")
    ap.add_argument("--rounds", type=int, default=2, help="alternations of the two settings")
    ap.add_argument("--steps", type=int, default=4, help="GRPO steps timed per round")
    ap.add_argument("--out", default="runs/grpo-env-threads", help="output directory")
    args = ap.parse_args(argv)
    out = Path(args.out)
    rows: dict[int, list[dict[str, Any]]] = {1: [], args.threads: []}
    for r in range(args.rounds):
        for th in (1, args.threads):
            row = measure(th, args.steps, out)
            rows[th].append(row)
            print(f"round {r} env_threads={th}: rollout {row['rollout_s']:.2f} s, GRPO step {row['grpo_step_s']:.2f} s,"
                  f" evaluation ({row['eval_episodes']} episodes) {row['eval_s']:.1f} s", flush=True)
    first = rows[1][0]["episodes"]
    same = all(row["episodes"] == first for rs in rows.values() for row in rs)
    med = {th: {k: statistics.median(row[k] for row in rs) for k in ("rollout_s", "grpo_step_s", "eval_s")}
           for th, rs in rows.items()}
    res = {"env": ENV, "threads": args.threads, "rounds": args.rounds, "median_s": med, "same_episodes": same,
           "ratio_in_turn_over_threaded": {k: med[1][k] / med[args.threads][k] for k in med[1]}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "result.json").write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v for k, v in res.items()}, indent=2))
    return res


if __name__ == "__main__":
    main()

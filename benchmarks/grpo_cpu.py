"""GRPO baseline on CPU: fast-decode vs HF-generate tokens/s, and a small learning recipe over seeds.

    python benchmarks/grpo_cpu.py [--out runs/grpo_cpu] [--skip-decode] [--skip-learning] [--skip-demo] [--seeds 3] [--learn-seeds 3]

Prints a markdown block for benchmarks/RESULTS.md (also written to ``OUT/results.md``). Sizes are those the CPU
tests use, so the numbers say what CI pays:

1. Decoding on CPU: :class:`~arl_baselines.grpo.decode.FastDecoder` eager (the static-cache loop rollouts use on CPU)
   and compiled (inductor; no CUDA graphs on CPU) against ``model.generate``, batch 64, 64 sampled tokens, for
   ``tiny`` and ``tiny-S``. On CPU the model's arithmetic dominates, so expect ~1x; the gap is a GPU matter.
2. A small learning recipe (tiny, 150 SFT
   steps on 32 demonstrations, then 4 GRPO steps vs more SFT for the same wall time, on arithmetic difficulty 1,
   integer kind) over ``--learn-seeds`` seeds: held-out success before, after SFT, SFT-only and SFT+GRPO.
3. The demo (``arl_baselines.grpo.train.demo_run``) over ``--seeds`` seeds: from the shipped SFT checkpoint (a
   demonstrator wrong on 30% of its demonstrations, imitated to its plateau), SFT-only vs SFT+GRPO held-out success
   at equal compute, mean and spread. The seeds are continuation seeds (GRPO sampling, SFT data order, evaluation
   sampling); the checkpoint is one SFT run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DECODE_SIZES = ("tiny", "tiny-S")
DECODE = {"batch_size": 64, "prompt_len": 32, "new_tokens": 64}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the CPU benchmark; returns the results dict."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="runs/grpo_cpu")
    ap.add_argument("--skip-learning", action="store_true")
    ap.add_argument("--skip-decode", action="store_true")
    ap.add_argument("--skip-demo", action="store_true")
    ap.add_argument("--seeds", type=int, default=3, help="demo seeds (SFT-only vs SFT+GRPO per seed)")
    ap.add_argument("--learn-seeds", type=int, default=3, help="seeds of the small learning recipe")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = ap.parse_args(argv)

    import torch

    from arl_baselines.grpo.decode import benchmark_decoding
    from arl_baselines.grpo.policy import load_policy
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "date": time.strftime("%Y-%m-%d"),
        "decode": [],
    }
    for size in DECODE_SIZES if not args.skip_decode else ():
        p = load_policy(size)
        for compiled in (False, True):
            r = benchmark_decoding(p.model.eval(), pad_id=p.pad_id, compile=compiled, repeats=2, **DECODE)
            r["model"], r["parameters"] = size, p.num_parameters()
            res["decode"].append(r)
            print("decode:", json.dumps(r), flush=True)
    if not args.skip_learning:
        res["learning"] = learning_seeds(out, args.learn_seeds)
        print("learning:", json.dumps(res["learning"]), flush=True)
    if not args.skip_demo:
        res["demo"] = demo_seeds(out, args.seeds)
        print("demo:", json.dumps(res["demo"]), flush=True)
    (out / "results.json").write_text(json.dumps(res, indent=2))
    md = markdown(res)
    (out / "results.md").write_text(md)
    print(md)
    return res


def learning_seeds(out: Path, seeds: int) -> dict[str, Any]:
    """A small learning recipe (tiny, arithmetic d1
    integer, 150 SFT steps on 32 demonstrations, then 4 GRPO steps vs more SFT for the same wall time) for seeds
    0..seeds-1: held-out success before, after SFT, SFT-only and SFT+GRPO per seed (the test's margins come from
    these)."""
    from arl_baselines.grpo.train import sft_vs_grpo
    from arl_baselines.grpo.config import ARITHMETIC_LEARNING_RECIPE as LEARN

    MATH = "arl/math.arithmetic-v1"

    per = []
    for seed in range(seeds):
        t, load0 = time.perf_counter(), os.getloadavg()[0]
        r = sft_vs_grpo(MATH, "tiny", out / f"learn-seed{seed}", grpo_steps=4, seed=seed, **LEARN)
        per.append(
            {
                "seed": seed,
                "before": round(r["grpo"]["evals"]["before"]["success"], 3),
                "after_sft": round(r["after_sft"]["success"], 3),
                "sft_only": round(r["sft_only"]["success"], 3),
                "sft_grpo": round(r["sft_grpo"]["success"], 3),
                "sft_extra_steps": r["sft_extra_steps"],
                "wall_s": round(time.perf_counter() - t, 1),
                "load_avg": f"{load0:.1f}-{os.getloadavg()[0]:.1f}",
            }
        )
        print("learning seed:", json.dumps(per[-1]), flush=True)
    return {"per_seed": per}


def demo_seeds(out: Path, seeds: int) -> dict[str, Any]:
    """The demo's comparison (``demo_run``: from the shipped SFT checkpoint, GRPO vs more SFT at equal wall time)
    for seeds 0..seeds-1: per-seed held-out success of both branches, their mean and standard deviation."""
    import statistics

    from arl_baselines.grpo.train import demo_run

    per = []
    for seed in range(seeds):
        t, load0 = time.perf_counter(), os.getloadavg()[0]
        d = demo_run(out / f"demo-seed{seed}", progress=False, seed=seed)
        per.append(
            {
                "seed": seed,
                "demonstrator": round(d["demonstrator_success"], 3),
                "after_sft": round(d["after_sft"]["success"], 3),
                "sft_only": round(d["success_sft_only"], 3),
                "sft_grpo": round(d["success_sft_grpo"], 3),
                "lift": round(d["lift"], 3),
                "grpo_s": round(d["grpo_s"], 1),
                "sft_extra_steps": d["sft_extra_steps"],
                "wall_s": round(time.perf_counter() - t, 1),
                "load_avg": f"{load0:.1f}-{os.getloadavg()[0]:.1f}",
            }
        )
        print("demo seed:", json.dumps(per[-1]), flush=True)

    def stat(key: str) -> tuple[float, float]:
        vals = [r[key] for r in per]
        return round(statistics.mean(vals), 3), round(statistics.stdev(vals), 3) if len(vals) > 1 else 0.0

    return {"per_seed": per, **{k: stat(k) for k in ("after_sft", "sft_only", "sft_grpo", "lift")}}


def markdown(r: dict[str, Any]) -> str:
    """The RESULTS.md block."""
    lines = [
        f"### GRPO baseline on CPU - {r['date']}",
        "",
        f"Command: `python benchmarks/grpo_cpu.py`. Machine: {r['machine']}; Python {r['python']}, torch {r['torch']}, "
        f"transformers {r['transformers']}.",
        "",
    ]
    if r["decode"]:
        lines += [
            "| model | params | batch | new tokens | FastDecoder | FastDecoder tok/s | HF generate tok/s | speedup |",
            "|---|---|---|---|---|---|---|---|",
        ]
    for d in r["decode"]:
        how = f"compiled (inductor; first call {d['fast_warmup_s']} s)" if d["fast_compiled"] else "eager"
        lines.append(
            f"| {d['model']} | {d['parameters']:,} | {d['batch_size']} | {d['new_tokens']} | {how} | "
            f"{d['fast_tokens_per_s']:,.0f} | {d['generate_tokens_per_s']:,.0f} | {d['speedup']}x |"
        )
    if "learning" in r:
        lines += [
            "",
            "Small learning recipe (tiny, "
            "arithmetic d1 integer, 150 SFT steps on 32 demonstrations, then 4 GRPO steps of 32 episodes vs more SFT "
            "for the same wall time), held-out success (32 tasks x 4 samples, temperature 1):",
            "",
            "| seed | before | after SFT | SFT-only | SFT+GRPO | extra SFT steps | wall s | load avg (1 min) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for x in r["learning"]["per_seed"]:
            lines.append(
                f"| {x['seed']} | {x['before']} | {x['after_sft']} | {x['sft_only']} | {x['sft_grpo']} | "
                f"{x['sft_extra_steps']} | {x['wall_s']} | {x['load_avg']} |"
            )
    if "demo" in r:
        d = r["demo"]
        from arl_baselines.grpo.train import DEMO_SETTINGS

        lines += [
            "",
            "Demo (`demo_run`: tiny, arithmetic d1 integer, from the shipped SFT checkpoint (3000 steps on 2048 "
            f"demonstrations, {DEMO_SETTINGS['sft_error_rate']:.0%} of them a wrong answer; demonstrator success "
            f"{d['per_seed'][0]['demonstrator']}), then {DEMO_SETTINGS['grpo_steps']} GRPO steps of "
            f"{DEMO_SETTINGS['num_groups']} x {DEMO_SETTINGS['group_size']} episodes at lr {DEMO_SETTINGS['lr']} vs "
            "more SFT for the same wall time; held-out success over "
            f"{DEMO_SETTINGS['eval_tasks']} tasks x {DEMO_SETTINGS['eval_samples']} samples at temperature 1), "
            f"mean ± std over {len(d['per_seed'])} continuation seeds: after SFT {d['after_sft'][0]} ± {d['after_sft'][1]}; "
            f"SFT-only {d['sft_only'][0]} ± {d['sft_only'][1]} vs SFT+GRPO {d['sft_grpo'][0]} ± {d['sft_grpo'][1]} "
            f"(lift {d['lift'][0]} ± {d['lift'][1]}).",
            "",
            "| seed | after SFT | SFT-only | SFT+GRPO | lift | GRPO s | extra SFT steps | wall s | load avg (1 min) |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for x in d["per_seed"]:
            lines.append(
                f"| {x['seed']} | {x['after_sft']} | {x['sft_only']} | {x['sft_grpo']} | {x['lift']:+} | {x['grpo_s']} | "
                f"{x['sft_extra_steps']} | {x['wall_s']} | {x.get('load_avg', '')} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

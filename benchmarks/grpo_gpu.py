"""GRPO baseline benchmark: fast decode vs HF generate, and SFT -> GRPO on a one-step and a multi-turn env.

Run on one GPU (the issue's target: one H200, Python 3.12, torch 2.11, transformers 5.17; under 10 minutes)::

    python benchmarks/grpo_gpu.py --out runs/grpo_gpu

or end-to-end on CPU at a tiny size (what CI machines and GPU-less sessions can check)::

    python benchmarks/grpo_gpu.py --cpu-tiny --out runs/grpo_cpu_tiny

It prints and writes ``OUT/results.json``, ``OUT/results.md`` (a block for benchmarks/RESULTS.md) and
``OUT/grpo_benchmark.png``; every training run keeps its own directory (``metrics.jsonl``, ``curves.png``...).

What it measures:

1. Decoding: tokens/s of :class:`~arl_baselines.grpo.decode.FastDecoder` (static KV cache; decode step compiled with
   ``torch.compile(mode="reduce-overhead")`` on CUDA) against ``model.generate`` on the same model in the same
   process: ``tiny-L`` (10.7M parameters), batch 256, 256 sampled tokens (CPU: ``tiny``, batch 16, 32 tokens).
2. Training, per env and seed: SFT on expert trajectories, evaluation on held-out seeds ("SFT-only"), GRPO,
   evaluation again. Envs: ``arl/math.arithmetic-v1`` (difficulty 1, integer kind; one step) and the same task
   with ``max_attempts=3`` (multi-turn: a wrong answer gets "Incorrect" and another try). Runs go in parallel
   worker processes (GPU: all six at once on the one GPU; CPU: one at a time).

Targets (issue 6): GRPO lifts held-out success over SFT-only by >= 15 points (one step) and >= 10 points
(multi-turn), mean of 3 seeds; fast decode >= 25x ``generate`` at batch 256.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MATH = "arl/math.arithmetic-v1"
TASK_KW: dict[str, Any] = {"difficulty": 1, "kinds": ["integer"]}
ENVS: dict[str, tuple[str, dict[str, Any]]] = {
    "one-step": (MATH, dict(TASK_KW)),
    "multi-turn": (MATH, {**TASK_KW, "max_attempts": 3}),
}
TARGET_LIFT = {"one-step": 0.15, "multi-turn": 0.10}
TARGET_SPEEDUP = 25.0

#: GPU recipe: tiny-S, SFT stopped at the edge of competence (0.63-0.66 held-out success on CPU at this length),
#: then GRPO with 512 episodes per step at lr 5e-5 (on CPU: +8 points in 100 such steps). Every run stops GRPO once
#: it has lasted ``time_limit_s`` (SFT and evaluations included), whatever ``steps`` says; the six runs share the GPU.
GPU_RUN: dict[str, Any] = {
    "model": "tiny-S",
    "steps": 5000,
    "sft_steps": 500,
    "sft_lr": 2e-3,
    "sft_schedule": "constant",  # as written before TINY_DEFAULTS became cosine (issue 16 sweep)
    "sft_batch_size": 32,
    "num_groups": 64,
    "group_size": 8,
    "micro_batch_size": 512,
    "lr": 5e-5,
    "max_new_tokens": 40,
    "max_seq_len": 256,
    "eval_tasks": 256,
    "eval_samples": 4,
    "time_limit_s": 240.0,
}
GPU_DECODE: dict[str, Any] = {"model": "tiny-L", "batch_size": 256, "prompt_len": 64, "new_tokens": 256}
#: CPU smoke recipe: the same pipeline at a size that finishes in a few minutes on 2 cores.
CPU_RUN: dict[str, Any] = {
    "model": "tiny",
    "steps": 6,
    "sft_steps": 40,
    "sft_schedule": "constant",  # as written before TINY_DEFAULTS became cosine with GRPO lr 1e-4 (issue 16 sweep)
    "lr": 3e-4,
    "num_groups": 4,
    "group_size": 4,
    "max_new_tokens": 40,
    "max_seq_len": 192,
    "eval_tasks": 16,
    "eval_samples": 2,
    "time_limit_s": 120.0,
}
CPU_DECODE: dict[str, Any] = {"model": "tiny", "batch_size": 16, "prompt_len": 16, "new_tokens": 32}


def _run_one(job: dict[str, Any]) -> dict[str, Any]:
    """Worker: one SFT -> GRPO run (imports inside: safe with the spawn start method)."""
    import torch

    from arl_baselines.grpo.train import train

    if job.get("threads"):
        torch.set_num_threads(int(job["threads"]))
    cfg = dict(job["cfg"])
    model, steps = cfg.pop("model"), int(cfg.pop("steps"))
    t = time.perf_counter()
    # sft_checkpoint="none": the SFT phase is part of what this benchmark times and compares
    s = train(job["env_id"], model, steps, job["out"], sft_checkpoint="none", env_kwargs=job["env_kwargs"],
              seed=job["seed"], progress=False, **cfg)
    s["run_wall_s"] = time.perf_counter() - t
    s["env"], s["seed"] = job["env"], job["seed"]
    return s


def _decode_bench(spec: dict[str, Any], device: str) -> dict[str, Any]:
    import torch

    from arl_baselines.grpo.decode import benchmark_decoding
    from arl_baselines.grpo.policy import load_policy

    p = load_policy(spec["model"], device=device)
    p.model.eval()
    res = benchmark_decoding(
        p.model,
        batch_size=spec["batch_size"],
        prompt_len=spec["prompt_len"],
        new_tokens=spec["new_tokens"],
        pad_id=p.pad_id,
        compile=None,
        repeats=3,
    )
    res["model"], res["parameters"] = spec["model"], p.num_parameters()
    del p
    if device == "cuda":
        torch.cuda.empty_cache()
    return res


def _mean_std(xs: list[float]) -> tuple[float, float]:
    xs = [float(x) for x in xs if x == x]  # drop NaN (e.g. pass@4 with fewer than 4 samples)
    if not xs:
        return float("nan"), float("nan")
    return statistics.fmean(xs), statistics.stdev(xs) if len(xs) > 1 else 0.0


def _plot(out: Path, runs: list[dict[str, Any]], decode: dict[str, Any] | None) -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(ENVS)
    fig, axes = plt.subplots(1, len(envs) + 1, figsize=(6 * (len(envs) + 1), 4.5))
    for ax, env in zip(axes, envs):
        for r in [r for r in runs if r["env"] == env]:
            rows = [json.loads(x) for x in (Path(r["out"]) / "metrics.jsonl").read_text().splitlines() if x.strip()]
            ax.plot([x["step"] for x in rows], [x["success"] for x in rows], lw=1, label=f"seed {r['seed']} (train)")
            ev = r["evals"]
            ax.scatter([0], [ev.get("after_sft", ev["before"])["success"]], marker="o", color="k", s=15)
            if "final" in ev:
                ax.scatter([len(rows)], [ev["final"]["success"]], marker="*", color="k", s=40)
        ax.set_title(f"{env}: success (dots: held-out SFT-only, stars: after GRPO)")
        ax.set_xlabel("GRPO step")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
    ax = axes[-1]
    if decode:
        ax.bar(["HF generate", "FastDecoder"], [decode["generate_tokens_per_s"], decode["fast_tokens_per_s"]])
        if decode["speedup"] >= 10:
            ax.set_yscale("log")
        ax.set_title(f"decode tokens/s ({decode['model']}, batch {decode['batch_size']}): {decode['speedup']}x")
    fig.tight_layout()
    path = out / "grpo_benchmark.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; returns (and writes) the results dict."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpu-tiny", action="store_true", help="tiny sizes on CPU (no GPU needed)")
    ap.add_argument("--out", default=None, help="output directory (default runs/grpo_gpu or runs/grpo_cpu_tiny)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    ap.add_argument("--workers", type=int, default=None, help="parallel training processes (GPU default: all runs)")
    ap.add_argument("--skip-decode", action="store_true")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=JSON", help="override run settings, e.g. lr=1e-4")
    args = ap.parse_args(argv)

    import torch

    t0 = time.perf_counter()
    cuda = torch.cuda.is_available() and not args.cpu_tiny
    if not cuda and not args.cpu_tiny:
        raise SystemExit("no CUDA device: run with --cpu-tiny for the CPU-sized version")
    device = "cuda" if cuda else "cpu"
    run_cfg = dict(GPU_RUN if cuda else CPU_RUN)
    run_cfg["device"] = device
    for item in args.set:
        key, _, val = item.partition("=")
        run_cfg[key] = json.loads(val)
    out = Path(args.out or ("runs/grpo_gpu" if cuda else "runs/grpo_cpu_tiny")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    info = {
        "device": torch.cuda.get_device_name(0) if cuda else platform.processor() or "cpu",
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "date": time.strftime("%Y-%m-%d"),
        "mode": "gpu" if cuda else "cpu-tiny",
    }
    print(json.dumps(info), flush=True)

    decode = None
    if not args.skip_decode:
        decode = _decode_bench(GPU_DECODE if cuda else CPU_DECODE, device)
        print("decode:", json.dumps(decode), flush=True)

    jobs = []
    n_runs = len(args.envs) * len(args.seeds)
    workers = args.workers or (n_runs if cuda else 1)
    threads = max(1, (os.cpu_count() or 2) // max(workers, 1))
    for env in args.envs:
        env_id, env_kwargs = ENVS[env]
        for seed in args.seeds:
            jobs.append(
                {
                    "env": env,
                    "env_id": env_id,
                    "env_kwargs": env_kwargs,
                    "seed": seed,
                    "cfg": run_cfg,
                    "out": str(out / f"{env}-seed{seed}"),
                    "threads": threads,
                }
            )
    t_train = time.perf_counter()
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
            runs = list(pool.map(_run_one, jobs))
    else:
        runs = [_run_one(j) for j in jobs]
    train_wall = time.perf_counter() - t_train
    for r, j in zip(runs, jobs):
        r["out"] = j["out"]

    per_env: dict[str, Any] = {}
    for env in args.envs:
        rs = [r for r in runs if r["env"] == env]
        sft = [r["evals"].get("after_sft", r["evals"]["before"])["success"] for r in rs]
        fin = [r["evals"]["final"]["success"] for r in rs]
        lift = [f - s for f, s in zip(fin, sft)]
        per_env[env] = {
            "untrained_success": _mean_std([r["evals"]["before"]["success"] for r in rs]),
            "sft_only_success": _mean_std(sft),
            "grpo_success": _mean_std(fin),
            "lift": _mean_std(lift),
            "grpo_pass@4": _mean_std([r["evals"]["final"].get("pass@4", float("nan")) for r in rs]),
            "grpo_steps": [r["steps"] for r in rs],
            "tokens_generated": sum(r["tokens_generated"] for r in rs),
            "run_wall_s": [round(r["run_wall_s"], 1) for r in rs],
            "target_lift": TARGET_LIFT[env],
            "meets_target": statistics.fmean(lift) >= TARGET_LIFT[env],
        }
    total = time.perf_counter() - t0
    results = {
        **info,
        "run_settings": run_cfg,
        "decode": decode,
        "decode_meets_target": bool(decode and decode["speedup"] >= TARGET_SPEEDUP),
        "envs": per_env,
        "train_wall_s": round(train_wall, 1),
        "total_wall_s": round(total, 1),
        "gpu_minutes": round(total / 60, 2) if cuda else 0.0,
        "tokens_generated": sum(r["tokens_generated"] for r in runs),
        "runs": [{k: r[k] for k in ("env", "seed", "out", "steps", "evals", "timings_s", "stopped_early")} for r in runs],
    }
    plot = _plot(out, runs, decode)
    results["plot"] = str(plot) if plot else None
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str))
    md = results_markdown(results)
    (out / "results.md").write_text(md)
    print(md, flush=True)
    return results


def results_markdown(r: dict[str, Any]) -> str:
    """A markdown block for benchmarks/RESULTS.md."""
    lines = [
        f"### GRPO baseline ({r['mode']}) - {r['date']}",
        "",
        f"Command: `python benchmarks/grpo_gpu.py{' --cpu-tiny' if r['mode'] == 'cpu-tiny' else ''}`. "
        f"Machine: {r['device']} ({r['cpu_count']} CPU cores), Python {r['python']}, torch {r['torch']}, "
        f"transformers {r['transformers']}. Total wall {r['total_wall_s']} s"
        + (f" ({r['gpu_minutes']} GPU-minutes)" if r["mode"] == "gpu" else "")
        + f", {r['tokens_generated']:,} tokens generated in training.",
        "",
    ]
    d = r.get("decode")
    if d:
        lines += [
            f"Decoding ({d['model']}, {d['parameters']:,} parameters, batch {d['batch_size']}, prompt {d['prompt_len']}, "
            f"{d['new_tokens']} sampled tokens): FastDecoder {d['fast_tokens_per_s']:,.0f} tok/s "
            f"(compiled: {d['fast_compiled']}, first call {d['fast_warmup_s']} s) vs HF generate "
            f"{d['generate_tokens_per_s']:,.0f} tok/s: **{d['speedup']}x** (target >= {TARGET_SPEEDUP}x on GPU).",
            "",
        ]
    s = r["run_settings"]
    lines += [
        f"Training: model {s['model']}, SFT {s['sft_steps']} steps, GRPO up to {s['steps']} steps of "
        f"{s['num_groups']}x{s['group_size']} episodes, lr {s.get('lr', 'default')}; held-out success sampled at "
        f"temperature 1 on {s['eval_tasks']} tasks x {s['eval_samples']} samples; mean ± std over seeds.",
        "",
        "| env | untrained | SFT-only | SFT + GRPO | lift | target | GRPO steps |",
        "|---|---|---|---|---|---|---|",
    ]
    for env, e in r["envs"].items():
        f = lambda ms: f"{ms[0]:.3f} ± {ms[1]:.3f}"  # noqa: E731
        lines.append(
            f"| {env} | {f(e['untrained_success'])} | {f(e['sft_only_success'])} | {f(e['grpo_success'])} | "
            f"{e['lift'][0]:+.3f} | {e['target_lift']:+.2f} ({'met' if e['meets_target'] else 'NOT met'}) | "
            f"{e['grpo_steps']} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()

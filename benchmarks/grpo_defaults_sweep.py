"""Sweep the tiny model's GRPO defaults per env (issue 16 item 1, "defaults that learn").

Command (what benchmarks/RESULTS.md, "GRPO defaults", records; one run at a time, one torch thread, nice'd)::

    nice -n 10 python benchmarks/grpo_defaults_sweep.py --env arl/math.arithmetic-v1 \
        --grid sft_steps=300,1000 --grid sft_lr=3e-3,1e-3 --steps 10 --eval-tasks 64 \
        --out runs/sweep-arith

Each grid point is one ``train(env, "tiny", steps, **recommended_settings, **point, **fixed)`` call (the env's
recommended settings are the base, so a point with no overrides measures the current defaults: with no ``--steps``
the env's recommended GRPO steps, and the SFT warm start from the shipped checkpoint where one matches). Besides
:class:`GRPOConfig` fields, a point may set ``steps`` (GRPO steps) and ``sft_checkpoint`` (``auto`` | ``none`` | a
path; ``--set sft_checkpoint=none --set env_threads=1`` is the path before shipped warm starts and threaded
stepping). ``--grid
name=v1,v2`` adds a swept axis (the cartesian product of all axes is run), ``--set name=value`` a fixed override;
values are JSON (``3e-3``, ``true``, ``"cosine"``; a bare word is a string). Per run it reports held-out success
before / after SFT / after GRPO, pass@k (k = ``--eval-samples``) and mean return at the end, and the wall seconds
of SFT (expert collection + steps), GRPO and evaluation. Results go to ``OUT/results.json`` (appended run by run)
and ``OUT/results.md`` (a markdown table), each run's files to ``OUT/<index>/``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: Settings shown in every table (with their value in each run, overridden or recommended).
TABLE_SETTINGS = ("sft_steps", "sft_lr", "sft_schedule", "sft_batch_size", "lr", "max_new_tokens", "group_size",
                  "env_threads")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "baselines")]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _axis(spec: str) -> tuple[str, list[Any]]:
    name, _, values = spec.partition("=")
    if not name or not values:
        raise argparse.ArgumentTypeError(f"expected name=v1,v2,..., got {spec!r}")
    return name, [_value(v) for v in values.split(",")]


def _fixed(spec: str) -> tuple[str, Any]:
    name, _, value = spec.partition("=")
    if not name or not value:
        raise argparse.ArgumentTypeError(f"expected name=value, got {spec!r}")
    return name, _value(value)


def _load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    return out.stdout.strip()


def run_point(env_id: str, steps: int | None, out: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """One ``train`` call (``settings`` may hold ``steps``, which wins over ``steps``); returns a flat row of the
    figures the table shows."""
    from arl_baselines.grpo.train import train

    settings = dict(settings)
    steps = settings.pop("steps", steps)
    load_before = _load()
    t = time.perf_counter()
    s = train(env_id, "tiny", steps, str(out), progress=False, overwrite=True, **settings)
    wall = time.perf_counter() - t
    ev = s["evals"]
    last = ev.get("final") or ev.get("after_sft") or ev["before"]
    k = max(int(x.split("@")[1]) for x in last if x.startswith("pass@"))
    tm = s["timings_s"]
    return {
        "env_id": env_id,
        "settings": settings,
        "steps": s["steps"],
        "sft_source": s.get("sft_source"),
        "before": ev["before"]["success"],
        "after_sft": ev.get("after_sft", {}).get("success"),
        "final": ev.get("final", {}).get("success"),
        "pass@k": last[f"pass@{k}"],
        "k": k,
        "return_before": ev["before"]["mean_return"],
        "return_after_sft": ev.get("after_sft", {}).get("mean_return"),
        "return_final": ev.get("final", {}).get("mean_return"),
        "sft_s": tm.get("sft_s", 0.0),
        "grpo_s": tm.get("grpo_s", 0.0),
        "eval_s": tm.get("eval_s", 0.0),
        "wall_s": wall,
        "train_reward_first": s["reward_first"],
        "train_reward_last": s["reward_last"],
        "load_before": load_before,
        "load_after": _load(),
        "output": str(out),
        "config": json.loads((out / "config.json").read_text()),
    }


def _fmt(x: Any, nd: int = 3) -> str:
    return "-" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def _setting(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else _fmt(x)


def markdown(rows: list[dict[str, Any]], axes: list[str]) -> str:
    """A markdown table of ``rows`` (one per run) with a column per setting in ``axes`` (its value in the run)."""
    head = ["env", *axes, "GRPO steps", "SFT from", "before", "after SFT", "after GRPO", "pass@k (end)", "return (SFT / end)", "SFT s",
            "GRPO s", "eval s", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        config = r.get("config") or json.loads((Path(r["output"]) / "config.json").read_text())
        cells = [r["env_id"].removeprefix("arl/"), *[_setting(config.get(a)) for a in axes], str(r["steps"]),
                 r.get("sft_source") or "trained", _fmt(r["before"]),
                 _fmt(r["after_sft"]), _fmt(r["final"]), f"{_fmt(r['pass@k'])} (k={r['k']})",
                 f"{_fmt(r['return_after_sft'])} / {_fmt(r['return_final'] if r['final'] is not None else None)}",
                 _fmt(r["sft_s"], 0), _fmt(r["grpo_s"], 0), _fmt(r["eval_s"], 0), _fmt(r["wall_s"], 0)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", action="append", default=[], help="Env id (repeatable).")
    p.add_argument("--grid", action="append", type=_axis, default=[], help="Swept setting name=v1,v2 (repeatable).")
    p.add_argument("--set", dest="fixed", action="append", type=_fixed, default=[],
                   help="Fixed setting name=value (repeatable).")
    p.add_argument("--steps", type=int, default=None, help="GRPO steps per run (default: the env's recommended).")
    p.add_argument("--eval-tasks", type=int, default=None, help="Held-out tasks (default: the env's recommended).")
    p.add_argument("--eval-samples", type=int, default=None, help="Samples per task (default: the recommended).")
    p.add_argument("--threads", type=int, default=1, help="torch threads per run.")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/grpo-defaults-sweep")
    p.add_argument("--nice", type=int, default=10, help="os.nice increment of this process (0: none).")
    p.add_argument("--render", action="store_true", help="Only rewrite OUT/results.md from OUT/results.json.")
    args = p.parse_args(argv)
    if args.nice and hasattr(os, "nice"):
        os.nice(args.nice)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    axes = [name for name, _ in args.grid]
    fixed = dict(args.fixed)
    base = {"num_threads": args.threads, "seed": args.seed, **fixed}
    for name, value in (("eval_tasks", args.eval_tasks), ("eval_samples", args.eval_samples)):
        if value is not None:
            base[name] = value
    json_path = out / "results.json"
    rows: list[dict[str, Any]] = json.loads(json_path.read_text())["runs"] if json_path.exists() else []
    meta = {"commit": _commit(), "command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])])}
    for env_id in [] if args.render else args.env:
        for values in itertools.product(*[v for _, v in args.grid]):
            point = {**base, **dict(zip(axes, values))}
            run_dir = out / str(len(rows))
            print(f"[{len(rows)}] {env_id} {dict(zip(axes, values))} ...", flush=True)
            row = run_point(env_id, args.steps, run_dir, point)
            row.update(meta)
            rows.append(row)
            print(f"    before {_fmt(row['before'])} after SFT {_fmt(row['after_sft'])} final {_fmt(row['final'])} "
                  f"pass@{row['k']} {_fmt(row['pass@k'])} return {_fmt(row['return_final'])} "
                  f"SFT {row['sft_s']:.0f}s GRPO {row['grpo_s']:.0f}s eval {row['eval_s']:.0f}s "
                  f"wall {row['wall_s']:.0f}s | {row['load_after']}", flush=True)
            json_path.write_text(json.dumps({"runs": rows}, indent=2, default=str))
    all_axes = sorted({a for r in rows for a in r["settings"]}
                      - {"num_threads", "eval_tasks", "eval_samples", "steps", "sft_checkpoint"}
                      | set(TABLE_SETTINGS), key=lambda a: (TABLE_SETTINGS + (a,)).index(a))
    (out / "results.md").write_text(markdown(rows, all_axes))
    print(markdown(rows, all_axes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

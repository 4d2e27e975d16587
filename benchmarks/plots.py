"""Figures next to RESULTS.md: env steps/s per id, sandbox latency distributions, GRPO reward/success curves.

    PYTHONPATH=$PWD:$PWD/baselines python benchmarks/plots.py [--steps 50] [--calls 30] [--runs runs/demo-grpo ...]

Writes ``benchmarks/throughput.png`` (``arl_envs.bench.env_throughput`` over every registered id, expert agent, one
process; also ``arl-envs bench --plot FILE``), ``benchmarks/sandbox_latency.png`` (``--calls`` calls of ``print(1)``
per series: bare ``/usr/bin/python3``, bwrap run, bwrap session call; interleaved so machine load hits all alike)
and ``benchmarks/grpo_curves.png`` (``metrics.jsonl`` of the GRPO run directories given, default ``runs/*``).
Numbers measured on a loaded machine are slower than RESULTS.md's tables; the figure titles give date and load.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import time
from pathlib import Path

import arl_envs
from arl_envs.bench import env_throughput
from arl_envs.core.errors import ArlError
from arl_envs.plots import plot_grpo_runs, plot_latency, plot_throughput

HERE = Path(__file__).resolve().parent


def _stamp() -> str:
    return f"{datetime.date.today().isoformat()}, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def latency_series(calls: int) -> dict[str, list[float]]:
    """Milliseconds per call of bare python3, a bwrap run and a bwrap session call, interleaved."""
    from arl_envs.sandbox import get_sandbox

    out: dict[str, list[float]] = {"bare /usr/bin/python3 print(1)": [], "bwrap run print(1)": [],
                                   "session call print(1) (bwrap)": []}
    with get_sandbox("bwrap") as sb:
        session = sb.open_session()
        try:
            for _ in range(calls):
                for label, fn in (
                    ("bare /usr/bin/python3 print(1)",
                     lambda: subprocess.run(["/usr/bin/python3", "-c", "print(1)"], capture_output=True, check=True)),
                    ("bwrap run print(1)", lambda: sb.run(code="print(1)")),
                    ("session call print(1) (bwrap)", lambda: session.run("print(1)")),
                ):
                    t = time.perf_counter()
                    fn()
                    out[label].append((time.perf_counter() - t) * 1000)
        finally:
            session.close()
    return out


def main() -> None:
    """Measure and write the three figures."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=50, help="expert steps per env id")
    ap.add_argument("--calls", type=int, default=30, help="calls per latency series")
    ap.add_argument("--runs", nargs="*", default=None, help="GRPO run directories (default runs/*)")
    ap.add_argument("--ids", nargs="*", default=None, help="env ids for the throughput figure (default: all)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["throughput", "latency", "grpo"])
    a = ap.parse_args()
    if "throughput" not in a.skip:
        rows = []
        for env_id in a.ids or arl_envs.env_ids():
            try:
                rows += env_throughput([env_id], a.steps)
            except ArlError as exc:
                print(f"{env_id}: skipped ({exc})")
        print(plot_throughput(rows, HERE / "throughput.png",
                              f"Env throughput, {a.steps} expert steps per id ({_stamp()})"))
    if "latency" not in a.skip:
        try:
            series = latency_series(a.calls)
            print(plot_latency(series, HERE / "sandbox_latency.png", f"Sandbox latency, {a.calls} calls ({_stamp()})"))
        except ArlError as exc:
            print(f"sandbox latency skipped: {exc}")
    if "grpo" not in a.skip:
        dirs = a.runs if a.runs is not None else sorted(str(p) for p in Path("runs").glob("*") if p.is_dir())
        png = plot_grpo_runs(dirs, HERE / "grpo_curves.png", f"GRPO runs: {', '.join(map(str, dirs))}")
        print(png or f"no GRPO metrics.jsonl in {dirs}: grpo_curves.png not written")


if __name__ == "__main__":
    main()

"""PNG figures of benchmark results (matplotlib's ``Figure`` API: no pyplot, no global backend switch).

Used by ``arl-envs bench --plot`` and ``benchmarks/plots.py`` (which writes the figures next to RESULTS.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _figure(figsize: tuple[float, float]) -> Any:
    """A pyplot-free ``matplotlib.figure.Figure`` (``savefig`` renders PNG with Agg; the user's backend untouched)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def plot_throughput(rows: list[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """Horizontal bars of steps/s per env id (log scale).

    Args:
        rows: ``arl_envs.bench.env_throughput`` rows (``env_id``, ``steps_per_s``, ``ratio``).
        path: PNG to write.
        title: Figure title (machine, date, command).
    """
    rows = sorted(rows, key=lambda r: r["steps_per_s"])
    fig = _figure((9, 0.28 * len(rows) + 1.2))
    ax = fig.subplots()
    ax.barh([r["env_id"] for r in rows], [r["steps_per_s"] for r in rows], color="#4a7bd0")
    for i, r in enumerate(rows):
        ax.text(r["steps_per_s"], i, f" {r['steps_per_s']:,.0f}", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("expert steps/s (one process, resets included; log scale)")
    ax.set_title(title or "Env throughput", fontsize=9)
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return Path(path)


def plot_latency(series: dict[str, list[float]], path: str | Path, title: str = "") -> Path:
    """Latency distributions (ms) as box plots with the individual calls overlaid, log scale.

    Args:
        series: Label -> latencies in milliseconds.
        path: PNG to write.
        title: Figure title.
    """
    labels = list(series)
    fig = _figure((9, 0.6 * len(labels) + 1.5))
    ax = fig.subplots()
    ax.boxplot([series[k] for k in labels], vert=False, showfliers=False)
    for i, k in enumerate(labels, 1):
        ax.scatter(series[k], [i] * len(series[k]), s=6, alpha=0.4, color="#d0604a")
    ax.set_yticks(range(1, len(labels) + 1), labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("latency per call (ms, log scale)")
    ax.set_title(title or "Sandbox latency", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return Path(path)


def plot_grpo_runs(run_dirs: list[str | Path], path: str | Path, title: str = "") -> Path | None:
    """GRPO reward and success per step of each run directory (``metrics.jsonl`` of ``arl-envs train``).

    Returns:
        The PNG path, or None when no run has a non-empty ``metrics.jsonl``.
    """
    runs = []
    for d in run_dirs:
        f = Path(d) / "metrics.jsonl"
        rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()] if f.is_file() else []
        if rows:
            runs.append((Path(d), rows))
    if not runs:
        return None
    fig = _figure((11, 4))
    (ax_r, ax_s) = fig.subplots(1, 2)
    for d, rows in runs:
        steps = [r["step"] for r in rows]
        ax_r.plot(steps, [r.get("reward_mean", float("nan")) for r in rows], label=d.name)
        ax_s.plot(steps, [r.get("success", float("nan")) for r in rows], label=d.name)
        summary = d / "summary.json"
        if summary.is_file():
            for tag, res in json.loads(summary.read_text()).get("evals", {}).items():
                ax_s.axhline(res.get("success", float("nan")), ls="--", lw=0.8, color="gray")
                ax_s.text(steps[0], res.get("success", 0.0), f" held-out {tag}", fontsize=7)
    ax_r.set_title("GRPO reward (train batch mean)", fontsize=9)
    ax_s.set_title("GRPO success (train batch; dashed: held-out evals)", fontsize=9)
    for ax in (ax_r, ax_s):
        ax.set_xlabel("GRPO step")
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return Path(path)

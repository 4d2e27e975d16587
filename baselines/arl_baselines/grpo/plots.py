"""The plot of a run directory: :func:`plot_curves` draws ``metrics.jsonl`` and ``sft.jsonl`` into ``curves.png``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

#: The reward curve is also drawn as a moving average over 1/SMOOTH_FRACTION of the steps.
SMOOTH_FRACTION = 10


def plot_curves(output: str | os.PathLike[str]) -> Path:
    """Plot ``metrics.jsonl`` (and ``sft.jsonl``) of a run directory into ``curves.png`` (matplotlib, Agg).

    Panels: reward and success per step with held-out evaluations; SFT loss; entropy and clip fraction;
    completion length and turns; rollout throughput.

    Returns:
        Path of the PNG.
    """
    from matplotlib.figure import Figure  # the object API renders without a backend: no matplotlib.use()

    out = Path(output)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
    sft_path = out / "sft.jsonl"
    sft = [json.loads(x) for x in sft_path.read_text().splitlines() if x.strip()] if sft_path.exists() else []
    summary_path = out / "summary.json"
    evals = json.loads(summary_path.read_text()).get("evals", {}) if summary_path.exists() else {}
    fig = Figure(figsize=(15, 8))
    axes = fig.subplots(2, 3)
    steps = [r["step"] for r in rows]

    def series(key: str) -> list[float]:
        return [float(r.get(key, float("nan"))) if r.get(key) is not None else float("nan") for r in rows]

    ax = axes[0, 0]
    reward = series("reward_mean")
    ax.plot(steps, reward, label="reward (train)", alpha=0.5)
    ax.plot(steps, series("success"), label="success (train)", alpha=0.5)
    window = max(1, len(rows) // SMOOTH_FRACTION)
    if window > 1:
        smooth = np.convolve(np.nan_to_num(reward), np.ones(window) / window, mode="valid")
        ax.plot(steps[window - 1 :], smooth, color="k", label=f"reward ({window}-step mean)")
    for tag, res in evals.items():
        ax.axhline(res.get("success", float("nan")), ls="--", lw=0.8, color="gray")
        ax.text(0, res.get("success", 0), f" eval {tag}: {res.get('success', float('nan')):.2f}", fontsize=7)
    ax.set_title("GRPO reward / success")
    ax.set_xlabel("step")
    ax.legend()
    ax = axes[0, 1]
    if sft:
        ax.plot([r["sft_step"] for r in sft], [r["sft_loss"] for r in sft])
    ax.set_title("SFT loss (nats/token)")
    ax.set_xlabel("SFT step")
    ax = axes[0, 2]
    ax.plot(steps, series("entropy"), label="entropy")
    ax.plot(steps, series("clip_region"), label="clip fraction")
    ax.plot(steps, series("frac_zero_spread"), label="zero-spread groups")
    ax.set_title("entropy / clipping")
    ax.legend()
    ax = axes[1, 0]
    ax.plot(steps, series("completion_len"), label="sampled tokens / episode")
    ax.plot(steps, series("turns"), label="turns / episode")
    ax.set_title("lengths")
    ax.legend()
    ax = axes[1, 1]
    ax.plot(steps, series("grad_norm"), label="grad norm")
    ax.plot(steps, series("invalid_action_rate"), label="invalid-action rate")
    ax.plot(steps, series("truncated_turn_frac"), label="truncated turns")
    ax.set_title("optimisation / format")
    ax.legend()
    ax = axes[1, 2]
    ax.plot(steps, series("tokens_per_s"))
    ax.set_title("rollout tokens/s")
    fig.tight_layout()
    path = out / "curves.png"
    fig.savefig(path, dpi=90)
    return path

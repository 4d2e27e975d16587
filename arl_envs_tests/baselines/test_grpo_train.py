"""End-to-end GRPO training: outputs and logs, every loss variant, learning a one-step task, the demo's curve."""

from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from arl_baselines.grpo.config import GRPOConfig  # noqa: E402
from arl_baselines.grpo.train import METRIC_KEYS, demo_run, train  # noqa: E402

MATH = "arl/math.arithmetic-v0"
SMALL = {
    "env_kwargs": {"difficulty": 1, "kinds": ["integer"]},
    "num_groups": 2,
    "group_size": 4,
    "max_seq_len": 128,
    "eval_tasks": 4,
    "eval_samples": 2,
    "progress": False,
}


@pytest.fixture(autouse=True)
def _threads() -> None:
    torch.set_num_threads(2)


def test_train_writes_metrics_plot_and_summary(tmp_path) -> None:
    s = train(MATH, "tiny", 3, tmp_path, sft_steps=5, eval_every=2, save_model=True, **SMALL)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for r in rows:
        assert set(METRIC_KEYS) <= set(r)
        assert math.isfinite(r["reward_mean"]) and r["tokens_per_s"] > 0
    assert "eval_success" in rows[1]
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    assert len((tmp_path / "sft.jsonl").read_text().splitlines()) == 5
    assert set(s["evals"]) == {"before", "after_sft", "step_2", "final"}
    for res in s["evals"].values():
        assert {"success", "mean_return", "pass@1", "pass@2"} <= set(res)
    assert s["tokens_generated"] > 0
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == 3
    assert (tmp_path / "model" / "config.json").exists()


@pytest.mark.parametrize(
    "variant",
    [
        {"loss_type": "grpo"},
        {"loss_type": "bnpo", "scale_rewards": "batch"},
        {"loss_type": "dr_grpo", "scale_rewards": "none"},
        {"loss_type": "dapo", "importance_sampling_level": "sequence"},
        {"beta": 0.05, "num_iterations": 2, "micro_batch_size": 3},
        {"optimizer": "sgd", "lr": 0.01, "drop_zero_spread": False, "mask_truncated": False},
        {"advantage_level": "step", "diversity": "ngram", "sft_steps": 3, "sft_schedule": "cosine"},
    ],
)
def test_every_loss_variant_runs(tmp_path, variant) -> None:
    train(MATH, "tiny", 2, tmp_path, **{**SMALL, "eval_tasks": 2, "eval_samples": 1}, **variant)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(math.isfinite(r["loss"]) for r in rows)
    if variant.get("diversity") == "ngram":
        assert all(0.0 <= r["diversity_mean"] <= 1.0 for r in rows)
    if variant.get("num_iterations", 1) == 1:
        assert all(r["ratio_mean"] == 1.0 or math.isnan(r["ratio_mean"]) for r in rows)


def test_bad_settings_raise_clear_errors(tmp_path) -> None:
    with pytest.raises(TypeError, match="unknown GRPO setting"):
        train(MATH, "tiny", 1, tmp_path, learning_rate=1.0)
    with pytest.raises(ValueError, match="loss_type"):
        GRPOConfig(loss_type="ppo")
    with pytest.raises(ValueError, match="group_size"):
        GRPOConfig(group_size=1)
    with pytest.raises(ValueError, match="needs CUDA"):
        train(MATH, "tiny", 1, tmp_path, dtype="bfloat16", device="cpu")


#: The learning test's recipe: tiny-S (1.1M parameters), SFT on expert trajectories, then GRPO at a small learning
#: rate. Measured on 2 CPU cores: ~90 s in all (see the README's GRPO section).
LEARN = {
    "env_kwargs": {"difficulty": 1, "kinds": ["integer"]},
    "sft_steps": 800,
    "sft_lr": 2e-3,
    "num_groups": 16,
    "group_size": 8,
    "lr": 5e-5,
    "max_seq_len": 128,
    "eval_tasks": 64,
    "eval_samples": 4,
    "progress": False,
}


@pytest.mark.slow
def test_tiny_model_learns_one_step_task(tmp_path) -> None:
    """From chance to > 0.9 held-out success (sampled at temperature 1) on arithmetic difficulty 1, integer kind
    (single-digit +, -, *; 243 distinct problems; held-out seeds are disjoint from training seeds)."""
    s = train(MATH, "tiny-S", 20, tmp_path, **LEARN)
    ev = s["evals"]
    assert ev["before"]["success"] < 0.05
    assert ev["final"]["success"] > 0.9
    assert ev["final"]["pass@4"] >= ev["final"]["success"]


@pytest.mark.slow
def test_demo_reward_curve_rises(tmp_path) -> None:
    s = demo_run(tmp_path, progress=False)
    assert s["curve_rises"], (s["reward_before"], s["reward_after"])
    assert s["reward_after"] - s["reward_before"] > 0.05
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == s["steps"] and (tmp_path / "curves.png").exists()

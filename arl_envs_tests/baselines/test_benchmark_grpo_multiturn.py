"""``benchmarks/grpo_multiturn.py`` end to end at a tiny budget: the protocol, not the figure.

The figure itself (held-out lift of SFT+GRPO over SFT-only) is measured by the script and recorded in
benchmarks/RESULTS.md; here two seeds of one GRPO step each check what the numbers there rest on: both branches
start from the same SFT checkpoint, the SFT-only branch gets GRPO's wall seconds, the lift is the difference of the
two held-out evaluations, and the settings, model and curve are written to ``results.json``.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "grpo_multiturn.py"

TINY = ["-s", "sft_episodes=2", "-s", "sft_steps=3", "-s", "sft_batch_size=4", "-s", "num_groups=2",
        "-s", "group_size=2", "-s", "eval_tasks=2", "-s", "eval_samples=1", "-s", "warmup_steps=0"]


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("bench_grpo_multiturn", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_grpo_multiturn_script_protocol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = _script().main(["--model", "tiny", "--seeds", "0", "1", "--steps", "2", "--eval-every", "1", "--out", str(tmp_path), *TINY])
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["model"] == res["model"] == "tiny"
    assert on_disk["env"] == "arl/embodied.frozenlake-v0"
    assert on_disk["settings"]["num_groups"] == 2 and on_disk["settings"]["sft_steps"] == 3
    assert [r["seed"] for r in on_disk["rows"]] == [0, 1]
    for r in res["rows"]:
        # The curve starts at the SFT checkpoint's evaluation and has one point per --eval-every steps.
        assert [step for step, _ in r["curve"]] == [0, 1, 2]
        assert r["curve"][0][1] == r["after_sft"]["success"]
        assert r["curve"][-1][1] == r["sft_grpo"]["success"]
        assert r["lift"] == pytest.approx(r["sft_grpo"]["success"] - r["sft_only"]["success"])
        assert r["grpo_s"] > 0 and r["sft_extra_steps"] >= 1
        for ev in (r["after_sft"], r["sft_grpo"], r["sft_only"]):
            assert 0.0 <= ev["success"] <= 1.0
    lifts = [r["lift"] for r in res["rows"]]
    assert res["lift_mean"] == pytest.approx(sum(lifts) / 2)
    assert math.isfinite(res["lift_std"])
    table = capsys.readouterr().out
    assert "| seed | after SFT | SFT-only | SFT+GRPO | lift |" in table
    assert f"lift mean {res['lift_mean']:+.3f}" in table

"""The scoreboard (arl_baselines.scoreboard, `arl-envs scoreboard --quick`): intervals, rows, resume."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")

from arl_baselines import scoreboard as sb  # noqa: E402
from arl_envs.cli import app  # noqa: E402

#: One id per domain: what the CI run of `arl-envs scoreboard --quick` covers (the full board covers every id).
QUICK_IDS = ["arl/math.arithmetic-v1", "arl/search.qa-v1", "arl/code.functions-v0", "arl/multiagent.tictactoe-v1",
             "arl/embodied.frozenlake-v0", "arl/web.click-button-v0"]


def test_intervals() -> None:
    lo, hi = sb.wilson_interval(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-3) and hi == pytest.approx(0.7634, abs=1e-3)  # Wilson 1927 example
    assert sb.wilson_interval(0, 0) == (0.0, 1.0) and sb.wilson_interval(4, 4)[1] == 1.0
    mean, lo, hi = sb.mean_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and hi - mean == pytest.approx(4.303 * 1.0 / math.sqrt(3), rel=1e-6)  # t_{0.975,2}
    assert sb.mean_interval([0.5]) == (0.5, 0.5, 0.5)


@pytest.mark.slow
def test_quick_scoreboard_cli(tmp_path) -> None:
    out = tmp_path / "board.jsonl"
    res = CliRunner().invoke(app, ["scoreboard", "--quick", *QUICK_IDS, "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {(r["env_id"], r["agent"]) for r in rows} == {(e, a) for e in QUICK_IDS for a in ("random", "expert", "lm:tiny")}
    for r in rows:
        assert r["episodes"] + r["env_errors"] == (sb.QUICK_SEEDS if r["agent"] in ("random", "expert") else
                                                  sb.QUICK_LM_SEEDS) or r["note"].startswith("unavailable")
        assert all(s >= sb.HELD_OUT_SEED_BASE for s in r["seeds"])
        if r["agent"] == "expert" and r["episodes"]:
            assert r["success_rate"] == 1.0, r
    table = out.with_suffix(".md").read_text()
    assert all(f"`{e}`" in table for e in QUICK_IDS) and "commit" in table and "lm:tiny" in table
    # resume: every row is there already, nothing is played again
    rows2, _ = sb.run_and_write(out, quick=True, env_ids=QUICK_IDS, resume=True)
    assert len(rows2) == len(rows) and len(out.read_text().splitlines()) == len(rows)


@pytest.mark.slow
def test_grpo_rows_play_a_checkpoint_with_its_runs_budgets(tmp_path) -> None:
    """A GRPO checkpoint's row is played with the prompts, tokens per turn and context its run was trained with,
    and the env's own turn budget (not the zero-shot rows' 2 x 32 tokens)."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    from arl_baselines.grpo.train import train

    run = tmp_path / "runs" / "tiny-math"
    train("arl/math.arithmetic-v1", "tiny", 1, run, sft_steps=2, save_model=True, num_groups=2, group_size=2,
          max_new_tokens=40, max_seq_len=160, eval_tasks=2, eval_samples=1, progress=False,
          env_kwargs={"difficulty": 1, "kinds": ["integer"]})
    (found,) = sb.grpo_checkpoints(tmp_path / "runs")
    assert found[1] == "arl/math.arithmetic-v1" and found[3]["max_new_tokens"] == 40
    cells = sb.run_scoreboard(["arl/math.arithmetic-v1"], seeds=1, lm_seeds=3, lms=(), grpo_root=tmp_path / "runs")
    (row,) = [c.summary() for c in cells if c.agent.startswith("grpo:")]
    assert row["episodes"] == 3 and row["env_kwargs"] == {"difficulty": 1, "kinds": ["integer"]}
    assert row["note"].startswith("the env's turns x 40 tokens") and "the run's prompts" in row["note"]

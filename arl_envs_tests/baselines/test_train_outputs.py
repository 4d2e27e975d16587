"""What `arl-envs train` and the scoreboard leave on disk: a run directory is complete or marked partial, an
earlier run is moved aside (never mixed with a new one), an earlier board is never emptied, the two scoreboard
outputs never share a path; the progress bar of a time-budgeted SFT phase counts seconds; the no-flag `train`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arl_envs_tests.conftest import TEST_THREADS

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from arl_baselines import scoreboard as sb  # noqa: E402
from arl_baselines.grpo import train as train_mod  # noqa: E402
from arl_envs.cli import app  # noqa: E402

MATH = "arl/math.arithmetic-v1"
SMALL = {
    "env_kwargs": {"difficulty": 1, "kinds": ["integer"]},
    "num_groups": 2,
    "group_size": 2,
    "max_seq_len": 128,
    "eval_tasks": 2,
    "eval_samples": 1,
    "progress": False,
    "env_defaults": False,
    "log_samples": 0,
}
#: Files of an earlier, finished run.
EARLIER = {"config.json": "{}", "metrics.jsonl": "{}\n", "summary.json": '{"old": 1}', "curves.png": "png",
           "comparison.json": '{"old": 1}'}


@pytest.fixture(autouse=True)
def _threads() -> None:
    torch.set_num_threads(TEST_THREADS)


def _earlier_run(out: Path) -> None:
    out.mkdir(parents=True)
    for name, text in EARLIER.items():
        (out / name).write_text(text)


def test_interrupted_overwrite_leaves_no_old_result_beside_the_new_partial_run(tmp_path, monkeypatch) -> None:
    out = tmp_path / "run"
    _earlier_run(out)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_mod.Trainer, "evaluate", interrupted)  # the first thing the run does after set-up
    with pytest.raises(KeyboardInterrupt):
        train_mod.train(MATH, "tiny", 1, out, overwrite=True, sft_steps=0, **SMALL)
    names = {p.name for p in out.iterdir()}
    assert not names & {"summary.json", "curves.png", "comparison.json"}, names  # nothing of the old results
    assert "PARTIAL" in names and "KeyboardInterrupt" in (out / "PARTIAL").read_text()
    assert json.loads((out / "config.json").read_text())["env_id"] == MATH  # the new run's
    prev = out / "previous"
    assert {p.name: p.read_text() for p in prev.iterdir()} == EARLIER  # the old run, moved aside whole


def test_a_finished_run_is_not_marked_partial_and_a_partial_one_counts_as_earlier(tmp_path) -> None:
    out = tmp_path / "run"
    train_mod.train(MATH, "tiny", 0, out, sft_steps=0, **SMALL)
    assert not (out / "PARTIAL").exists() and (out / "summary.json").exists()
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "PARTIAL").write_text("interrupted\n")
    with pytest.raises(FileExistsError, match="earlier run"):
        train_mod.check_train_args(MATH, "tiny", 1, partial)


def test_time_budgeted_sft_bar_counts_seconds_not_a_step_total(tmp_path, capsys) -> None:
    tr = train_mod._trainer(MATH, "tiny", tmp_path, {**SMALL, "progress": True, "sft_steps": 2, "sft_episodes": 4})
    try:
        tr.sft(steps=10**9, time_budget_s=0.5)
    finally:
        tr.engine.close()
    err = capsys.readouterr().err
    assert "1000000000" not in err and "s budget" in err, err[-500:]
    assert "/0.5 s budget" in err


def test_train_without_env_trains_on_an_id_whose_defaults_lift(tmp_path, monkeypatch) -> None:
    """No ``--env``: the default id, one with a shipped SFT checkpoint of its tiny defaults (the countdown GRPO
    lift is measured in benchmarks/RESULTS.md and by the slow test of the countdown defaults)."""
    from arl_baselines import commands as cli

    seen: dict[str, object] = {}

    def fake_train(env_id, model, steps, output, **kwargs):
        seen.update(env_id=env_id, model=model, steps=steps)
        return {"env_id": env_id}

    monkeypatch.setattr(train_mod, "train", fake_train)
    res = CliRunner().invoke(app, ["train", "--output", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert seen["env_id"] == cli.DEFAULT_TRAIN_ENV == "arl/math.countdown-v1" and seen["model"] == "tiny"
    assert cli.DEFAULT_TRAIN_ENV in train_mod.SHIPPED_SFT_CHECKPOINTS
    help_text = " ".join(CliRunner().invoke(app, ["train", "--help"], terminal_width=200).output.split())
    assert "arl/math.arithmetic-v1 shows NO lift" in help_text


def test_scoreboard_refuses_to_empty_an_earlier_board_or_share_its_paths(tmp_path) -> None:
    board = tmp_path / "board.jsonl"
    row = json.dumps({"env_id": MATH, "agent": "random"}) + "\n"
    board.write_text(row)
    with pytest.raises(FileExistsError, match="--overwrite"):
        sb.run_and_write(board, quick=True, env_ids=[MATH], lms=[])
    assert board.read_text() == row
    with pytest.raises(ValueError, match="both the rows"):
        sb.run_and_write(tmp_path / "table.md", quick=True, env_ids=[MATH], lms=[])
    assert not (tmp_path / "table.md").exists()
    (tmp_path / "rows.jsonl").write_text("| a markdown table |\n")
    with pytest.raises(ValueError, match="rows.jsonl:1 is not a scoreboard row"):
        sb.run_and_write(tmp_path / "rows.jsonl", quick=True, env_ids=[MATH], lms=[], resume=True)
    assert sb.table_path(board) == tmp_path / "board.md"

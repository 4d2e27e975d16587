"""The CLI, run as users run it (a subprocess of the installed console script's module)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from arl_envs.cli import app

ROOT = Path(__file__).resolve().parents[1]

runner = CliRunner()


def test_list_shows_every_id() -> None:
    import arl_envs

    result = runner.invoke(app, ["list"], terminal_width=200)
    assert result.exit_code == 0
    for env_id in arl_envs.env_ids():
        assert env_id in result.output


def test_play_prints_transcript_and_reward_parts() -> None:
    result = runner.invoke(app, ["play", "arl/math.countdown-v1", "--agent", "expert", "--episodes", "2"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert result.output.count("success True") == 2
    assert "=== assistant ===" in result.output and "'task': 1.0" in result.output


def test_play_with_kwargs_and_random_agent() -> None:
    result = runner.invoke(app, ["play", "arl/math.arithmetic-v1", "--agent", "random", "-k", "difficulty=5"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "-d5-" in result.output


def test_check_passes() -> None:
    result = runner.invoke(app, ["check", "arl/math.countdown-v1", "--fuzz", "30"])
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output


def test_module_entry_point() -> None:
    out = subprocess.run([sys.executable, "-m", "arl_envs.cli", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "demo" in out.stdout
    # the baseline's commands, added through the arl_envs.cli entry point
    assert "train" in out.stdout and "scoreboard" in out.stdout


def test_demo_rows_time_only_warm_episodes(monkeypatch) -> None:
    """``play_reference_agents`` calls ``warm_up`` and plays an untimed episode per agent before the timed ones."""
    from arl_envs import agents as agents_mod
    from arl_envs import cli
    from arl_envs.envs.math.env import MathEnv

    calls: list[str] = []
    monkeypatch.setattr(MathEnv, "warm_up", lambda self: calls.append("warm_up"))
    real_run = agents_mod.run_episode

    def recording_run(env, agent, seed=None, **kw):
        calls.append(f"episode {seed}")
        return real_run(env, agent, seed=seed, **kw)

    monkeypatch.setattr(agents_mod, "run_episode", recording_run)
    rows = cli.play_reference_agents(["arl/math.countdown-v1"], episodes=2)
    warm = f"episode {cli.WARMUP_SEED}"
    assert calls == ["warm_up", warm, "episode 1000", "episode 1001", warm, "episode 1000", "episode 1001"]
    assert [r["agent"] for r in rows] == ["expert", "random"] and rows[0]["timed_steps"] == 2


def test_demo_ends_with_the_grpo_part_from_its_entry_point(monkeypatch) -> None:
    """``arl-envs demo`` runs the ``arl_envs.demo`` entry point (``arl_baselines.commands.demo_grpo``) after the
    reference agents; ``--no-grpo`` skips it; a part that could not run fails the demo."""
    from arl_baselines import commands
    from arl_envs import cli

    ran: list[str] = []
    monkeypatch.setattr(cli, "play_reference_agents", lambda ids, episodes: [])
    monkeypatch.setattr(commands, "demo_grpo", lambda: ran.append("grpo") or True)
    assert runner.invoke(app, ["demo", "--episodes", "1"]).exit_code == 0 and ran == ["grpo"]
    assert runner.invoke(app, ["demo", "--episodes", "1", "--no-grpo"]).exit_code == 0 and ran == ["grpo"]
    monkeypatch.setattr(commands, "demo_grpo", lambda: False)
    assert runner.invoke(app, ["demo", "--episodes", "1"]).exit_code == 1


def test_math_warm_up_starts_a_grader_worker() -> None:
    from arl_envs.envs.math.env import ArithmeticEnv
    from arl_envs.envs.math.grading import shared_grader

    env = ArithmeticEnv()
    env.warm_up()
    idle = shared_grader()._idle  # noqa: SLF001
    assert idle and any(g._proc is not None and g._proc.poll() is None for g in idle)  # noqa: SLF001
    env.close()


def test_train_rejects_an_sft_checkpoint_that_is_no_keyword_and_no_file(tmp_path) -> None:
    """``--sft-checkpoint`` takes auto / none (any case) or a file: anything else is a usage error (exit 2) that
    names the choices, before a run directory exists."""
    import pytest

    pytest.importorskip("torch")
    result = runner.invoke(app, ["train", "--env", "arl/math.arithmetic-v1", "--sft-checkpoint", "atuo",
                                 "--output", str(tmp_path / "run")], terminal_width=200)
    assert result.exit_code == 2, result.output
    assert "auto, none or the path" in result.output and not (tmp_path / "run").exists()


def test_train_reports_bad_input_as_a_usage_error_and_writes_nothing(tmp_path) -> None:
    """A corrupt or another env's SFT checkpoint, an unknown setting and an earlier run in ``--output`` (without
    ``--overwrite``) are usage errors (exit 2, one message) before anything is written."""
    import pytest

    pytest.importorskip("torch")
    from arl_baselines.grpo.train import SHIPPED_SFT_CHECKPOINTS

    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "random.pt").write_bytes(bytes(range(256)) * 8)
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "metrics.jsonl").write_text("{}\n")
    base = ["train", "--env", "arl/math.arithmetic-v1", "--output", str(tmp_path / "run")]
    cases = [
        (["--sft-checkpoint", str(tmp_path / "empty.pt")], "the file is empty"),
        (["--sft-checkpoint", str(tmp_path / "random.pt")], "not a torch.save file"),
        (["--sft-checkpoint", str(SHIPPED_SFT_CHECKPOINTS["arl/math.countdown-v1"])], "does not match"),
        (["--set", "learning_rate=1"], "unknown GRPO setting"),
        (["--output", str(earlier)], "holds an earlier run"),
        (["--env", "arl/math.arithmetc-v0"], "Did you mean"),
    ]
    for extra, message in cases:
        result = runner.invoke(app, [*base, *extra], terminal_width=400)
        text = " ".join(result.output.replace("│", " ").split())  # the error box wraps lines at 80 columns
        assert result.exit_code == 2 and message in text, (extra, result.output)
        assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists() and [p.name for p in earlier.iterdir()] == ["metrics.jsonl"]


def test_list_groups_ids_by_domain_and_source_library() -> None:
    from arl_envs.registration import ENVS, source_library

    result = runner.invoke(app, ["list"], terminal_width=250)
    assert result.exit_code == 0
    counts: dict[tuple[str, str], int] = {}
    for row in ENVS:
        key = (row.id.removeprefix("arl/").split(".", 1)[0], source_library(row))
        counts[key] = counts.get(key, 0) + 1
    lines = result.output.splitlines()
    for (domain, source), n in counts.items():  # one header cell per group, with its size
        assert sum(f" {domain} " in ln and f"{source} ({n})" in ln for ln in lines) == 1, (domain, source)
    assert counts[("reasoning", "reasoning-gym")] >= 95 and counts[("multiagent", "open-spiel")] >= 10


def _cli_with_path(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "arl_envs.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=tmp_path)


def test_a_broken_baselines_package_costs_only_its_commands(tmp_path) -> None:
    """The ``arl_envs.cli`` entry point failing to load (here an ``arl_baselines`` that raises on import, first on
    the path) leaves list/play/check working, with one line on stderr."""
    (tmp_path / "arl_baselines").mkdir()
    (tmp_path / "arl_baselines" / "__init__.py").write_text("raise ImportError('simulated broken install')\n")
    out = _cli_with_path(tmp_path, "list")
    assert out.returncode == 0 and "arl/math.arithmetic-v1" in out.stdout, out.stderr[-2000:]
    assert "unavailable (ImportError: simulated broken install)" in out.stderr


def test_an_install_without_the_entry_points_says_how_to_get_train(tmp_path) -> None:
    """Metadata written before the entry-point groups existed (first on the path here): ``train`` and ``scoreboard``
    explain that a reinstall adds them, exit 1."""
    meta = tmp_path / "arl_envs-0.1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: arl-envs\nVersion: 0.1.0\n")
    for cmd in (["train", "--env", "arl/math.countdown-v1"], ["scoreboard"]):
        out = _cli_with_path(tmp_path, *cmd)
        assert out.returncode == 1 and "Reinstall the package" in out.stderr, (cmd, out.stdout, out.stderr)
    assert _cli_with_path(tmp_path, "list").returncode == 0

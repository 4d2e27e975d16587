"""The CLI, run as users run it (a subprocess of the installed console script's module)."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from arl_envs.cli import app

runner = CliRunner()


def test_list_shows_every_id() -> None:
    import arl_envs

    result = runner.invoke(app, ["list"], terminal_width=200)
    assert result.exit_code == 0
    for env_id in arl_envs.env_ids():
        assert env_id in result.output


def test_play_prints_transcript_and_reward_parts() -> None:
    result = runner.invoke(app, ["play", "arl/math.countdown-v0", "--agent", "expert", "--episodes", "2"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert result.output.count("success True") == 2
    assert "=== assistant ===" in result.output and "'task': 1.0" in result.output


def test_play_with_kwargs_and_random_agent() -> None:
    result = runner.invoke(app, ["play", "arl/math.arithmetic-v0", "--agent", "random", "-k", "difficulty=5"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "-d5-" in result.output


def test_check_passes() -> None:
    result = runner.invoke(app, ["check", "arl/math.countdown-v0", "--fuzz", "30"])
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output


def test_module_entry_point() -> None:
    out = subprocess.run([sys.executable, "-m", "arl_envs.cli", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "demo" in out.stdout

"""``arl-envs serve`` usage errors: one line on stderr, exit code 2, before any port is bound."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from arl_envs.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--env", "arl/nothing.*"], "matches no registered id"),
        (["--port", "70000"], "--port must be in 0..65535"),
        (["--max-sessions", "0"], "--max-sessions"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_serve_usage_error_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["serve", *args])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("Error: ")

"""Usage errors of every ``arl-envs`` subcommand: ONE line on stderr, exit code 2, no traceback, nothing written.

The table below has bad input for every subcommand (a test checks that no subcommand is missing from it): unknown
options, ids, agents, env kwargs and their values, counts below their minimum, output paths that would replace
the input or an earlier result, or that cannot be a directory.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from arl_envs.cli import app

runner = CliRunner()
ID = "arl/math.arithmetic-v1"


def _files(root: Path) -> dict[str, str]:
    """Every path under ``root`` with the sha256 of its content (directories and links by kind)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "link:" + os.readlink(p)
        elif p.is_dir():
            out[str(p)] = "dir"
        else:
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, str]:
    """Files the cases point at: a recorded episode, an earlier board, an earlier run, a dangling link."""
    ep = {"env_id": ID, "observations": ["q", "a"], "actions": ["x"], "rewards": [0.0]}
    (tmp_path / "eps.jsonl").write_text(json.dumps(ep) + "\n")
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "board.jsonl").write_text(json.dumps({"env_id": ID, "agent": "random"}) + "\n")
    (tmp_path / "table.md").write_text("| a table |\n")
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    names = {"eps": "eps.jsonl", "notes": "notes.txt", "board": "board.jsonl", "table": "table.md", "a_dir": "a_dir",
             "dangling": "dangling", "new": "new"}
    return {k: str(tmp_path / v) for k, v in names.items()} | {"root": str(tmp_path)}


def _package_dir() -> str:
    import arl_envs

    return str(Path(arl_envs.__file__).resolve().parent)


#: (command path, argv with {name} placeholders filled from the ``paths`` fixture, what the message must say)
CASES: list[tuple[str, list[str], str]] = [
    ("", ["no-such-command"], "No such command"),
    ("list", ["list", "--nope"], "--nope"),
    ("play", ["play", ID, "--agent", "nope"], "unknown agent"),
    ("play", ["play", ID, "-k", "nope=1"], "nope"),
    ("play", ["play", ID, "-k", "difficulty=99"], "difficulty"),
    ("play", ["play", "arl/code.functions-v0", "-k", "sandbox=nope"], "sandbox"),
    ("play", ["play", ID, "--episodes", "0"], "--episodes"),
    ("play", ["play", ID, "--episodes", "-1"], "--episodes"),
    ("play", ["play", ID, "--seed", "-1"], "--seed"),
    ("play", ["play", ID, "-k", "difficulty"], "key=value"),
    ("play", ["play", "arl/math.arithmetc-v0"], "Did you mean"),
    ("play", ["play", ID, "--record", "{a_dir}"], "not a file"),
    ("play", ["play", ID, "--record", "{notes}/eps.jsonl"], "below the file"),
    ("view", ["view", "{new}"], "No such file"),
    ("view", ["view", "{notes}", "-o", "{new}"], "not JSON"),
    ("view", ["view", "{eps}", "-o", "{eps}"], "overwrite its input"),
    ("view", ["view", "{eps}", "-o", "{notes}"], "not a viewer page"),
    ("view", ["view", "{eps}", "-o", "{notes}/page.html"], "below the file"),
    ("check", ["check", "arl/nope-v0"], "doesn't exist"),
    ("check", ["check", ID, "--fuzz", "-1"], "--fuzz"),
    ("demo", ["demo", "--episodes", "0"], "--episodes"),
    ("train", ["train", "--env", "arl/math.arithmetc-v0", "--output", "{new}"], "Did you mean"),
    ("train", ["train", "--output", "{dangling}"], "dangling symbolic link"),
    ("train", ["train", "--output", "{package}"], "installed package"),
    ("train", ["train", "--output", "/proc/self"], "pseudo-filesystem"),
    ("train", ["train", "--output", "{notes}"], "is a file"),
    ("train", ["train", "--output", "{notes}/run"], "below the file"),
    ("train", ["train", "--steps", "-1", "--output", "{new}"], "--steps"),
    ("serve-retriever", ["serve-retriever", "--retriever", "nope"], "bm25"),
    ("serve-retriever", ["serve-retriever", "--port", "70000"], "--port"),
    ("serve-retriever", ["serve-retriever", "--corpus-path", "{new}"], "no such file"),
    ("sandbox", ["sandbox", "nope"], "No such command"),
    ("sandbox build-image", ["sandbox", "build-image", "--method", "nope"], "debootstrap"),
    ("sandbox check", ["sandbox", "check", "--nope"], "--nope"),
    ("bench", ["bench", "--steps", "0"], "--steps"),
    ("bench", ["bench", "arl/nope-v0"], "doesn't exist"),
    ("bench", ["bench", ID, "--plot", "{notes}/bench.png"], "below the file"),
    ("scoreboard", ["scoreboard", "arl/nope-v0", "-o", "{new}"], "doesn't exist"),
    ("scoreboard", ["scoreboard", "--seeds", "0", "-o", "{new}"], "--seeds"),
    ("scoreboard", ["scoreboard", "--quick", ID, "-o", "{board}"], "--overwrite"),
    ("scoreboard", ["scoreboard", "--quick", ID, "-o", "{table}"], "both the rows"),
    ("scoreboard", ["scoreboard", "--quick", ID, "-o", "{notes}", "--resume"], "not a scoreboard row"),
    ("scoreboard", ["scoreboard", "--quick", ID, "-o", "{a_dir}"], "not a file"),
    ("scoreboard", ["scoreboard", "--quick", ID, "-o", "{notes}/board.jsonl"], "below the file"),
    ("eval", ["eval", "--model", "http://127.0.0.1:9/v1", "--model-name", "m", "--env", "arl/nothing-matches.*",
              "-o", "{new}"], "arl/nothing-matches"),
    ("eval", ["eval", "--model", "http://127.0.0.1:9/v1", "--model-name", "m", "--env", ID, "--episodes", "0",
              "-o", "{new}"], "--episodes"),
    ("eval", ["eval", "--model", "http://127.0.0.1:9/v1", "--model-name", "m", "--env", ID, "--tool-mode", "nope",
              "-o", "{new}"], "nope"),
    ("eval", ["eval", "--model", "http://127.0.0.1:9/v1", "--model-name", "m", "--env", ID, "-k", "nosuchkw=1",
              "-o", "{new}"], "nosuchkw"),
    ("eval", ["eval", "--model", "http://127.0.0.1:9/v1", "--model-name", "m", "--env", ID, "-k", "max_turns=\"abc\"",
              "-o", "{new}"], "max_turns"),
    ("swe", ["swe", "nope"], "No such command"),
    ("swe build", ["swe", "build", "--projects", "no-such-project"], "no-such-project"),
    ("serve", ["serve", "--port", "70000"], "--port"),
    ("serve", ["serve", "--workers", "0"], "--workers"),
    ("serve", ["serve", "--env", "arl/nothing-matches.*"], "arl/nothing-matches"),
    # Output paths that cannot be written: checked before anything runs (they played every episode, then raised
    # a FileNotFoundError traceback through a broken Abort handler, losing the episodes).
    ("play", ["play", ID, "--agent", "expert", "--episodes", "1", "--record", "/proc/self/eps.jsonl"],
     "cannot be written"),
    ("play", ["play", ID, "--agent", "expert", "--episodes", "1", "--record", "/sys/eps.jsonl"], "cannot be written"),
    ("play", ["play", ID, "--agent", "expert", "--episodes", "1", "--record", "{dangling}"], "dangling symlink"),
    ("view", ["view", "{eps}", "-o", "{dangling}"], "dangling symlink"),
    ("view", ["view", "{eps}", "-o", "/proc/self/new/eps.html"], "cannot be written"),
]
NEEDS_TORCH = {"train", "scoreboard"}


def _all_command_paths() -> set[str]:
    """Every command path of the app ("" for the top level, "sandbox check", ...)."""
    import typer.main

    found: set[str] = set()

    def walk(cmd, prefix: str) -> None:
        found.add(prefix)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{prefix} {name}".strip())

    walk(typer.main.get_command(app), "")
    return found


def test_every_subcommand_has_usage_error_cases() -> None:
    assert _all_command_paths() == {path for path, _, _ in CASES}


@pytest.mark.parametrize(("path", "argv", "message"), CASES, ids=[" ".join(a)[:60] for _, a, _ in CASES])
def test_usage_error_is_one_line_exit_2_and_writes_nothing(paths, path, argv, message) -> None:
    if path.split(" ")[0] in NEEDS_TORCH:
        pytest.importorskip("torch")
    names = {**paths, "package": _package_dir()}
    args = [a.format(**names) for a in argv]
    before = _files(Path(paths["root"]))
    result = runner.invoke(app, args, terminal_width=400)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, (args, result.output)
    assert len(lines) == 1 and lines[0].startswith("Error: "), (args, result.output)
    assert message in lines[0], (args, lines[0])
    assert "Traceback" not in result.output
    assert _files(Path(paths["root"])) == before, args  # nothing written, moved or truncated
    assert not (Path(_package_dir()) / "config.json").exists()


def test_usage_error_of_the_installed_entry_point_is_one_stderr_line() -> None:
    """The console script's own ``main()`` (what ``arl-envs`` runs), not only the test runner."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "arl_envs.cli", "play", ID, "--episodes", "-1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "--episodes" in out.stderr




@pytest.mark.parametrize(("raised", "code", "last_line"), [("typer.Abort()", 1, "Aborted!"),
                                                           ("RuntimeError('boom')", 1, "RuntimeError: boom")])
def test_abort_is_one_line_and_other_errors_keep_their_own_traceback(raised: str, code: int, last_line: str) -> None:
    """An Abort (click's prompts on EOF/Ctrl-C) prints "Aborted!", exit 1. The handler named an exception class this
    typer's vendored click does not have, so an Abort, or any exception that reached it, ended in an unrelated
    AttributeError traceback."""
    import subprocess
    import sys

    script = (
        "import typer\n"
        "from arl_envs import cli\n"
        "@cli.app.command('fail-now')\n"
        "def _fail() -> None:\n"
        f"    raise {raised}\n"
        "cli.main()\n"
    )
    out = subprocess.run([sys.executable, "-c", script, "fail-now"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "_TYPER_STANDARD_TRACEBACK": "1", "NO_COLOR": "1"})
    assert out.returncode == code, out.stderr
    assert "AttributeError" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1] == last_line, out.stderr

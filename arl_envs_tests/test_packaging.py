"""The built wheel: its top-level import packages and its extras (pyproject.toml)."""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", "build", "dist", "runs", ".cache", ".venv", "__pycache__", ".pytest_cache"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel from a copy of the source tree (an in-tree build would leave build/ and *.egg-info here)."""
    if not (ROOT / "pyproject.toml").exists():
        pytest.skip("not running from a source checkout")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(
        ROOT, src, ignore=lambda d, names: [n for n in names if n in SKIP_DIRS or n.endswith(".egg-info")]
    )
    out = tmp / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (whl,) = out.glob("arl_envs-*.whl")
    return whl


def _metadata(whl: Path) -> email.message.Message:
    with zipfile.ZipFile(whl) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_string(zf.read(name).decode())


def test_wheel_top_level_packages(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        tops = {n.split("/")[0] for n in zf.namelist() if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"arl_envs", "arl_baselines", "arl_verifiers"}, tops  # arl_verifiers: the verifiers plugin name
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert "arl_baselines/grpo/config.py" in names and "arl_envs/core/env.py" in names
    assert "arl_envs/CONTRACT.md" in names  # the contract docstrings cite ships with the package
    # the web envs' page helper, loaded with importlib.resources (arl_envs/envs/web/axtree.py)
    assert {"arl_envs/envs/web/js/snapshot.js", "arl_envs/envs/web/js/episode.js"} <= names
    assert "arl_baselines/grpo/data/demo_sft.pt" in names  # the SFT checkpoint `arl-envs demo` starts from
    # the SFT phases of the tiny defaults that `arl-envs train` warm-starts from (SHIPPED_SFT_CHECKPOINTS)
    for name in ("arithmetic_sft.pt", "countdown_sft.pt", "code_sft.pt"):
        assert f"arl_baselines/grpo/data/{name}" in names


def test_no_extra_is_empty_and_all_resolves(wheel: Path) -> None:
    meta = _metadata(wheel)
    extras = set(meta.get_all("Provides-Extra") or [])
    assert {"all", "dev", "code", "search", "web"} <= extras
    per_extra: dict[str, list[str]] = {e: [] for e in extras}
    for req in meta.get_all("Requires-Dist") or []:
        m = re.search(r"""extra\s*==\s*["']([^"']+)["']""", req)
        if m:
            per_extra[m.group(1)].append(req.split(";")[0].strip())
    empty = sorted(e for e, reqs in per_extra.items() if not reqs)
    assert not empty, f"extras naming no package: {empty}"
    # `all` names other extras of this package (arl-envs[code,...]); each must exist.
    for req in per_extra["all"]:
        m = re.fullmatch(r"arl-envs\[([^\]]+)\]", req)
        assert m, req
        missing = set(m.group(1).split(",")) - extras
        assert not missing, f"[all] names unknown extras {missing}"
    assert any(r.startswith("ruff") for r in per_extra["dev"])
    torch_reqs = [r.split(";")[0] for r in meta.get_all("Requires-Dist") or [] if r.startswith("torch")]
    assert torch_reqs and not any("==" in r for r in torch_reqs), torch_reqs  # a lower bound, never a pin


def test_baselines_join_the_command_line_through_entry_points(wheel: Path) -> None:
    """``arl_envs.cli`` never imports ``arl_baselines``: the wheel declares the baseline's commands and the demo's
    GRPO part as entry points, and each names an object that exists."""
    import configparser
    import importlib

    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
        parser = configparser.ConfigParser()
        parser.read_string(zf.read(name).decode())
    assert dict(parser["arl_envs.cli"]) == {"baselines": "arl_baselines.commands:register"}
    assert dict(parser["arl_envs.demo"]) == {"grpo": "arl_baselines.commands:demo_grpo"}
    for group in ("arl_envs.cli", "arl_envs.demo"):
        for target in parser[group].values():
            module, attr = target.split(":")
            assert callable(getattr(importlib.import_module(module), attr)), target

"""The stdlib unified-diff applier (used where the sandbox has no GNU patch) agrees with GNU patch.

The applier is our own code; it is run here as a subprocess in a temporary directory on test data only.
"""

from __future__ import annotations

import difflib
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arl_envs.envs.code.repo import all_bug_ids, repo_task
from arl_envs.envs.code.repo_env import APPLY_PATCH_SOURCE


def _apply(root: Path, patch: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-S", "-c", APPLY_PATCH_SOURCE], input=patch, cwd=root,
                          capture_output=True, text=True, timeout=30)


def _diff(path: str, old: str, new: str, n: int = 3) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}", n=n))


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


@pytest.mark.parametrize(("template", "bug"), all_bug_ids())
def test_expert_patches_apply(tmp_path: Path, template: str, bug: str) -> None:
    task = repo_task(template, bug, 0)
    _write(tmp_path, {task.bug_path: task.buggy_source})
    res = _apply(tmp_path, task.expert_patch)
    assert res.returncode == 0, res.stdout
    assert (tmp_path / task.bug_path).read_text() == task.correct_source


def _mutate(rng: random.Random, lines: list[str]) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(out) + 1)
        k = rng.random()
        if k < 0.4 and out:
            del out[min(i, len(out) - 1)]
        elif k < 0.7:
            out.insert(i, f"inserted_{rng.randint(0, 99)} = {rng.random()!r}\n")
        elif out:
            out[min(i, len(out) - 1)] = "changed()\n"
    return out


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed here")
def test_random_multi_hunk_diffs_match_gnu_patch(tmp_path: Path) -> None:
    rng = random.Random(0)
    for trial in range(40):
        old = [f"line_{i} = {i}\n" for i in range(rng.randint(1, 60))]
        new = _mutate(rng, old)
        patch = _diff("m.py", "".join(old), "".join(new), n=rng.choice([0, 1, 3]))
        if not patch:
            continue
        ours, gnu = tmp_path / f"ours{trial}", tmp_path / f"gnu{trial}"
        for d in (ours, gnu):
            _write(d, {"m.py": "".join(old)})
        assert _apply(ours, patch).returncode == 0
        subprocess.run(["patch", "-p1", "--batch", "-s"], input=patch, cwd=gnu, text=True, check=True)
        assert (ours / "m.py").read_text() == (gnu / "m.py").read_text() == "".join(new)


def test_new_and_deleted_files_and_failures_change_nothing(tmp_path: Path) -> None:
    _write(tmp_path, {"pkg/a.py": "x = 1\ny = 2\n", "old.txt": "bye\n"})
    create = "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
    delete = "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    assert _apply(tmp_path, create + delete).returncode == 0
    assert (tmp_path / "pkg/new.py").read_text() == "a = 1\nb = 2\n" and not (tmp_path / "old.txt").exists()
    good = _diff("pkg/a.py", "x = 1\ny = 2\n", "x = 10\ny = 2\n")
    bad = "--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1 +1 @@\n-not there\n+z\n"
    res = _apply(tmp_path, good + bad)
    assert res.returncode == 1 and "does not apply" in res.stdout
    assert (tmp_path / "pkg/a.py").read_text() == "x = 1\ny = 2\n"  # all or nothing
    for garbage in ("hello", "--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "--- a/x\n+++ b/x\n"):
        res = _apply(tmp_path, garbage)
        assert res.returncode == 1 and "no file was changed" in res.stdout
    plain = "--- pkg/a.py\n+++ pkg/a.py\n@@ -2 +2 @@\n-y = 2\n+y = 3\n"  # -p0 style paths
    assert _apply(tmp_path, plain).returncode == 0 and (tmp_path / "pkg/a.py").read_text() == "x = 1\ny = 3\n"

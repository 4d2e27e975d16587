"""Running a project's tests on the host (the instance build: our own mutants, never agent code).

:func:`run_pytest_host` runs :mod:`.pytest_child` in a fresh ``python3 -I -S -B`` process with a wall deadline
and returns ``{nodeid: (outcome, message)}``. The pytest arguments are :func:`pytest_args` for both the build
and the sandboxed grading, so outcomes agree.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from arl_envs.sandbox.bwrap import default_python

CHILD_SOURCE = (Path(__file__).parent / "pytest_child.py").read_text(encoding="utf-8")
#: Wall seconds one test run of the build may take (a mutant that loops is cut and rejected).
HOST_RUN_TIMEOUT_S = 60.0


def pytest_args(targets: list[str], ini: str) -> list[str]:
    """pytest's arguments: ``targets`` (files or node ids), our own empty ini file ``ini`` (the project's and any
    agent-written config are ignored), no cache, no output capture of ours, warnings off."""
    return ["-q", "-c", ini, "--rootdir", ".", "-p", "no:cacheprovider", "-p", "no:randomly", "-W", "ignore",
            "--disable-warnings", "-o", "python_files=test_*.py *_test.py test*.py", *targets]


def run_pytest_host(tree: Path, src: str, toolchain: Path, targets: list[str],
                    timeout_s: float = HOST_RUN_TIMEOUT_S) -> dict[str, tuple[str, str]] | None:
    """Run ``targets`` in ``tree`` (cwd) with ``tree/src`` and ``toolchain`` on ``sys.path``, under the interpreter
    the bwrap sandbox runs (:func:`~arl_envs.sandbox.bwrap.default_python`), so that the tests that pass here are
    the ones that pass at grading (a module present in one interpreter and not the other, such as ``tkinter``,
    would otherwise make a test pass at build time and skip at grading).

    Returns:
        ``{nodeid: (outcome, message)}``, or None when the run exceeded ``timeout_s`` or reported no end.
    """
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as fh:
        fh.write("[pytest]\n")
        ini = fh.name
    r, w = os.pipe()
    config = {"path": [str(tree / src), str(tree), str(toolchain)], "args": pytest_args(targets, ini), "fd": w}
    try:
        proc = subprocess.Popen(  # noqa: S603 - our interpreter, our script
            [default_python(), "-I", "-S", "-B", "-c", CHILD_SOURCE, json.dumps(config)],
            cwd=tree, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(w,), start_new_session=True,
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(tree)},
        )
    finally:
        os.close(w)
    buf = bytearray()
    deadline = time.monotonic() + timeout_s
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    break
                buf += chunk
    finally:
        os.close(r)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        os.unlink(ini)
    if timed_out:
        return None
    return parse_outcomes(bytes(buf))


def parse_outcomes(data: bytes) -> dict[str, tuple[str, str]] | None:
    """The per-test outcomes of :mod:`.pytest_child`'s JSON lines; None without its final ``done`` line."""
    out: dict[str, tuple[str, str]] = {}
    done = False
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "done" in obj:
            done = True
        elif isinstance(obj.get("id"), str):
            out[obj["id"]] = (str(obj.get("o")), str(obj.get("m", "")))
    return out if done else None

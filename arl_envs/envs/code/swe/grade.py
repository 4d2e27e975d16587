"""Host side of ``arl/code.swe-v0``'s grading: one sandbox run of :mod:`.swe_runner`, an authenticated verdict.

The runner is started with the code harness's bootstrap (``python3 -I -S -B``, non-dumpable before it reads the
payload); the verdict is accepted only from a record whose HMAC (a fresh 32-byte key per run, sent on stdin)
and nonce verify (:func:`arl_envs.envs.code.harness.verify_record`). No verified record and no sandbox error:
the submission broke the run, every test counts as failed (scored). A sandbox error or a runner set-up failure
(before submitted code ran): :attr:`Grade.env_error` (not scored).

The tests run in the same process as the code under test (as in SWE-bench), so what this guards is the channel
and the test files, not that process: a submission that rewrites pytest's reports from inside the test process
would not be caught.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arl_envs.envs.code.harness import verify_record
from arl_envs.envs.code.protocol import BOOTSTRAP
from arl_envs.envs.code.swe.testrun import CHILD_SOURCE, pytest_args

RUNNER_SOURCE = (Path(__file__).parent / "swe_runner.py").read_text(encoding="utf-8")
#: Wall seconds of the test process in one grading run; the sandbox's backstop adds RUN_SLACK_S.
TEST_TIMEOUT_S = 120.0
RUN_SLACK_S = 30.0
#: Memory (MiB), processes and output bytes of one grading run.
RUN_MEMORY_MB = 1536
RUN_MAX_PROCESSES = 64
RUN_MAX_OUTPUT_BYTES = 32 << 20
#: Where the tool chain (pytest) is bound inside the bwrap sandbox.
TOOLCHAIN_MOUNT = "/opt/arl/site-packages0"


@dataclass
class Grade:
    """Outcome of one grading run.

    Attributes:
        outcomes: ``{nodeid: "passed" | "failed" | "skipped" | "error"}`` of the wanted tests that ran.
        messages: Failure output per non-passing test (assertion lines and the test's line).
        status: ``ok``, ``timeout`` (the test process was cut), ``no_report`` (it ended without its final line)
            or ``no_verdict`` (no authenticated record: every test counts as failed).
        env_error: Infrastructure failure (not scored).
        duration_s: Wall seconds of the sandbox run.
    """

    outcomes: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    status: str = "ok"
    env_error: str | None = None
    duration_s: float = 0.0

    def passed(self, nodeid: str) -> bool:
        """Whether ``nodeid`` ran and passed."""
        return self.outcomes.get(nodeid) == "passed"


def grade(sandbox: Any, *, repo: str, src: str, test_paths: list[str], pristine: dict[str, bytes],
          targets: list[str], wanted: list[str], toolchain: str = TOOLCHAIN_MOUNT,
          timeout_s: float = TEST_TIMEOUT_S) -> Grade:
    """Run ``targets`` (test files or node ids) on the sandbox's work tree ``repo`` with pristine tests.

    Args:
        sandbox: An open sandbox whose work directory holds the agent's tree and that sees ``toolchain``.
        repo: The tree inside the sandbox (``/work``).
        src: The project's source directory, relative to the tree (``"."`` or ``"src"``).
        test_paths: The project's test files/directories (removed, then restored from ``pristine``).
        pristine: ``{relative path: bytes}`` of the original test files (every ``conftest.py`` included).
        targets: What pytest runs.
        wanted: Node ids to report (empty: all that ran).
    """
    from arl_envs.sandbox import Limits  # noqa: PLC0415 - keep module import light

    key = secrets.token_bytes(32)
    nonce = secrets.token_hex(16)
    head = pytest_args([], "INI")
    i = head.index("INI")
    payload = {
        "runner": [RUNNER_SOURCE],
        "child": CHILD_SOURCE,
        "key": key.hex(),
        "nonce": nonce,
        "repo": repo,
        "src": src,
        "toolchain": toolchain,
        "test_paths": list(test_paths),
        "pristine": {k: base64.b64encode(v).decode() for k, v in pristine.items()},
        "pytest_args_head": head[:i],
        "pytest_args_tail": head[i + 1:] + list(targets),
        "wanted": list(wanted),
        "timeout_s": timeout_s,
    }
    wall = timeout_s + RUN_SLACK_S
    limits = Limits(wall_time_s=wall, cpu_time_s=wall, memory_mb=RUN_MEMORY_MB, max_processes=RUN_MAX_PROCESSES,
                    max_output_bytes=RUN_MAX_OUTPUT_BYTES)
    start = time.monotonic()
    try:
        res = sandbox.run([sandbox.python, "-I", "-S", "-B", "-c", BOOTSTRAP], stdin=json.dumps(payload),
                          limits=limits)
    except Exception as exc:  # noqa: BLE001 - a closed/broken sandbox object is infrastructure
        return Grade(status="env_error", env_error=f"sandbox failure: {type(exc).__name__}: {exc}",
                     duration_s=time.monotonic() - start)
    took = time.monotonic() - start
    if res.sandbox_error is not None:
        return Grade(status="env_error", env_error=f"sandbox failure: {res.sandbox_error}", duration_s=took)
    record = verify_record(res.stdout, key, nonce)
    if record is None:
        return Grade(status="no_verdict", duration_s=took,
                     messages={w: f"the test run ended without the grader's record ({res.describe()})"
                               for w in wanted})
    if record.get("harness_error"):
        return Grade(status="env_error", env_error=f"harness error: {record['harness_error']}", duration_s=took)
    outcomes = record.get("outcomes") or {}
    messages = record.get("messages") or {}
    if not isinstance(outcomes, dict) or not isinstance(messages, dict):
        return Grade(status="env_error", env_error="malformed grader record", duration_s=took)
    return Grade({str(k): str(v) for k, v in outcomes.items()}, {str(k): str(v) for k, v in messages.items()},
                 str(record.get("status", "ok")), duration_s=took)

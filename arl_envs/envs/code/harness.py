"""Host side of the code test harness: run test jobs in a sandbox and accept only authenticated verdicts.

One :meth:`Harness.run` call is one sandbox run of the runner (:mod:`arl_envs.envs.code.runner`), which may
hold many jobs (a job = one submission and its test cases), so e.g. all 164 HumanEval reference solutions are
checked in one call. The payload (runner sources, jobs, a fresh 32-byte key and a nonce) goes on the runner's
stdin; the verdict is read only from a record ``ARL-CODE-RESULT <nonce> <base64 json> <hmac-sha256>`` whose MAC
verifies. See the runner's module docstring for the guarantees and :mod:`arl_envs_tests.envs.code` for tests.

Outcomes of a run:

* a verified record: per-case results (:class:`JobResult`); a job whose set-up failed after submitted code ran
  in this run (the submission took the runner's fds, processes or memory) is such a result too: every case
  failed, ``import_error`` says why (scored; see the runner's "Set-up the submission cannot void");
* no verified record and no infrastructure error: the submission broke the run (killed the runner's process
  tree, exhausted memory...): every case fails (``JobResult.error`` says why) - never a pass;
* ``ExecResult.sandbox_error``, or a verified ``harness_error`` (a runner bug, or a set-up failure before any
  submitted code ran in this run: the sandbox itself is broken): :attr:`HarnessRun.env_error`, which envs turn
  into ``Transition(env_error=...)`` (not scored).

CPU limits are per test case: ``min(MAX_CPU_LIMIT_S, max(CPU_FLOOR_S, CPU_FACTOR * reference CPU time))``
rounded up to ``CPU_QUANTUM_S`` (0.5 s floor, 10x, 10 s cap, 0.1 s steps), with the reference time measured by
running the task's reference solution on every case in the same sandbox run, just before the submission
(``Harness.run(..., calibration=reference_job)``; the limits come back in :attr:`HarnessRun.calibration` and
are cached by the envs). CPU time is kernel-accounted (``/proc/<pid>/stat``), so limits do not tighten under
machine load; the wall deadline derived from them is extended while the test process is runnable but
starved.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arl_envs.envs.code import processes as _processes
from arl_envs.envs.code import protocol as _protocol
from arl_envs.envs.code import runner as _runner
from arl_envs.envs.code.processes import HARD_WALL_FACTOR, WALL_FACTOR, WALL_SLACK_S
from arl_envs.envs.code.protocol import (
    BOOTSTRAP,
    CALIBRATION_CPU_S,
    CPU_FACTOR,
    CPU_FLOOR_S,
    CPU_QUANTUM_S,
    MAX_CPU_LIMIT_S,
    RESULT_MARKER,
    UNCALIBRATED_CPU_S,
    cpu_limit_from_reference,
)
from arl_envs.envs.code.runner import IMPORT_CPU_S
from arl_envs.envs.code.tasks import TestCase

#: Sources of the runner parent (run in this order in one namespace by BOOTSTRAP) and of its child, sent to the
#: sandbox with every run.
RUNNER_SOURCES = tuple(Path(m.__file__).read_text(encoding="utf-8") for m in (_protocol, _processes, _runner))
CHILD_SOURCE = (Path(_runner.__file__).parent / "child.py").read_text(encoding="utf-8")
#: Memory of one harness run (runner + one child at a time), MiB.
RUN_MEMORY_MB = 1024
#: Processes/threads alive at once in a harness run.
RUN_MAX_PROCESSES = 64
#: Bytes of stdout kept from a run (the record of many jobs is large).
RUN_MAX_OUTPUT_BYTES = 32 << 20
#: Seconds added to a run's wall budget for interpreter start-up and transfers.
RUN_STARTUP_S = 5.0
#: Cap of a run's wall-clock backstop, seconds (the runner's own per-case deadlines are the real limits).
MAX_RUN_WALL_S = 900.0
#: Exit status of the bootstrap when ``prctl(PR_SET_DUMPABLE, 0)`` failed.
NONDUMPABLE_FAILED_EXIT = 97


@dataclass
class CaseResult:
    """Outcome of one test case.

    Attributes:
        passed: The case passed (strict comparison, within limits).
        status: ``pass``, ``fail`` (wrong value/output or assertion), ``error`` (exception, bad return type,
            import failure), ``timeout`` or ``crash`` (the test process died).
        got: Repr of what the submission produced (for check-style tests: the last calls and results).
        error: Error message / truncated traceback, if any.
        stdout: What the submission printed during the case (truncated), if anything.
        cpu_s: CPU seconds the submission used on the case.
    """

    passed: bool
    status: str
    got: str | None = None
    error: str | None = None
    stdout: str | None = None
    cpu_s: float = 0.0


@dataclass
class JobResult:
    """Outcome of one job (one submission against a list of cases).

    Attributes:
        cases: One :class:`CaseResult` per case, in order.
        import_error: Why the submission could not be imported (then every case failed), if so.
        error: Why the whole run produced no verdict (no authenticated record), if so.
        skipped: The job's ``only_if_passed`` gate was not met; ``cases`` is empty.
        cpu_limits_s: CPU limit applied to each case, seconds.
    """

    cases: list[CaseResult]
    import_error: str | None = None
    error: str | None = None
    skipped: bool = False
    cpu_limits_s: list[float] = field(default_factory=list)

    @property
    def n_passed(self) -> int:
        """Number of passed cases."""
        return sum(c.passed for c in self.cases)

    @property
    def fraction(self) -> float:
        """Passed / total (0.0 for an empty job)."""
        return self.n_passed / len(self.cases) if self.cases else 0.0


@dataclass
class Job:
    """One submission to test.

    Attributes:
        source: The submitted code (a module defining ``entry_point``, or a program for ``mode="program"``).
        cases: Test cases.
        cpu_limits_s: CPU seconds per case (same length as ``cases``), or None with ``calibration_index``.
        calibration_index: For each case, its index in the run's calibration job: the limit is derived from the
            reference's CPU time on it, in the same run.
        only_if_passed: Index of an earlier job of the same run; this job runs only if that one imported and
            passed every case (else it is reported as skipped). Used to run hidden tests only after all visible
            tests pass, without a second sandbox call.
        mode: ``"module"`` (call ``entry_point``), ``"program"`` (stdin/stdout) or ``"repo"`` (call
            ``pkg.module:function`` of a repository).
        entry_point: Function name for ``module`` mode.
        prelude: Trusted code executed in the submission's module before it (e.g. HumanEval's prompt, which
            defines helpers such as ``poly``).
        test_prelude: Trusted code executed in the runner before check-style tests (their helpers).
        repo_root: Directory inside the sandbox to import the repository from (``repo`` mode).
        files: ``{relative path: text}`` of a package the child imports from memory instead of ``repo_root``
            (reference runs: the correct repository is never written to any file system, so no later process of
            the run, the submission included, can read it).
    """

    source: str
    cases: list[TestCase]
    cpu_limits_s: list[float] | None = None
    calibration_index: list[int] | None = None
    only_if_passed: int | None = None
    mode: str = "module"
    entry_point: str = ""
    prelude: str = ""
    test_prelude: str = ""
    repo_root: str | None = None
    files: dict[str, str] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        """The JSON form sent to the runner.

        Raises:
            ValueError: neither or both of ``cpu_limits_s`` and ``calibration_index``, or a wrong length.
        """
        if (self.cpu_limits_s is None) == (self.calibration_index is None):
            raise ValueError("give exactly one of cpu_limits_s and calibration_index")
        per_case = self.cpu_limits_s if self.cpu_limits_s is not None else self.calibration_index
        if len(per_case) != len(self.cases):  # type: ignore[arg-type]
            raise ValueError("cpu_limits_s / calibration_index must have one entry per case")
        cases = []
        for case, lim in zip(self.cases, per_case):  # type: ignore[arg-type]
            key = "cpu_s" if self.cpu_limits_s is not None else "cal"
            cases.append(dict(case.payload(), **{key: float(lim) if key == "cpu_s" else int(lim)}))
        return {
            "mode": self.mode,
            "source": self.source,
            "entry_point": self.entry_point,
            "prelude": self.prelude,
            "test_prelude": self.test_prelude,
            "repo_root": self.repo_root,
            "files": self.files,
            "memory_mb": RUN_MEMORY_MB,
            "only_if_passed": self.only_if_passed,
            "cases": cases,
        }

    def wall_budget_s(self) -> float:
        """Upper bound of the runner's own deadlines for this job, seconds (a backstop, not a limit)."""
        limits = self.cpu_limits_s if self.cpu_limits_s is not None else [MAX_CPU_LIMIT_S] * len(self.cases)
        per_case = sum(WALL_FACTOR * s + WALL_SLACK_S for s in limits)
        import_s = WALL_FACTOR * IMPORT_CPU_S + WALL_SLACK_S
        restarts = len(self.cases) * import_s if self.mode != "program" else 0.0
        return (per_case + import_s + restarts) * HARD_WALL_FACTOR


@dataclass
class Calibration:
    """Per-case CPU limits of a task, measured from its reference solution.

    Attributes:
        cpu_limits_s: Limit per case of the calibration job, seconds.
        reference_cpu_s: Reference CPU seconds per case, as measured.
        reference_passed: Whether the reference passed every case (False means a broken task).
        first_failure: What the reference got wrong, if anything.
    """

    cpu_limits_s: list[float]
    reference_cpu_s: list[float]
    reference_passed: bool
    first_failure: str | None = None


@dataclass
class HarnessRun:
    """Outcome of one sandbox run.

    Attributes:
        jobs: One :class:`JobResult` per job (all failed, with ``error``, when no verdict arrived).
        calibration: Limits measured from the calibration job, when one was given and a verdict arrived.
        env_error: Infrastructure failure (sandbox error, runner bug): the run must not be scored.
        duration_s: Wall seconds of the sandbox run.
        sandbox_cpu_s: CPU seconds of the run as the sandbox measured them (None if unknown).
    """

    jobs: list[JobResult]
    env_error: str | None = None
    duration_s: float = 0.0
    sandbox_cpu_s: float | None = None
    calibration: Calibration | None = None


def verify_record(stdout: str, key: bytes, nonce: str) -> dict | None:
    """The authenticated record in ``stdout``, or None if no line carries a valid MAC for ``nonce``.

    Lines are scanned from the end; forged lines (wrong nonce, wrong MAC, bad encoding) are ignored.
    """
    for line in reversed(stdout.splitlines()):
        if not line.startswith(RESULT_MARKER + " "):
            continue
        parts = line.split(" ")
        if len(parts) != 4 or parts[1] != nonce:
            continue
        body, mac = parts[2], parts[3]
        want = hmac.new(key, f"{nonce} {body}".encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, mac):
            continue
        try:
            record = json.loads(base64.b64decode(body, validate=True))
        except (ValueError, TypeError):
            continue
        if isinstance(record, dict):
            return record
    return None


class Harness:
    """Runs :class:`Job` lists in a sandbox (see the module docstring).

    Args:
        sandbox: An open :class:`arl_envs.sandbox.Sandbox` (the caller owns it).
    """

    def __init__(self, sandbox: Any) -> None:
        self.sandbox = sandbox

    def run(self, jobs: list[Job], calibration: Job | None = None) -> HarnessRun:
        """Run ``jobs`` in one sandbox call.

        Args:
            jobs: The jobs, run in order.
            calibration: A reference job run first (every case at ``CALIBRATION_CPU_S``); jobs with
                ``calibration_index`` take their limits from its measured CPU times.

        Returns:
            The :class:`HarnessRun`. Never raises for anything the submission does; infrastructure problems go
            to ``env_error``.
        """
        from arl_envs.sandbox import Limits  # noqa: PLC0415 - keep module import light

        key = secrets.token_bytes(32)
        nonce = secrets.token_hex(16)
        cal_job = None
        if calibration is not None:
            cal_job = Job(**{**calibration.__dict__, "cpu_limits_s": [CALIBRATION_CPU_S] * len(calibration.cases),
                             "calibration_index": None, "only_if_passed": None})
        payload = {
            "runner": list(RUNNER_SOURCES),
            "child": CHILD_SOURCE,
            "key": key.hex(),
            "nonce": nonce,
            "calibration": cal_job.payload() if cal_job is not None else None,
            "jobs": [j.payload() for j in jobs],
        }
        wall = RUN_STARTUP_S + sum(j.wall_budget_s() for j in jobs)
        if cal_job is not None:
            wall += cal_job.wall_budget_s()
        wall = min(wall, MAX_RUN_WALL_S)
        limits = Limits(
            wall_time_s=wall,
            cpu_time_s=wall,
            memory_mb=RUN_MEMORY_MB,
            max_processes=RUN_MAX_PROCESSES,
            max_output_bytes=RUN_MAX_OUTPUT_BYTES,
        )
        start = time.monotonic()
        try:
            res = self.sandbox.run(
                [self.sandbox.python, "-I", "-S", "-B", "-c", BOOTSTRAP],
                stdin=json.dumps(payload),
                limits=limits,
            )
        except Exception as exc:  # noqa: BLE001 - a closed/broken sandbox object is infrastructure
            return self._no_verdict(jobs, env_error=f"sandbox failure: {type(exc).__name__}: {exc}", start=start)
        if res.sandbox_error is not None:
            return self._no_verdict(jobs, env_error=f"sandbox failure: {res.sandbox_error}", start=start)
        record = verify_record(res.stdout, key, nonce)
        if record is None:
            if res.exit_code == NONDUMPABLE_FAILED_EXIT:
                return self._no_verdict(jobs, env_error="the runner could not make itself non-dumpable", start=start)
            return self._no_verdict(
                jobs,
                error=f"the test run ended without the harness's result record ({res.describe()}); "
                "every test counts as failed",
                start=start,
                cpu=res.cpu_time_s,
            )
        if "harness_error" in record:
            return self._no_verdict(jobs, env_error=f"harness error: {record['harness_error']}", start=start)
        try:
            out = [self._job_result(raw) for raw in record["jobs"]]
            cal = record.get("calibration")
            calib = (
                Calibration(
                    [float(x) for x in cal["cpu_limits_s"]],
                    [float(x) for x in cal["reference_cpu_s"]],
                    bool(cal["reference_passed"]),
                    cal.get("first_failure"),
                )
                if cal
                else None
            )
        except (KeyError, TypeError, ValueError) as exc:
            return self._no_verdict(jobs, env_error=f"malformed harness record: {exc}", start=start)
        if len(out) != len(jobs) or any(
            not o.skipped and len(o.cases) != len(j.cases) for o, j in zip(out, jobs)
        ):
            return self._no_verdict(jobs, env_error="harness record does not match the jobs sent", start=start)
        return HarnessRun(out, duration_s=time.monotonic() - start, sandbox_cpu_s=res.cpu_time_s, calibration=calib)

    @staticmethod
    def _job_result(raw: dict[str, Any]) -> JobResult:
        cases = [
            CaseResult(
                passed=bool(c.get("passed")),
                status=str(c.get("status")),
                got=c.get("got"),
                error=c.get("error"),
                stdout=c.get("stdout"),
                cpu_s=float(c.get("cpu_s", 0.0)),
            )
            for c in raw["cases"]
        ]
        return JobResult(
            cases,
            import_error=raw.get("import_error"),
            skipped=bool(raw.get("skipped")),
            cpu_limits_s=[float(x) for x in raw.get("cpu_limits_s", [])],
        )

    @staticmethod
    def _no_verdict(
        jobs: list[Job], *, env_error: str | None = None, error: str | None = None, start: float, cpu: float | None = None
    ) -> HarnessRun:
        results = [
            JobResult([CaseResult(False, "error", error=error or env_error) for _ in j.cases], error=error or env_error)
            for j in jobs
        ]
        return HarnessRun(results, env_error=env_error, duration_s=time.monotonic() - start, sandbox_cpu_s=cpu)


__all__ = [
    "CALIBRATION_CPU_S",
    "CPU_FACTOR",
    "CPU_FLOOR_S",
    "CPU_QUANTUM_S",
    "MAX_CPU_LIMIT_S",
    "UNCALIBRATED_CPU_S",
    "Calibration",
    "CaseResult",
    "Harness",
    "HarnessRun",
    "Job",
    "JobResult",
    "cpu_limit_from_reference",
    "verify_record",
]

"""Answer grading for the math envs: math-verify in a killable worker process.

Why a process: math-verify parses LaTeX with sympy, and some inputs (``\\dfrac{5^{5^{5^{5^5}}}-5}{16}``) never
finish. math-verify's own timeout uses ``signal.alarm``, which only works on the main thread; RL loops often step
envs from worker threads. So grading runs in a child process, the parent waits on a pipe with a deadline, and a
child that misses it is killed (and restarted on the next call). No signals are used in the caller's process.

Source of the verifier: Hugging Face ``math-verify`` (https://github.com/huggingface/Math-Verify). One
correction on top: math-verify compares numbers after rounding to ``float_rounding=6`` decimals, which calls
``1/2^99`` equal to ``1/2^98``; when both sides are exact numbers (no floats) we require exact equality.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

#: Default deadline for one grading call, in seconds.
DEFAULT_GRADER_TIMEOUT_S = 5.0
#: Budget for the worker's start-up (imports sympy and math-verify), in seconds.
GRADER_STARTUP_TIMEOUT_S = 60.0
#: Address-space limit of the grader process, in bytes.
GRADER_MEMORY_LIMIT_BYTES = 4 * 1024**3


@dataclass(frozen=True)
class GradeResult:
    """Outcome of grading one answer.

    Attributes:
        correct: The prediction is equivalent to the gold answer.
        timed_out: The grader missed its deadline and was killed (``correct`` is then False).
        error: A grader failure other than a timeout (``correct`` is then False), else None.
    """

    correct: bool
    timed_out: bool = False
    error: str | None = None


def _verify_in_worker(gold: str, pred: str) -> bool:
    """Run math-verify (inside the worker process). ``pred`` is the content of the model's ``\\boxed{}``."""
    import sympy
    from math_verify import parse, verify

    gold_parsed = parse(f"${gold}$", parsing_timeout=None)
    pred_parsed = parse(f"$\\boxed{{{pred}}}$", parsing_timeout=None)
    if not gold_parsed or not pred_parsed:
        return False
    if not verify(gold_parsed, pred_parsed, timeout_seconds=None):
        return False
    g, p = gold_parsed[0], pred_parsed[0]
    if (
        isinstance(g, sympy.Expr)
        and isinstance(p, sympy.Expr)
        and g.is_number
        and p.is_number
        and not g.atoms(sympy.Float)
        and not p.atoms(sympy.Float)
    ):
        return bool(sympy.simplify(g - p) == 0)
    return True


def _worker_main() -> None:
    """Worker loop: one JSON request per stdin line (``[gold, pred]``), one JSON reply per stdout line."""
    import logging
    import resource

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    # An answer like 5^(5^(5^5)) must not eat the host's memory before the deadline kills us.
    resource.setrlimit(resource.RLIMIT_AS, (GRADER_MEMORY_LIMIT_BYTES, GRADER_MEMORY_LIMIT_BYTES))
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing the verifier prints may corrupt the protocol
    for line in sys.stdin:
        try:
            gold, pred = json.loads(line)
            reply = ["ok", _verify_in_worker(gold, pred)]
        except (MemoryError, RecursionError, OverflowError):
            reply = ["ok", False]  # too big to compare: the model's answer is not verifiably equal
        except Exception as exc:  # a grader bug must not kill the worker; it is reported as env_error
            reply = ["error", f"{type(exc).__name__}: {exc}"]
        out.write(json.dumps(reply) + "\n")
        out.flush()


class MathGrader:
    """Grades answers with math-verify in a child process that is killed when it misses its deadline.

    The child is a plain subprocess (``python -m arl_envs.envs.math.grading``) speaking JSON lines over its
    stdin/stdout, so it also works inside daemonic processes (Gymnasium's ``AsyncVectorEnv`` workers), where
    ``multiprocessing`` may not start children. Thread-safe (one call at a time per grader). The child is started on
    first use (about 1 s: it imports sympy and math-verify) and again after a kill.

    Args:
        timeout_s: Deadline of one :meth:`grade` call, in seconds.
    """

    def __init__(self, timeout_s: float = DEFAULT_GRADER_TIMEOUT_S):
        self.timeout_s = float(timeout_s)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._buf = b""

    def _start(self) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "arl_envs.envs.math.grading"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._buf = b""

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()

    def _request(self, gold: str, pred: str, timeout_s: float) -> list[Any] | None:
        """Send one request and wait up to ``timeout_s`` for its reply line; None on timeout (caller kills)."""
        assert self._proc is not None and self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write((json.dumps([gold, pred]) + "\n").encode())
        self._proc.stdin.flush()
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise EOFError("grader process exited")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return json.loads(line)

    def grade(self, gold: str, pred: str, timeout_s: float | None = None) -> GradeResult:
        """Is ``pred`` (the content of the model's ``\\boxed{}``) equivalent to ``gold``?

        Identical strings are correct without a call to the worker. The worker's start-up (about 1 s) has its own
        budget (:data:`GRADER_STARTUP_TIMEOUT_S`): the deadline covers only the grading itself.

        Args:
            gold: The gold answer (LaTeX or plain text, without ``$``).
            pred: The content of the model's final ``\\boxed{}``.
            timeout_s: Deadline for this call in seconds (default: the grader's ``timeout_s``).

        Returns:
            A :class:`GradeResult`; never raises for any input strings.
        """
        if pred.strip() == gold.strip():
            return GradeResult(True)
        with self._lock:
            try:
                if self._proc is None or self._proc.poll() is not None:
                    self._kill()
                    self._start()
                    if self._request("1", "1", GRADER_STARTUP_TIMEOUT_S) is None:
                        self._kill()
                        return GradeResult(False, error="grader process failed to start")
                reply = self._request(gold, pred, self.timeout_s if timeout_s is None else timeout_s)
            except (EOFError, OSError, ValueError) as exc:
                self._kill()
                return GradeResult(False, error=f"grader process died: {exc!r}")
            if reply is None:
                self._kill()
                return GradeResult(False, timed_out=True)
        status, value = reply
        if status == "ok":
            return GradeResult(bool(value))
        return GradeResult(False, error=str(value))

    def close(self) -> None:
        """Stop the worker process (idempotent)."""
        with self._lock:
            self._kill()

    def __del__(self) -> None:
        try:
            self._kill()
        except Exception:
            pass


class GraderPool:
    """Graders for concurrent callers: each call borrows an idle :class:`MathGrader` (or starts a new one), so steps
    running in parallel threads never wait on each other's deadline.

    The number of worker processes grows to the peak number of concurrent calls and stays there.
    """

    def __init__(self) -> None:
        self._idle: list[MathGrader] = []
        self._lock = threading.Lock()

    def grade(self, gold: str, pred: str, timeout_s: float | None = None) -> GradeResult:
        """:meth:`MathGrader.grade` on a grader no other thread is using."""
        if pred.strip() == gold.strip():
            return GradeResult(True)
        with self._lock:
            grader = self._idle.pop() if self._idle else MathGrader()
        try:
            return grader.grade(gold, pred, timeout_s=timeout_s)
        finally:
            with self._lock:
                self._idle.append(grader)

    def close(self) -> None:
        """Stop every idle worker process."""
        with self._lock:
            idle, self._idle = self._idle, []
        for grader in idle:
            grader.close()


_shared: GraderPool | None = None
_shared_lock = threading.Lock()


def shared_grader() -> GraderPool:
    """The process-wide grader pool used by the math envs."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = GraderPool()
        return _shared


if __name__ == "__main__":
    _worker_main()

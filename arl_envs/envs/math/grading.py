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

import multiprocessing as mp
import threading
from dataclasses import dataclass
from typing import Any

#: Default deadline for one grading call, in seconds.
DEFAULT_GRADER_TIMEOUT_S = 5.0


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


def _worker_main(conn: Any) -> None:
    import logging

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        gold, pred = msg
        try:
            conn.send(("ok", _verify_in_worker(gold, pred)))
        except Exception as exc:  # a grader bug must not kill the worker; it is reported as env_error
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class MathGrader:
    """Grades answers with math-verify in a child process that is killed when it misses its deadline.

    Thread-safe (one call at a time per grader). The child is started on first use (about 1 s: it imports
    sympy and math-verify) and again after a kill.

    Args:
        timeout_s: Deadline of one :meth:`grade` call, in seconds.
    """

    def __init__(self, timeout_s: float = DEFAULT_GRADER_TIMEOUT_S):
        self.timeout_s = float(timeout_s)
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None

    def _start(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="arl-math-grader")
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(timeout=5)
            self._conn.close()
        self._proc = self._conn = None

    def grade(self, gold: str, pred: str, timeout_s: float | None = None) -> GradeResult:
        """Is ``pred`` (the content of the model's ``\\boxed{}``) equivalent to ``gold``?

        Identical strings are correct without a call to the worker. A first call includes the worker's start-up
        (about 1 s) in its deadline budget separately: the deadline covers only the grading itself.

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
            if self._proc is None or not self._proc.is_alive():
                self._start()
                # Start-up is not the agent's fault: wait for it with a separate, generous budget.
                self._conn.send(("1", "1"))
                if not self._conn.poll(60.0):
                    self._kill()
                    return GradeResult(False, error="grader process failed to start")
                self._conn.recv()
            try:
                self._conn.send((gold, pred))
                if not self._conn.poll(self.timeout_s if timeout_s is None else timeout_s):
                    self._kill()
                    return GradeResult(False, timed_out=True)
                status, value = self._conn.recv()
            except (EOFError, OSError, BrokenPipeError) as exc:
                self._kill()
                return GradeResult(False, error=f"grader process died: {exc!r}")
        if status == "ok":
            return GradeResult(bool(value))
        return GradeResult(False, error=value)

    def close(self) -> None:
        """Stop the worker process (idempotent)."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.send(None)
                except (OSError, BrokenPipeError):
                    pass
            self._kill()


_shared: MathGrader | None = None
_shared_lock = threading.Lock()


def shared_grader() -> MathGrader:
    """The process-wide grader used by the math envs (one worker process per Python process)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = MathGrader()
        return _shared

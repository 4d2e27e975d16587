"""Answer grading for the math envs: math-verify in a killable worker process.

Why a process: math-verify parses LaTeX with sympy, and some inputs (``\\dfrac{5^{5^{5^{5^5}}}-5}{16}``) never
finish. math-verify's own timeout uses ``signal.alarm``, which only works on the main thread; RL loops often step
envs from worker threads. So grading runs in a child process, the parent waits on a pipe with a deadline, and a
child that misses it is killed (and restarted on the next call). No signals are used in the caller's process.

Source of the verifier: Hugging Face ``math-verify`` (https://github.com/huggingface/Math-Verify). One
correction on top: math-verify compares numbers after rounding to ``float_rounding=6`` decimals, which calls
``1/2^99`` equal to ``1/2^98``; when both sides are exact numbers (no floats) we require exact equality.

Exact numeric fast path: when both the gold answer and the prediction are plain numbers (integers with optional
sign and thousands separators, decimals, ``a/b``, ``\\frac{a}{b}``, optionally wrapped in ``{}`` or ``\\boxed{}``),
:func:`numeric_verdict` decides in the caller's process, in microseconds, with the verdict math-verify (plus the
exactness correction above) returns; anything it is unsure of (other forms, decimals within rounding distance of
each other, very long numbers) falls through to math-verify. The agreement is tested on every shipped GSM8K answer
in several correct and wrong forms.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

#: Default deadline for one grading call, in seconds.
DEFAULT_GRADER_TIMEOUT_S = 5.0
#: Budget for the worker's start-up (imports sympy and math-verify), in seconds.
GRADER_STARTUP_TIMEOUT_S = 60.0
#: Address-space limit of the grader process, in bytes.
GRADER_MEMORY_LIMIT_BYTES = 4 * 1024**3
#: Most worker processes one :meth:`GraderPool.grade_many` batch uses at once (default: the CPU count, 2 to 8).
GRADER_BATCH_WORKERS = min(8, max(2, os.cpu_count() or 2))


#: Longest string the numeric fast path reads, in characters (longer ones go to math-verify).
FAST_PATH_MAX_CHARS = 64
#: With a decimal on either side, math-verify rounds to 6 decimals: the fast path calls two different values unequal
#: only when they differ by more than this (absolute) ...
FAST_PATH_MIN_ABS_GAP = 1e-5
#: ... and by more than this fraction of their magnitude (far above a 53-bit float's representation error) ...
FAST_PATH_MIN_REL_GAP = 1e-12
#: ... and when no number has more digits than this (sympy Floats parsed from longer strings may lose digits).
FAST_PATH_MAX_FLOAT_DIGITS = 15

_INT = r"[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+"  # thousands separators only in groups of three
_NUMBER = re.compile(
    rf"(?P<sign>[+-]?)(?:"
    rf"(?P<dec>(?:{_INT})?\.[0-9]+)"
    rf"|(?P<num>[0-9]+)/(?P<den>[0-9]+)"
    rf"|\\[dt]?frac\{{(?P<fsign>-?)(?P<fnum>[0-9]+)\}}\{{(?P<dsign>-?)(?P<fden>[0-9]+)\}}"
    rf"|(?P<int>{_INT}))"
)
_WRAPPED = re.compile(r"(?:\\boxed\s*)?\{(.*)\}", re.DOTALL)


def _parse_plain_number(text: str) -> tuple[int | Fraction, bool, int] | None:
    """``(value, written with a decimal point, digit count)`` of a plain number in one of the fast path's forms,
    or None (then math-verify decides). A decimal point means math-verify reads a sympy Float."""
    text = text.strip()
    if len(text) > FAST_PATH_MAX_CHARS:
        return None
    if text.isdigit() and text.isascii():  # the common case, 1 µs
        return int(text), False, len(text)
    braced = False  # inside bare {} (not \\boxed{}) math-verify reads "1,000" as a set
    while (wrapped := _WRAPPED.fullmatch(text)) is not None:
        braced |= not text.startswith("\\boxed")
        text = wrapped.group(1).strip()
    m = _NUMBER.fullmatch(text)
    if m is None:
        return None
    if "," in text and (braced or text.startswith("+") or text.lstrip("-").startswith("0")):
        return None  # math-verify reads "0,500" as 0.5, "{1,000}" as a set, "+1,000" not as 1000: it decides
    negative = m["sign"] == "-"
    value: int | Fraction
    if m["dec"] is not None:
        digits = m["dec"].replace(",", "")
        value, is_float = Fraction(digits), True
    elif m["int"] is not None:
        digits = m["int"].replace(",", "")
        value, is_float = int(digits), False
    else:
        num, den = (m["num"], m["den"]) if m["num"] is not None else (m["fnum"], m["fden"])
        if int(den) == 0:
            return None
        digits = num + den
        value, is_float = Fraction(int(num), int(den)), False
        negative ^= m["fsign"] == "-"
        negative ^= m["dsign"] == "-"
    return (-value if negative else value), is_float, sum(c.isdigit() for c in digits)


#: A numeral (digits, thousands separators in groups of three, a decimal part): the unit
#: :func:`number_answer_error` counts.
_NUMERAL = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]*\.[0-9]+|[0-9]+")
#: ``x =`` in front of an equation's solution.
_ASSIGNMENT = re.compile(r"^\s*[A-Za-z]\s*=\s*")
#: LaTeX commands a one-number answer may hold besides the number: text and font wrappers (their braces are
#: dropped, their content checked like the rest), escaped ``$``/``%``, spacing. Any other command (``\lfloor``,
#: ``\pi``, ``\sqrt``, ``\cdot``...) could compute a value with a single numeral: ``4 + \lceil e \rceil`` is 7.
NUMBER_ANSWER_COMMANDS = frozenset(
    {"text", "textbf", "textit", "textrm", "textnormal", "mathrm", "mathbf", "mathit", "mbox", "boxed",
     "$", "%", ",", ";", ":", "!", " ", "quad", "qquad"}
)
_LATEX_COMMAND = re.compile(r"\\([A-Za-z]+|.)")
#: What else a one-number answer may hold: ASCII words (units: ``8 apples``), the numeral, spaces and ``.,:;'$%=``;
#: no operator, bracket or other symbol (``+``, ``^``, ``|``, ``×``, ``π``...), a sign only in front.
_NUMBER_ANSWER_REST = re.compile(r"[+-]?[A-Za-z0-9\s.,:;'$%=]*")


def number_answer_error(answer: str, *, exact: bool = False) -> str | None:
    """Why ``answer`` is not ONE number in lowest terms, or None when it is (or when only the grader can tell).

    The arithmetic tasks ask for a computed value. Graded by equivalence alone, an answer that repeats the
    question's expression (``\\boxed{4 + 3}`` for "Compute 4 + 3.") would score, so it is refused first.

    Accepted: an integer (sign, thousands separators), a decimal (unless ``exact``), ``a/b`` or
    ``\\frac{a}{b}`` (``\\dfrac``, ``\\tfrac``) with ``gcd(a, b) = 1`` and ``b > 1``, each optionally wrapped in
    ``{}``/``\\boxed{}``/``$...$`` and after a variable assignment (``x = -3``). Other text holding at most one
    numeral, ASCII words, spaces, ``.,:;'$%=``, a leading sign and only the LaTeX commands of
    :data:`NUMBER_ANSWER_COMMANDS` (``8 apples``, ``44 \\text{ cards}``, ``\\$7``) is left to the grader; anything
    else (another numeral, an operator or bracket, ``\\lceil e \\rceil``, ``\\pi``) is an expression.

    Args:
        answer: The boxed content.
        exact: Refuse decimals (for tasks that ask for a fraction).

    Returns:
        The reason for the agent (e.g. "the answer must be one number, not an expression"), or None.
    """
    text = _ASSIGNMENT.sub("", answer.strip().strip("$").strip(), count=1)
    inner = text
    while (wrapped := _WRAPPED.fullmatch(inner)) is not None:
        inner = wrapped.group(1).strip()
    m = _NUMBER.fullmatch(inner)
    if m is not None:
        num, den = (m["num"], m["den"]) if m["num"] is not None else (m["fnum"], m["fden"])
        if num is not None and (int(den) <= 1 or math.gcd(int(num), int(den)) != 1):
            return "the fraction is not in lowest terms"
        if m["dec"] is not None and exact:
            return "give an exact answer (an integer or a fraction), not a decimal"
        return None
    expression = "the answer must be one number, not an expression: compute its value"
    if len(_NUMERAL.findall(text)) > 1:
        return expression
    commands = _LATEX_COMMAND.findall(text)
    if any(c not in NUMBER_ANSWER_COMMANDS for c in commands):
        return expression
    rest = _LATEX_COMMAND.sub(" ", text).replace("{", " ").replace("}", " ").strip()
    if not _NUMBER_ANSWER_REST.fullmatch(rest):
        return expression
    return None


def numeric_verdict(gold: str, pred: str) -> bool | None:
    """The verdict on two plain numbers without math-verify, or None when math-verify must decide.

    Returns the same verdict as :class:`MathGrader` (math-verify with the exact-number correction): exact numbers
    (integers, fractions) are equal iff their values are; with a decimal on either side (and at most
    :data:`FAST_PATH_MAX_FLOAT_DIGITS` digits on both sides), equal values are equal and
    values farther apart than math-verify's 6-decimal rounding could join are not; everything else returns None.

    Args:
        gold: The gold answer (as given to :meth:`MathGrader.grade`).
        pred: The content of the model's ``\\boxed{}``.

    Returns:
        True / False when decided, else None. Never raises; runs in microseconds (inputs over
        :data:`FAST_PATH_MAX_CHARS` characters are not read).
    """
    g = _parse_plain_number(gold)
    if g is None:
        return None
    p = _parse_plain_number(pred)
    if p is None:
        return None
    (gv, g_float, g_digits), (pv, p_float, p_digits) = g, p
    if (g_float or p_float) and max(g_digits, p_digits) > FAST_PATH_MAX_FLOAT_DIGITS:
        return None  # even equal values: math-verify parses long decimals at different precisions
    if gv == pv:
        return True
    if not (g_float or p_float):
        return False
    gap = abs(gv - pv)
    if gap > FAST_PATH_MIN_ABS_GAP and gap > FAST_PATH_MIN_REL_GAP * max(abs(gv), abs(pv)):
        return False
    return None


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


def _quick_verdict(gold: str, pred: str, fast_path: bool) -> GradeResult | None:
    """The verdict without the worker (identical strings; plain numbers when ``fast_path``), or None."""
    if pred.strip() == gold.strip():
        return GradeResult(True)
    if fast_path:
        verdict = numeric_verdict(gold, pred)
        if verdict is not None:
            return GradeResult(verdict)
    return None


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
        fast_path: Decide plain numbers with :func:`numeric_verdict` before calling the worker (same verdicts;
            False sends every non-identical pair to math-verify, as before the fast path existed).
    """

    def __init__(self, timeout_s: float = DEFAULT_GRADER_TIMEOUT_S, fast_path: bool = True):
        self.timeout_s = float(timeout_s)
        self.fast_path = bool(fast_path)
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

        Identical strings, and plain numbers (:func:`numeric_verdict`, unless ``fast_path`` is off), are decided
        without a call to the worker. The worker's start-up (about 1 s) has its own budget
        (:data:`GRADER_STARTUP_TIMEOUT_S`): the deadline covers only the grading itself.

        Args:
            gold: The gold answer (LaTeX or plain text, without ``$``).
            pred: The content of the model's final ``\\boxed{}``.
            timeout_s: Deadline for this call in seconds (default: the grader's ``timeout_s``).

        Returns:
            A :class:`GradeResult`; never raises for any input strings.
        """
        quick = _quick_verdict(gold, pred, self.fast_path)
        if quick is not None:
            return quick
        return self._grade_in_worker(gold, pred, timeout_s)

    def _grade_in_worker(self, gold: str, pred: str, timeout_s: float | None) -> GradeResult:
        """Grade with math-verify in the worker (started or restarted as needed); never raises."""
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

    def grade(
        self, gold: str, pred: str, timeout_s: float | None = None, fast_path: bool = True
    ) -> GradeResult:
        """:meth:`MathGrader.grade` on a grader no other thread is using (``fast_path`` as there)."""
        quick = _quick_verdict(gold, pred, fast_path)
        if quick is not None:
            return quick
        with self._lock:
            grader = self._idle.pop() if self._idle else MathGrader()
        try:
            return grader._grade_in_worker(gold, pred, timeout_s)
        finally:
            with self._lock:
                self._idle.append(grader)

    def grade_many(
        self, pairs: list[tuple[str, str]], timeout_s: float | None = None, fast_path: bool = True
    ) -> list[GradeResult]:
        """Grade a batch of ``(gold, pred)`` pairs, the math-verify ones spread over up to
        :data:`GRADER_BATCH_WORKERS` worker processes at once.

        Pairs decided without a worker (identical strings, plain numbers) are answered in this thread; the rest run
        concurrently, one thread per borrowed worker (the threads only wait on pipes, so the workers grade in
        parallel). Each pair has its own ``timeout_s`` deadline, as in :meth:`grade`.

        Returns:
            One :class:`GradeResult` per pair, in order; never raises for any input strings.
        """
        results: list[GradeResult | None] = [_quick_verdict(g, p, fast_path) for g, p in pairs]
        slow = [i for i, r in enumerate(results) if r is None]
        if len(slow) == 1:
            results[slow[0]] = self.grade(*pairs[slow[0]], timeout_s=timeout_s, fast_path=False)
        elif slow:
            queue = list(reversed(slow))
            queue_lock = threading.Lock()

            def drain() -> None:
                while True:
                    with queue_lock:
                        if not queue:
                            return
                        i = queue.pop()
                    results[i] = self.grade(*pairs[i], timeout_s=timeout_s, fast_path=False)

            threads = [threading.Thread(target=drain, daemon=True) for _ in range(min(len(slow), GRADER_BATCH_WORKERS))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        return [r if r is not None else GradeResult(False, error="not graded") for r in results]

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

"""The in-sandbox test runner of the code envs (standard library only; it runs INSIDE the sandbox).

This file is not imported by the sandboxed programs: the host reads its source and sends it, with the tests and
a per-run secret, on the standard input of ``python3 -I -S -B -c BOOTSTRAP`` (see
:mod:`arl_envs.envs.code.harness`). The host also imports it for the value codec and the comparisons, so both
sides share one implementation.

Process layout inside one sandbox run::

    runner parent  (pid 1 of the run's pid namespace under bwrap; non-dumpable; never imports submitted code)
      └── child    (fresh `python3 -I -S -B`, :mod:`arl_envs.envs.code.child`; imports the submission; one at a
                    time; restarted after a crash)

Guarantees (each is a test in ``arl_envs_tests/envs/code/test_hack_battery.py``):

* **Trusted channel.** Only the parent holds the run's stdout. Children get their own pipes; the parent is made
  non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``) before it reads the payload, so ``/proc/<ppid>/fd``,
  ``/proc/<ppid>/mem`` and ``ptrace`` are closed to same-uid children. The final record is authenticated with
  HMAC-SHA256 keyed by a secret that arrives on stdin and never reaches a child (children are fresh ``exec``'d
  interpreters, started after stdin was read and closed). The host accepts a verdict only from a record with a
  valid MAC and the run's nonce: printing ``=== 5 passed ===``, exiting 0 early or killing the parent yields no
  such record, hence no pass.
* **Comparison outside the submission.** A child returns a *serialisation* of each return value (exact built-in
  types only: an ``int`` subclass, or any object with a custom ``__eq__``, is refused). The parent rebuilds
  plain built-in values and compares them with a strict, type-checked equality (``True`` is not ``1``, a tuple
  is not a list). Programs' stdout is compared exactly and in order (whitespace-normalised per line only for
  tests marked ``"lines"``).
* **Tests loaded after, and out of reach of, the solution.** Test code (HumanEval ``check`` bodies, MBPP
  asserts) runs in the parent with ``candidate`` bound to a proxy that calls the child; the solution never sees
  the test module, expected values, or the hidden test list.
* **Reference out of reach.** A reference run's package (the correct repository of ``code.repo-v1``'s CPU
  calibration, run just before the submission) is sent to its child, which imports it from memory: it is never
  written to any file system, so no later process of the run (the submission) can read or copy it.
* **Config files ignored.** All interpreters run with ``-I -S -B``: no current directory on ``sys.path``, no
  ``site``/``sitecustomize``/``usercustomize``/``.pth``, no ``PYTHON*`` variables; no pytest is involved, so
  ``conftest.py``/``pytest.ini`` mean nothing.
* **Limits.** Per-test CPU seconds (from ``/proc/<pid>/stat``, kernel-accounted) and a wall deadline derived from
  it (extended only while the child is runnable, i.e. starved by load, never while it sleeps); an address-space
  limit and ``oom_score_adj=1000`` for children; after a crash or timeout, every other process of the run
  (``kill(-1, SIGKILL)`` when the parent is the namespace's pid 1, else the child's process group) is killed and
  reaped, so fork-and-hang leftovers neither hold pipes nor survive.
* **Set-up the submission cannot void** (``arl_envs_tests/envs/test_tampering_battery.py``). The submission runs as
  the runner's own user, so it can change every path, mode, free block and inode the runner could use, signal the
  runner and lower its rlimits (``prlimit``). So: (1) the runner's scratch space (:class:`Scratch`: one directory
  per job under ``/tmp/arl-run-<random>``, made with plain ``mkdir``) exists before any submitted code runs and is
  reached afterwards only through open directory fds (a child's working directory is ``/proc/self/fd/<fd>``, its
  mode restored with ``fchmod``), never by walking ``/tmp`` again; (2) the runner ignores ``SIGINT`` (Python
  would raise ``KeyboardInterrupt`` in it; children get the default handler back); (3) a set-up failure
  (``OSError``/``MemoryError``: no fd, no process slot, no memory) is attributed by when it happens: before any
  process running submitted code was started in this run it is the sandbox's (a ``harness_error``, which the host
  reports as ``env_error``); after, it is the submission's doing, and its cases fail with a message saying so
  (scored). Killing or stopping the runner leaves no authenticated record: every test fails (scored).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import marshal
import math
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Any

#: Marker that starts the runner's authenticated end-of-tests record on its stdout.
RESULT_MARKER = "ARL-CODE-RESULT"
#: Version of the payload/record protocol.
PROTOCOL_VERSION = 1
#: Bootstrap passed as ``python3 -I -S -B -c BOOTSTRAP``: become non-dumpable, read the payload, run ``main``.
BOOTSTRAP = (
    "import ctypes,sys,json\n"
    "if ctypes.CDLL(None).prctl(4,0,0,0,0)!=0:raise SystemExit(97)\n"  # PR_SET_DUMPABLE=4
    "p=json.loads(sys.stdin.buffer.read())\n"
    "g={'__name__':'arl_runner'}\n"
    "exec(compile(p['runner'],'<arl-runner>','exec'),g)\n"
    "g['main'](p)\n"
)

#: Wall deadline of a test = WALL_FACTOR * its CPU limit + WALL_SLACK_S (seconds).
WALL_FACTOR = 2.0
WALL_SLACK_S = 0.5
#: While the child is runnable (starved by machine load, not sleeping) the deadline is extended, up to this many
#: times the nominal wall deadline.
HARD_WALL_FACTOR = 6.0
#: CPU seconds allowed for starting a child and importing the submission.
IMPORT_CPU_S = 2.0
#: Seconds to wait for a child's exit status after it closed its result pipe.
EXIT_GRACE_S = 0.2
#: Seconds the pid-1 runner waits for killed processes to be reaped, and its polling interval.
REAP_TIMEOUT_S = 2.0
REAP_POLL_S = 0.001
#: Poll interval of the parent while a child works (CPU checks), seconds.
POLL_S = 0.02
#: Largest response (one serialised return value) accepted from a child, bytes.
MAX_RESPONSE_BYTES = 8 << 20
#: Largest stdout of a program test accepted, bytes (more fails the test).
MAX_PROGRAM_OUTPUT_BYTES = 4 << 20
#: Bytes of a child's stdout/stderr kept for the report of a function test.
MAX_CAPTURE_BYTES = 16 << 10
#: Characters of a repr/traceback kept in a case report.
MAX_REPR_CHARS = 400
MAX_TRACEBACK_CHARS = 1500
#: Nesting depth accepted by the value codec.
MAX_DEPTH = 100
#: Fraction of the run's memory a child may map (RLIMIT_AS), the rest is the parent's.
CHILD_MEMORY_FRACTION = 0.75
#: Entries of a job's working directory (the submission's) visited at most when removing it.
MAX_REMOVE_ENTRIES = 200_000
#: Exit code of a child whose init failed before the submission ran.
CHILD_INIT_FAILED = 96


# ----------------------------------------------------------------------------------------------- value codec
class CodecError(ValueError):
    """A value that cannot cross the parent/child boundary (unsupported type, too deep, malformed)."""


def encode(value: Any, depth: int = 0) -> Any:
    """Encode a plain Python value as JSON-able data with explicit types.

    Supported (exact types only, subclasses refused): None, bool, int, float (nan/inf too), str, bytes,
    complex, list, tuple, dict, set, frozenset. JSON ``null``/``true``/``false``/strings/arrays stand for
    None/bool/str/list; every other type is a one-key object: ``{"i": "12"}``, ``{"f": "0.5"}``,
    ``{"t": [...]}``, ``{"d": [[k, v], ...]}``, ``{"set": [...]}``, ``{"fs": [...]}``, ``{"b": "hex"}``,
    ``{"c": [re, im]}``. (The child writes strings as ``{"s": "<utf-8 hex>"}``; :func:`decode` accepts both.)

    Raises:
        CodecError: an unsupported type or nesting deeper than MAX_DEPTH.
    """
    if depth > MAX_DEPTH:
        raise CodecError(f"value nested deeper than {MAX_DEPTH} levels")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return {"i": str(value)}
    if t is float:
        return {"f": repr(value)}
    if t is list:
        return [encode(v, depth + 1) for v in value]
    if t is tuple:
        return {"t": [encode(v, depth + 1) for v in value]}
    if t is dict:
        return {"d": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if t is set:
        return {"set": [encode(v, depth + 1) for v in value]}
    if t is frozenset:
        return {"fs": [encode(v, depth + 1) for v in value]}
    if t is bytes:
        return {"b": value.hex()}
    if t is complex:
        return {"c": [repr(value.real), repr(value.imag)]}
    raise CodecError(
        f"a value of type {t.__module__}.{t.__qualname__} cannot be returned; "
        "return plain built-in values (int, float, str, bool, None, list, tuple, dict, set, bytes)"
    )


def decode(data: Any, depth: int = 0) -> Any:
    """Rebuild a value from :func:`encode`'s form (strictly: anything else raises :class:`CodecError`)."""
    if depth > MAX_DEPTH:
        raise CodecError(f"value nested deeper than {MAX_DEPTH} levels")
    if data is None or type(data) is bool or type(data) is str:
        return data
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is not dict or len(data) != 1:
        raise CodecError(f"malformed value encoding: {str(data)[:80]}")
    (tag, body), = data.items()
    try:
        if tag == "s" and type(body) is str:
            return bytes.fromhex(body).decode("utf-8", "surrogatepass")
        if tag == "i" and type(body) is str:
            return int(body)
        if tag == "f" and type(body) is str:
            return float(body)
        if tag == "c" and type(body) is list and len(body) == 2:
            return complex(float(body[0]), float(body[1]))
        if tag == "b" and type(body) is str:
            return bytes.fromhex(body)
        if type(body) is list:
            if tag == "t":
                return tuple(decode(v, depth + 1) for v in body)
            if tag == "set":
                return {decode(v, depth + 1) for v in body}
            if tag == "fs":
                return frozenset(decode(v, depth + 1) for v in body)
            if tag == "d":
                out = {}
                for pair in body:
                    if type(pair) is not list or len(pair) != 2:
                        raise CodecError("malformed dict item")
                    out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)
                return out
    except (ValueError, TypeError, OverflowError) as exc:  # int digit limit, unhashable keys, bad floats
        raise CodecError(f"malformed {tag!r} value: {exc}") from None
    raise CodecError(f"unknown value tag {tag!r}")


def strict_equal(a: Any, b: Any, rel_tol: float = 0.0, abs_tol: float = 0.0) -> bool:
    """Type-checked equality: ``type(a) is type(b)`` at every level, containers compared element-wise in order.

    Floats compare exactly unless ``rel_tol``/``abs_tol`` are given (``math.isclose``); two NaNs are equal.
    Sets and dict keys compare as sets of (type, value) pairs, so ``{1}`` is not ``{True}``.
    """
    if type(a) is not type(b):
        return False
    t = type(a)
    if t is float:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if rel_tol or abs_tol:
            return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
        return a == b
    if t is complex:
        return strict_equal(a.real, b.real, rel_tol, abs_tol) and strict_equal(a.imag, b.imag, rel_tol, abs_tol)
    if t is list or t is tuple:
        return len(a) == len(b) and all(strict_equal(x, y, rel_tol, abs_tol) for x, y in zip(a, b))
    if t is dict:
        if _typed_keys(a) != _typed_keys(b):
            return False
        return all(strict_equal(a[k], b[k], rel_tol, abs_tol) for k in a)
    if t is set or t is frozenset:
        return _typed_keys(a) == _typed_keys(b)
    return a == b


def _typed_keys(items: Any) -> set:
    return {(type(k), k) for k in items}


def safe_repr(value: Any, limit: int = MAX_REPR_CHARS) -> str:
    """``repr`` cut to ``limit`` characters (never raises)."""
    try:
        text = repr(value)
    except BaseException:  # noqa: BLE001 - a RecursionError on a deep value
        text = f"<unprintable {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 15] + "...[truncated]"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]" + text[-(limit - 5):]


def outputs_match(got: str, expected: str, mode: str) -> bool:
    """Compare a program's stdout with the expected output.

    ``"exact"``: byte-for-byte equal. ``"lines"``: equal after stripping trailing whitespace of each line and
    trailing empty lines (the usual judge normalisation); line order always matters.
    """
    if mode == "exact":
        return got == expected
    if mode == "lines":
        return _norm_lines(got) == _norm_lines(expected)
    raise ValueError(f"unknown output comparison {mode!r}")


def _norm_lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# ----------------------------------------------------------------------------------------------- CPU limits
#: Smallest CPU limit of one test case, seconds.
CPU_FLOOR_S = 0.5
#: CPU limit = CPU_FACTOR x the reference solution's CPU time on the case (when above the floor).
CPU_FACTOR = 10.0
#: CPU limits are rounded up to a multiple of this, seconds (stable limits despite timer noise).
CPU_QUANTUM_S = 0.1
#: Largest CPU limit of one case, seconds (a slow reference does not buy unbounded time).
MAX_CPU_LIMIT_S = 10.0
#: CPU limit per case when no reference timing exists (uncalibrated tasks), seconds.
UNCALIBRATED_CPU_S = 2.0
#: CPU limit per case while measuring the reference, seconds.
CALIBRATION_CPU_S = 20.0


def cpu_limit_from_reference(reference_cpu_s: float) -> float:
    """``min(MAX_CPU_LIMIT_S, max(CPU_FLOOR_S, CPU_FACTOR * reference_cpu_s))`` rounded up to CPU_QUANTUM_S."""
    raw = min(MAX_CPU_LIMIT_S, max(CPU_FLOOR_S, CPU_FACTOR * max(0.0, float(reference_cpu_s))))
    return round(math.ceil(raw / CPU_QUANTUM_S - 1e-9) * CPU_QUANTUM_S, 6)


# ----------------------------------------------------------------------------------------------- parent side
def main(payload: dict) -> None:
    """Entry point of the runner parent (called by :data:`BOOTSTRAP`). Writes one authenticated record."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a child's kill(ppid, SIGINT) is no KeyboardInterrupt here
    key = bytes.fromhex(payload.pop("key"))
    nonce = str(payload["nonce"])
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # stdin (already read to EOF) is closed to everyone from now on
    os.close(devnull)
    scratch: Scratch | None = None
    try:
        record: dict = {"version": PROTOCOL_VERSION}
        limits: list[float] | None = None
        # Set-up, before any submitted code runs: a failure here is the sandbox's (a harness error).
        scratch = Scratch(len(payload["jobs"]) + 1)
        if payload.get("calibration"):
            cal = _run_job(dict(payload["calibration"], trusted=True), payload, scratch.dirs[-1])
            ref_cpu = [float(c["cpu_s"]) for c in cal["cases"]]
            limits = [cpu_limit_from_reference(c) for c in ref_cpu]
            failed = [i for i, c in enumerate(cal["cases"]) if not c["passed"]]
            record["calibration"] = {
                "reference_cpu_s": ref_cpu,
                "cpu_limits_s": limits,
                "reference_passed": not failed and cal["import_error"] is None,
                "first_failure": (cal["import_error"] or str(cal["cases"][failed[0]])[:600]) if failed else None,
            }
        resolved = []
        for job in payload["jobs"]:
            cases = []
            for case in job["cases"]:
                if "cal" in case:
                    case = dict(case, cpu_s=limits[case["cal"]] if limits else UNCALIBRATED_CPU_S)
                cases.append(case)
            resolved.append(dict(job, cases=cases))
        # a child may serve consecutive jobs with the same code: its CPU rlimit covers all of them
        payload["_child_cpu_s"] = IMPORT_CPU_S + 1.0 + sum(float(c["cpu_s"]) for j in resolved for c in j["cases"])
        payload["_reuse"] = {}  # a live child of the previous job, reused when the next job has the same code
        jobs: list[dict] = []
        for index, job in enumerate(resolved):
            gate = job.get("only_if_passed")
            if gate is not None and not _all_passed(jobs[gate]):
                jobs.append({"skipped": True, "import_error": None, "import_cpu_s": 0.0, "cases": []})
                continue
            try:
                result = _run_job(job, payload, scratch.dirs[index])
            except (OSError, MemoryError) as exc:
                if not SUBMISSION_RAN[0]:
                    raise  # nothing submitted ran in this run yet: the sandbox itself is broken
                result = _setup_broken(job, exc)
            result["cpu_limits_s"] = [c["cpu_s"] for c in job["cases"]]
            jobs.append(result)
        for child in payload["_reuse"].values():
            child.kill()
        record["jobs"] = jobs
    except (OSError, MemoryError) as exc:
        if SUBMISSION_RAN[0]:  # out of fds, memory, processes once submitted code ran: its doing, scored
            record = {"version": PROTOCOL_VERSION, "jobs": [_setup_broken(job, exc) for job in payload["jobs"]]}
        else:
            record = _harness_error()
    except BaseException:  # noqa: BLE001 - a runner bug: reported as such (the host turns it into env_error)
        record = _harness_error()
    finally:
        _kill_others(None)
        if scratch is not None:
            scratch.remove()
    body = base64.b64encode(json.dumps(record).encode()).decode()
    mac = hmac.new(key, f"{nonce} {body}".encode(), hashlib.sha256).hexdigest()
    data = f"\n{RESULT_MARKER} {nonce} {body} {mac}\n".encode()
    while data:
        data = data[os.write(1, data):]


def _harness_error() -> dict:
    """The record of a run the runner itself could not carry out (the host reports it as ``env_error``)."""
    import traceback  # noqa: PLC0415 - only on this path (saves ~4 ms of start-up)

    return {"version": PROTOCOL_VERSION, "harness_error": traceback.format_exc()[-4000:]}


def _all_passed(job_result: dict) -> bool:
    """A job ran, imported, and passed every case (vacuously true for a job without cases)."""
    return (
        not job_result.get("skipped")
        and job_result.get("import_error") is None
        and all(c["passed"] for c in job_result["cases"])
    )


def _kill_others(child: "Child | None") -> None:
    """Kill every other process of the run (pid 1 only) or the child's process group, then reap."""
    if child is not None:
        try:
            os.killpg(child.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # as pid 1 of the namespace: every process but us
        except (ProcessLookupError, PermissionError):
            pass
    if child is not None:
        try:
            child.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    if os.getpid() == 1:  # orphans are ours to reap; after kill(-1) every process left is dying
        deadline = time.monotonic() + REAP_TIMEOUT_S
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break  # no process left in the run but us
            if pid == 0:
                if time.monotonic() > deadline:
                    break
                time.sleep(REAP_POLL_S)


class Child:
    """One child interpreter that imports the submission and answers call requests (or runs a program)."""

    def __init__(self, job: dict, child_source: str, stdin_data: bytes | None = None) -> None:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        program = job["mode"] == "program"
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter, our own bootstrap
            [sys.executable, "-I", "-S", "-B", "-c", child_source, str(req_r), str(resp_w)],
            stdin=subprocess.PIPE if program else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(req_r, resp_w),
            close_fds=True,
            start_new_session=True,
            cwd=job["cwd"],
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": job.get("home", job["cwd"]),
                 "TMPDIR": "/tmp"},
        )
        if not job.get("trusted"):
            SUBMISSION_RAN[0] = True
        os.close(req_r)
        os.close(resp_w)
        self.req = req_w
        self.resp = resp_r
        self.out = bytearray()
        self.err = bytearray()
        self.out_cap = MAX_PROGRAM_OUTPUT_BYTES if program else MAX_CAPTURE_BYTES
        self.out_overflow = False
        self.resp_buf = bytearray()
        self.resp_overflow = False
        self.resp_eof = False
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.sel.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.sel.register(self.resp, selectors.EVENT_READ, "resp")
        self.open_streams = 3
        self.next_id = 1
        self._stdin_data = stdin_data or b""
        self._stdin_off = 0
        if program and self.proc.stdin is not None:
            os.set_blocking(self.proc.stdin.fileno(), False)
            self.sel.register(self.proc.stdin, selectors.EVENT_WRITE, "in")
        init = {
            "mode": job["mode"],
            "source": job["source"],
            "prelude": job.get("prelude", ""),
            "entry_point": job.get("entry_point", ""),
            "repo_root": job.get("repo_root"),
            "modules": job.get("files") or None,
            "memory_mb": job["memory_mb"],
            "cpu_s": job["child_cpu_s"],
        }
        self._send(init)
        if program:
            os.close(self.req)
            self.req = -1
        self.last_cpu = 0.0

    # -- io
    def _send(self, obj: dict) -> None:
        body = marshal.dumps(obj)
        data = len(body).to_bytes(4, "big") + body
        try:
            while data:
                data = data[os.write(self.req, data):]
        except OSError:
            pass  # the child is gone; noticed by the caller via EOF

    def send_call(self, fn: str, args: Any, kwargs: Any) -> int:
        """Send one call request (plain values, marshalled); returns its id.

        Raises:
            ValueError: an argument marshal cannot serialise.
        """
        rid = self.next_id
        self.next_id += 1
        self._send({"id": rid, "fn": fn, "args": tuple(args), "kwargs": dict(kwargs)})
        return rid

    def pump(self, timeout: float) -> None:
        """Read whatever the child wrote within ``timeout`` seconds (and feed a program's stdin)."""
        if self.open_streams == 0:
            time.sleep(max(0.0, min(timeout, POLL_S)))
            return
        for key, _ in self.sel.select(max(0.0, timeout)):
            if key.data == "in":
                try:
                    n = os.write(key.fd, self._stdin_data[self._stdin_off:self._stdin_off + 65536])
                    self._stdin_off += n
                except (BrokenPipeError, OSError):
                    self._stdin_off = len(self._stdin_data)
                if self._stdin_off >= len(self._stdin_data):
                    self.sel.unregister(key.fileobj)
                    self.proc.stdin.close()  # type: ignore[union-attr]
                continue
            try:
                data = os.read(key.fd, 65536)
            except OSError:
                data = b""
            if not data:
                self.sel.unregister(key.fileobj)
                self.open_streams -= 1
                if key.data == "resp":
                    self.resp_eof = True
                continue
            if key.data == "resp":
                if len(self.resp_buf) + len(data) > MAX_RESPONSE_BYTES:
                    self.resp_overflow = True
                else:
                    self.resp_buf += data
            else:
                buf = self.out if key.data == "out" else self.err
                room = self.out_cap - len(buf)
                if len(data) > room:
                    self.out_overflow = self.out_overflow or key.data == "out"
                buf += data[: max(0, room)]

    def pop_response(self) -> dict | None:
        """The next complete response line, parsed (``{"malformed": ...}`` when it is not valid JSON)."""
        idx = self.resp_buf.find(b"\n")
        if idx < 0:
            return None
        line = bytes(self.resp_buf[:idx])
        del self.resp_buf[: idx + 1]
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return {"malformed": True}
        return obj if isinstance(obj, dict) else {"malformed": True}

    # -- accounting
    def cpu_s(self) -> float:
        """CPU seconds used by the child (user + system, incl. reaped children), from ``/proc/<pid>/stat``."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
            self.last_cpu = ticks / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
        return self.last_cpu

    def runnable(self) -> bool:
        """Whether the child is running or waiting for a CPU (state R), rather than sleeping."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                return fh.read().rsplit(b")", 1)[1].split()[0] == b"R"
        except (OSError, IndexError):
            return False

    def alive(self) -> bool:
        return self.proc.poll() is None and not self.resp_eof

    def kill(self) -> None:
        """Kill the child and every straggler, reap, close pipes."""
        _kill_others(self)
        try:
            self.sel.close()
        except Exception:  # noqa: BLE001
            pass
        for fd in (self.req, self.resp):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.req = self.resp = -1
        for fh in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if fh is not None:
                try:
                    fh.close()
                except OSError:
                    pass

    def wait_for(self, want: str, cpu_limit: float, rid: int = 0) -> tuple[str, Any, float]:
        """Wait for a response (``want="response"``, id ``rid``) or the child's exit (``want="exit"``).

        Returns:
            ``(status, payload, cpu_used)`` where status is ``"ok"`` (payload: the response dict or the exit
            code), ``"timeout"`` (payload: ``"cpu"``/``"wall"``), ``"died"`` (payload: exit description) or
            ``"overflow"``.
        """
        cpu0 = self.cpu_s()
        start = time.monotonic()
        wall = WALL_FACTOR * cpu_limit + WALL_SLACK_S
        deadline, hard = start + wall, start + wall * HARD_WALL_FACTOR
        exited_at: float | None = None
        while True:
            if want == "response":
                while True:
                    resp = self.pop_response()
                    if resp is None:
                        break
                    if resp.get("malformed") or resp.get("id") == rid:
                        used = self.cpu_s() - cpu0
                        if used > cpu_limit:
                            return "timeout", "cpu", used
                        return "ok", resp, used
                if self.resp_overflow:
                    return "overflow", None, self.cpu_s() - cpu0
                if self.resp_eof or self.proc.poll() is not None:
                    self.pump(0.05)  # collect the last stderr
                    try:
                        self.proc.wait(timeout=EXIT_GRACE_S)  # a closed pipe usually means an exit: get its status
                    except subprocess.TimeoutExpired:
                        pass
                    return "died", self._exit_text(), self.cpu_s() - cpu0
            else:
                if self.proc.poll() is not None and self.open_streams == 0:
                    return "ok", self.proc.returncode, self.cpu_s() - cpu0
                if self.proc.poll() is not None and self.open_streams:
                    # exited, but a leftover process may hold the pipes: kill stragglers, drain briefly, and
                    # stop waiting (a straggler that escaped our process group cannot hold the run open)
                    if exited_at is None:
                        exited_at = time.monotonic()
                        _kill_others(None)  # pid 1: every other process of the run
                        try:
                            os.killpg(self.proc.pid, signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                    elif time.monotonic() - exited_at > EXIT_GRACE_S:
                        return "ok", self.proc.returncode, self.cpu_s() - cpu0
                if self.out_overflow:
                    return "overflow", None, self.cpu_s() - cpu0
            used = self.cpu_s() - cpu0
            if used > cpu_limit:
                return "timeout", "cpu", used
            now = time.monotonic()
            if now >= deadline:
                if now < hard and self.proc.poll() is None and self.runnable():
                    deadline = now + POLL_S  # starved by machine load: CPU time, not wall time, is the limit
                else:
                    return "timeout", "wall", used
            self.pump(min(POLL_S, max(0.0, deadline - now)))

    def _exit_text(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "the process closed its result pipe"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return f"the process was killed by {name}"
        return f"the process exited with status {code}"

    def captured(self) -> tuple[str, str]:
        return self.out.decode("utf-8", "replace"), self.err.decode("utf-8", "replace")


class _CallFailed(BaseException):
    """Raised inside test code when a candidate call failed (BaseException: test code cannot swallow it)."""

    def __init__(self, result: dict) -> None:
        super().__init__(result.get("error") or result.get("status"))
        self.result = result


#: ``[True]`` once a process running submitted code was started in this run (see :func:`_setup_broken`).
SUBMISSION_RAN = [False]
#: Why a job could not be set up after submitted code ran (the case error of every one of its cases).
SETUP_BROKEN = (
    "the test process could not be set up after your code ran ({exc}): what your code did to its sandbox "
    "(files, permissions, processes, limits) broke it; these tests count as failed"
)


class JobDir:
    """One job's working directory, made before any submitted code runs and reached only through an open fd.

    The submission runs as the same user as this runner, so it can change any path (``chmod 000 /tmp``, remove or
    replace the directory, fill the file system); the runner never walks a path again after set-up: a child's
    working directory is ``/proc/self/fd/<fd>`` (``chdir`` through the fd needs no search permission on any
    parent), and :meth:`claim` restores the mode with ``fchmod`` on that fd.
    """

    def __init__(self, path: str) -> None:
        os.mkdir(path, 0o700)
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    @property
    def fd_path(self) -> str:
        """The directory as a path that does not depend on any parent directory."""
        return f"/proc/self/fd/{self.fd}"

    def claim(self) -> None:
        """Make it usable again for the next job (mode 0700; raises OSError if even that fails)."""
        os.fchmod(self.fd, 0o700)

    def empty(self) -> None:
        """Remove what the job left (best effort, never raises)."""
        remove_tree(self.fd_path, keep_root=True)

    def remove(self) -> None:
        """Close the fd and remove the (emptied) directory (best effort, never raises)."""
        try:
            os.close(self.fd)
            os.rmdir(self.path)
        except OSError:
            pass


class Scratch:
    """The runner's scratch space: ``/tmp/arl-run-<random>/<i>``, one :class:`JobDir` per job, all made at once
    before any submitted code runs (plain ``mkdir``: no probe file that a full ``/tmp`` would refuse).

    Raises:
        OSError: the sandbox has no writable ``/tmp`` (infrastructure: reported as a harness error).
    """

    def __init__(self, n: int) -> None:
        self.root = f"/tmp/arl-run-{os.urandom(8).hex()}"
        os.mkdir(self.root, 0o700)
        self.dirs = [JobDir(f"{self.root}/{i}") for i in range(n)]

    def remove(self) -> None:
        """Remove the (emptied) scratch space at the end of the run (best effort, never raises: on Docker ``/tmp``
        lives as long as the episode)."""
        for job_dir in self.dirs:
            job_dir.remove()
        try:
            os.rmdir(self.root)
        except OSError:
            pass


def _setup_broken(job: dict, exc: BaseException) -> dict:
    """The result of a job whose set-up failed after submitted code ran: a scored failure of every case.

    The submission shares this runner's user, processes and file systems, so a set-up failure once it has run
    (no pipes left: it lowered this process's RLIMIT_NOFILE; no memory; no process slot) is its doing, and the
    sandbox worked until then (the set-up before it ran succeeded).
    """
    message = SETUP_BROKEN.format(exc=f"{type(exc).__name__}: {exc}"[:300])
    return {
        "import_error": message,
        "import_cpu_s": 0.0,
        "cases": [_result(False, "error", case, error=message) for case in job["cases"]],
    }


def _run_job(job: dict, payload: dict, job_dir: JobDir) -> dict:
    """Run every case of one job in ``job_dir``; returns ``{"import_error", "cases": [...], "import_cpu_s"}``."""
    job_dir.claim()
    try:
        return _run_job_in(dict(job, cwd=job_dir.fd_path, home=job_dir.path), payload)
    finally:
        job_dir.empty()


def remove_tree(path: str, max_entries: int = MAX_REMOVE_ENTRIES, keep_root: bool = False) -> None:
    """Delete the directory tree at ``path`` as far as possible; never raises, never follows a symlink below it.

    The tree is the submission's (its children's working directory), so it may be deeper than the recursion
    limit (``shutil.rmtree`` raised ``RecursionError`` on 1,500 nested directories, which became a harness
    error: an unscored episode), hold directories it made unreadable, or keep growing: an iterative walk that
    restores each directory's permissions, skips whatever it cannot remove, and stops after ``max_entries``
    entries (leftovers stay in the run's ``/tmp``). With ``keep_root`` only what is inside ``path`` goes (``path``
    may then be a ``/proc/self/fd/N`` link to the directory).
    """
    if not keep_root:
        try:
            if not os.path.isdir(path) or os.path.islink(path):
                os.unlink(path)
                return
        except OSError:
            return
    stack: list[tuple[str, bool]] = [(path, False)]
    seen = 0
    while stack:
        directory, emptied = stack.pop()
        if emptied:
            if keep_root and directory == path:
                continue
            try:
                os.rmdir(directory)
            except OSError:
                pass
            continue
        stack.append((directory, True))
        try:
            os.chmod(directory, 0o700)
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, False))
                else:
                    os.unlink(entry.path)
            except OSError:
                pass


def _run_job_in(job: dict, payload: dict) -> dict:
    """:func:`_run_job` with ``job["cwd"]`` (an empty private directory) as the children's working directory.

    A job's ``files`` (the correct repository of a reference run) are sent to its child, which imports them from
    memory (:class:`~arl_envs.envs.code.child.SourceImporter`): they are never written to a file system that a
    later process of the run (the submission) could read.
    """
    child_source = payload["child"]
    cases = job["cases"]
    job["child_cpu_s"] = payload.get("_child_cpu_s") or IMPORT_CPU_S + sum(float(c["cpu_s"]) for c in cases) + 1.0
    if job["mode"] == "program":
        return {"import_error": None, "import_cpu_s": 0.0, "cases": [_run_program_case(job, c, child_source) for c in cases]}
    key = (job["mode"], job["source"], job.get("prelude", ""), job.get("entry_point", ""), job.get("repo_root"))
    reuse = payload.get("_reuse") or {}
    kept = reuse.pop(key, None) if not job.get("files") else None
    for other in reuse.values():
        other.kill()
    reuse.clear()
    state: dict = {"child": kept, "import_error": None, "import_cpu": 0.0}
    results = []
    base_ns: dict | None = None
    try:
        for case in cases:
            if state["import_error"] is not None:
                results.append(_result(False, "error", case, error=state["import_error"]))
                continue
            if case["kind"] == "check" and base_ns is None:
                base_ns = {"__name__": "arl_tests"}
                exec(compile(job.get("test_prelude", ""), "<test-prelude>", "exec"), base_ns)  # trusted task text
            if case["kind"] == "call":
                results.append(_run_call_case(job, case, state, child_source))
            else:
                results.append(_run_check_case(job, case, state, child_source, base_ns or {}))
    except BaseException:
        if state["child"] is not None:
            state["child"].kill()
        raise
    if state["child"] is not None:
        if "_reuse" in payload and not job.get("files") and state["child"].alive():
            payload["_reuse"][key] = state["child"]  # e.g. the hidden job right after the visible one
        else:
            state["child"].kill()
    return {"import_error": state["import_error"], "import_cpu_s": round(state["import_cpu"], 4), "cases": results}


def _unhex(text: Any) -> str:
    """Decode a hex-encoded UTF-8 text field from a child (garbage becomes a placeholder)."""
    try:
        return bytes.fromhex(str(text)).decode("utf-8", "replace")
    except ValueError:
        return "<malformed message from the test process>"


def _result(passed: bool, status: str, case: dict, **kw: Any) -> dict:
    out = {"passed": passed, "status": status, "cpu_s": 0.0}
    out.update({k: v for k, v in kw.items() if v is not None})
    return out


def _ensure_child(job: dict, state: dict, child_source: str) -> Child | None:
    """Start (and import the submission in) a child unless one is alive; None when the import failed."""
    child = state["child"]
    if child is not None and child.alive():
        return child
    if child is not None:
        child.kill()
        state["child"] = None
    try:
        child = Child(job, child_source)
    except OSError as exc:  # fork failed (pids limit hit by leftovers): clean up once and retry
        _kill_others(None)
        try:
            child = Child(job, child_source)
        except OSError:
            if not SUBMISSION_RAN[0]:
                raise  # the first process of the run: the sandbox cannot start one (a harness error)
            state["import_error"] = f"could not start the test process: {exc}"
            return None
    status, resp, used = child.wait_for("response", IMPORT_CPU_S, rid=0)
    state["import_cpu"] += used
    if status == "ok" and resp.get("ready") is True:
        state["child"] = child
        return child
    out, err = child.captured()
    child.kill()
    if status == "ok" and "import_error" in resp:
        state["import_error"] = _cut(_unhex(resp["import_error"]), MAX_TRACEBACK_CHARS)
    elif status == "timeout":
        state["import_error"] = f"importing your code exceeded the time limit ({IMPORT_CPU_S:g} s CPU)"
    elif status == "died":
        state["import_error"] = f"{resp} while importing your code" + (f"\nstderr: {_cut(err, 600)}" if err.strip() else "")
    else:
        state["import_error"] = "the test process sent an invalid reply while importing your code"
    return None


def _call(job: dict, state: dict, child_source: str, fn: str, args: list, kwargs: dict, budget: list) -> dict:
    """One call of the submission in the child. ``budget``: [cpu seconds left for this case]."""
    child = _ensure_child(job, state, child_source)
    if child is None:
        return {"status": "error", "error": state["import_error"]}
    n_out, n_err = len(child.out), len(child.err)
    try:
        rid = child.send_call(fn, args, kwargs)
    except ValueError as exc:
        return {"status": "error", "error": f"test argument cannot be sent: {exc}"}
    status, resp, used = child.wait_for("response", max(budget[0], 0.0), rid=rid)
    budget[0] -= used
    budget.append(used)
    out = child.out[n_out:].decode("utf-8", "replace")
    err = child.err[n_err:].decode("utf-8", "replace")
    extra = {"stdout": _cut(out, 600) if out else None}
    if status == "timeout":
        child.kill()
        state["child"] = None
        kind = "CPU time" if resp == "cpu" else "wall-clock time"
        return {"status": "timeout", "error": f"time limit exceeded ({kind}; limit {job['_case_cpu']:g} s CPU)", **extra}
    if status == "overflow":
        child.kill()
        state["child"] = None
        return {"status": "error", "error": f"the return value is larger than {MAX_RESPONSE_BYTES} bytes", **extra}
    if status == "died":
        child.kill()
        state["child"] = None
        detail = f"\nstderr: {_cut(err, 600)}" if err.strip() else ""
        return {"status": "crash", "error": f"{resp} during the call (no value was returned){detail}", **extra}
    if resp.get("malformed") or resp.get("id") != rid:
        child.kill()
        state["child"] = None
        return {"status": "error", "error": "the test process sent an invalid reply", **extra}
    if "exc" in resp:
        return {"status": "error", "error": _cut(_unhex(resp["exc"]), MAX_TRACEBACK_CHARS), **extra}
    if "ok" not in resp:
        return {"status": "error", "error": _cut(_unhex(resp.get("bad_value", "")) or "no value returned", MAX_REPR_CHARS), **extra}
    try:
        value = decode(resp["ok"])
    except (CodecError, RecursionError) as exc:
        return {"status": "error", "error": f"invalid return value: {exc}", **extra}
    return {"status": "ok", "value": value, **extra}


def _run_call_case(job: dict, case: dict, state: dict, child_source: str) -> dict:
    job["_case_cpu"] = float(case["cpu_s"])
    budget = [float(case["cpu_s"])]
    try:
        args, kwargs, expected = decode(case["args"]), decode(case["kwargs"]), decode(case["expected"])
    except CodecError as exc:
        return _result(False, "error", case, error=f"malformed test case: {exc}")
    res = _call(job, state, child_source, case["fn"], args, kwargs, budget)
    cpu = round(sum(budget[1:]), 4)
    if res["status"] != "ok":
        return _result(False, res["status"], case, error=res.get("error"), stdout=res.get("stdout"), cpu_s=cpu)
    tol = case.get("tolerance") or [0.0, 0.0]
    try:
        ok = strict_equal(res["value"], expected, float(tol[0]), float(tol[1]))
    except RecursionError:
        ok = False
    got = safe_repr(res["value"])
    if not ok and got == safe_repr(expected):
        got += f" (type {_type_desc(res['value'])}, expected type {_type_desc(expected)})"
    return _result(ok, "pass" if ok else "fail", case, got=got, stdout=res.get("stdout"), cpu_s=cpu)


def _type_desc(value: Any) -> str:
    t = type(value).__name__
    if type(value) in (list, tuple, set, frozenset) and value:
        inner = sorted({type(v).__name__ for v in value})
        return f"{t}[{'|'.join(inner)}]"
    return t


def _run_check_case(job: dict, case: dict, state: dict, child_source: str, base_ns: dict) -> dict:
    """Run trusted test statements in THIS process with ``candidate`` proxied to the child."""
    job["_case_cpu"] = float(case["cpu_s"])
    budget = [float(case["cpu_s"])]
    calls: list[str] = []
    failure: list[dict] = []
    entry = job.get("entry_point") or "candidate"

    def candidate(*args: Any, **kwargs: Any) -> Any:
        res = _call(job, state, child_source, entry, list(args), kwargs, budget)
        shown = ", ".join([safe_repr(a, 120) for a in args] + [f"{k}={safe_repr(v, 60)}" for k, v in kwargs.items()])
        if res["status"] != "ok":
            calls.append(f"{entry}({shown}) -> {res['status']}")
            failure.append(res)
            raise _CallFailed(res)
        calls.append(f"{entry}({shown}) -> {safe_repr(res['value'], 200)}")
        return res["value"]

    ns = dict(base_ns)
    ns["candidate"] = candidate
    if job.get("entry_point"):
        ns[job["entry_point"]] = candidate
    ns["__arl_eq__"] = strict_equal
    import random  # noqa: PLC0415 - only check-style tests need it

    random.seed(0)  # some test bodies draw from the global random module
    code = case.get("context", "") + "\n" + case["source"]
    error = None
    status = "pass"
    try:
        exec(compile(code, "<test>", "exec"), ns)  # noqa: S102 - dataset test code, never submission code
    except _CallFailed as exc:
        status, error = exc.result["status"], exc.result.get("error")
    except AssertionError as exc:
        status, error = "fail", "assertion failed" + (f": {safe_repr(exc.args[0], 200)}" if exc.args else "")
    except BaseException as exc:  # noqa: BLE001 - e.g. a TypeError on a wrong return type
        status, error = "error", f"{type(exc).__name__}: {safe_repr(str(exc), 300)}"
    cpu = round(sum(budget[1:]), 4)
    got = "; ".join(calls[-3:]) if calls else None
    stdout = failure[-1].get("stdout") if failure else None
    return _result(status == "pass", status, case, got=got, error=error, stdout=stdout, cpu_s=cpu)


def _run_program_case(job: dict, case: dict, child_source: str) -> dict:
    """Run the submission as a program on ``case["stdin"]`` and compare its stdout."""
    cpu_limit = float(case["cpu_s"])
    job = dict(job, child_cpu_s=cpu_limit + IMPORT_CPU_S)
    try:
        child = Child(job, child_source, stdin_data=str(case["stdin"]).encode())
    except OSError as exc:
        if not SUBMISSION_RAN[0]:
            raise  # the first process of the run: the sandbox cannot start one (a harness error)
        _kill_others(None)
        return _result(False, "error", case, error=f"could not start the program: {exc}")
    status, code, used = child.wait_for("exit", cpu_limit + IMPORT_CPU_S)
    out, err = child.captured()
    child.kill()
    cpu = round(used, 4)
    if status == "timeout":
        return _result(False, "timeout", case, error=f"time limit exceeded (limit {cpu_limit:g} s CPU)", cpu_s=cpu,
                       got=safe_repr(_cut(out, 300)))
    if status == "overflow":
        return _result(False, "error", case, error=f"output larger than {MAX_PROGRAM_OUTPUT_BYTES} bytes", cpu_s=cpu)
    if code != 0:
        if code == CHILD_INIT_FAILED:
            return _result(False, "error", case, error="the program could not be started", cpu_s=cpu)
        why = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return _result(False, "error", case, error=f"runtime error ({why})" + (f"\n{_cut(err, MAX_TRACEBACK_CHARS)}" if err else ""),
                       got=safe_repr(out), cpu_s=cpu)
    ok = outputs_match(out, str(case["expected"]), case.get("compare", "exact"))
    return _result(ok, "pass" if ok else "fail", case, got=safe_repr(out), cpu_s=cpu)

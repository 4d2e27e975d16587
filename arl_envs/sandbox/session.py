"""A persistent Python interpreter inside a sandbox, like a notebook kernel.

>>> with get_sandbox("bwrap") as sb, sb.open_session() as py:        # doctest: +SKIP
...     py.run("x = 6 * 7").ok, py.run("x").stdout
(True, '42\\n')

Each :meth:`PythonSession.run` executes one cell in a namespace that persists across calls; a trailing
expression is echoed (``repr``) like in a notebook; an exception prints its traceback to ``stderr`` and sets
``exit_code=1``, and the interpreter keeps its state. A cell that crashes the interpreter (``os._exit``,
segfault, out of memory, ``kill -9`` of itself), exceeds its CPU seconds or its timeout is killed together with
every process it started; the interpreter is restarted at once and the result has ``state_lost=True`` (its
:meth:`~arl_envs.sandbox.base.ExecResult.describe` says so, for the observation).

The interpreter runs :mod:`arl_envs.sandbox._kernel` inside the sandbox; the host talks to it over its
stdin/stdout with length-prefixed frames, and the kernel forwards what the cell writes to fds 1 and 2. Frames
are untrusted input (the cell can write to the kernel's fds): sizes are checked, every wait has a deadline, a
malformed stream counts as a crash.
"""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path
from typing import Protocol

from arl_envs.sandbox.results import (
    SESSION_CPU_BUDGET_S,
    SIGNAL_EXIT_BASE,
    ExecResult,
    Limits,
    OutputBuffer,
    SandboxClosed,
    SessionProcess,
)


class SessionHost(Protocol):
    """What a :class:`PythonSession` uses of its :class:`~arl_envs.sandbox.base.Sandbox` (every backend is one)."""

    python: str
    session_owns_pid_namespace: bool

    @property
    def closed(self) -> bool: ...

    def _start_session_process(self, argv: list[str], limits: Limits, cpu_budget_s: float) -> SessionProcess: ...

    def _forget_session(self, session: PythonSession) -> None: ...

#: Source of the in-sandbox kernel (passed to ``python3 -c``).
KERNEL_SOURCE = (Path(__file__).parent / "_kernel.py").read_text()
#: Seconds allowed for the interpreter to start and report ready.
START_TIMEOUT_S = 30.0
#: Frame header kernel -> host: kind (1 byte), call sequence number, payload length.
FRAME_HEADER = struct.Struct(">cII")
#: Request header host -> kernel: call sequence number, source length.
REQUEST_HEADER = struct.Struct(">II")
#: Largest frame payload accepted from the kernel, bytes (it sends at most 64 KiB per frame).
MAX_FRAME_BYTES = 1 << 20
#: Largest cell source accepted, characters.
MAX_CODE_CHARS = 1 << 20
#: Bytes of the interpreter's own stderr (crash messages) kept for diagnostics.
DIAGNOSTIC_BYTES = 8192
#: Frame kinds.
READY, STDOUT, STDERR, DONE = b"R", b"O", b"E", b"D"


class _ProtocolError(Exception):
    pass


class _StartOutOfMemory(RuntimeError):
    """The interpreter could not start because the sandbox's memory is used up (by the episode's own files)."""


class PythonSession:
    """A stateful Python interpreter in a sandbox (create with :meth:`Sandbox.open_session`).

    Args:
        sandbox: The sandbox whose work directory (``/work``) and isolation the interpreter shares.
        limits: Limits of the interpreter: ``memory_mb`` and ``max_processes`` for its whole life,
            ``cpu_time_s`` and ``max_output_bytes`` per call, ``wall_time_s`` = default per-call timeout.
        cpu_budget_s: CPU seconds of the whole session, restarts included (each interpreter's hard
            ``RLIMIT_CPU`` is what is left of it).
        prestarted: Set by :meth:`Sandbox.reset` for an interpreter started in the background ahead of the
            episode's first :meth:`Sandbox.open_session` (bookkeeping only: it starts the same way).

    Nothing a cell starts outlives its call: when a call returns, every process it started is killed, and
    the interpreter's own background threads cannot keep burning CPU between calls (see
    :mod:`arl_envs.sandbox._kernel`).

    Raises:
        ValueError: ``cpu_budget_s`` is not a positive number.

    Attributes:
        restarts: How many times the interpreter was restarted after a crash or timeout.
    """

    def __init__(
        self, sandbox: SessionHost, limits: Limits, cpu_budget_s: float = SESSION_CPU_BUDGET_S, *, prestarted: bool = False
    ) -> None:
        if isinstance(cpu_budget_s, bool) or not isinstance(cpu_budget_s, int | float) or cpu_budget_s <= 0:
            raise ValueError(f"cpu_budget_s must be a positive number, got {cpu_budget_s!r}")
        self._sandbox = sandbox
        self.limits = limits
        self.cpu_budget_s = float(cpu_budget_s)
        self._cpu_spent = 0.0  # by interpreters already gone
        self.restarts = 0
        #: Whether the interpreter was started ahead of the episode's first call (see :meth:`Sandbox.reset`).
        self.prestarted = prestarted
        self._proc: SessionProcess | None = None
        self._buf = bytearray()
        self._seq = 0
        self._closed = False
        self._diag = OutputBuffer(DIAGNOSTIC_BYTES)
        if prestarted:
            self._launch()
        else:
            self._start()

    # -- lifecycle ---------------------------------------------------------------------------------------
    def _start(self) -> None:
        self._launch()
        self._wait_ready()

    def _launch(self) -> None:
        """Start the interpreter process (it reports ready on its own; :meth:`_wait_ready` reads that)."""
        argv = [self._sandbox.python, "-c", KERNEL_SOURCE, repr(float(self.limits.cpu_time_s))]
        if self._sandbox.session_owns_pid_namespace:
            argv.append("own-pidns")
        self._buf.clear()
        self._diag = OutputBuffer(DIAGNOSTIC_BYTES)
        budget = max(1.0, self.cpu_budget_s - self._cpu_spent)
        self._proc = self._sandbox._start_session_process(argv, self.limits, budget)  # noqa: SLF001 - backend hook

    def await_ready(self) -> bool:
        """For a pre-started session: wait for the launched interpreter to report ready.

        Returns:
            True when it is up; False when it did not start (the caller closes it and starts another).
        """
        try:
            self._wait_ready()
        except RuntimeError:
            return False
        return True

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            frame = self._next_frame(deadline)
        except _ProtocolError as exc:
            frame, detail = None, str(exc)
        else:
            detail = ""
        if frame is None or frame[0] != READY:
            self._kill()
            oom = self._proc.exit_status()[2]
            self._proc = None
            if oom:
                raise _StartOutOfMemory("the interpreter was killed at start: out of memory")
            raise RuntimeError(
                f"the sandboxed interpreter did not start {detail}: {self._diag.text().strip()[-2000:]}".strip()
            )

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._cpu_spent += self._proc.cpu_time_s() or 0.0

    def restart(self) -> None:
        """Kill the interpreter (and everything it started) and start a fresh one: all state is lost."""
        self._check_open()
        self._kill()
        self._proc = None
        self.restarts += 1
        self._start()

    def close(self) -> None:
        """Stop the interpreter. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._kill()
        self._proc = None
        self._sandbox._forget_session(self)  # noqa: SLF001

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> PythonSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed or self._sandbox.closed:
            raise SandboxClosed("the Python session is closed")

    # -- frames ------------------------------------------------------------------------------------------
    def _next_frame(self, deadline: float) -> tuple[bytes, int, bytes] | None:
        """Read the next frame; None on timeout; raise _ProtocolError on EOF or garbage."""
        assert self._proc is not None
        while True:
            if len(self._buf) >= FRAME_HEADER.size:
                kind, seq, length = FRAME_HEADER.unpack_from(self._buf)
                if kind not in (READY, STDOUT, STDERR, DONE) or length > MAX_FRAME_BYTES:
                    raise _ProtocolError("malformed frame from the interpreter")
                end = FRAME_HEADER.size + length
                if len(self._buf) >= end:
                    payload = bytes(self._buf[FRAME_HEADER.size : end])
                    del self._buf[:end]
                    return kind, seq, payload
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            got = self._proc.recv(remaining)
            if got is None:
                return None
            stream, data = got
            if stream == 0:
                raise _ProtocolError("the interpreter exited")
            if stream == 2:
                self._diag.add(data)
            else:
                self._buf += data

    # -- running -----------------------------------------------------------------------------------------
    def run(self, code: str, timeout_s: float | None = None) -> ExecResult:
        """Execute one cell.

        Args:
            code: Python source (statements; a trailing expression is echoed).
            timeout_s: Wall-clock seconds for this call (default: ``limits.wall_time_s``).

        Returns:
            The :class:`ExecResult`: ``exit_code`` 0 (or 1 after an exception), captured output,
            ``timed_out``/``oom_killed``/``signal`` and ``state_lost=True`` when the interpreter had to be
            restarted; ``sandbox_error`` if it could not be (re)started.

        Raises:
            ValueError: ``code`` is not a str or is longer than :data:`MAX_CODE_CHARS`; bad ``timeout_s``.
            SandboxClosed: the session or its sandbox was closed.
        """
        self._check_open()
        if not isinstance(code, str):
            raise ValueError(f"code must be a str, got {type(code).__name__}")
        if len(code) > MAX_CODE_CHARS:
            raise ValueError(f"code is {len(code)} characters, above the {MAX_CODE_CHARS} limit")
        timeout = self.limits.wall_time_s if timeout_s is None else timeout_s
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ValueError(f"timeout_s must be a positive number, got {timeout_s!r}")
        start = time.monotonic()
        if self._proc is None:  # a previous restart failed: try again
            try:
                self._start()
            except _StartOutOfMemory:
                return self._out_of_memory(ExecResult(), start)
            except RuntimeError as exc:
                return ExecResult(sandbox_error=str(exc), duration_s=time.monotonic() - start)
        assert self._proc is not None
        self._seq += 1
        seq = self._seq
        payload = code.encode("utf-8", errors="replace")
        out, err = OutputBuffer(self.limits.max_output_bytes), OutputBuffer(self.limits.max_output_bytes)
        cpu_before = self._proc.cpu_time_s()
        deadline = start + timeout
        done: dict | None = None
        crashed = False
        try:
            self._proc.send(REQUEST_HEADER.pack(seq, len(payload)) + payload)
            while done is None:
                frame = self._next_frame(deadline)
                if frame is None:
                    break  # timeout
                kind, frame_seq, data = frame
                if frame_seq != seq:
                    continue  # output of an earlier, abandoned call (or forged): not this cell's
                if kind == STDOUT:
                    out.add(data)
                elif kind == STDERR:
                    err.add(data)
                elif kind == DONE:
                    done = _parse_done(data)
        except (_ProtocolError, OSError):
            crashed = True
        duration = time.monotonic() - start
        cpu_after = self._proc.cpu_time_s()
        cpu = None if cpu_before is None or cpu_after is None else max(0.0, cpu_after - cpu_before)
        result = ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            output_truncated=out.truncated or err.truncated,
            duration_s=duration,
            cpu_time_s=cpu,
        )
        if done is not None:
            result.exit_code = 0 if done.get("error") is None else 1
            self._proc.kill_strays()
            return result
        # Crash or timeout: kill the tree, collect why, restart.
        result.timed_out = not crashed
        self._kill()
        code_, sig, oom = self._proc.exit_status()
        result.exit_code, result.signal, result.oom_killed = code_, sig, oom
        if crashed and sig is None and code_ is not None and not oom:
            diag = self._diag.text().strip()
            if diag:
                result.stderr += ("\n" if result.stderr else "") + diag[-2000:]
        result.state_lost = True
        self._proc = None
        self.restarts += 1
        try:
            self._start()
        except _StartOutOfMemory:
            self._out_of_memory(result, start)
        except RuntimeError as exc:
            result.sandbox_error = f"interpreter restart failed: {exc}"
        return result

    @staticmethod
    def _out_of_memory(result: ExecResult, start: float) -> ExecResult:
        """``result`` marked as the episode's own failure: no interpreter fits in the memory its files left.

        Not a ``sandbox_error`` (the agent caused it, so it is scored); the next call tries to start again.
        """
        result.oom_killed = result.state_lost = True
        if result.exit_code is None:
            result.exit_code, result.signal = SIGNAL_EXIT_BASE + 9, 9
        result.duration_s = time.monotonic() - start
        return result


def _parse_done(data: bytes) -> dict:
    try:
        value = json.loads(data)
    except ValueError:
        return {"error": "unknown"}
    return value if isinstance(value, dict) else {"error": "unknown"}

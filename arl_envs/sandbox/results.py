"""The data of one sandboxed run: :class:`Limits`, :class:`ExecResult`, :class:`OutputBuffer`, the constants they
use, and :class:`SessionProcess` (the byte-stream process a :class:`~arl_envs.sandbox.session.PythonSession`
talks to).

:mod:`arl_envs.sandbox.base` re-exports all of it with the :class:`~arl_envs.sandbox.base.Sandbox` base class;
this module sits below both the base and the session, which import it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any

from arl_envs.core.errors import ArlError

#: Path of the work directory inside every sandbox.
WORKDIR = "/work"
#: Bytes per MiB (all ``*_mb`` limits are MiB).
MIB = 1 << 20
#: Exit codes above this mean "killed by signal (code - 128)" (shell/bwrap/docker convention).
SIGNAL_EXIT_BASE = 128
#: Largest stdin accepted by :meth:`Sandbox.run`, bytes.
MAX_STDIN_BYTES = 64 * MIB
#: Stdin up to this size is written before reading output (it fits a pipe buffer); larger stdin gets a thread.
INLINE_STDIN_BYTES = 60_000
#: Size of one read from a process's output, bytes.
READ_CHUNK = 1 << 16
#: Largest ``files`` payload (sum of file sizes) accepted by :meth:`Sandbox.run`, bytes.
MAX_FILES_BYTES = 256 * MIB
#: Default CPU seconds of a whole session (its interpreters' hard RLIMIT_CPU, restarts included); the per-call
#: ``Limits.cpu_time_s`` is enforced by the kernel lowering its soft limit before each cell.
SESSION_CPU_BUDGET_S = 3600
#: Code longer than this (characters) is written to a file instead of passed as ``python3 -c`` (argv limits).
MAX_INLINE_CODE_CHARS = 100_000


class SandboxClosed(ArlError):
    """A sandbox or session was used after ``close()``."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run (or of one session's interpreter).

    Attributes:
        wall_time_s: Wall-clock seconds before the whole process tree is killed (``timed_out=True``).
        cpu_time_s: CPU seconds per process (``RLIMIT_CPU``; SIGXCPU, then SIGKILL).
        memory_mb: Memory of the whole run in MiB (memory cgroup; ``RLIMIT_AS`` when no cgroup is usable;
            Docker: ``--memory``). Files the episode's programs wrote to the tmpfs ``/work`` count too.
            Exceeding it kills the run (``oom_killed=True`` where it can be seen).
        max_processes: Processes/threads alive at once in the run (pids cgroup; ``RLIMIT_NPROC`` for a
            non-root uid when no cgroup is usable; Docker: ``--pids-limit``).
        max_output_bytes: Bytes of stdout and of stderr kept, each; the rest is read and dropped while
            streaming (``output_truncated=True``), so a huge print never sits in host memory.
        max_file_mb: Largest file a process may write, MiB (``RLIMIT_FSIZE``; SIGXFSZ).
        network: Network access. False (default) isolates the run in an empty network namespace.
    """

    wall_time_s: float = 10.0
    cpu_time_s: float = 10.0
    memory_mb: int = 512
    max_processes: int = 64
    max_output_bytes: int = 1 * MIB
    max_file_mb: int = 64
    network: bool = False

    def __post_init__(self) -> None:
        for name in ("wall_time_s", "cpu_time_s", "memory_mb", "max_processes", "max_output_bytes", "max_file_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive number, got {value!r}")
        for name in ("max_processes", "max_output_bytes"):  # counts: a fraction has no meaning (pids, bytes)
            if not isinstance(getattr(self, name), int):
                raise ValueError(f"Limits.{name} must be a whole number, got {getattr(self, name)!r}")
        if not isinstance(self.network, bool):
            raise ValueError(f"Limits.network must be a bool, got {self.network!r}")

    def replace(self, **changes: Any) -> Limits:
        """Return a copy with ``changes`` applied (validated)."""
        return replace(self, **changes)


@dataclass
class ExecResult:
    """Outcome of one sandboxed run or one session call.

    Attributes:
        stdout: Captured standard output (UTF-8, undecodable bytes replaced), at most ``max_output_bytes``.
        stderr: Captured standard error, same rules.
        exit_code: Exit status of the command; None if it never ran (see ``sandbox_error``). For a command
            killed by a signal this is ``128 + signal`` (shell convention).
        signal: The signal that killed the command (e.g. 9), else None.
        timed_out: The wall-clock limit was hit and the process tree was killed.
        oom_killed: The memory limit was hit and the kernel killed a process of the run, or the run could not
            even start because the episode's own files had used the memory up. Either is the program's failure
            (scored), never a ``sandbox_error``: an agent must not be able to void an episode at will.
        output_truncated: stdout or stderr exceeded ``max_output_bytes`` and was cut.
        duration_s: Wall-clock seconds from start to the end of the run, including sandbox set-up.
        cpu_time_s: CPU seconds used by the run's processes (None where the backend cannot measure it).
        state_lost: Session calls only: the interpreter crashed or was killed and was restarted, so every
            variable, import and function defined before is gone.
        sandbox_error: An infrastructure failure (not the program's fault); None when the run happened.
    """

    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    oom_killed: bool = False
    output_truncated: bool = False
    duration_s: float = 0.0
    cpu_time_s: float | None = None
    state_lost: bool = False
    sandbox_error: str | None = None

    @property
    def ok(self) -> bool:
        """The command ran to completion with exit code 0 within every limit."""
        return (
            self.sandbox_error is None
            and self.exit_code == 0
            and not self.timed_out
            and not self.oom_killed
            and not self.state_lost
        )

    def describe(self) -> str:
        """A one-line, model-readable status (``"exit code 1"``, ``"timed out after 10 s"``...)."""
        if self.sandbox_error is not None:
            return f"sandbox error: {self.sandbox_error}"
        notes: list[str] = []
        if self.timed_out:
            notes.append(f"timed out after {self.duration_s:.1f} s")
        elif self.oom_killed:
            notes.append("killed: out of memory")
        elif self.signal is not None:
            notes.append(f"killed by signal {self.signal}")
        else:
            notes.append(f"exit code {self.exit_code}")
        if self.output_truncated:
            notes.append("output truncated")
        if self.state_lost:
            notes.append("interpreter restarted, all state lost")
        return ", ".join(notes)


def split_exit_status(code: int | None) -> tuple[int | None, int | None]:
    """Map a raw exit status to ``(exit_code, signal)``.

    Args:
        code: ``Popen.returncode``-style status (negative = killed by that signal) or a shell-style code
            (``> 128`` = killed by ``code - 128``).

    Returns:
        ``(exit_code, signal)`` with ``exit_code`` in shell convention (``128 + signal`` when killed).
    """
    if code is None:
        return None, None
    if code < 0:
        return SIGNAL_EXIT_BASE - code, -code
    if code > SIGNAL_EXIT_BASE:
        return code, code - SIGNAL_EXIT_BASE
    return code, None


@dataclass
class OutputBuffer:
    """Collects one output stream, keeping at most ``cap`` bytes and counting the rest.

    Attributes:
        cap: Bytes kept.
        chunks: Kept bytes, in order.
        kept: Number of bytes kept.
        dropped: Number of bytes read and dropped.
    """

    cap: int
    chunks: list[bytes] = field(default_factory=list)
    kept: int = 0
    dropped: int = 0

    def add(self, data: bytes) -> None:
        """Append ``data``, dropping whatever exceeds the cap."""
        room = self.cap - self.kept
        if room > 0:
            part = data[:room]
            self.chunks.append(part)
            self.kept += len(part)
        self.dropped += max(0, len(data) - max(room, 0))

    @property
    def truncated(self) -> bool:
        """Whether any byte was dropped."""
        return self.dropped > 0

    def text(self) -> str:
        """The kept bytes decoded as UTF-8 (invalid sequences replaced)."""
        return b"".join(self.chunks).decode("utf-8", errors="replace")


class SessionProcess(ABC):
    """A long-lived sandboxed process with byte streams, used by :class:`~arl_envs.sandbox.session.PythonSession`."""

    @abstractmethod
    def send(self, data: bytes) -> None:
        """Write ``data`` to the process's stdin (raises OSError if it is gone)."""

    @abstractmethod
    def recv(self, timeout_s: float) -> tuple[int, bytes] | None:
        """Wait up to ``timeout_s`` for output: ``(1 | 2, chunk)``; ``(0, b"")`` on EOF; None on timeout."""

    @abstractmethod
    def kill(self) -> None:
        """Kill the process tree and release its resources (idempotent)."""

    @abstractmethod
    def exit_status(self) -> tuple[int | None, int | None, bool]:
        """After EOF or kill: ``(exit_code, signal, oom_killed)``."""

    @abstractmethod
    def cpu_time_s(self) -> float | None:
        """CPU seconds used so far by the process tree (None if unknown)."""

    def kill_strays(self) -> None:
        """SIGKILL every process the interpreter's cells started (called when a call returns).

        A no-op where the interpreter does this itself (:attr:`Sandbox.session_owns_pid_namespace`).
        """

"""The sandbox contract: :class:`Limits`, :class:`ExecResult` and the :class:`Sandbox` base class.

Model-written code is hostile input. A :class:`Sandbox` runs it somewhere it cannot read the host's secrets,
reach the network, outlive its run, or exhaust the host's memory, processes, disk or the trainer's time
(architecture, section 4). One sandbox object is one *episode workspace*: a fresh, private work directory
(``/work`` inside) that persists across the :meth:`Sandbox.run` calls of an episode and is wiped by
:meth:`Sandbox.reset`. Backends: :class:`~arl_envs.sandbox.bwrap.BwrapSandbox` (default) and
:class:`~arl_envs.sandbox.docker.DockerSandbox`.

Every backend reports an infrastructure failure (backend died, image missing mid-run) in
``ExecResult.sandbox_error`` instead of raising, so an env can put it in ``info["env_error"]`` and not score it
as the agent's failure. Only misuse (bad arguments, use after ``close()``) and a missing backend
(:class:`~arl_envs.core.errors.SandboxUnavailable`, at construction) raise.
"""

from __future__ import annotations

import contextlib
import selectors
import shlex
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from arl_envs.sandbox.results import (  # noqa: F401 - the run's data types, part of this contract
    INLINE_STDIN_BYTES,
    MAX_FILES_BYTES,
    MAX_INLINE_CODE_CHARS,
    MAX_STDIN_BYTES,
    MIB,
    READ_CHUNK,
    SESSION_CPU_BUDGET_S,
    SIGNAL_EXIT_BASE,
    WORKDIR,
    ExecResult,
    Limits,
    OutputBuffer,
    SandboxClosed,
    SessionProcess,
    split_exit_status,
)

if TYPE_CHECKING:
    from arl_envs.sandbox.session import PythonSession


def pump_pipes(
    stdout_fd: Any,
    stderr_fd: Any,
    stdin_fd: Any,
    stdin_data: bytes,
    out: OutputBuffer,
    err: OutputBuffer,
    deadline: float,
) -> bool:
    """Feed stdin and drain two pipes until both reach EOF or ``deadline`` passes.

    Reading never stops at the output cap (the writer would block); excess bytes are dropped.

    Args:
        stdout_fd: Readable file object of the child's stdout.
        stderr_fd: Readable file object of the child's stderr.
        stdin_fd: Writable file object of the child's stdin, or None.
        stdin_data: Bytes to write to stdin before closing it.
        out: Buffer for stdout.
        err: Buffer for stderr.
        deadline: ``time.monotonic()`` value at which to give up.

    Returns:
        True if both streams reached EOF, False on deadline.
    """
    import os  # noqa: PLC0415 - keep module imports light

    writer: threading.Thread | None = None
    if stdin_fd is not None:
        if len(stdin_data) <= INLINE_STDIN_BYTES:
            try:
                if stdin_data:
                    stdin_fd.write(stdin_data)
                stdin_fd.close()
            except (BrokenPipeError, OSError):
                pass
        else:
            writer = threading.Thread(target=_write_and_close, args=(stdin_fd, stdin_data), daemon=True)
            writer.start()
    sel = selectors.DefaultSelector()
    try:
        sel.register(stdout_fd, selectors.EVENT_READ, out)
        sel.register(stderr_fd, selectors.EVENT_READ, err)
        open_streams = 2
        while open_streams:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            for key, _ in sel.select(remaining):
                data = os.read(key.fd, READ_CHUNK)
                if not data:
                    sel.unregister(key.fileobj)
                    open_streams -= 1
                else:
                    key.data.add(data)
        return True
    finally:
        sel.close()


def _write_and_close(fh: Any, data: bytes) -> None:
    try:
        fh.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            fh.close()


def normalize_command(command: str | Sequence[str] | None, code: str | None, python: str) -> list[str]:
    """Turn the ``command``/``code`` arguments of :meth:`Sandbox.run` into an argv.

    Args:
        command: A shell command line (run with ``/bin/sh -c``) or an argv list.
        code: Python source run with the sandbox's interpreter (``python -c``); exclusive with ``command``.
        python: Path of the Python interpreter inside the sandbox.

    Returns:
        The argv to execute inside the sandbox.

    Raises:
        ValueError: neither or both given, an empty argv, or a non-string element.
    """
    if (command is None) == (code is None):
        raise ValueError("pass exactly one of `command` (str or argv list) and `code` (Python source)")
    if code is not None:
        if not isinstance(code, str):
            raise ValueError(f"code must be a str, got {type(code).__name__}")
        return [python, "-c", code]
    if isinstance(command, str):
        if not command.strip():
            raise ValueError("command is empty")
        argv = ["/bin/sh", "-c", command]
    else:
        argv = list(command)  # type: ignore[arg-type]
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError(f"command argv must be a non-empty list of str, got {command!r}")
    if any("\0" in a for a in argv):
        raise ValueError("command contains a NUL byte (pass such data via `files=` or `stdin=`)")
    return argv


def normalize_files(files: Mapping[str, str | bytes] | None) -> dict[str, bytes]:
    """Validate ``files`` (relative path -> content) and encode text as UTF-8.

    Raises:
        ValueError: an absolute path, a ``..`` component, an empty name, a non-str/bytes content or a total
            size above :data:`MAX_FILES_BYTES`.
    """
    if not files:
        return {}
    result: dict[str, bytes] = {}
    total = 0
    for name, content in files.items():
        parts = str(name).split("/")
        if not name or name.startswith("/") or any(p in ("", "..", ".") for p in parts):
            raise ValueError(f"file names must be relative paths without '..' or empty parts, got {name!r}")
        if isinstance(content, str):
            data = content.encode()
        elif isinstance(content, bytes | bytearray):
            data = bytes(content)
        else:
            raise ValueError(f"content of {name!r} must be str or bytes, got {type(content).__name__}")
        total += len(data)
        result[name] = data
    if total > MAX_FILES_BYTES:
        raise ValueError(f"files total {total} bytes, above the {MAX_FILES_BYTES}-byte limit")
    return result


def normalize_stdin(stdin: str | bytes | None) -> bytes:
    """Encode ``stdin`` (str as UTF-8) and check its size.

    Raises:
        ValueError: not str/bytes/None, or larger than :data:`MAX_STDIN_BYTES`.
    """
    if stdin is None:
        return b""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    if not isinstance(data, bytes | bytearray):
        raise ValueError(f"stdin must be str, bytes or None, got {type(stdin).__name__}")
    if len(data) > MAX_STDIN_BYTES:
        raise ValueError(f"stdin is {len(data)} bytes, above the {MAX_STDIN_BYTES}-byte limit")
    return bytes(data)


class Sandbox(ABC):
    """An isolated episode workspace that runs commands and Python code under :class:`Limits`.

    Use as a context manager, or call :meth:`close` (idempotent). Not thread-safe for concurrent ``run``
    calls on one object; use one sandbox per worker (they are cheap).

    Args:
        limits: Default limits of :meth:`run` (a ``limits=`` argument overrides them per call).
    """

    #: Backend name used by :func:`arl_envs.sandbox.get_sandbox`.
    backend: str = ""
    #: Path of the Python interpreter inside the sandbox.
    python: str = "python3"
    #: Whether :meth:`reset` pre-starts the next episode's session interpreter in the background (see
    #: :meth:`reset`); backends whose session start is already cheap leave it off.
    prestarts_sessions: bool = False

    def __init__(self, *, limits: Limits | None = None) -> None:
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
        self.limits = limits or Limits()
        self._closed = False
        self._sessions: list[PythonSession] = []
        self._session_key: tuple[Limits, float] | None = None  # the last episode's open_session() arguments
        self._prestarted: tuple[tuple[Limits, float], PythonSession] | None = None

    # -- public API -------------------------------------------------------------------------------------
    def run(
        self,
        command: str | Sequence[str] | None = None,
        *,
        code: str | None = None,
        files: Mapping[str, str | bytes] | None = None,
        stdin: str | bytes | None = None,
        limits: Limits | None = None,
    ) -> ExecResult:
        """Run a command or Python code in the work directory, after writing ``files`` into it.

        Args:
            command: Shell command line (``/bin/sh -c``) or argv list. Exclusive with ``code``.
            code: Python source, run with the sandbox's interpreter (:attr:`python`).
            files: ``{relative path: str | bytes}`` written into the work directory first (they persist
                for the rest of the episode).
            stdin: Data fed to the program's standard input (str is UTF-8 encoded); default empty.
            limits: Limits of this run (default: the sandbox's).

        Returns:
            The :class:`ExecResult`; infrastructure failures are in ``sandbox_error``.

        Raises:
            ValueError: malformed ``command``/``code``/``files``/``stdin``.
            SandboxClosed: the sandbox was closed.
        """
        self._check_open()
        limits = self._check_limits(limits)
        file_map = normalize_files(files)
        stdin_bytes = normalize_stdin(stdin)
        if (
            code is not None
            and command is None
            and isinstance(code, str)
            and (len(code) > MAX_INLINE_CODE_CHARS or "\0" in code)
        ):  # argv limits / NUL bytes: run it from a file instead
            file_map[".arl_main.py"] = code.encode()
            argv = [self.python, ".arl_main.py"]
        else:
            argv = normalize_command(command, code, self.python)
        return self._run(argv, file_map, stdin_bytes, limits)

    def write_files(self, files: Mapping[str, str | bytes]) -> None:
        """Write ``files`` (relative path -> content) into the work directory.

        Raises:
            ValueError: malformed ``files``.
            OSError: a file could not be written (e.g. the sandbox put a symlink or a file where a parent
                directory should be; links are never followed).
            SandboxClosed: the sandbox was closed.
        """
        self._check_open()
        file_map = normalize_files(files)
        if file_map:
            self._write_files(file_map)

    def read_file(self, path: str, max_bytes: int = 1 * MIB) -> bytes | None:
        """Read a file of the work directory (as the sandbox sees it).

        Args:
            path: Path relative to the work directory.
            max_bytes: Bytes returned at most.

        Returns:
            Its first ``max_bytes`` bytes, or None if it does not exist or is not a regular file.
        """
        self._check_open()
        normalize_files({path: b""})
        return self._read_file(path, max_bytes)

    def open_session(self, *, limits: Limits | None = None, cpu_budget_s: float = SESSION_CPU_BUDGET_S) -> PythonSession:
        """Start a persistent Python interpreter in this sandbox's work directory (see :mod:`.session`).

        Args:
            limits: Limits of the interpreter process (memory, processes; CPU seconds and output per call);
                ``wall_time_s`` is the default per-call timeout.
            cpu_budget_s: CPU seconds of the whole session, all calls and restarts together (the interpreter's
                hard ``RLIMIT_CPU``: a cell cannot raise its per-call limit above what is left of it).

        Returns:
            A started :class:`~arl_envs.sandbox.session.PythonSession`; closed with the sandbox.

        Raises:
            ValueError: ``cpu_budget_s`` is not a positive number.
        """
        from arl_envs.sandbox.session import PythonSession  # noqa: PLC0415 - avoid an import cycle

        self._check_open()
        limits = self._check_limits(limits)
        key = (limits, cpu_budget_s)
        session = self._take_prestarted(key)
        if session is None:
            session = PythonSession(self, limits, cpu_budget_s=cpu_budget_s)
        self._session_key = key
        self._sessions.append(session)
        return session

    def reset(self) -> None:
        """Start a new episode: close sessions and replace the work directory by a fresh, empty one.

        When the episode before opened a session and the backend :attr:`prestarts_sessions`, the new
        episode's interpreter is launched now with that session's limits and CPU budget, and starts while the
        agent thinks: the episode's first :meth:`open_session` with the same arguments takes it instead of
        waiting for an interpreter to start. It is launched exactly as :meth:`open_session` would
        launch it, in this sandbox, after the new work directory exists; it is handed out once, to this
        episode, and closed with the episode if unused (never carried into another episode or sandbox).
        """
        from arl_envs.sandbox.session import PythonSession  # noqa: PLC0415 - avoid an import cycle

        self._check_open()
        self._drop_prestarted()
        self._close_sessions()
        self._reset_workdir()
        if self.prestarts_sessions and self._session_key is not None:
            limits, budget = self._session_key
            with contextlib.suppress(Exception):  # a failed launch: open_session() starts one and reports
                self._prestarted = (self._session_key, PythonSession(self, limits, budget, prestarted=True))

    def close(self) -> None:
        """Release everything (processes, work directory, containers). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._drop_prestarted()
        self._close_sessions()
        self._close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; close() is the contract
        with contextlib.suppress(Exception):  # never raise from a finalizer
            self.close()

    # -- helpers -----------------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise SandboxClosed(f"{type(self).__name__} is closed")

    def _check_limits(self, limits: Limits | None) -> Limits:
        if limits is None:
            return self.limits
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
        return limits

    def _take_prestarted(self, key: tuple[Limits, float]) -> PythonSession | None:
        """The pre-started session if it was launched for ``key`` and came up (waits for its ready signal)."""
        prestarted, self._prestarted = self._prestarted, None
        if prestarted is None:
            return None
        if prestarted[0] == key and prestarted[1].await_ready():
            return prestarted[1]
        prestarted[1].close()
        return None

    def _drop_prestarted(self) -> None:
        prestarted, self._prestarted = self._prestarted, None
        if prestarted is not None:
            prestarted[1].close()

    def _close_sessions(self) -> None:
        sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()

    def _forget_session(self, session: PythonSession) -> None:
        if session in self._sessions:
            self._sessions.remove(session)

    # -- backend hooks -----------------------------------------------------------------------------------
    @abstractmethod
    def _run(self, argv: list[str], files: dict[str, bytes], stdin: bytes, limits: Limits) -> ExecResult:
        """Run ``argv`` in the work directory (files already validated)."""

    @abstractmethod
    def _write_files(self, files: dict[str, bytes]) -> None:
        """Write validated files into the work directory."""

    @abstractmethod
    def _read_file(self, path: str, max_bytes: int) -> bytes | None:
        """Read a work-directory file."""

    @abstractmethod
    def _reset_workdir(self) -> None:
        """Replace the work directory by an empty one."""

    #: Whether a session's interpreter is pid 2 of a pid namespace of its own (then it kills the processes a
    #: cell leaves behind itself; otherwise :meth:`SessionProcess.kill_strays` does).
    session_owns_pid_namespace: bool = False

    @abstractmethod
    def _start_session_process(self, argv: list[str], limits: Limits, cpu_budget_s: float) -> SessionProcess:
        """Start a long-lived process for a session (stdin/stdout/stderr connected to the host), its hard CPU
        limit ``cpu_budget_s`` seconds."""

    @abstractmethod
    def _close(self) -> None:
        """Release backend resources (called once)."""


def quote_argv(argv: Sequence[str]) -> str:
    """Render an argv as a shell-quoted string (for logs and error messages)."""
    return " ".join(shlex.quote(a) for a in argv)


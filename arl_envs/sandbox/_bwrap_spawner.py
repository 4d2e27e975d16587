"""Bubblewrap backend, processes: the per-sandbox spawner (runs) and started bwrap trees (sessions)."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import selectors
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from arl_envs.sandbox.base import (
    READ_CHUNK,
    SessionProcess,
    split_exit_status,
)
from arl_envs.sandbox.cgroups import RunCgroup
from arl_envs.sandbox.seccomp import bpf_fd

#: Grace after the deadline for reaping a killed run, seconds.
REAP_TIMEOUT_S = 5.0
#: Source of the per-sandbox spawner process.
SPAWNER_SOURCE = (Path(__file__).parent / "_spawner_main.py").read_text()
#: Limits (memory MiB, pids) of a pooled spawner's cgroup until a sandbox takes it and sets its own.
POOL_SPAWNER_LIMITS = (64, 8)
#: Pause before the pool retries a spawner that failed to start, seconds.
POOL_RETRY_S = 1.0
#: Seconds to wait for the spawner to start or answer.
SPAWNER_TIMEOUT_S = 30.0
#: Environment of the spawned setpriv/bwrap (bwrap --clearenv sets the sandbox's own).
SPAWN_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


def _read_until_eof(fd: int, deadline: float) -> tuple[bool, bytes]:
    """Read ``fd`` until EOF or ``deadline``: ``(reached EOF, data)``."""
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False, b"".join(chunks)
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            return False, b"".join(chunks)
        data = os.read(fd, READ_CHUNK)
        if not data:
            return True, b"".join(chunks)
        chunks.append(data)


def _parse_json_stream(data: bytes) -> dict[str, int]:
    """Merge the integer fields of the JSON objects bwrap writes to ``--json-status-fd``."""
    merged: dict[str, int] = {}
    decoder = json.JSONDecoder()
    text = data.decode(errors="replace")
    idx = 0
    while idx < len(text):
        while idx < len(text) and text[idx].isspace():
            idx += 1
        if idx >= len(text):
            break
        try:
            obj, idx = decoder.raw_decode(text, idx)
        except ValueError:
            break
        if isinstance(obj, dict):
            merged.update({k: v for k, v in obj.items() if isinstance(v, int) and not isinstance(v, bool)})
    return merged


def _args_via_fd(argv: list[str], bwrap: str) -> tuple[list[str], int]:
    """``argv`` with bwrap's options moved into a memfd read by ``bwrap --args FD``.

    bwrap's reaper is pid 1 of a session's pid namespace, and ``/proc/1/cmdline`` would show its options
    (host paths of the state directory, binds); this way it shows ``bwrap --args N -- <command>`` only (bwrap
    wants the command itself on its command line).

    Returns:
        The new argv and the memfd (the caller passes it to the child and closes it).
    """
    i = argv.index(bwrap)
    end = argv.index("--", i)
    fd = os.memfd_create("bwrap-args")
    data = b"".join(a.encode() + b"\0" for a in argv[i + 1 : end])
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return [*argv[: i + 1], "--args", str(fd), *argv[end:]], fd


class _BwrapProcess(SessionProcess):
    """One started bwrap process tree with its cgroup, pipes and status channel."""

    def __init__(
        self,
        argv_builder: Callable[[int, int | None], list[str]],
        cgroup: RunCgroup | None,
        stdin: bool,
        bwrap: str,
        seccomp_program: bytes | None,
    ) -> None:
        self.cgroup = cgroup
        self.start = time.monotonic()
        seccomp_fd = bpf_fd(seccomp_program) if seccomp_program is not None else None
        status_r, status_w = os.pipe()
        try:
            argv, args_fd = _args_via_fd(argv_builder(status_w, seccomp_fd), bwrap)
        except BaseException:
            for fd in (status_r, status_w, seccomp_fd):
                if fd is not None:
                    os.close(fd)
            raise
        extra_fds = () if seccomp_fd is None else (seccomp_fd,)
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - argv built by us; no host shell sees user input
                argv,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(status_w, args_fd, *extra_fds),
                start_new_session=True,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                cwd="/",  # else the launcher shell exports the host cwd as PWD (visible in /proc/1/environ)
            )
        except BaseException:
            os.close(status_r)
            os.close(status_w)
            raise
        finally:
            os.close(args_fd)
            for fd in extra_fds:
                os.close(fd)
        os.close(status_w)
        self._status_r = status_r
        self._status_text = b""
        self._sel: selectors.BaseSelector | None = None
        self._stdout_eof = False
        self._finished = False
        self._lock = threading.Lock()
        self.status: dict[str, int] = {}
        self.oom = False
        self.cpu: float | None = None

    # -- status ------------------------------------------------------------------------------------------
    def _read_status(self) -> dict[str, int]:
        """Parse bwrap's ``--json-status-fd`` stream (``child-pid`` at start, ``exit-code`` at the end)."""
        if self._status_r >= 0:
            with contextlib.suppress(OSError):
                os.set_blocking(self._status_r, False)
                while True:
                    data = os.read(self._status_r, READ_CHUNK)
                    if not data:
                        break
                    self._status_text += data
        return _parse_json_stream(self._status_text)

    # -- SessionProcess API ------------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self, timeout_s: float) -> tuple[int, bytes] | None:
        if self._sel is None:
            self._sel = selectors.DefaultSelector()
            self._sel.register(self.proc.stdout, selectors.EVENT_READ, 1)  # type: ignore[arg-type]
            self._sel.register(self.proc.stderr, selectors.EVENT_READ, 2)  # type: ignore[arg-type]
        if self._stdout_eof:
            return 0, b""
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            events = self._sel.select(max(0.0, deadline - time.monotonic()))
            if not events:
                return None
            for key, _ in events:
                data = os.read(key.fd, READ_CHUNK)
                if data:
                    return key.data, data
                self._sel.unregister(key.fileobj)
                if key.data == 1:
                    self._stdout_eof = True
                    return 0, b""

    def kill(self) -> None:
        with self._lock:
            if self._finished:
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, 9)
            if self.cgroup is not None:
                self.cgroup.kill_all()
        self.finish()

    def finish(self) -> None:
        """Reap the process, empty and remove the cgroup, close pipes (idempotent)."""
        with self._lock:
            if self._finished:
                return
            try:
                self.proc.wait(timeout=REAP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, 9)
                self.proc.wait()
            self.status = self._read_status()
            if self.cgroup is not None:
                self.oom = self.cgroup.oom_kills() > 0
                self.cpu = self.cgroup.cpu_time_s()
                self.cgroup.release()
            for fh in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if fh is not None:
                    with contextlib.suppress(OSError):
                        fh.close()
            if self._sel is not None:
                self._sel.close()
            if self._status_r >= 0:
                os.close(self._status_r)
                self._status_r = -1
            self._finished = True

    def exit_status(self) -> tuple[int | None, int | None, bool]:
        self.finish()
        if "exit-code" in self.status:
            code, sig = split_exit_status(self.status["exit-code"])
        else:
            code, sig = split_exit_status(self.proc.returncode)
        return code, sig, self.oom

    def cpu_time_s(self) -> float | None:
        if self._finished:
            return self.cpu
        return self.cgroup.cpu_time_s() if self.cgroup is not None else None


class _Spawner:
    """Host side of the per-sandbox spawner (see :mod:`arl_envs.sandbox._spawner_main`).

    Started once per sandbox inside its cgroups (one migration, then every run inherits the cgroups by
    fork); also spares the (possibly large) host process a fork per run.
    """

    def __init__(self, python: str, cgroup: RunCgroup | None) -> None:
        self.cgroup = cgroup
        self._lock = threading.Lock()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        lines = [f"echo $$ > {shlex.quote(f)} || exit 1" for f in (cgroup.procs_files if cgroup else [])]
        lines.append('exec "$@"')
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - fixed argv
                [
                    "/bin/sh",
                    "-c",
                    "\n".join(lines),
                    "arl-spawner",
                    python,
                    "-S",
                    "-E",
                    "-c",
                    SPAWNER_SOURCE,
                    str(child.fileno()),
                ],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                cwd="/",
            )
        finally:
            child.close()
        self.sock = parent
        self.sock.settimeout(SPAWNER_TIMEOUT_S)
        try:
            ready = self.sock.recv(READ_CHUNK)
        except OSError:
            ready = b""
        if not ready:
            err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
            self.close()
            raise OSError(f"the sandbox spawner did not start: {err.strip()[-500:]}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(
        self,
        argv: list[str],
        env: dict[str, str],
        rlimits: list[tuple[int, int]],
        fds: list[int],
        ids: tuple[int, int] | None,
    ) -> int:
        """Start ``argv`` with ``fds`` as its fds 0-3 (or 0-4), as ``ids`` = (uid, gid) if given; return its pid (= pgid).

        Raises:
            OSError: the spawner is gone or could not fork.
        """
        uid, gid = ids if ids is not None else (None, None)
        payload = json.dumps({"argv": argv, "env": env, "rlimits": rlimits, "uid": uid, "gid": gid}).encode()
        with self._lock:
            socket.send_fds(self.sock, [payload], fds)
            reply = self.sock.recv(READ_CHUNK)
        if not reply:
            raise OSError("the sandbox spawner exited")
        data = json.loads(reply)
        if "pid" not in data:
            raise OSError(f"the sandbox spawner failed: {data.get('error')}")
        return int(data["pid"])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=REAP_TIMEOUT_S)
        if self.proc.stderr is not None:
            self.proc.stderr.close()




class SpawnerPool:
    """Spawners started ahead of time in the background, each handed to ONE sandbox and never reused.

    A spawner is trusted host-side code (it forks runs and drops privileges) and holds no sandbox state, so one
    started a moment earlier is the same as one started on demand; what the pool saves is the interpreter
    start-up (a ``python -S`` start, ~1x a bare ``python3 -c``) on a fresh sandbox's first run (issue 18). Each
    pooled spawner sits in a cgroup of its own, created with default limits that the sandbox sets to its own
    when it takes it. The pool starts on the first sandbox (nothing at import), keeps :attr:`depth` spawners
    per kind (with or without cgroups) once a kind was asked for, refills from a daemon thread, and kills what
    is left at interpreter exit. A forked child never uses its parent's pool.

    Args:
        depth: Ready spawners kept per kind.
    """

    def __init__(self, depth: int = 2) -> None:
        self.depth = depth
        self._cond = threading.Condition()
        self._ready: dict[bool, list[_Spawner]] = {}
        self._managers: dict[bool, object] = {}
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._stopped = False

    def take(self, manager: object | None, memory_mb: int, max_processes: int) -> _Spawner:
        """A started spawner in a cgroup of ``manager`` (None: no cgroup) limited to ``memory_mb``/``max_processes``
        (the spawner's own share included by the caller).

        Raises:
            OSError: no spawner could be started.
        """
        kind = manager is not None
        spawner = None
        with self._cond:
            if self._pid != os.getpid():  # forked: the parent's spawners are not ours
                self.__init__(self.depth)  # type: ignore[misc]
            if not self._managers and not self._stopped:
                atexit.register(self.close)  # on first use, not at import
            self._managers[kind] = manager
            ready = self._ready.setdefault(kind, [])
            while ready and spawner is None:
                candidate = ready.pop()
                if candidate.alive():
                    spawner = candidate
                else:
                    _discard(candidate)
            self._kick()
        if spawner is None:
            return start_spawner(manager, memory_mb, max_processes)
        if spawner.cgroup is not None:
            spawner.cgroup.set_limits(memory_mb, max_processes)
        return spawner

    def _kick(self) -> None:
        if self._stopped:
            return
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._refill, name="arl-spawner-pool", daemon=True)
            self._thread.start()
        self._cond.notify_all()

    def _refill(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and all(len(self._ready.get(k, [])) >= self.depth for k in self._managers):
                    self._cond.wait()
                if self._stopped:
                    return
                kind = next(k for k in self._managers if len(self._ready.get(k, [])) < self.depth)
                manager = self._managers[kind]
            try:
                spawner = start_spawner(manager, *POOL_SPAWNER_LIMITS)
            except OSError:
                time.sleep(POOL_RETRY_S)
                continue
            with self._cond:
                if self._stopped or self._pid != os.getpid():
                    _discard(spawner)
                    return
                self._ready.setdefault(kind, []).append(spawner)

    def ready(self) -> list[_Spawner]:
        """The spawners ready to be handed out now (a snapshot)."""
        with self._cond:
            return [s for ready in self._ready.values() for s in ready]

    def close(self) -> None:
        """Kill every ready spawner and stop refilling (at interpreter exit; idempotent)."""
        with self._cond:
            if self._pid != os.getpid():
                return
            self._stopped = True
            spawners = [s for ready in self._ready.values() for s in ready]
            self._ready.clear()
            self._cond.notify_all()
        for spawner in spawners:
            _discard(spawner)


def _discard(spawner: _Spawner) -> None:
    spawner.close()
    if spawner.cgroup is not None:
        spawner.cgroup.release()


def start_spawner(manager: object | None, memory_mb: int, max_processes: int) -> _Spawner:
    """Start a spawner (in a new cgroup of ``manager`` with these limits, when given).

    Raises:
        OSError: it did not start.
    """
    cgroup = manager.create(memory_mb, max_processes) if manager is not None else None  # type: ignore[attr-defined]
    try:
        return _Spawner(sys.executable, cgroup)
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise


#: The process's spawner pool (starts on first use).
spawner_pool = SpawnerPool()

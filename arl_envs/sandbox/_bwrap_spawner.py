"""Bubblewrap backend, processes: spawners (runs and sessions start the same way: forked by a spawner that sits in
their cgroup), their pool, and a session's started bwrap tree."""

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
from dataclasses import dataclass
from pathlib import Path

from arl_envs.sandbox.base import (
    READ_CHUNK,
    SessionProcess,
    split_exit_status,
)
from arl_envs.sandbox.cgroups import RunCgroup, kill_until_gone
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
#: Seconds a closed spawner has to kill and reap its children and exit before it is SIGKILLed.
SPAWNER_EXIT_GRACE_S = 1.0
#: Environment of the spawned bwrap (bwrap --clearenv sets the sandbox's own).
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


#: fd numbers of a spawned bwrap: stdin, stdout, stderr on 0-2, then its ``--json-status-fd``, its ``--args``
#: memfd and (when a filter is loaded) its ``--seccomp`` program, in this order (see :meth:`_Spawner.spawn_tree`).
STATUS_FD, ARGS_FD, SECCOMP_FD = 3, 4, 5


def _args_memfd(argv: list[str], bwrap: str) -> tuple[list[str], int]:
    """``argv`` with bwrap's options moved into a memfd that ``bwrap --args`` reads (at :data:`ARGS_FD`).

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
    return [*argv[: i + 1], "--args", str(ARGS_FD), *argv[end:]], fd


@dataclass
class SpawnedTree:
    """A bwrap process tree a :class:`_Spawner` started, and the host ends of its pipes (raw fds).

    Attributes:
        pid: bwrap's pid, also its process group (the spawner's child: the spawner reaps it, not us).
        stdin: Write end of its stdin.
        stdout, stderr: Read ends of its output.
        status: Read end of bwrap's ``--json-status-fd`` (EOF when bwrap exited).
    """

    pid: int
    stdin: int
    stdout: int
    stderr: int
    status: int


class _BwrapProcess(SessionProcess):
    """A session's bwrap tree, started like a run (:meth:`BwrapSandbox._spawn`) by a spawner of its own.

    The spawner sits in the session's own cgroup (``None`` without cgroups), so the tree is born in it; killing
    the session kills the tree and every process of that cgroup, then closes the spawner and removes the cgroup.
    """

    def __init__(self, spawner: _Spawner, tree: SpawnedTree) -> None:
        self.spawner = spawner
        self.cgroup = spawner.cgroup
        #: The started tree (``proc.pid``: bwrap's pid; every process of the session descends from it).
        self.proc = tree
        # The cgroup also counts what its pooled spawner used before (its start-up): report the tree's share.
        self._cpu_base = (self.cgroup.cpu_time_s() or 0.0) if self.cgroup is not None else 0.0
        self._oom_base = self.cgroup.oom_kills() if self.cgroup is not None else 0
        self._sel: selectors.BaseSelector | None = None
        self._stdout_eof = False
        self._finished = False
        self._lock = threading.Lock()
        self.status: dict[str, int] = {}
        self.oom = False
        self.cpu: float | None = None

    # -- SessionProcess API ------------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.proc.stdin, view) :]

    def recv(self, timeout_s: float) -> tuple[int, bytes] | None:
        if self._sel is None:
            self._sel = selectors.DefaultSelector()
            self._sel.register(self.proc.stdout, selectors.EVENT_READ, 1)
            self._sel.register(self.proc.stderr, selectors.EVENT_READ, 2)
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
            self.spawner.kill_children()
        self.finish()

    def finish(self) -> None:
        """Wait for bwrap to exit (killing the tree if it does not), read its status, close the spawner,
        release the cgroup, close the pipes (idempotent)."""
        with self._lock:
            if self._finished:
                return
            exited, text = _read_until_eof(self.proc.status, time.monotonic() + REAP_TIMEOUT_S)
            if not exited:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, 9)
                self.spawner.kill_children()
                text += _read_until_eof(self.proc.status, time.monotonic() + REAP_TIMEOUT_S)[1]
            self.status = _parse_json_stream(text)
            if self.cgroup is not None:
                self.oom = self.cgroup.oom_kills() > self._oom_base
                cpu = self.cgroup.cpu_time_s()
                self.cpu = None if cpu is None else max(0.0, cpu - self._cpu_base)
            _discard(self.spawner)
            if self._sel is not None:
                self._sel.close()
            for fd in (self.proc.stdin, self.proc.stdout, self.proc.stderr, self.proc.status):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._finished = True

    def exit_status(self) -> tuple[int | None, int | None, bool]:
        self.finish()
        # bwrap reports the exit code only when the command ran to its end; otherwise we killed it (SIGKILL).
        code, sig = split_exit_status(self.status.get("exit-code", -9))
        return code, sig, self.oom

    def cpu_time_s(self) -> float | None:
        if self._finished:
            return self.cpu
        if self.cgroup is None:
            return None
        cpu = self.cgroup.cpu_time_s()
        return None if cpu is None else max(0.0, cpu - self._cpu_base)


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
        """Start ``argv`` with ``fds`` as its fds 0-5 (4 to 6 of them), under ``rlimits``, as ``ids`` = (uid, gid) if
        given; return its pid (= pgid).

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

    def spawn_tree(
        self,
        argv: list[str],
        bwrap: str,
        rlimits: list[tuple[int, int]],
        ids: tuple[int, int] | None,
        seccomp_program: bytes | None,
    ) -> SpawnedTree:
        """Start ``bwrap ... -- command`` (its options move into an ``--args`` memfd), with fresh pipes for
        stdin/stdout/stderr and its status, the seccomp program on :data:`SECCOMP_FD` when given.

        ``argv`` must refer to fds :data:`STATUS_FD` and :data:`SECCOMP_FD` (what :meth:`BwrapSandbox._bwrap_argv`
        writes).

        Raises:
            OSError: the spawner is gone or could not fork (every fd is closed again).
        """
        pipes: list[tuple[int, int]] = []
        child_fds: list[int] = []
        try:
            pipes = [os.pipe() for _ in range(4)]  # stdin, stdout, stderr, status
            child_fds = [pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1]]
            argv, args_fd = _args_memfd(argv, bwrap)
            child_fds.append(args_fd)
            if seccomp_program is not None:
                child_fds.append(bpf_fd(seccomp_program))
            pid = self.spawn(argv, SPAWN_ENV, rlimits, child_fds, ids)
        except BaseException:
            for fd in {*child_fds, *(fd for pair in pipes for fd in pair)}:
                os.close(fd)
            raise
        for fd in child_fds:
            os.close(fd)
        return SpawnedTree(pid=pid, stdin=pipes[0][1], stdout=pipes[1][0], stderr=pipes[2][0], status=pipes[3][0])

    def kill_children(self) -> None:
        """SIGKILL every process in the spawner's cgroup but the spawner (a finished run's or a killed session's
        leftovers; nothing to do without a cgroup: there the pid namespace's end kills them)."""
        cgroup = self.cgroup
        if cgroup is not None:
            kill_until_gone(lambda: cgroup.pids() - {self.pid}, REAP_TIMEOUT_S)

    def close(self) -> None:
        """Stop the spawner: it kills what it started, reaps it and exits (killed after a grace period)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # EOF for the spawner even if a forked process holds a copy
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.proc.wait(timeout=SPAWNER_EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
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
    start-up (a ``python -S`` start, ~1x a bare ``python3 -c``) on a fresh sandbox's first run. Each
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

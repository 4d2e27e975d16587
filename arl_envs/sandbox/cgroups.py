"""Per-run control groups for the bubblewrap backend (cgroup v1 or v2, detected).

A run gets its own cgroup for **pids** (``pids.max``: what stops a fork bomb, even for root, where
``RLIMIT_NPROC`` is ignored) and **memory** (``memory.limit_in_bytes`` + ``memory.memsw.limit_in_bytes`` on v1,
``memory.max`` + ``memory.swap.max`` on v2), plus **cpuacct**/``cpu.stat`` for CPU time and the OOM-kill counter
for ``oom_killed``. Cgroups are created under the cgroup this process already belongs to (so the sandbox stays
inside whatever limits the host put on us) and removed after the run; killing every pid listed in the cgroup
(``cgroup.kill`` on v2) is the last line of the "no process survives" guarantee.

Layout references: kernel docs ``admin-guide/cgroup-v1/{pids,memory}.rst`` and ``admin-guide/cgroup-v2.rst``.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import itertools
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: Where cgroup hierarchies are mounted.
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Prefix of the cgroups we create (followed by our pid and a counter).
CGROUP_PREFIX = "arl-sbx"
#: Seconds to keep killing pids of a cgroup before giving up on emptying it.
KILL_SWEEP_TIMEOUT_S = 5.0
#: Pause between kill sweeps, seconds.
KILL_SWEEP_PAUSE_S = 0.002
#: Seconds to retry ``rmdir`` of a cgroup whose last tasks are still exiting.
RMDIR_TIMEOUT_S = 2.0
#: Pause between background removal attempts of a busy cgroup, seconds.
REMOVER_RETRY_S = 0.05
#: Nanoseconds per second (cpuacct.usage is in ns).
NS_PER_S = 1e9
#: Microseconds per second (cgroup v2 cpu.stat usage_usec).
US_PER_S = 1e6

#: v1 controllers a run cannot do without.
REQUIRED_V1 = ("pids", "memory")

_counter = itertools.count()


def _own_cgroups() -> dict[str, str]:
    """Map controller name (``"pids"``, ``"memory"``; ``""`` for the v2 unified hierarchy) -> our cgroup path."""
    result: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return result
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            result[""] = path
        for ctrl in controllers.split(","):
            if ctrl:
                result[ctrl] = path
    return result


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _read_keyed(path: Path, key: str) -> int | None:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        return None
    return None


def kill_until_gone(victims: Callable[[], set[int]], timeout_s: float = KILL_SWEEP_TIMEOUT_S) -> bool:
    """SIGKILL every pid ``victims()`` returns, again and again, until it returns none or ``timeout_s`` passed.

    The one kill-leftovers loop of both backends (a run's cgroup, the processes a bwrap run left beside its
    spawner, the sandbox user's processes in a container).

    Returns:
        True when nothing was left.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        pids = victims()
        if not pids:
            return True
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return False
        time.sleep(KILL_SWEEP_PAUSE_S)


@dataclass
class RunCgroup:
    """The cgroups of one run (one directory per v1 controller, or one v2 directory).

    Attributes:
        dirs: Cgroup directories, keyed by controller (``"pids"``, ``"memory"``, ``"cpuacct"``; ``"unified"``).
        version: 1 or 2.
    """

    dirs: dict[str, Path] = field(default_factory=dict)
    version: int = 1

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a new process must write its pid into (one per directory)."""
        seen: list[str] = []
        for d in self.dirs.values():
            f = str(d / "cgroup.procs")
            if f not in seen:
                seen.append(f)
        return seen

    def set_limits(self, memory_mb: int, max_processes: int) -> None:
        """Change the pids and memory limits (raises OSError if the memory in use exceeds the new limit)."""
        limit = str(int(memory_mb) << 20)
        if self.version == 1:
            _write(self.dirs["pids"] / "pids.max", str(int(max_processes)))
            mem = self.dirs["memory"]
            current = _read_int(mem / "memory.limit_in_bytes") or 0
            files = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
            if int(limit) > current:  # memsw must stay >= limit: raise memsw first, lower it last
                files.reverse()
            for name in files:
                with contextlib.suppress(FileNotFoundError):
                    _write(mem / name, limit)
        else:
            _write(self.dirs["unified"] / "pids.max", str(int(max_processes)))
            _write(self.dirs["unified"] / "memory.max", limit)

    def pids(self) -> set[int]:
        """Pids currently in the run's cgroups."""
        found: set[int] = set()
        for d in set(self.dirs.values()):
            try:
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
        return found

    @classmethod
    def of_process(cls, pid: int) -> RunCgroup | None:
        """The cgroups a host process is in (e.g. a local Docker container's init), as a reader; None if they
        are not visible from here (v1: the pids/memory/cpuacct directories; v2: the unified one)."""
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return None
        v1: dict[str, Path] = {}
        for line in lines:
            parts = line.split(":", 2)
            if len(parts) != 3:
                continue
            controllers, path = parts[1], parts[2]
            if not controllers:  # the v2 line
                base = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else CGROUP_ROOT / "unified"
                d = Path(str(base) + path)
                if (d / "cgroup.procs").exists() and (d / "memory.max").exists():
                    return cls(dirs={"unified": d, "pids": d, "memory": d}, version=2)
                continue
            for ctrl in controllers.split(","):
                d = Path(str(CGROUP_ROOT / ctrl) + path)
                if ctrl in ("pids", "memory", "cpuacct") and (d / "cgroup.procs").exists():
                    v1[ctrl] = d
        return cls(dirs=v1, version=1) if v1 else None

    def oom_kills(self) -> int:
        """How many processes the kernel OOM-killed in this cgroup so far."""
        mem = self.dirs.get("memory")
        if mem is None:
            return 0
        if self.version == 2:
            return _read_keyed(mem / "memory.events", "oom_kill") or 0
        return _read_keyed(mem / "memory.oom_control", "oom_kill") or 0

    def memory_limit_hits(self) -> int:
        """How many times a charge hit the memory limit so far (v1 ``failcnt``, v2 ``memory.events`` ``max``).

        Reclaim usually follows and succeeds, so this alone is no failure; it tells a failure the run caused by
        exhausting its memory (a process that could not even start) from an infrastructure one.
        """
        mem = self.dirs.get("memory")
        if mem is None:
            return 0
        if self.version == 2:
            return _read_keyed(mem / "memory.events", "max") or 0
        return sum(_read_int(mem / name) or 0 for name in ("memory.failcnt", "memory.memsw.failcnt"))

    def cpu_time_s(self) -> float | None:
        """CPU seconds used by the run's processes, or None if no CPU accounting is available."""
        if self.version == 2:
            usec = _read_keyed(self.dirs["unified"] / "cpu.stat", "usage_usec")
            return None if usec is None else usec / US_PER_S
        acct = self.dirs.get("cpuacct")
        if acct is None:
            return None
        ns = _read_int(acct / "cpuacct.usage")
        return None if ns is None else ns / NS_PER_S

    def kill_all(self, timeout_s: float = KILL_SWEEP_TIMEOUT_S) -> bool:
        """SIGKILL every process in the cgroup until it is empty.

        Returns:
            True when the cgroup is empty.
        """
        if self.version == 2:
            with contextlib.suppress(OSError):
                _write(self.dirs["unified"] / "cgroup.kill", "1")
        return kill_until_gone(self.pids, timeout_s)

    def release(self) -> None:
        """SIGKILL every process left (one sweep, no waiting) and remove the cgroup in the background."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not self.remove(timeout_s=0.0):
            _remover.put(self)

    def remove(self, timeout_s: float = RMDIR_TIMEOUT_S) -> bool:
        """Kill leftovers and remove the cgroup directories, retrying up to ``timeout_s`` seconds.

        Returns:
            True when every directory was removed.
        """
        self.kill_all(timeout_s=timeout_s)
        ok = True
        for d in set(self.dirs.values()):
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        ok = False
                        break
                    self.kill_all(timeout_s=KILL_SWEEP_PAUSE_S * 10)
                    time.sleep(KILL_SWEEP_PAUSE_S)
        return ok


class _Remover:
    """Background thread that empties and removes finished runs' cgroups.

    The last process of a run (bwrap's pid-1 reaper) is usually still exiting when the run returns; waiting
    for it would add milliseconds to every run. :meth:`RunCgroup.release` SIGKILLs every pid once and hands
    the directories to this thread, which retries until they are gone. ``atexit`` drains the queue.
    """

    def __init__(self) -> None:
        self._queue: list[RunCgroup] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def put(self, cg: RunCgroup) -> None:
        with self._cond:
            self._queue.append(cg)
            if self._thread is None:
                atexit.register(self.drain)  # on first use, not at import
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="arl-cgroup-remover", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                batch, self._queue = self._queue, []
            retry = [cg for cg in batch if not cg.remove(timeout_s=0.0)]
            if retry:
                time.sleep(REMOVER_RETRY_S)
                with self._cond:
                    self._queue.extend(retry)

    def drain(self, timeout_s: float = KILL_SWEEP_TIMEOUT_S) -> None:
        with self._cond:
            batch, self._queue = self._queue, []
        for cg in batch:
            cg.remove(timeout_s=timeout_s)


_remover = _Remover()


class CgroupManager:
    """Detects a usable cgroup setup once and creates :class:`RunCgroup` s.

    ``available`` is True when pids and memory limits can be set for a child cgroup (root on v1, or a v2
    subtree with the ``pids`` and ``memory`` controllers delegated). ``reason`` says why not otherwise.
    """

    def __init__(self) -> None:
        self.available = False
        self.version = 0
        self.reason = ""
        self._parents: dict[str, Path] = {}
        self._detect()

    def _detect(self) -> None:
        own = _own_cgroups()
        v1 = {c: CGROUP_ROOT / c for c in ("pids", "memory", "cpuacct") if (CGROUP_ROOT / c / "tasks").exists()}
        if "pids" in v1 and "memory" in v1:
            parents = {c: Path(str(v1[c]) + own.get(c, "/")) for c in v1}
            if all(os.access(p, os.W_OK) for p in (parents["pids"], parents["memory"])):
                self._parents, self.version, self.available = parents, 1, True
                return
            self.reason = "cgroup v1 pids/memory hierarchies are not writable (run as root)"
            return
        unified = CGROUP_ROOT if (CGROUP_ROOT / "cgroup.controllers").exists() else CGROUP_ROOT / "unified"
        if not (unified / "cgroup.controllers").exists() or "" not in own:
            self.reason = "no cgroup v1 pids+memory hierarchies and no cgroup v2 mount"
            return
        parent = Path(str(unified) + own[""])
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            if not {"pids", "memory"} <= set(enabled):
                _write(parent / "cgroup.subtree_control", "+pids +memory")
        except OSError as exc:
            self.reason = (
                f"cgroup v2: cannot enable pids+memory below {parent} ({exc.strerror}); "
                "run in a delegated cgroup (e.g. `systemd-run --user --scope -p Delegate=yes ...`)"
            )
            return
        if not os.access(parent, os.W_OK):
            self.reason = f"cgroup v2: {parent} is not writable"
            return
        self._parents, self.version, self.available = {"unified": parent}, 2, True

    def create(self, memory_mb: int, max_processes: int) -> RunCgroup:
        """Create the cgroups of one run with its limits set.

        Args:
            memory_mb: Memory limit (RAM, and RAM+swap), MiB.
            max_processes: Pids limit (processes and threads).

        Returns:
            The new :class:`RunCgroup`.

        Raises:
            OSError: a cgroup could not be created or configured.
        """
        name = f"{CGROUP_PREFIX}-{os.getpid()}-{next(_counter)}"
        limit = str(int(memory_mb) << 20)
        cg = RunCgroup(version=self.version)
        try:
            if self.version == 1:
                for ctrl, parent in self._parents.items():
                    d = parent / name
                    try:
                        os.mkdir(d)
                    except OSError:
                        if ctrl in REQUIRED_V1:
                            raise
                        continue  # cpuacct is optional (cpu_time_s becomes None)
                    cg.dirs[ctrl] = d
                _write(cg.dirs["pids"] / "pids.max", str(int(max_processes)))
                mem = cg.dirs["memory"]
                _write(mem / "memory.limit_in_bytes", limit)
                with contextlib.suppress(FileNotFoundError):  # absent without swap accounting
                    _write(mem / "memory.memsw.limit_in_bytes", limit)
            else:
                d = self._parents["unified"] / name
                os.mkdir(d)
                cg.dirs = {"unified": d, "pids": d, "memory": d}
                _write(d / "pids.max", str(int(max_processes)))
                _write(d / "memory.max", limit)
                with contextlib.suppress(FileNotFoundError):
                    _write(d / "memory.swap.max", "0")
        except OSError:
            cg.remove()
            raise
        return cg

    def sweep_stale(self) -> int:
        """Remove empty cgroups left by dead processes of ours (name prefix + a pid that no longer exists).

        Returns:
            Number of directories removed.
        """
        removed = 0
        for parent in set(self._parents.values()):
            try:
                entries = list(parent.iterdir())
            except OSError:
                continue
            for d in entries:
                parts = d.name.split("-")
                if not d.name.startswith(CGROUP_PREFIX + "-") or len(parts) < 3 or not parts[2].isdigit():
                    continue
                if Path(f"/proc/{parts[2]}").exists():
                    continue
                leftover = RunCgroup(dirs={"x": d}, version=self.version)
                if self.version == 2:
                    leftover.dirs["unified"] = d
                if leftover.remove():
                    removed += 1
        return removed


_manager: CgroupManager | None = None


def cgroup_manager() -> CgroupManager:
    """The process-wide :class:`CgroupManager` (detected on first use)."""
    global _manager  # noqa: PLW0603 - one detection per process
    if _manager is None:
        _manager = CgroupManager()
        if _manager.available:
            _manager.sweep_stale()
    return _manager

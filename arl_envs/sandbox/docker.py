"""Docker backend: containers from :data:`~arl_envs.sandbox.image.DEFAULT_IMAGE`, via the ``docker`` SDK.

Every container is created with ``--network none`` (unless ``Limits.network``), a read-only root file system,
``--cap-drop ALL``, ``no-new-privileges``, ``--pids-limit``, ``--memory`` = ``--memory-swap`` (no swap),
``--init`` (a reaper as PID 1), a tmpfs ``/work`` (``workdir_mb``) and ``/tmp``, and no host environment.
PID 1 runs as ``nobody``; commands run as uid 1000 (``sandbox``), so nothing they do (``kill -9 -1``
included) can stop the container.

Two modes:

* ``warm_pool=True`` (default): a process-wide pool keeps ``pool_size`` started containers per limits
  configuration. A sandbox leases one for its episode and runs each command with ``docker exec`` (tens of
  ms). After every run all the sandbox user's processes except live session interpreters are SIGKILLed
  (through the container's cgroup on a local daemon; else with an exec; else the container is killed and
  replaced), so nothing outlives a run. On :meth:`~DockerSandbox.reset`/:meth:`~DockerSandbox.close` the
  container goes back to the pool, where a background thread kills everything, wipes ``/work``, ``/tmp``,
  ``/dev/shm``, ``/dev/mqueue`` and SysV IPC, checks they are empty and only then reuses it (else removes it).
* ``warm_pool=False``: ``docker run`` semantics, a fresh container per run (hundreds of ms); the episode's
  ``/work`` is then a Docker volume (disk-backed, removed at reset/close), the rest is the same.

Per run, ``cpu_time_s``, ``max_file_mb`` and open files are rlimits set by a tiny ``sh`` wrapper; the memory
and pids limits belong to the container (changed with ``docker update`` when a run asks for others).
Files are passed as a tar stream on the exec's stdin, followed by the program's stdin.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import select
import socket
import struct
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox.base import (
    INLINE_STDIN_BYTES,
    READ_CHUNK,
    WORKDIR,
    ExecResult,
    Limits,
    OutputBuffer,
    Sandbox,
    SessionProcess,
    split_exit_status,
)
from arl_envs.sandbox.cgroups import RunCgroup, kill_until_gone
from arl_envs.sandbox.image import (
    DEFAULT_IMAGE,
    IMAGE_LABEL,
    SANDBOX_UID,
    docker_client,
)
from arl_envs.sandbox.policy import (  # noqa: F401 - MAX_OPEN_FILES...: re-exported from their old place
    BASE_ENV,
    MAX_OPEN_FILES,
    SANDBOX_PATH,
    TMP_MB,
    ULIMIT_BLOCK_BYTES,
    SandboxPolicy,
)

#: Label on every container we create; its value is ``<hostname>:<pid>`` of the owning process.
OWNER_LABEL = "org.arl-envs.sandbox.owner"
#: uid:gid of the container's PID 1 (``nobody``), distinct from the commands' uid so they cannot kill it.
KEEPER_USER = "65534:65534"
#: uid:gid commands run as.
RUN_USER = f"{SANDBOX_UID}:{SANDBOX_UID}"
#: Pids reserved above ``max_processes`` in a container: docker-init, ``sleep``, the rlimit wrapper, cleanup.
PID_RESERVE = 6
#: Default warm containers per limits configuration and process.
DEFAULT_POOL_SIZE = 2
#: Default size of ``/work`` (tmpfs), MiB.
DEFAULT_WORKDIR_MB = 256
#: Exit code of the wrapper when extracting the files failed.
WRAPPER_FAILED_EXIT = 125
#: Exit code docker reports when it could not start an exec'd process, and the message it streams then.
EXEC_START_FAILED_EXIT = 126
EXEC_FAILURE_PREFIX = "OCI runtime exec failed"
#: How often a silent run checks whether its main process already exited (children may hold stdout).
LINGER_POLL_S = 0.25
#: Docker stream multiplexing header: stream id (1 = stdout, 2 = stderr), 3 zero bytes, payload size.
MUX_HEADER = struct.Struct(">BxxxI")
#: Seconds to wait for a container to start.
START_TIMEOUT_S = 30.0
#: Shell run by the container pool after an episode: kill the user's processes, wipe every writable place,
#: then fail unless they are empty. Runs as the sandbox user (it owns all of them).
WIPE_SCRIPT = r"""
kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null
for d in /work /tmp /dev/shm /dev/mqueue; do
  [ -d "$d" ] || continue
  chmod -R u+rwx "$d" 2>/dev/null
  find "$d" -mindepth 1 -delete 2>/dev/null || find "$d" -mindepth 1 -depth -exec rm -rf {} + 2>/dev/null
done
ipcrm -a 2>/dev/null
for d in /work /tmp /dev/shm; do [ -z "$(ls -A "$d" 2>/dev/null)" ] || exit 1; done
exit 0
"""
#: Kill every process of the sandbox user except those listed in $KEEP (session interpreters), repeatedly.
KILL_SCRIPT = r"""
for round in 1 2 3 4 5; do
  found=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case " $KEEP $$ 1 " in *" $p "*) continue;; esac
    kill -9 "$p" 2>/dev/null && found=1
  done
  [ -z "$found" ] && exit 0
done
exit 0
"""
#: Wrapper of every command: rlimits, then (if $1 > 0) extract $1 bytes of tar from stdin into /work.
WRAPPER_SCRIPT = (
    'ulimit -t "$ARL_CPU" && ulimit -f "$ARL_FSIZE" && ulimit -n "$ARL_NOFILE" && ulimit -c 0'
    f" || exit {WRAPPER_FAILED_EXIT}\n"
    f'if [ "$1" -gt 0 ]; then head -c "$1" | tar -x -m -C /work -f - || exit {WRAPPER_FAILED_EXIT}; fi\n'
    'shift\nunset ARL_CPU ARL_FSIZE ARL_NOFILE\nexec "$@"\n'
)


def _owner() -> str:
    return f"{os.uname().nodename}:{os.getpid()}"


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _raw_socket(sock: Any) -> socket.socket:
    """The real socket behind what ``exec_start(socket=True)`` returns."""
    return getattr(sock, "_sock", sock)


class _MuxStream:
    """Reads Docker's multiplexed stdout/stderr stream from a hijacked socket, with deadlines."""

    def __init__(self, sock: Any) -> None:
        self.handle = sock
        self.sock = _raw_socket(sock)
        self.sock.setblocking(False)
        self._buf = bytearray()
        self.eof = False

    def send_all(self, data: bytes, close: bool) -> None:
        self.sock.setblocking(True)
        try:
            if data:
                self.sock.sendall(data)
            if close:
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_WR)
        finally:
            self.sock.setblocking(False)

    def recv(self, timeout_s: float) -> tuple[int, bytes] | None:
        """Next ``(stream, payload)``; ``(0, b"")`` at EOF; None on timeout."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            if len(self._buf) >= MUX_HEADER.size:
                stream, size = MUX_HEADER.unpack_from(self._buf)
                if len(self._buf) >= MUX_HEADER.size + size:
                    payload = bytes(self._buf[MUX_HEADER.size : MUX_HEADER.size + size])
                    del self._buf[: MUX_HEADER.size + size]
                    return (stream if stream in (1, 2) else 2), payload
            if self.eof:
                return 0, b""
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], remaining)
            if not ready:
                return None
            try:
                data = self.sock.recv(READ_CHUNK * 4)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                self.eof = True
            else:
                self._buf += data

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.sock.close()
        with contextlib.suppress(Exception):
            self.handle.close()


@dataclass
class _Container:
    """A started container of a pool."""

    id: str
    memory_mb: int
    max_processes: int
    cgroup: RunCgroup | None = None  # its cgroups, readable on a local daemon
    oom_seen: int = 0
    dead: bool = False


def _uid_of(pid: int) -> int | None:
    """Real uid of a host process (None if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


class ContainerPool:
    """Warm, started containers of one configuration (image, network, memory, pids, work dir size).

    Thread-safe. A background thread wipes returned containers and keeps ``size`` idle ones ready.

    Args:
        image: Image tag.
        network: Whether containers get a network (``bridge``) or none.
        memory_mb: Container memory (and memory+swap) limit, MiB.
        max_processes: Pids available to commands (the container gets :data:`PID_RESERVE` more).
        workdir_mb: Size of the ``/work`` tmpfs, MiB.
        size: Idle containers kept ready.
    """

    def __init__(
        self, image: str, network: bool, memory_mb: int, max_processes: int, workdir_mb: int, size: int
    ) -> None:
        self.image, self.network, self.workdir_mb, self.size = image, network, workdir_mb, size
        self.memory_mb, self.max_processes = memory_mb, max_processes
        self.client = docker_client()
        self._bg_client = docker_client()
        self._idle: list[_Container] = []
        self._returned: list[_Container] = []
        self._creating = 0
        self._cond = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="arl-docker-pool", daemon=True)
        self._thread.start()

    # -- container lifecycle -----------------------------------------------------------------------------
    def create(self, client: Any | None = None) -> _Container:
        """Create and start one container (blocking)."""
        client = client or self.client
        api = client.api
        from docker.types import Ulimit  # noqa: PLC0415 - optional dependency

        host_config = api.create_host_config(
            network_mode="bridge" if self.network else "none",
            read_only=True,
            tmpfs={
                WORKDIR: f"rw,exec,nosuid,nodev,size={self.workdir_mb}m,uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0700",
                "/tmp": f"rw,exec,nosuid,nodev,size={TMP_MB}m,mode=1777",
            },
            mem_limit=f"{self.memory_mb}m",
            memswap_limit=f"{self.memory_mb}m",
            pids_limit=self.max_processes + PID_RESERVE,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=True,
            ulimits=[Ulimit(name="core", soft=0, hard=0)],
        )
        created = api.create_container(
            self.image,
            command=["sleep", "infinity"],
            user=KEEPER_USER,
            working_dir=WORKDIR,
            hostname="sandbox",
            network_disabled=not self.network,
            environment=BASE_ENV,
            labels={IMAGE_LABEL: "1", OWNER_LABEL: _owner()},
            host_config=host_config,
        )
        cid = created["Id"]
        try:
            api.start(cid)
            info = api.inspect_container(cid)
            pid = int(info["State"]["Pid"])
        except Exception:
            with contextlib.suppress(Exception):
                api.remove_container(cid, force=True)
            raise
        container = _Container(cid, self.memory_mb, self.max_processes, RunCgroup.of_process(pid))
        container.oom_seen = self.oom_count(container) or 0
        return container

    def remove(self, container: _Container, client: Any | None = None) -> None:
        """Force-remove a container (kills everything in it)."""
        container.dead = True
        with contextlib.suppress(Exception):
            (client or self.client).api.remove_container(container.id, force=True)

    def acquire(self) -> _Container:
        """Lease a started container (an idle one if ready, else a new one)."""
        with self._cond:
            if self._closed:
                raise SandboxUnavailable("the container pool is closed")
            container = self._idle.pop() if self._idle else None
            self._cond.notify_all()
        if container is None:
            container = self.create()
        return container

    def release(self, container: _Container) -> None:
        """Give a leased container back; it is wiped (or removed) in the background."""
        with self._cond:
            if self._closed:
                self.remove(container)
                return
            self._returned.append(container)
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._returned and len(self._idle) + self._creating >= self.size:
                    self._cond.wait()
                if self._closed:
                    return
                returned = self._returned.pop() if self._returned else None
                if returned is None:
                    self._creating += 1
            if returned is not None:
                ok = not returned.dead and self._wipe(returned)
                with self._cond:
                    # A wiped container is kept even when the spares are complete (one extra), and leased
                    # first (LIFO), so sequential episodes reuse it instead of churning new containers.
                    if ok and len(self._idle) < self.size + 1 and not self._closed:
                        self._idle.append(returned)
                        continue
                self.remove(returned, self._bg_client)
                continue
            try:
                fresh = self.create(self._bg_client)
            except Exception:  # noqa: BLE001 - docker hiccup: try again later
                fresh = None
                time.sleep(1.0)
            with self._cond:
                self._creating -= 1
                if fresh is not None and not self._closed:
                    self._idle.append(fresh)
                    fresh = None
            if fresh is not None:
                self.remove(fresh, self._bg_client)

    def _wipe(self, container: _Container) -> bool:
        self.kill_user_processes(container, keep=set(), client=self._bg_client)
        try:
            api = self._bg_client.api
            exec_id = api.exec_create(container.id, ["/bin/sh", "-c", WIPE_SCRIPT], user=RUN_USER)["Id"]
            api.exec_start(exec_id)
            return api.exec_inspect(exec_id).get("ExitCode") == 0
        except Exception:  # noqa: BLE001 - any failure: do not reuse the container
            return False

    def close(self) -> None:
        """Remove every container of the pool (leased ones are removed when released)."""
        with self._cond:
            self._closed = True
            containers = self._idle + self._returned
            self._idle, self._returned = [], []
            self._cond.notify_all()
        for c in containers:
            self.remove(c)

    # -- host-side helpers (local daemon) ----------------------------------------------------------------
    def oom_count(self, container: _Container) -> int | None:
        """OOM kills so far in the container (None if its cgroup is not visible from here)."""
        cg = container.cgroup
        return cg.oom_kills() if cg is not None and "memory" in cg.dirs else None

    def cpu_time_s(self, container: _Container) -> float | None:
        """CPU seconds used by the container so far (None if not visible)."""
        return container.cgroup.cpu_time_s() if container.cgroup is not None else None

    def kill_user_processes(self, container: _Container, keep: set[int], client: Any | None = None) -> bool:
        """SIGKILL every process of the sandbox user in the container except the host pids in ``keep``.

        PID 1 (docker-init) and its ``sleep`` run as ``nobody`` and are never touched.

        Uses the container's cgroup on a local daemon, else a ``docker exec`` of :data:`KILL_SCRIPT`. If
        neither works (e.g. a fork bomb holds every pid) the container is killed and marked dead.

        Returns:
            True if the container is still usable.
        """
        cg = container.cgroup
        if cg is not None:
            if kill_until_gone(lambda: {p for p in cg.pids() - keep if _uid_of(p) == SANDBOX_UID}):
                return True
        else:
            try:
                api = (client or self.client).api
                ns_keep = " ".join(str(p) for p in keep)
                exec_id = api.exec_create(
                    container.id, ["/bin/sh", "-c", KILL_SCRIPT], user=RUN_USER, environment={"KEEP": ns_keep}
                )["Id"]
                api.exec_start(exec_id)
                if api.exec_inspect(exec_id).get("ExitCode") == 0:
                    return True
            except Exception:  # noqa: BLE001, S110 - fall through to killing the container
                pass
        self.remove(container, client)
        return False


_pools: dict[tuple, ContainerPool] = {}
_pools_lock = threading.Lock()
_atexit_registered = False


def _get_pool(key: tuple, size: int) -> ContainerPool:
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            if not _pools:
                global _atexit_registered  # noqa: PLW0603 - once per process
                if not _atexit_registered:
                    atexit.register(close_pools)  # on the first pool, not at import
                    _atexit_registered = True
                _sweep_orphans()
            pool = ContainerPool(*key, size=size)
            _pools[key] = pool
        return pool


def close_pools() -> None:
    """Remove every pooled container of this process (registered with ``atexit`` when the first pool starts)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()



def _sweep_orphans() -> None:
    """Remove containers left by dead processes of this host (their owner label names a gone pid)."""
    try:
        client = docker_client()
        host = os.uname().nodename
        for c in client.api.containers(all=True, filters={"label": OWNER_LABEL}):
            owner = (c.get("Labels") or {}).get(OWNER_LABEL, "")
            name, _, pid = owner.rpartition(":")
            if name == host and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(Exception):
                    client.api.remove_container(c["Id"], force=True)
    except Exception:  # noqa: BLE001, S110 - best effort
        pass


class _DockerExecProcess(SessionProcess):
    """A ``docker exec`` process with a hijacked, multiplexed socket."""

    def __init__(self, sandbox: DockerSandbox, argv: list[str], limits: Limits, cpu_s: float, n_tar: int) -> None:
        self.sandbox = sandbox
        container = sandbox._container  # noqa: SLF001
        assert container is not None
        self.container = container
        api = sandbox._pool_or_client_api()  # noqa: SLF001
        self.api = api
        env = SandboxPolicy.from_limits(limits, cpu_s=cpu_s, extra_env=sandbox.env).wrapper_env()
        cmd = ["/bin/sh", "-c", WRAPPER_SCRIPT, "arl-sandbox", str(n_tar), *argv]
        self.exec_id = api.exec_create(container.id, cmd, stdin=True, user=RUN_USER, workdir=WORKDIR, environment=env)[
            "Id"
        ]
        self.stream = _MuxStream(api.exec_start(self.exec_id, socket=True))
        self.host_pid: int | None = None
        self._killed = False
        self._status: tuple[int | None, int | None, bool] | None = None
        self._oom_before = sandbox._oom_count()  # noqa: SLF001
        self._cpu_before = sandbox._cpu_time()  # noqa: SLF001

    def send(self, data: bytes) -> None:
        self.stream.send_all(data, close=False)

    def recv(self, timeout_s: float) -> tuple[int, bytes] | None:
        return self.stream.recv(timeout_s)

    def inspect(self) -> dict:
        return self.api.exec_inspect(self.exec_id)

    def kill(self) -> None:
        if self._killed:
            return
        self._killed = True
        self.sandbox._kill_leftovers()  # noqa: SLF001
        self.stream.close()

    def exit_status(self) -> tuple[int | None, int | None, bool]:
        if self._status is not None:
            return self._status
        code: int | None = None
        deadline = time.monotonic() + 2.0
        if not self.container.dead:
            while True:
                try:
                    info = self.inspect()
                except Exception:  # noqa: BLE001 - container gone
                    break
                if not info.get("Running") or time.monotonic() > deadline:
                    code = info.get("ExitCode")
                    break
                time.sleep(0.005)
        exit_code, sig = split_exit_status(code)
        oom_after = self.sandbox._oom_count()  # noqa: SLF001
        oom = oom_after is not None and self._oom_before is not None and oom_after > self._oom_before
        if self.container.dead and code is None:
            exit_code, sig = 137, 9
        self._status = (exit_code, sig, oom)
        return self._status

    def cpu_time_s(self) -> float | None:
        now = self.sandbox._cpu_time()  # noqa: SLF001
        return None if now is None or self._cpu_before is None else max(0.0, now - self._cpu_before)


class DockerSandbox(Sandbox):
    """Docker sandbox (see the module docstring).

    Args:
        limits: Default :class:`Limits` of runs (memory/pids/network also size the container).
        image: Image tag (build it with ``arl-envs sandbox build-image``).
        warm_pool: Reuse pooled containers via ``docker exec`` (default) or run a fresh container per run.
        pool_size: Idle warm containers kept per configuration.
        workdir_mb: Size of ``/work``, MiB (tmpfs in pool mode).
        env: Extra environment variables of commands.

    Raises:
        SandboxUnavailable: docker is not installed/running or the image is missing (with the command to
            build it).
    """

    backend = "docker"
    python = "/usr/bin/python3"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        image: str = DEFAULT_IMAGE,
        warm_pool: bool = True,
        pool_size: int = DEFAULT_POOL_SIZE,
        workdir_mb: int = DEFAULT_WORKDIR_MB,
        env: dict[str, str] | None = None,
    ) -> None:
        super().__init__(limits=limits)
        self._container: _Container | None = None
        self._volume: str | None = None
        self._pool: ContainerPool | None = None
        if not isinstance(pool_size, int) or pool_size < 0:
            raise ValueError(f"pool_size must be an int >= 0, got {pool_size!r}")
        if not isinstance(workdir_mb, int) or workdir_mb <= 0:
            raise ValueError(f"workdir_mb must be a positive int, got {workdir_mb!r}")
        self.image, self.warm_pool, self.pool_size, self.workdir_mb = image, warm_pool, pool_size, workdir_mb
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.client = docker_client()
        import docker.errors  # noqa: PLC0415

        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound as exc:
            raise SandboxUnavailable(
                f"docker image {image!r} is missing: build it with `arl-envs sandbox build-image` "
                "(or `python -m arl_envs.sandbox.image`)."
            ) from exc
        self._sessions_alive: list[_DockerSessionProcess] = []  # interpreters protected from run clean-ups
        self._start_episode()

    # -- episode / container management ------------------------------------------------------------------
    def _key(self) -> tuple:
        lim = self.limits
        return (self.image, lim.network, lim.memory_mb, lim.max_processes, self.workdir_mb)

    def _start_episode(self) -> None:
        if self.warm_pool:
            self._pool = _get_pool(self._key(), self.pool_size)
            self._container = self._pool.acquire()
        else:
            self._volume = self.client.api.create_volume(labels={IMAGE_LABEL: "1", OWNER_LABEL: _owner()})["Name"]

    def _end_episode(self) -> None:
        if self._container is not None and self._pool is not None:
            container, self._container = self._container, None
            self._pool.release(container)
        if self._volume is not None:
            volume, self._volume = self._volume, None
            with contextlib.suppress(Exception):
                self.client.api.remove_volume(volume, force=True)
        self._sessions_alive.clear()

    def _reset_workdir(self) -> None:
        self._end_episode()
        self._start_episode()

    def _close(self) -> None:
        self._end_episode()

    def _pool_or_client_api(self) -> Any:
        return self.client.api

    def _ensure_container(self) -> _Container:
        """The episode's container; a dead one (killed after a fork bomb...) is replaced (``/work`` is lost)."""
        assert self._pool is not None
        if self._container is None or self._container.dead:
            self._container = self._pool.acquire()
            self._sessions_alive.clear()
        return self._container

    def _oom_count(self) -> int | None:
        if self._pool is None or self._container is None:
            return None
        return self._pool.oom_count(self._container)

    def _cpu_time(self) -> float | None:
        if self._pool is None or self._container is None:
            return None
        return self._pool.cpu_time_s(self._container)

    def _kill_leftovers(self) -> None:
        """Kill every command process of the episode's container except live session interpreters."""
        if self._pool is None or self._container is None or self._container.dead:
            return
        self._pool.kill_user_processes(self._container, keep=self._session_host_pids())

    def _apply_limits(self, container: _Container, limits: Limits) -> None:
        if limits.network != self.limits.network:
            raise ValueError("Limits.network is fixed per DockerSandbox (pass it in the constructor's limits)")
        if (limits.memory_mb, limits.max_processes) != (container.memory_mb, container.max_processes):
            self.client.api.update_container(
                container.id,
                mem_limit=f"{limits.memory_mb}m",
                memswap_limit=f"{limits.memory_mb}m",
            )
            # pids limit: `docker update --pids-limit` needs API >= 1.40 (update_container has no argument for it).
            # A daemon that refuses it would leave the container's old pids limit in force: fail loudly.
            try:
                self.client.api._post_json(  # noqa: SLF001
                    self.client.api._url("/containers/{0}/update", container.id),
                    data={"PidsLimit": limits.max_processes + PID_RESERVE},
                )
            except Exception as exc:
                raise SandboxUnavailable(
                    f"the Docker daemon refused to update the pids limit to {limits.max_processes} ({exc}); "
                    "pass these limits in the DockerSandbox constructor instead (Docker API >= 1.40 needed)"
                ) from exc
            container.memory_mb, container.max_processes = limits.memory_mb, limits.max_processes

    # -- files ---------------------------------------------------------------------------------------------
    def _write_files(self, files: dict[str, bytes]) -> None:
        result = self._run(["/bin/true"], files, b"", self.limits)
        if not result.ok:
            raise OSError(f"writing files into the container failed: {result.describe()} {result.stderr[-500:]}")

    def _read_file(self, path: str, max_bytes: int) -> bytes | None:
        limits = self.limits.replace(max_output_bytes=max(1, max_bytes))
        probe = f'[ -f "$1" ] && [ ! -L "$1" ] && head -c {int(max_bytes)} -- "$1"'
        result = self._run_bytes(["/bin/sh", "-c", probe, "sh", path], {}, b"", limits)
        if result is None or result[0].exit_code != 0:
            return None
        return result[1]

    # -- running -------------------------------------------------------------------------------------------
    def _run(self, argv: list[str], files: dict[str, bytes], stdin: bytes, limits: Limits) -> ExecResult:
        got = self._run_bytes(argv, files, stdin, limits)
        return got[0] if got is not None else ExecResult(sandbox_error="docker run failed")

    def _run_bytes(
        self, argv: list[str], files: dict[str, bytes], stdin: bytes, limits: Limits
    ) -> tuple[ExecResult, bytes] | None:
        start = time.monotonic()
        tar = _tar(files) if files else b""
        out, err = OutputBuffer(limits.max_output_bytes), OutputBuffer(limits.max_output_bytes)
        try:
            if self.warm_pool:
                container = self._ensure_container()
                self._apply_limits(container, limits)
                proc: Any = _DockerExecRun(self, argv, limits, limits.cpu_time_s, len(tar))
            else:
                proc = _DockerRunProcess(self, argv, limits, len(tar))
        except ValueError:
            raise
        except Exception as exc:  # noqa: BLE001 - docker API failure is an infrastructure error
            return ExecResult(
                sandbox_error=f"docker: {type(exc).__name__}: {exc}", duration_s=time.monotonic() - start
            ), b""
        payload = tar + stdin
        writer: threading.Thread | None = None
        if len(payload) <= INLINE_STDIN_BYTES:
            proc.stream.send_all(payload, close=True)
        else:
            writer = threading.Thread(target=proc.stream.send_all, args=(payload, True), daemon=True)
            writer.start()
        deadline = start + limits.wall_time_s
        timed_out = False
        last_poll = time.monotonic()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            got = proc.stream.recv(min(remaining, LINGER_POLL_S))
            if got is None:
                now = time.monotonic()
                if now - last_poll >= LINGER_POLL_S and proc.main_exited():
                    break  # main process done; children still hold stdout: they are killed below
                last_poll = now
                continue
            stream, data = got
            if stream == 0:
                break
            (out if stream == 1 else err).add(data)
        if timed_out:
            proc.kill()
        code, sig, oom = proc.exit_status()
        if not timed_out:
            proc.cleanup()
        proc.stream.close()
        proc.finish()
        cpu = proc.cpu_time_s()
        result = ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            exit_code=code,
            signal=sig,
            timed_out=timed_out,
            oom_killed=oom,
            output_truncated=out.truncated or err.truncated,
            duration_s=time.monotonic() - start,
            cpu_time_s=cpu,
        )
        if proc.container_lost:
            result.stderr += "\n[sandbox: the container had to be replaced; /work was reset]"
        if code == EXEC_START_FAILED_EXIT and result.stdout.startswith(EXEC_FAILURE_PREFIX) and not oom:
            # The daemon could not start the process (the message arrives on the stream): infrastructure, unless
            # the container's memory (the episode's files on its tmpfs mounts count) was exhausted (``oom``):
            # then the run hit its own limit, which is scored like any other out-of-memory kill.
            result.sandbox_error = result.stdout.strip()[:500]
            if self._container is not None and self.warm_pool:
                self._pool.remove(self._container)  # type: ignore[union-attr]
        return result, b"".join(out.chunks)

    def _start_session_process(self, argv: list[str], limits: Limits, cpu_budget_s: float) -> SessionProcess:
        if not self.warm_pool:
            raise SandboxUnavailable("Python sessions need DockerSandbox(warm_pool=True)")
        container = self._ensure_container()
        self._apply_limits(container, limits)
        return _DockerSessionProcess(self, argv, limits, cpu_budget_s, 0)

    def _register_session(self, proc: _DockerSessionProcess) -> None:
        self._sessions_alive.append(proc)

    def _unregister_session(self, proc: _DockerSessionProcess) -> None:
        if proc in self._sessions_alive:
            self._sessions_alive.remove(proc)

    def _session_host_pids(self) -> set[int]:
        return {pid for proc in self._sessions_alive if (pid := proc.host_pid_now()) is not None}


class _DockerExecRun(_DockerExecProcess):
    """A pooled ``docker exec`` run (used by :meth:`DockerSandbox._run_bytes`)."""

    container_lost = False

    def main_exited(self) -> bool:
        try:
            return not self.inspect().get("Running", False)
        except Exception:  # noqa: BLE001
            return True

    def cleanup(self) -> None:
        """After a normal exit: kill whatever the command left running (children, daemons)."""
        self.sandbox._kill_leftovers()  # noqa: SLF001
        self.container_lost = self.container.dead

    def finish(self) -> None:
        self.container_lost = self.container.dead


class _DockerSessionProcess(_DockerExecProcess):
    """A session interpreter started with ``docker exec``; its host pid is protected from run clean-ups."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.sandbox._register_session(self)  # noqa: SLF001

    def host_pid_now(self) -> int | None:
        """Host pid of the interpreter (known once the exec started), cached."""
        if self.host_pid is None:
            with contextlib.suppress(Exception):
                self.host_pid = int(self.inspect().get("Pid") or 0) or None
        return self.host_pid

    def kill_strays(self) -> None:
        self.sandbox._kill_leftovers()  # noqa: SLF001 - every process but the live interpreters

    def kill(self) -> None:
        if self._killed:
            return
        self.sandbox._unregister_session(self)  # noqa: SLF001
        super().kill()


class _DockerRunProcess:
    """``docker run`` semantics: a fresh container for one command, its ``/work`` on the episode's volume."""

    container_lost = False

    def __init__(self, sandbox: DockerSandbox, argv: list[str], limits: Limits, n_tar: int) -> None:
        from docker.types import Mount, Ulimit  # noqa: PLC0415

        self.sandbox = sandbox
        api = sandbox.client.api
        self.api = api
        env = SandboxPolicy.from_limits(limits, extra_env=sandbox.env).wrapper_env()
        host_config = api.create_host_config(
            network_mode="bridge" if limits.network else "none",
            read_only=True,
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={TMP_MB}m,mode=1777"},
            mounts=[Mount(WORKDIR, sandbox._volume, type="volume")],  # noqa: SLF001
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",
            pids_limit=limits.max_processes + PID_RESERVE,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=True,
            ulimits=[Ulimit(name="core", soft=0, hard=0)],
        )
        cmd = ["/bin/sh", "-c", WRAPPER_SCRIPT, "arl-sandbox", str(n_tar), *argv]
        # The volume's root belongs to root: a root-run `chown` would need capabilities, so the first run of
        # an episode creates it as uid 1000 via the image's /work (owned by 1000), which Docker copies.
        self.id = api.create_container(
            sandbox.image,
            command=cmd,
            user=RUN_USER,
            working_dir=WORKDIR,
            hostname="sandbox",
            network_disabled=not limits.network,
            environment=env,
            labels={IMAGE_LABEL: "1", OWNER_LABEL: _owner()},
            host_config=host_config,
            stdin_open=True,
            stop_signal="SIGKILL",
        )["Id"]
        try:
            sock = api.attach_socket(self.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            self.stream = _MuxStream(sock)
            api.start(self.id)
        except Exception:
            with contextlib.suppress(Exception):
                api.remove_container(self.id, force=True)
            raise
        self._status: tuple[int | None, int | None, bool] | None = None

    def main_exited(self) -> bool:
        return False  # the container ends when its main process ends (docker-init kills the rest)

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.api.kill(self.id)

    def exit_status(self) -> tuple[int | None, int | None, bool]:
        if self._status is None:
            try:
                waited = self.api.wait(self.id, timeout=30)
                info = self.api.inspect_container(self.id)
                code = waited.get("StatusCode")
                exit_code, sig = split_exit_status(code)
                self._status = (exit_code, sig, bool(info["State"].get("OOMKilled")))
            except Exception:  # noqa: BLE001
                self._status = (None, None, False)
        return self._status

    def cleanup(self) -> None:
        pass

    def finish(self) -> None:
        """Remove the container (and everything still running in it)."""
        with contextlib.suppress(Exception):
            self.api.remove_container(self.id, force=True)

    def cpu_time_s(self) -> float | None:
        return None

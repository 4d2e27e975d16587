"""Docker backend, containers: the process-wide warm pool (create, lease, wipe, reuse or remove), the
containers' cgroups, orphan sweeping."""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox.base import (
    WORKDIR,
    Limits,
)
from arl_envs.sandbox.cgroups import RunCgroup, kill_until_gone
from arl_envs.sandbox.image import (
    IMAGE_LABEL,
    SANDBOX_UID,
    docker_client,
)
from arl_envs.sandbox.policy import (
    BASE_ENV,
    TMP_MB,
    SandboxPolicy,
    workdir_inodes,
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
#: Exit code docker reports when it could not start an exec'd process, and the message it streams then.
EXEC_START_FAILED_EXIT = 126
EXEC_FAILURE_PREFIX = "OCI runtime exec failed"
#: How often a silent run checks whether its main process already exited (children may hold stdout).
LINGER_POLL_S = 0.25
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



def create_container(
    api: Any,
    image: str,
    command: list[str],
    user: str,
    network: bool,
    env: dict[str, str],
    host_config: Any,
    **extra: Any,
) -> str:
    """Create (not start) one of our containers (host name, work dir, owner labels, network switch); its id."""
    return api.create_container(
        image,
        command=command,
        user=user,
        working_dir=WORKDIR,
        hostname="sandbox",
        network_disabled=not network,
        environment=env,
        labels={IMAGE_LABEL: "1", OWNER_LABEL: _owner()},
        host_config=host_config,
        **extra,
    )["Id"]


def _owner() -> str:
    return f"{os.uname().nodename}:{os.getpid()}"


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
        policy = SandboxPolicy.from_limits(
            Limits(memory_mb=self.memory_mb, max_processes=self.max_processes, network=self.network)
        )
        host_config = api.create_host_config(
            tmpfs={
                WORKDIR: f"rw,exec,nosuid,nodev,size={self.workdir_mb}m,nr_inodes={workdir_inodes(self.workdir_mb)},"
                f"uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0700",
                "/tmp": f"rw,exec,nosuid,nodev,size={TMP_MB}m,mode=1777",
            },
            **policy.docker_options(PID_RESERVE),
        )
        cid = create_container(
            api, self.image, ["sleep", "infinity"], KEEPER_USER, self.network, BASE_ENV, host_config
        )
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



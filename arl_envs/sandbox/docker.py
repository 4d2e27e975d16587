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

import contextlib
import threading
import time
from typing import Any

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox._docker_pool import (  # noqa: F401 - also re-exported from the old place
    DEFAULT_POOL_SIZE,
    DEFAULT_WORKDIR_MB,
    EXEC_FAILURE_PREFIX,
    EXEC_START_FAILED_EXIT,
    KEEPER_USER,
    KILL_SCRIPT,
    LINGER_POLL_S,
    OWNER_LABEL,
    PID_RESERVE,
    WIPE_SCRIPT,
    ContainerPool,
    _Container,
    _get_pool,
    _owner,
    _pools,
    _sweep_orphans,
    close_pools,
)
from arl_envs.sandbox._docker_process import (  # noqa: F401 - also re-exported from the old place
    MUX_HEADER,
    WRAPPER_SCRIPT,
    _DockerExecRun,
    _DockerRunProcess,
    _DockerSessionProcess,
    _MuxStream,
    _tar,
)
from arl_envs.sandbox.base import (
    INLINE_STDIN_BYTES,
    ExecResult,
    Limits,
    OutputBuffer,
    Sandbox,
    SessionProcess,
)
from arl_envs.sandbox.image import (
    DEFAULT_IMAGE,
    IMAGE_LABEL,
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
            options = SandboxPolicy.from_limits(limits).docker_options(PID_RESERVE)
            api = self.client.api
            api.update_container(
                container.id, mem_limit=options["mem_limit"], memswap_limit=options["memswap_limit"]
            )
            container.memory_mb = limits.memory_mb  # recorded as soon as the daemon took it
            # pids limit: `docker update --pids-limit` needs API >= 1.40 (update_container has no argument for it).
            # A daemon that refuses it would leave the container's old pids limit in force: fail loudly. The raw
            # POST returns the daemon's error as a response, not an exception: check its status.
            try:
                response = api._post_json(  # noqa: SLF001
                    api._url("/containers/{0}/update", container.id),  # noqa: SLF001
                    data={"PidsLimit": options["pids_limit"]},
                )
                api._raise_for_status(response)  # noqa: SLF001
            except Exception as exc:
                raise SandboxUnavailable(
                    f"the Docker daemon refused to update the pids limit to {limits.max_processes} ({exc}); "
                    "pass these limits in the DockerSandbox constructor instead (Docker API >= 1.40 needed)"
                ) from exc
            container.max_processes = limits.max_processes

    # -- files ---------------------------------------------------------------------------------------------
    def _write_files(self, files: dict[str, bytes]) -> None:
        result = self._run(["/bin/true"], files, b"", self.limits)
        if not result.ok:
            raise OSError(f"writing files into the container failed: {result.describe()} {result.stderr[-500:]}")

    def _read_file(self, path: str, max_bytes: int) -> bytes | None:
        limits = self.limits.replace(max_output_bytes=max(1, int(max_bytes)))
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



"""Docker backend, processes: ``docker exec`` runs and session processes, ``docker run`` runs, the multiplexed
exec stream."""

from __future__ import annotations

import contextlib
import io
import select
import socket
import struct
import tarfile
import time
from typing import Any, Protocol

from arl_envs.sandbox._docker_pool import (
    PID_RESERVE,
    RUN_USER,
    create_container,
)
from arl_envs.sandbox.base import (
    READ_CHUNK,
    WORKDIR,
    Limits,
    SessionProcess,
    split_exit_status,
)
from arl_envs.sandbox.policy import (
    TMP_MB,
    SandboxPolicy,
)


class DockerHost(Protocol):
    """What the processes here use of their :class:`~arl_envs.sandbox.docker.DockerSandbox`."""

    image: str
    env: dict[str, str]
    client: Any
    _container: Any
    _volume: str | None

    def _pool_or_client_api(self) -> Any: ...

    def _oom_count(self) -> int | None: ...

    def _cpu_time(self) -> float | None: ...

    def _kill_leftovers(self) -> None: ...

    def _register_session(self, proc: _DockerSessionProcess) -> None: ...

    def _unregister_session(self, proc: _DockerSessionProcess) -> None: ...

#: Exit code of the wrapper when extracting the files failed.
WRAPPER_FAILED_EXIT = 125
#: Docker stream multiplexing header: stream id (1 = stdout, 2 = stderr), 3 zero bytes, payload size.
MUX_HEADER = struct.Struct(">BxxxI")
#: Wrapper of every command: rlimits, then (if $1 > 0) extract $1 bytes of tar from stdin into /work.
WRAPPER_SCRIPT = (
    'ulimit -t "$ARL_CPU" && ulimit -f "$ARL_FSIZE" && ulimit -n "$ARL_NOFILE" && ulimit -c 0'
    f" || exit {WRAPPER_FAILED_EXIT}\n"
    f'if [ "$1" -gt 0 ]; then head -c "$1" | tar -x -m -C /work -f - || exit {WRAPPER_FAILED_EXIT}; fi\n'
    'shift\nunset ARL_CPU ARL_FSIZE ARL_NOFILE\nexec "$@"\n'
)


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


class _DockerExecProcess(SessionProcess):
    """A ``docker exec`` process with a hijacked, multiplexed socket."""

    def __init__(self, sandbox: DockerHost, argv: list[str], limits: Limits, cpu_s: float, n_tar: int) -> None:
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

    def __init__(self, sandbox: DockerHost, argv: list[str], limits: Limits, n_tar: int) -> None:
        from docker.types import Mount  # noqa: PLC0415

        self.sandbox = sandbox
        api = sandbox.client.api
        self.api = api
        env = SandboxPolicy.from_limits(limits, extra_env=sandbox.env).wrapper_env()
        host_config = api.create_host_config(
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={TMP_MB}m,mode=1777"},
            mounts=[Mount(WORKDIR, sandbox._volume, type="volume")],  # noqa: SLF001
            **SandboxPolicy.from_limits(limits).docker_options(PID_RESERVE),
        )
        cmd = ["/bin/sh", "-c", WRAPPER_SCRIPT, "arl-sandbox", str(n_tar), *argv]
        # The volume's root belongs to root: a root-run `chown` would need capabilities, so the first run of
        # an episode creates it as uid 1000 via the image's /work (owned by 1000), which Docker copies.
        self.id = create_container(
            api, sandbox.image, cmd, RUN_USER, limits.network, env, host_config, stdin_open=True, stop_signal="SIGKILL"
        )
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


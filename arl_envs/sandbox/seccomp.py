"""The seccomp filter of the bubblewrap backend (handed to ``bwrap --seccomp FD`` as compiled BPF).

A deny list on top of "allow": every system call runs as usual except the ones below, which fail with ``EPERM``
(``clone3`` with ``ENOSYS``, see below). The list covers what Docker's default profile denies to a container
without extra capabilities (moby ``profiles/seccomp/default.json``: the calls it only allows with
``CAP_SYS_ADMIN``, ``CAP_SYS_PTRACE``, ``CAP_SYS_MODULE``, ``CAP_SYS_BOOT``, ``CAP_SYS_TIME``, ``CAP_SYS_NICE``,
``CAP_SYSLOG``, ``CAP_SYS_RAWIO``... and the ones it never allows), plus ``io_uring_*`` (left out of the default
profile since moby 25). Inside bwrap the program has no capabilities, so most of these would fail anyway; the
filter removes the kernel code behind them from the attack surface (keyrings, eBPF, perf, userfaultfd, the mount
API, new namespaces), which is what seccomp is for.

* ``clone`` fails with ``EPERM`` when its flags ask for a new namespace (any ``CLONE_NEW*`` bit); plain
  ``fork()`` and threads work. ``unshare`` and ``setns`` always fail (as in Docker).
* ``clone3`` fails with ``ENOSYS``, as in Docker: its flags are in memory, which a seccomp filter cannot read,
  and ``ENOSYS`` makes glibc fall back to ``clone``, whose flags are checked.
* ``personality`` is allowed only for the personas Docker allows: ``0`` (PER_LINUX), ``8`` (PER_LINUX32),
  ``0x20000`` (UNAME26), ``0x20008`` and the query ``0xffffffff``; anything else (``ADDR_NO_RANDOMIZE``,
  ``READ_IMPLIES_EXEC``, ...) fails with ``EPERM``.
* Without a memory cgroup (the rlimits fallback) also ``shmget``/``shmat`` and ``memfd_create``: memory behind
  SysV segments and memfds is not counted by ``RLIMIT_AS`` (a run held 300 MiB of memfds with
  ``memory_mb=128``). With a cgroup they are charged to it and stay allowed.
* System calls of another ABI (``int 0x80`` i386 calls, x32) kill the calling thread: libseccomp's default for
  an architecture the filter was not built for.

The filter is built with libseccomp (Debian's ``libseccomp2``) through :mod:`pyseccomp` (a ctypes binding,
API-compatible with libseccomp's own Python module, which is used instead when installed). Both are loaded
lazily, on the first sandbox, and the compiled program is cached per process.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile
from typing import Any

from arl_envs.core.errors import SandboxUnavailable

#: Install hint for a missing binding or library.
SECCOMP_INSTALL_HINT = (
    "the seccomp filter needs libseccomp and its Python binding: `apt-get install -y libseccomp2` and "
    "`pip install pyseccomp` (both come with `pip install arl-envs`; or pass seccomp=False to run without it)"
)

#: Calls that always fail with EPERM (names unknown to this kernel's architecture are skipped).
DENIED_SYSCALLS = (
    # tracing and reading other processes' memory (CAP_SYS_PTRACE in Docker)
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # mounts, old and new API; root changes (CAP_SYS_ADMIN)
    "mount", "umount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "mount_setattr",
    # namespaces (checked clone below)
    "unshare", "setns",
    # kernel keyrings
    "add_key", "keyctl", "request_key",
    # eBPF, perf, userfaultfd, fanotify, io_uring
    "bpf", "perf_event_open", "userfaultfd", "fanotify_init", "io_uring_setup", "io_uring_enter",
    "io_uring_register",
    # kernel images and modules (CAP_SYS_BOOT, CAP_SYS_MODULE)
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "create_module",
    "get_kernel_syms", "query_module", "reboot",
    # swap, quotas, accounting, clocks, kernel log, sysctl, NFS, file handles (CAP_SYS_ADMIN, CAP_SYS_TIME,...)
    "swapon", "swapoff", "quotactl", "quotactl_fd", "acct", "settimeofday", "clock_settime", "clock_adjtime",
    "stime", "syslog", "_sysctl", "sysfs", "nfsservctl", "lookup_dcookie", "name_to_handle_at",
    "open_by_handle_at", "uselib", "ustat", "vhangup",
    # NUMA placement (CAP_SYS_NICE), raw I/O ports (CAP_SYS_RAWIO), vm86
    "get_mempolicy", "set_mempolicy", "mbind", "move_pages", "ioperm", "iopl", "vm86", "vm86old",
)
#: Extra calls denied when no memory cgroup accounts for their memory (the rlimits fallback).
DENIED_WITHOUT_CGROUP = ("shmget", "shmat", "memfd_create")
#: ``clone`` flags that create namespaces (include/uapi/linux/sched.h): CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS,
#: NEWIPC, NEWUSER, NEWPID, NEWNET.
CLONE_NAMESPACE_FLAGS = (0x80, 0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
#: Personas ``personality`` may set (Docker's list): PER_LINUX, PER_LINUX32, UNAME26, UNAME26|PER_LINUX32.
ALLOWED_PERSONA_BITS = 0x8 | 0x20000
#: ``personality(0xffffffff)`` only queries the current persona.
PERSONA_QUERY = 0xFFFFFFFF
_BIT31 = 1 << 31


def _binding() -> Any:
    """libseccomp's own Python module if installed, else pyseccomp (imported on first use: it loads a C library).

    Raises:
        SandboxUnavailable: neither binding (or libseccomp itself) is available.
    """
    try:
        import seccomp  # noqa: PLC0415 - libseccomp's official binding (Debian: python3-seccomp)

        return seccomp
    except ImportError:
        pass
    try:
        import pyseccomp  # noqa: PLC0415

        return pyseccomp
    except (ImportError, OSError) as exc:  # OSError: libseccomp.so.2 missing
        raise SandboxUnavailable(f"{SECCOMP_INSTALL_HINT} ({exc})") from exc


def _add(flt: Any, sc: Any, action: int, name: str, *args: Any) -> None:
    try:
        flt.add_rule(action, name, *args)
    except (OSError, RuntimeError, ValueError) as exc:
        # Unknown on this architecture (vm86 on x86_64...): nothing to deny. Anything else is a bug.
        try:
            sc.resolve_syscall(sc.system_arch(), name)
        except (OSError, RuntimeError, ValueError):
            return
        if int(sc.resolve_syscall(sc.system_arch(), name)) < 0:
            return
        raise SandboxUnavailable(f"libseccomp refused the rule for {name}: {exc}") from exc


def build_filter(*, deny_shared_memory: bool) -> Any:
    """The filter object (a libseccomp ``SyscallFilter``), not yet compiled.

    Args:
        deny_shared_memory: Also deny :data:`DENIED_WITHOUT_CGROUP` (no memory cgroup counts that memory).

    Raises:
        SandboxUnavailable: no binding / libseccomp.
    """
    sc = _binding()
    eperm = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(sc.ALLOW)
    names = DENIED_SYSCALLS + (DENIED_WITHOUT_CGROUP if deny_shared_memory else ())
    for name in names:
        _add(flt, sc, eperm, name)
    for flag in CLONE_NAMESPACE_FLAGS:  # x86_64, arm64...: flags are the first argument of clone
        _add(flt, sc, eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    _add(flt, sc, sc.ERRNO(errno.ENOSYS), "clone3")
    # personality: one comparison per argument per rule, so "not one of the allowed values" is a union of
    # masked tests. Bit 31 clear: deny if any other bit than the allowed ones is set. Bit 31 set: deny unless
    # every bit is set (the query).
    for bit in range(31):
        flag = 1 << bit
        if not flag & ALLOWED_PERSONA_BITS:
            _add(flt, sc, eperm, "personality", sc.Arg(0, sc.MASKED_EQ, flag | _BIT31, flag))
        _add(flt, sc, eperm, "personality", sc.Arg(0, sc.MASKED_EQ, flag | _BIT31, _BIT31))
    return flt


@functools.lru_cache(maxsize=2)
def filter_bpf(*, deny_shared_memory: bool) -> bytes:
    """The compiled filter (classic BPF, what ``bwrap --seccomp`` reads), cached per process.

    Raises:
        SandboxUnavailable: no binding / libseccomp.
    """
    flt = build_filter(deny_shared_memory=deny_shared_memory)
    with tempfile.TemporaryFile() as fh:
        flt.export_bpf(fh)
        fh.seek(0)
        return fh.read()


def bpf_fd(program: bytes) -> int:
    """A fresh memfd holding ``program`` at offset 0 (bwrap reads it to the end; one fd per launch).

    The caller passes it to bwrap and closes it.
    """
    fd = os.memfd_create("arl-seccomp", os.MFD_CLOEXEC)
    view = memoryview(program)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd

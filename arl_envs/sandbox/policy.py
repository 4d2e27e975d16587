"""One sandbox policy, built from :class:`~arl_envs.sandbox.base.Limits`, that every backend renders.

The per-process limits (CPU seconds, file size, open files, no core dumps; processes and address space where no
cgroup counts them), the environment a sandboxed program sees, and the sizes of its writable mounts are decided
here once: bwrap renders them as rlimits its spawner sets on every run and session it starts, Docker as the
environment of the wrapper script that runs every command (plus container options for memory and pids, which both
backends take from ``Limits`` directly).
"""

from __future__ import annotations

import resource
from collections.abc import Mapping
from dataclasses import dataclass, field

from arl_envs.sandbox.base import MIB, WORKDIR, Limits

#: Open-file limit inside the sandbox (RLIMIT_NOFILE).
MAX_OPEN_FILES = 1024
#: Virtual memory allowed on top of ``memory_mb`` when RLIMIT_AS replaces the memory cgroup, MiB
#: (interpreter mappings and thread stacks are virtual, not resident).
RLIMIT_AS_SLACK_MB = 256
#: ``ulimit -f`` counts 512-byte blocks.
ULIMIT_BLOCK_BYTES = 512
#: Size of the per-run ``/tmp`` (and bwrap's ``/dev/shm``) tmpfs, MiB.
TMP_MB = 64
#: Files (inodes) allowed per MiB of a ``/work`` tmpfs: ``nr_inodes`` = this x ``workdir_mb``. An empty file on
#: tmpfs takes no data block, only kernel memory for its inode and dentry (about 1 KiB), which ``size=`` does not
#: count and which nothing charges where no memory cgroup is usable (the rlimits fallback): 400,000 empty files
#: in ``/work`` once ran past ``memory_mb`` and stayed for the episode. 64 per MiB is 16,384 files in the default
#: 256 MiB work directory (about 16 MiB of kernel memory); a repository checkout of a few thousand files fits.
WORKDIR_INODES_PER_MB = 64


def workdir_inodes(workdir_mb: int) -> int:
    """``nr_inodes`` of a ``workdir_mb`` MiB ``/work`` tmpfs: the most files and directories it holds (count)."""
    return WORKDIR_INODES_PER_MB * int(workdir_mb)


#: Default PATH inside.
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
#: Environment of every sandboxed program (nothing comes from the host).
BASE_ENV = {
    "PATH": SANDBOX_PATH,
    "HOME": WORKDIR,
    "USER": "sandbox",
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
}


@dataclass(frozen=True)
class SandboxPolicy:
    """What one run or session may use.

    Args:
        cpu_s: Hard and soft ``RLIMIT_CPU``, whole seconds (at least 1).
        file_bytes: ``RLIMIT_FSIZE``, bytes.
        memory_mb: Memory limit, MiB (the cgroup's; ``RLIMIT_AS`` adds :data:`RLIMIT_AS_SLACK_MB` without one).
        max_processes: Pids limit (the cgroup's; ``RLIMIT_NPROC`` without one).
        network: Whether the sandbox shares the host network.
        env: Environment inside (:data:`BASE_ENV` plus the sandbox's extra variables).
    """

    cpu_s: int
    file_bytes: int
    memory_mb: int
    max_processes: int
    network: bool = False
    env: Mapping[str, str] = field(default_factory=lambda: dict(BASE_ENV))

    @classmethod
    def from_limits(
        cls, limits: Limits, *, cpu_s: float | None = None, extra_env: Mapping[str, str] | None = None
    ) -> SandboxPolicy:
        """The policy of ``limits`` (``cpu_s`` overrides ``limits.cpu_time_s``: a session's whole budget)."""
        return cls(
            cpu_s=max(1, round(limits.cpu_time_s if cpu_s is None else cpu_s)),
            file_bytes=int(limits.max_file_mb) * MIB,
            memory_mb=int(limits.memory_mb),
            max_processes=int(limits.max_processes),
            network=bool(limits.network),
            env={**BASE_ENV, **(extra_env or {})},
        )

    def rlimits(self, *, with_cgroup: bool) -> list[tuple[int, int]]:
        """``(resource, value)`` pairs (soft = hard): CPU, file size, open files, no core dumps; without a
        cgroup also processes (counted per host uid) and address space."""
        values = [
            (resource.RLIMIT_CPU, self.cpu_s),
            (resource.RLIMIT_FSIZE, self.file_bytes),
            (resource.RLIMIT_NOFILE, MAX_OPEN_FILES),
            (resource.RLIMIT_CORE, 0),
        ]
        if not with_cgroup:
            values += [
                (resource.RLIMIT_NPROC, self.max_processes),
                (resource.RLIMIT_AS, (self.memory_mb + RLIMIT_AS_SLACK_MB) * MIB),
            ]
        return values

    def docker_options(self, pid_reserve: int) -> dict[str, object]:
        """The container options of this policy (``create_host_config`` keyword arguments): network, read-only
        root, memory = memory + swap, pids (``max_processes`` plus ``pid_reserve`` for the container's own
        helpers), no capabilities, ``no-new-privileges``, an init reaper, no core dumps. The caller adds the
        mounts."""
        return {
            "network_mode": "bridge" if self.network else "none",
            "read_only": True,
            "mem_limit": f"{self.memory_mb}m",
            "memswap_limit": f"{self.memory_mb}m",
            "pids_limit": self.max_processes + pid_reserve,
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "init": True,
            "ulimits": [{"Name": "core", "Soft": 0, "Hard": 0}],
        }

    def wrapper_env(self) -> dict[str, str]:
        """The environment of Docker's wrapper script: :attr:`env` plus ``ARL_CPU``/``ARL_FSIZE``/``ARL_NOFILE``
        (the wrapper applies them with ``ulimit`` and unsets them before exec'ing the command)."""
        env = dict(self.env)
        env.update(
            ARL_CPU=str(self.cpu_s),
            ARL_FSIZE=str(self.file_bytes // ULIMIT_BLOCK_BYTES),
            ARL_NOFILE=str(MAX_OPEN_FILES),
        )
        return env

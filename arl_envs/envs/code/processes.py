"""The runner's processes (standard library only; it runs INSIDE the sandbox): children, clean-up, scratch space.

:class:`Child` starts one fresh ``python3 -I -S -B`` interpreter (:mod:`arl_envs.envs.code.child`) that imports
the submission and answers call requests, or runs it as a program; it feeds and reads the child's pipes, accounts
its CPU time from ``/proc`` and enforces the CPU and wall deadlines. :func:`kill_others` kills and reaps every
other process of the run; :class:`Scratch` and :class:`JobDir` are the working directories made before any
submitted code runs and reached afterwards only through open fds; :func:`remove_tree` empties them. The sandbox
gets this source as the second of the runner's sources (see :mod:`arl_envs.envs.code.runner`).
"""

from __future__ import annotations

import json
import marshal
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Any

#: Wall deadline of a test = WALL_FACTOR * its CPU limit + WALL_SLACK_S (seconds).
WALL_FACTOR = 2.0
WALL_SLACK_S = 0.5
#: While the child is runnable (starved by machine load, not sleeping) the deadline is extended, up to this many
#: times the nominal wall deadline.
HARD_WALL_FACTOR = 6.0
#: Seconds to wait for a child's exit status after it closed its result pipe.
EXIT_GRACE_S = 0.2
#: Seconds the pid-1 runner waits for killed processes to be reaped, and its polling interval.
REAP_TIMEOUT_S = 2.0
REAP_POLL_S = 0.001
#: Poll interval of the parent while a child works (CPU checks), seconds.
POLL_S = 0.02
#: Largest response (one serialised return value) accepted from a child, bytes.
MAX_RESPONSE_BYTES = 8 << 20
#: Largest stdout of a program test accepted, bytes (more fails the test).
MAX_PROGRAM_OUTPUT_BYTES = 4 << 20
#: Bytes of a child's stdout/stderr kept for the report of a function test.
MAX_CAPTURE_BYTES = 16 << 10
#: Fraction of the run's memory a child may map (RLIMIT_AS), the rest is the parent's.
CHILD_MEMORY_FRACTION = 0.75
#: Entries of a job's working directory (the submission's) visited at most when removing it.
MAX_REMOVE_ENTRIES = 200_000


def kill_others(child: "Child | None") -> None:
    """Kill every other process of the run (pid 1 only) or the child's process group, then reap."""
    if child is not None:
        try:
            os.killpg(child.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # as pid 1 of the namespace: every process but us
        except (ProcessLookupError, PermissionError):
            pass
    if child is not None:
        try:
            child.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    if os.getpid() == 1:  # orphans are ours to reap; after kill(-1) every process left is dying
        deadline = time.monotonic() + REAP_TIMEOUT_S
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break  # no process left in the run but us
            if pid == 0:
                if time.monotonic() > deadline:
                    break
                time.sleep(REAP_POLL_S)


class Child:
    """One child interpreter that imports the submission and answers call requests (or runs a program)."""

    def __init__(self, job: dict, child_source: str, stdin_data: bytes | None = None) -> None:
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        program = job["mode"] == "program"
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter, our own bootstrap
            [sys.executable, "-I", "-S", "-B", "-c", child_source, str(req_r), str(resp_w)],
            stdin=subprocess.PIPE if program else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(req_r, resp_w),
            close_fds=True,
            start_new_session=True,
            cwd=job["cwd"],
            env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": job.get("home", job["cwd"]),
                 "TMPDIR": "/tmp"},
        )
        if not job.get("trusted"):
            SUBMISSION_RAN[0] = True
        os.close(req_r)
        os.close(resp_w)
        self.req = req_w
        self.resp = resp_r
        self.out = bytearray()
        self.err = bytearray()
        self.out_cap = MAX_PROGRAM_OUTPUT_BYTES if program else MAX_CAPTURE_BYTES
        self.out_overflow = False
        self.resp_buf = bytearray()
        self.resp_overflow = False
        self.resp_eof = False
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ, "out")
        self.sel.register(self.proc.stderr, selectors.EVENT_READ, "err")
        self.sel.register(self.resp, selectors.EVENT_READ, "resp")
        self.open_streams = 3
        self.next_id = 1
        self._stdin_data = stdin_data or b""
        self._stdin_off = 0
        if program and self.proc.stdin is not None:
            os.set_blocking(self.proc.stdin.fileno(), False)
            self.sel.register(self.proc.stdin, selectors.EVENT_WRITE, "in")
        init = {
            "mode": job["mode"],
            "source": job["source"],
            "prelude": job.get("prelude", ""),
            "entry_point": job.get("entry_point", ""),
            "repo_root": job.get("repo_root"),
            "modules": job.get("files") or None,
            "memory_mb": job["memory_mb"],
            "cpu_s": job["child_cpu_s"],
        }
        self._send(init)
        if program:
            os.close(self.req)
            self.req = -1
        self.last_cpu = 0.0

    # -- io
    def _send(self, obj: dict) -> None:
        body = marshal.dumps(obj)
        data = len(body).to_bytes(4, "big") + body
        try:
            while data:
                data = data[os.write(self.req, data):]
        except OSError:
            pass  # the child is gone; noticed by the caller via EOF

    def send_call(self, fn: str, args: Any, kwargs: Any) -> int:
        """Send one call request (plain values, marshalled); returns its id.

        Raises:
            ValueError: an argument marshal cannot serialise.
        """
        rid = self.next_id
        self.next_id += 1
        self._send({"id": rid, "fn": fn, "args": tuple(args), "kwargs": dict(kwargs)})
        return rid

    def pump(self, timeout: float) -> None:
        """Read whatever the child wrote within ``timeout`` seconds (and feed a program's stdin)."""
        if self.open_streams == 0:
            time.sleep(max(0.0, min(timeout, POLL_S)))
            return
        for key, _ in self.sel.select(max(0.0, timeout)):
            if key.data == "in":
                try:
                    n = os.write(key.fd, self._stdin_data[self._stdin_off:self._stdin_off + 65536])
                    self._stdin_off += n
                except (BrokenPipeError, OSError):
                    self._stdin_off = len(self._stdin_data)
                if self._stdin_off >= len(self._stdin_data):
                    self.sel.unregister(key.fileobj)
                    self.proc.stdin.close()  # type: ignore[union-attr]
                continue
            try:
                data = os.read(key.fd, 65536)
            except OSError:
                data = b""
            if not data:
                self.sel.unregister(key.fileobj)
                self.open_streams -= 1
                if key.data == "resp":
                    self.resp_eof = True
                continue
            if key.data == "resp":
                if len(self.resp_buf) + len(data) > MAX_RESPONSE_BYTES:
                    self.resp_overflow = True
                else:
                    self.resp_buf += data
            else:
                buf = self.out if key.data == "out" else self.err
                room = self.out_cap - len(buf)
                if len(data) > room:
                    self.out_overflow = self.out_overflow or key.data == "out"
                buf += data[: max(0, room)]

    def pop_response(self) -> dict | None:
        """The next complete response line, parsed (``{"malformed": ...}`` when it is not valid JSON)."""
        idx = self.resp_buf.find(b"\n")
        if idx < 0:
            return None
        line = bytes(self.resp_buf[:idx])
        del self.resp_buf[: idx + 1]
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            return {"malformed": True}
        return obj if isinstance(obj, dict) else {"malformed": True}

    # -- accounting
    def cpu_s(self) -> float:
        """CPU seconds used by the child (user + system, incl. reaped children), from ``/proc/<pid>/stat``."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            ticks = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
            self.last_cpu = ticks / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
        return self.last_cpu

    def runnable(self) -> bool:
        """Whether the child is running or waiting for a CPU (state R), rather than sleeping."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                return fh.read().rsplit(b")", 1)[1].split()[0] == b"R"
        except (OSError, IndexError):
            return False

    def alive(self) -> bool:
        return self.proc.poll() is None and not self.resp_eof

    def kill(self) -> None:
        """Kill the child and every straggler, reap, close pipes."""
        kill_others(self)
        try:
            self.sel.close()
        except Exception:  # noqa: BLE001
            pass
        for fd in (self.req, self.resp):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.req = self.resp = -1
        for fh in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if fh is not None:
                try:
                    fh.close()
                except OSError:
                    pass

    def wait_for(self, want: str, cpu_limit: float, rid: int = 0) -> tuple[str, Any, float]:
        """Wait for a response (``want="response"``, id ``rid``) or the child's exit (``want="exit"``).

        Returns:
            ``(status, payload, cpu_used)`` where status is ``"ok"`` (payload: the response dict or the exit
            code), ``"timeout"`` (payload: ``"cpu"``/``"wall"``), ``"died"`` (payload: exit description) or
            ``"overflow"``.
        """
        cpu0 = self.cpu_s()
        start = time.monotonic()
        wall = WALL_FACTOR * cpu_limit + WALL_SLACK_S
        deadline, hard = start + wall, start + wall * HARD_WALL_FACTOR
        exited_at: float | None = None
        while True:
            if want == "response":
                while True:
                    resp = self.pop_response()
                    if resp is None:
                        break
                    if resp.get("malformed") or resp.get("id") == rid:
                        used = self.cpu_s() - cpu0
                        if used > cpu_limit:
                            return "timeout", "cpu", used
                        return "ok", resp, used
                if self.resp_overflow:
                    return "overflow", None, self.cpu_s() - cpu0
                if self.resp_eof or self.proc.poll() is not None:
                    self.pump(0.05)  # collect the last stderr
                    try:
                        self.proc.wait(timeout=EXIT_GRACE_S)  # a closed pipe usually means an exit: get its status
                    except subprocess.TimeoutExpired:
                        pass
                    return "died", self._exit_text(), self.cpu_s() - cpu0
            else:
                if self.proc.poll() is not None and self.open_streams == 0:
                    return "ok", self.proc.returncode, self.cpu_s() - cpu0
                if self.proc.poll() is not None and self.open_streams:
                    # exited, but a leftover process may hold the pipes: kill stragglers, drain briefly, and
                    # stop waiting (a straggler that escaped our process group cannot hold the run open)
                    if exited_at is None:
                        exited_at = time.monotonic()
                        kill_others(None)  # pid 1: every other process of the run
                        try:
                            os.killpg(self.proc.pid, signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                    elif time.monotonic() - exited_at > EXIT_GRACE_S:
                        return "ok", self.proc.returncode, self.cpu_s() - cpu0
                if self.out_overflow:
                    return "overflow", None, self.cpu_s() - cpu0
            used = self.cpu_s() - cpu0
            if used > cpu_limit:
                return "timeout", "cpu", used
            now = time.monotonic()
            if now >= deadline:
                if now < hard and self.proc.poll() is None and self.runnable():
                    deadline = now + POLL_S  # starved by machine load: CPU time, not wall time, is the limit
                else:
                    return "timeout", "wall", used
            self.pump(min(POLL_S, max(0.0, deadline - now)))

    def _exit_text(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "the process closed its result pipe"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return f"the process was killed by {name}"
        return f"the process exited with status {code}"

    def captured(self) -> tuple[str, str]:
        return self.out.decode("utf-8", "replace"), self.err.decode("utf-8", "replace")


#: ``[True]`` once a process running submitted code was started in this run (see :func:`_setup_broken`).
SUBMISSION_RAN = [False]


class JobDir:
    """One job's working directory, made before any submitted code runs and reached only through an open fd.

    The submission runs as the same user as this runner, so it can change any path (``chmod 000 /tmp``, remove or
    replace the directory, fill the file system); the runner never walks a path again after set-up: a child's
    working directory is ``/proc/self/fd/<fd>`` (``chdir`` through the fd needs no search permission on any
    parent), and :meth:`claim` restores the mode with ``fchmod`` on that fd.
    """

    def __init__(self, path: str) -> None:
        os.mkdir(path, 0o700)
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    @property
    def fd_path(self) -> str:
        """The directory as a path that does not depend on any parent directory."""
        return f"/proc/self/fd/{self.fd}"

    def claim(self) -> None:
        """Make it usable again for the next job (mode 0700; raises OSError if even that fails)."""
        os.fchmod(self.fd, 0o700)

    def empty(self) -> None:
        """Remove what the job left (best effort, never raises)."""
        remove_tree(self.fd_path, keep_root=True)

    def remove(self) -> None:
        """Close the fd and remove the (emptied) directory (best effort, never raises)."""
        try:
            os.close(self.fd)
            os.rmdir(self.path)
        except OSError:
            pass


class Scratch:
    """The runner's scratch space: ``/tmp/arl-run-<random>/<i>``, one :class:`JobDir` per job, all made at once
    before any submitted code runs (plain ``mkdir``: no probe file that a full ``/tmp`` would refuse).

    Raises:
        OSError: the sandbox has no writable ``/tmp`` (infrastructure: reported as a harness error).
    """

    def __init__(self, n: int) -> None:
        self.root = f"/tmp/arl-run-{os.urandom(8).hex()}"
        os.mkdir(self.root, 0o700)
        self.dirs = [JobDir(f"{self.root}/{i}") for i in range(n)]

    def remove(self) -> None:
        """Remove the (emptied) scratch space at the end of the run (best effort, never raises: on Docker ``/tmp``
        lives as long as the episode)."""
        for job_dir in self.dirs:
            job_dir.remove()
        try:
            os.rmdir(self.root)
        except OSError:
            pass


def remove_tree(path: str, max_entries: int = MAX_REMOVE_ENTRIES, keep_root: bool = False) -> None:
    """Delete the directory tree at ``path`` as far as possible; never raises, never follows a symlink below it.

    The tree is the submission's (its children's working directory), so it may be deeper than the recursion
    limit (``shutil.rmtree`` raised ``RecursionError`` on 1,500 nested directories, which became a harness
    error: an unscored episode), hold directories it made unreadable, or keep growing: an iterative walk that
    restores each directory's permissions, skips whatever it cannot remove, and stops after ``max_entries``
    entries (leftovers stay in the run's ``/tmp``). With ``keep_root`` only what is inside ``path`` goes (``path``
    may then be a ``/proc/self/fd/N`` link to the directory).
    """
    if not keep_root:
        try:
            if not os.path.isdir(path) or os.path.islink(path):
                os.unlink(path)
                return
        except OSError:
            return
    stack: list[tuple[str, bool]] = [(path, False)]
    seen = 0
    while stack:
        directory, emptied = stack.pop()
        if emptied:
            if keep_root and directory == path:
                continue
            try:
                os.rmdir(directory)
            except OSError:
                pass
            continue
        stack.append((directory, True))
        try:
            os.chmod(directory, 0o700)
            with os.scandir(directory) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > max_entries:
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, False))
                else:
                    os.unlink(entry.path)
            except OSError:
                pass

# ruff: noqa
"""Spawner process (host side, trusted): started once per BwrapSandbox INSIDE the sandbox's cgroups.

Not imported: its source is run with ``python -S -E -c`` and the fd of a SOCK_SEQPACKET socket as argv[1].
Each request is one message: JSON ``{"argv": [...], "env": {...}, "rlimits": [[resource, value], ...],
"uid": int|null, "gid": int|null}`` with four to six file descriptors attached (stdin, stdout, stderr, bwrap's
status pipe, its ``--args`` memfd[, the seccomp program]). The spawner forks; the child starts a new session, puts
the fds on 0-5, sets the rlimits (soft = hard), drops to ``uid``/``gid`` (no supplementary groups) and execs argv.
The reply is ``{"pid": N}`` or ``{"error": "..."}``. Children inherit the spawner's cgroups by fork, so no per-run
cgroup migration (which waits for an RCU grace period: milliseconds on a busy machine) is needed. When the socket
closes (the host closed it, or died) the spawner SIGKILLs the process group of every child still running, reaps
them all (so no zombie is left to the host's init) and exits.
"""

import json
import os
import resource
import signal
import socket
import sys

MAX_MESSAGE = 1 << 20
MIN_FDS, MAX_FDS = 4, 6

sock = socket.socket(fileno=int(sys.argv[1]))


children = set()


def reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)


signal.signal(signal.SIGCHLD, reap)
signal.signal(signal.SIGINT, signal.SIG_IGN)
sock.send(b'{"ready": true}')
while True:
    try:
        msg, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
    except OSError:
        break
    if not msg:
        break
    try:
        req = json.loads(msg)
        if not MIN_FDS <= len(fds) <= MAX_FDS:
            raise ValueError(f"expected {MIN_FDS}-{MAX_FDS} fds, got {len(fds)}")
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # reaped only once it is in `children`
        pid = os.fork()
    except (OSError, ValueError) as exc:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        continue
    if pid == 0:
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
            os.setsid()
            for target, fd in enumerate(fds):
                if fd == target:
                    os.set_inheritable(fd, True)
                else:
                    os.dup2(fd, target)
            os.closerange(len(fds), 1 << 16)
            for res, value in req["rlimits"]:
                resource.setrlimit(res, (value, value))
            if req.get("uid") is not None:  # drop root: no supplementary groups, then gid, then uid
                os.setgroups([])
                os.setresgid(req["gid"], req["gid"], req["gid"])
                os.setresuid(req["uid"], req["uid"], req["uid"])
            os.chdir("/")
            os.execve(req["argv"][0], req["argv"], req["env"])
        except BaseException as exc:
            try:
                os.write(2, f"arl-sandbox spawner: {type(exc).__name__}: {exc}\n".encode())
            finally:
                os._exit(127)
    children.add(pid)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"pid": pid}).encode())
signal.signal(signal.SIGCHLD, signal.SIG_DFL)
for pid in list(children):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
    except InterruptedError:
        continue
os._exit(0)

# ruff: noqa
"""Python "kernel" run INSIDE the sandbox by :class:`arl_envs.sandbox.session.PythonSession`.

This file is not imported by the host: its source is passed to ``python3 -c`` in the sandbox, with the
per-call CPU limit (seconds) as ``sys.argv[1]`` and ``"own-pidns"`` as ``sys.argv[2]`` when the interpreter is
pid 2 of a pid namespace of its own (bwrap). It must run on the sandbox's interpreter alone (stdlib only).

Nothing a cell starts may keep running once the call returns: with its own pid namespace the kernel SIGKILLs
every other process in it (but pid 1, the reaper) before it reports ``D`` (elsewhere the host does it). While
it waits for the next cell its CPU soft limit is kept at what it used so far plus ``IDLE_CPU_GRACE_S``, and if
background threads of a cell burn more than that while it is idle it exits, so a cell that raised its soft
limit cannot burn CPU between calls; the hard limit is the session's whole budget.

Protocol (all integers big-endian):
  host -> kernel, on the original stdin: ``seq:u32 len:u32 code:bytes[len]`` (UTF-8 Python source).
  kernel -> host, on the original stdout: frames ``kind:u8 seq:u32 len:u32 payload:bytes[len]`` with kind
  ``R`` (ready, at start), ``O`` (stdout bytes), ``E`` (stderr bytes), ``D`` (done; JSON ``{"error": name|null}``).
The user's fds 1 and 2 are pipes read by a forwarder thread (so ``print``, ``os.write(1, ...)`` and child
processes are all captured); fd 0 is /dev/null. ``D`` is sent only after both pipes are drained.
"""

import sys

# `python -c` puts the working directory first on sys.path, and cells write there: the kernel's own modules must
# come from the standard library, or a cell could plant `json.py` in /work and break every later start of the
# interpreter in this episode. The entry goes back after these imports, so cells import their own files.
CWD_PATH = sys.path.pop(0) if sys.path and sys.path[0] == "" else None

import ast
import fcntl
import json
import linecache
import os
import resource
import select
import struct
import termios
import threading
import time
import traceback

if CWD_PATH is not None:
    sys.path.insert(0, CWD_PATH)

CPU_PER_CALL_S = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
OWN_PID_NAMESPACE = len(sys.argv) > 2 and sys.argv[2] == "own-pidns"
IDLE_CPU_GRACE_S = 0.2
IDLE_POLL_S = 0.1
IDLE_TICK_CPU_S = 0.005
IDLE_BURN_EXIT = 98
KILL_ROUNDS = 20
CHUNK = 65536
HEADER = struct.Struct(">cII")
REQUEST = struct.Struct(">II")

ctl_in = os.dup(0)
ctl_out = os.dup(1)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
out_r, out_w = os.pipe()
err_r, err_w = os.pipe()
os.dup2(out_w, 1)
os.dup2(err_w, 2)
os.close(out_w)
os.close(err_w)

send_lock = threading.Lock()
drain_lock = threading.Lock()
current_seq = 0


def send(kind, seq, payload):
    data = HEADER.pack(kind, seq, len(payload)) + payload
    with send_lock:
        view = memoryview(data)
        while view:
            n = os.write(ctl_out, view)
            view = view[n:]


def forward():
    while True:
        ready, _, _ = select.select([out_r, err_r], [], [])
        with drain_lock:
            for fd in ready:
                data = os.read(fd, CHUNK)
                if data:
                    send(b"O" if fd == out_r else b"E", current_seq, data)


def pending(fd):
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return int.from_bytes(buf, sys.byteorder)


def read_exact(n):
    parts = []
    while n:
        data = os.read(ctl_in, n)
        if not data:
            os._exit(0)
        parts.append(data)
        n -= len(data)
    return b"".join(parts)


def cpu_used():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def set_cpu_budget(seconds):
    """Soft RLIMIT_CPU = CPU used so far + ``seconds`` (never above the hard limit, the session's budget)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = int(cpu_used() + seconds) + 1
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
    except (ValueError, OSError):
        pass


def kill_strays():
    """SIGKILL every process of our pid namespace but pid 1 (the reaper) and us; reap our own children."""
    if not OWN_PID_NAMESPACE:
        return
    me = os.getpid()
    for _ in range(KILL_ROUNDS):
        alive = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in (1, me):
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue  # a zombie: only waiting to be reaped
                os.kill(int(name), 9)
                alive = True
            except (OSError, IndexError):
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not alive:
            return
        time.sleep(0.001)


def wait_for_request():
    """Block until the host sends a cell; exit if our CPU time grows meanwhile (a cell's threads burning).

    Waiting itself costs microseconds per poll: only polls that cost more than IDLE_TICK_CPU_S count as burnt,
    and the soft limit follows the legitimate use, so a session may stay idle for any time.
    """
    burnt = 0.0
    last = cpu_used()
    set_cpu_budget(IDLE_CPU_GRACE_S)
    while not select.select([ctl_in], [], [], IDLE_POLL_S)[0]:
        now = cpu_used()
        if now - last > IDLE_TICK_CPU_S:
            burnt += now - last
            if burnt > IDLE_CPU_GRACE_S:
                os._exit(IDLE_BURN_EXIT)
        else:
            set_cpu_budget(IDLE_CPU_GRACE_S)  # also undoes a soft limit a background thread raised
        last = now


def run_cell(seq, source, namespace):
    filename = f"<cell-{seq}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        tree = ast.parse(source, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), namespace)
        if last is not None:
            value = eval(compile(last, filename, "eval"), namespace)
            if value is not None:
                print(repr(value))
        return None
    except SystemExit as exc:
        print(f"SystemExit: {exc.code}", file=sys.stderr)
        return "SystemExit"
    except BaseException as exc:  # report every error, keep the interpreter alive
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None  # drop run_cell's frame
        if isinstance(exc, SyntaxError):
            tb = None
        traceback.print_exception(type(exc), exc, tb)
        return type(exc).__name__


def flush_streams():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


def main():
    global current_seq
    threading.Thread(target=forward, daemon=True).start()
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    send(b"R", 0, b"")
    while True:
        wait_for_request()
        seq, length = REQUEST.unpack(read_exact(REQUEST.size))
        source = read_exact(length).decode("utf-8", errors="replace")
        with drain_lock:
            current_seq = seq
        if CPU_PER_CALL_S > 0:
            set_cpu_budget(CPU_PER_CALL_S)
        error = run_cell(seq, source, namespace)
        flush_streams()
        kill_strays()
        while True:
            with drain_lock:
                if pending(out_r) == 0 and pending(err_r) == 0:
                    send(b"D", seq, json.dumps({"error": error}).encode())
                    break
            time.sleep(0.0002)


main()

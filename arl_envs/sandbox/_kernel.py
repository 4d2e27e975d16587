# ruff: noqa
"""Python "kernel" run INSIDE the sandbox by :class:`arl_envs.sandbox.session.PythonSession`.

This file is not imported by the host: its source is passed to ``python3 -c`` in the sandbox, with the
per-call CPU limit (seconds) as ``sys.argv[1]``. It must run on the sandbox's interpreter alone (stdlib only).

Protocol (all integers big-endian):
  host -> kernel, on the original stdin: ``seq:u32 len:u32 code:bytes[len]`` (UTF-8 Python source).
  kernel -> host, on the original stdout: frames ``kind:u8 seq:u32 len:u32 payload:bytes[len]`` with kind
  ``R`` (ready, at start), ``O`` (stdout bytes), ``E`` (stderr bytes), ``D`` (done; JSON ``{"error": name|null}``).
The user's fds 1 and 2 are pipes read by a forwarder thread (so ``print``, ``os.write(1, ...)`` and child
processes are all captured); fd 0 is /dev/null. ``D`` is sent only after both pipes are drained.
"""

import ast
import fcntl
import json
import linecache
import os
import resource
import select
import struct
import sys
import termios
import threading
import time
import traceback

CPU_PER_CALL_S = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
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


def set_cpu_budget():
    if CPU_PER_CALL_S <= 0:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = int(usage.ru_utime + usage.ru_stime + CPU_PER_CALL_S) + 1
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (want, hard))
    except (ValueError, OSError):
        pass


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
        seq, length = REQUEST.unpack(read_exact(REQUEST.size))
        source = read_exact(length).decode("utf-8", errors="replace")
        with drain_lock:
            current_seq = seq
        set_cpu_budget()
        error = run_cell(seq, source, namespace)
        flush_streams()
        while True:
            with drain_lock:
                if pending(out_r) == 0 and pending(err_r) == 0:
                    send(b"D", seq, json.dumps({"error": error}).encode())
                    break
            time.sleep(0.0002)


main()

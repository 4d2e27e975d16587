"""Sandbox latency and throughput (issue 3): prints a markdown block for benchmarks/RESULTS.md.

Measures, in one run on this machine:

* p50/p99 latency of ``print(1)`` and of a 20-line test program for: bare ``/usr/bin/python3`` (the interpreter
  the sandboxes run; also the ``python3`` on PATH for reference), ``bwrap`` run, Docker ``run`` (fresh
  container per call), Docker ``exec`` (warm pool) and the Python session (bwrap and Docker);
* the ratio of the bwrap p50 to the bare p50, with bare and bwrap calls interleaved so machine load hits both;
* throughput (runs/s) with N parallel workers, each with its own sandbox.

Targets (issue 3): bwrap p50 within 2x of bare start-up; session call p50 < 5 ms; Docker warm exec p50 < 150 ms.
Issue 10: the same 2x with the seccomp filter on (the default; a filter-less sandbox is timed beside it).
Issue 18, timed interleaved with the bare start: a fresh sandbox (create + first run + close) at most 3x a bare
``python3 -c``, before (``/etc`` re-created per sandbox, spawner started on the first run: :class:`LegacyBwrap`,
the previous code path) and after (shared ``/etc``, pooled spawner); the first python call of an episode (after
``reset()`` and a think gap, :data:`THINK_S` by default) no slower than a bare start, before (interpreter started on
``open_session()``) and after (launched at ``reset()``), beside GEM's ``PythonCodeTool`` (a subprocess per call,
no sandbox; ``pip install gem-llm``, skipped with a note if missing).

Usage::

    python benchmarks/sandbox_latency.py                 # everything available here
    python benchmarks/sandbox_latency.py --no-docker -n 100 --workers 1,2,4
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import threading
import time
from collections.abc import Callable

from arl_envs.core.errors import SandboxUnavailable
from arl_envs.sandbox import Limits, get_sandbox
from arl_envs.sandbox._bwrap_fs import (
    ETC_TMPFS_MB,
    _fill_etc,
    _mount_tmpfs,
    _remove_tree,
    _umount_state,
)
from arl_envs.sandbox._bwrap_spawner import start_spawner
from arl_envs.sandbox.bwrap import SPAWNER_MEMORY_MB, SPAWNER_PIDS, BwrapSandbox

#: The 20-line test program (a typical "solution + asserts" code-env payload).
TEST_PROGRAM = """\
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def is_prime(n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True


assert [fib(i) for i in range(10)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
assert [p for p in range(30) if is_prime(p)] == [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
print("ok")
"""
PRINT1 = "print(1)"
#: Issue 3 targets.
TARGET_BWRAP_RATIO = 2.0
TARGET_SESSION_P50_MS = 5.0
TARGET_DOCKER_EXEC_P50_MS = 150.0
TARGET_FRESH_RATIO = 3.0
#: Default seconds between ``reset()`` and the episode's first call (the agent generating its first turn: a 7B
#: model at ~50 tokens/s writes ~25 tokens in it); ``--think-s`` changes it.
THINK_S = 0.5
#: Warm-up calls before timing each series.
WARMUP = 3
#: Seconds each throughput measurement runs.
THROUGHPUT_SECONDS = 3.0
MS = 1000.0


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of ``values`` in ms."""
    ordered = sorted(values)
    idx = min(len(ordered) - 1, max(0, int(round(q / 100 * len(ordered) + 0.5)) - 1))
    return ordered[idx] * MS


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def check_ok(result, expected: str) -> None:  # noqa: ANN001
    if result.stdout != expected:
        raise RuntimeError(f"unexpected result {result!r}")


def series(fn: Callable[[], object], n: int) -> list[float]:
    for _ in range(WARMUP):
        fn()
    return [timed(fn) for _ in range(n)]


def interleaved(fns: dict[str, Callable[[], object]], n: int) -> dict[str, list[float]]:
    """Time several callables round-robin (load affects all alike)."""
    for fn in fns.values():
        for _ in range(WARMUP):
            fn()
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(n):
        for key, fn in fns.items():
            out[key].append(timed(fn))
    return out


def throughput(make_worker: Callable[[], Callable[[], object]], workers: int, seconds: float) -> float:
    """Runs per second with ``workers`` threads, each calling its own worker function for ``seconds``."""
    fns = [make_worker() for _ in range(workers)]
    counts = [0] * workers
    stop = time.monotonic() + seconds
    barrier = threading.Barrier(workers)

    def loop(i: int) -> None:
        barrier.wait()
        while time.monotonic() < stop:
            fns[i]()
            counts[i] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(workers)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.monotonic() - start)


class LegacyBwrap(BwrapSandbox):
    """The fresh-sandbox path before issue 18: ``/etc`` (399 ``alternatives`` symlinks...) re-created in every
    sandbox, the spawner started on its first run, the state tree removed with ``chmod -R``/``rm -rf``."""

    def _make_state(self) -> None:
        super()._make_state()
        etc = self._state / "etc"
        etc.mkdir(mode=0o755)
        if self.is_root:
            _mount_tmpfs(str(etc), ETC_TMPFS_MB, 0, 0, mode=0o755)
        _fill_etc(etc)
        self._etc = etc

    def _spawner_for(self, limits: Limits):  # noqa: ANN202
        if self._spawner is None:
            self._spawner = start_spawner(
                self.cgroups, limits.memory_mb + SPAWNER_MEMORY_MB, limits.max_processes + SPAWNER_PIDS
            )
            self._spawner_limits = (limits.memory_mb, limits.max_processes)
        return super()._spawner_for(limits)

    def _close(self) -> None:
        self._stop_spawner()
        if self._state is not None:
            _umount_state(self._state)
            _remove_tree(self._state)
            self._state = None
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def fresh_sandbox(cls: type[BwrapSandbox], limits: Limits) -> Callable[[], object]:
    """Create a sandbox, run print(1), close it."""

    def go() -> None:
        with cls(limits=limits) as sb:
            check_ok(sb.run(code=PRINT1), "1\n")

    return go


def first_calls(
    n: int, fns: dict[str, tuple[Callable[[], None], Callable[[], object]]], think_s: float
) -> dict[str, list[float]]:
    """Interleaved: ``prepare()`` (a reset; not timed), sleep ``think_s``, then time ``call()``."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(n + WARMUP):
        for key, (prepare, call) in fns.items():
            prepare()
            time.sleep(think_s)
            elapsed = timed(call)
            if i >= WARMUP:
                out[key].append(elapsed)
    return out


def gem_tool() -> Callable[[], object] | None:
    """GEM's PythonCodeTool running print(1) (None if gem-llm is not installed)."""
    try:
        from gem.tools.python_code_tool import PythonCodeTool  # noqa: PLC0415 - benchmark-only peer
    except ImportError:
        return None
    tool = PythonCodeTool(timeout=10)

    def call() -> None:
        obs = tool.execute_action("<python>print(1)</python>")
        if "1" not in str(obs):
            raise RuntimeError(f"unexpected GEM result {obs!r}")

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", "--iterations", type=int, default=60, help="timed calls per series (docker run: n/4)")
    parser.add_argument("--workers", default="1,2,4", help="parallel worker counts for throughput")
    parser.add_argument("--no-docker", action="store_true", help="skip the Docker backend")
    parser.add_argument("--think-s", type=float, default=THINK_S, help="seconds between reset and a first call")
    args = parser.parse_args()
    n = args.iterations
    worker_counts = [int(w) for w in args.workers.split(",") if w]
    limits = Limits(wall_time_s=30)
    rows: list[tuple[str, str, float, float]] = []  # (what, payload, p50 ms, p99 ms)
    notes: list[str] = []
    closers: list[Callable[[], None]] = []

    bare_py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else shutil.which("python3") or "python3"
    path_py = shutil.which("python3") or "python3"

    def bare(code: str, exe: str = bare_py) -> Callable[[], object]:
        return lambda: subprocess.run([exe, "-c", code], stdout=subprocess.PIPE, check=True)

    bw = get_sandbox("bwrap", limits=limits)
    closers.append(bw.close)
    bw_nosec = get_sandbox("bwrap", limits=limits, seccomp=False)
    closers.append(bw_nosec.close)
    ratio_runs = interleaved(
        {
            "bare print": bare(PRINT1),
            "bwrap print": lambda: check_ok(bw.run(code=PRINT1), "1\n"),
            "nosec print": lambda: check_ok(bw_nosec.run(code=PRINT1), "1\n"),
            "bare test": bare(TEST_PROGRAM),
            "bwrap test": lambda: check_ok(bw.run(code=TEST_PROGRAM), "ok\n"),
        },
        n,
    )
    path_runs = series(bare(PRINT1, path_py), max(10, n // 4)) if path_py != bare_py else None
    for label, key in (("bare python3", "bare"), ("bwrap run", "bwrap")):
        for payload, suffix in (("print(1)", "print"), ("20-line test", "test")):
            values = ratio_runs[f"{key} {suffix}"]
            rows.append((label, payload, pct(values, 50), pct(values, 99)))
    rows.insert(3, ("bwrap run, no seccomp filter", "print(1)", pct(ratio_runs["nosec print"], 50),
                    pct(ratio_runs["nosec print"], 99)))  # fmt: skip
    if path_runs:
        rows.insert(0, (f"bare `python3` on PATH ({path_py})", "print(1)", pct(path_runs, 50), pct(path_runs, 99)))
    ratio = pct(ratio_runs["bwrap print"], 50) / pct(ratio_runs["bare print"], 50)
    ratio_test = pct(ratio_runs["bwrap test"], 50) / pct(ratio_runs["bare test"], 50)

    # Issue 18: fresh sandboxes and first calls, each interleaved with the bare start.
    n18 = max(10, n // 2)
    fresh = interleaved(
        {
            "bare": bare(PRINT1),
            "before": fresh_sandbox(LegacyBwrap, limits),
            "after": fresh_sandbox(BwrapSandbox, limits),
        },
        n18,
    )
    cold_sb = get_sandbox("bwrap", limits=limits)
    cold_sb.prestarts_sessions = False  # before: the interpreter starts on open_session()
    warm_sb = get_sandbox("bwrap", limits=limits)
    closers += [cold_sb.close, warm_sb.close]
    for sb in (cold_sb, warm_sb):
        sb.open_session().close()  # an episode with a session: reset() then pre-starts the next one (after)
    first_fns: dict[str, tuple[Callable[[], None], Callable[[], object]]] = {
        "bare": (lambda: None, bare(PRINT1)),
        "before": (cold_sb.reset, lambda: check_ok(cold_sb.open_session().run(PRINT1), "1\n")),
        "after": (warm_sb.reset, lambda: check_ok(warm_sb.open_session().run(PRINT1), "1\n")),
    }
    gem = gem_tool()
    if gem is not None:
        first_fns["gem"] = (lambda: None, gem)
    else:
        notes.append("GEM's PythonCodeTool not installed (`pip install gem-llm`): its row is missing")
    first = first_calls(n18, first_fns, args.think_s)
    rows18 = [
        ("bare python3 -c (same run)", "print(1)", fresh["bare"]),
        ("fresh bwrap sandbox: create + run + close, before", "print(1)", fresh["before"]),
        ("fresh bwrap sandbox: create + run + close, after", "print(1)", fresh["after"]),
        ("bare python3 -c (same run, first-call rounds)", "print(1)", first["bare"]),
        ("first session call of an episode (math.tool-v1), before", "print(1)", first["before"]),
        ("first session call of an episode (math.tool-v1), after", "print(1)", first["after"]),
    ]
    if "gem" in first:
        rows18.append(("GEM PythonCodeTool call (subprocess, no sandbox)", "print(1)", first["gem"]))
    fresh_ratio = {k: pct(fresh[k], 50) / pct(fresh["bare"], 50) for k in ("before", "after")}
    first_ratio = {k: pct(first[k], 50) / pct(first["bare"], 50) for k in ("before", "after")}

    session = bw.open_session()
    closers.insert(0, session.close)
    for payload, code, expected in (("print(1)", PRINT1, "1\n"), ("20-line test", TEST_PROGRAM, "ok\n")):
        values = series(lambda c=code, e=expected: check_ok(session.run(c), e), n)
        rows.append(("session call (bwrap)", payload, pct(values, 50), pct(values, 99)))
    session_p50 = rows[-2][2]

    docker_exec_p50: float | None = None
    if not args.no_docker:
        try:
            dk = get_sandbox("docker", limits=limits)
            closers.insert(0, dk.close)
            for payload, code, expected in (("print(1)", PRINT1, "1\n"), ("20-line test", TEST_PROGRAM, "ok\n")):
                values = series(lambda c=code, e=expected: check_ok(dk.run(code=c), e), n)
                rows.append(("docker exec (warm pool)", payload, pct(values, 50), pct(values, 99)))
            docker_exec_p50 = rows[-2][2]
            dsession = dk.open_session()
            closers.insert(0, dsession.close)
            for payload, code, expected in (("print(1)", PRINT1, "1\n"), ("20-line test", TEST_PROGRAM, "ok\n")):
                values = series(lambda c=code, e=expected: check_ok(dsession.run(c), e), n)
                rows.append(("session call (docker)", payload, pct(values, 50), pct(values, 99)))
            drun = get_sandbox("docker", limits=limits, warm_pool=False)
            closers.insert(0, drun.close)
            for payload, code, expected in (("print(1)", PRINT1, "1\n"), ("20-line test", TEST_PROGRAM, "ok\n")):
                values = series(lambda c=code, e=expected: check_ok(drun.run(code=c), e), max(8, n // 4))
                rows.append(("docker run (fresh container)", payload, pct(values, 50), pct(values, 99)))
        except SandboxUnavailable as exc:
            notes.append(f"Docker skipped: {exc}")

    # Throughput: each worker owns a sandbox (or session).
    tp_rows: list[tuple[str, list[float]]] = []
    made: list = []

    def bwrap_worker() -> Callable[[], object]:
        sb = get_sandbox("bwrap", limits=limits)
        made.append(sb)
        return lambda: check_ok(sb.run(code=PRINT1), "1\n")

    def session_worker() -> Callable[[], object]:
        sb = get_sandbox("bwrap", limits=limits)
        made.append(sb)
        py = sb.open_session()
        return lambda: check_ok(py.run(PRINT1), "1\n")

    def bare_worker() -> Callable[[], object]:
        return bare(PRINT1)

    workers: list[tuple[str, Callable[[], Callable[[], object]]]] = [
        ("bare python3 print(1)", bare_worker),
        ("bwrap run print(1)", bwrap_worker),
        ("session call print(1) (bwrap)", session_worker),
    ]
    if docker_exec_p50 is not None:

        def docker_worker() -> Callable[[], object]:
            sb = get_sandbox("docker", limits=limits, pool_size=max(worker_counts))
            made.append(sb)
            return lambda: check_ok(sb.run(code=PRINT1), "1\n")

        workers.append(("docker exec print(1)", docker_worker))
    for label, factory in workers:
        tp_rows.append((label, [throughput(factory, w, THROUGHPUT_SECONDS) for w in worker_counts]))
        for sb in made:
            sb.close()
        made.clear()

    for close in closers:
        close()

    load = os.getloadavg()
    print("### Sandbox latency (`benchmarks/sandbox_latency.py`)\n")
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
        f"load average at the end {load[0]:.2f}; {n} timed calls per series after {WARMUP} warm-up calls "
        f"(docker run: {max(8, n // 4)}). Bare = `{bare_py} -c ...`, the interpreter the sandboxes run.\n"
    )
    print("| what | payload | p50 (ms) | p99 (ms) |")
    print("|---|---|---:|---:|")
    for what, payload, p50, p99 in rows:
        print(f"| {what} | {payload} | {p50:.1f} | {p99:.1f} |")
    print()
    print("| throughput (runs/s) | " + " | ".join(f"{w} worker{'s' if w > 1 else ''}" for w in worker_counts) + " |")
    print("|---|" + "---:|" * len(worker_counts))
    for label, values in tp_rows:
        print(f"| {label} | " + " | ".join(f"{v:.0f}" for v in values) + " |")
    print()
    print(f"Issue 18 ({n18} rounds each, interleaved with the bare start; first calls {args.think_s} s after reset):\n")
    print("| what | payload | p50 (ms) | p99 (ms) | p50 / bare |")
    print("|---|---|---:|---:|---:|")
    for i, (what, payload, values) in enumerate(rows18):
        ref = fresh["bare"] if i < 3 else first["bare"]
        print(f"| {what} | {payload} | {pct(values, 50):.1f} | {pct(values, 99):.1f} | "
              f"{pct(values, 50) / pct(ref, 50):.2f}x |")  # fmt: skip
    print()
    verdict = lambda ok: "met" if ok else "NOT met"  # noqa: E731
    print("Targets (issue 3):\n")
    print(
        f"- bwrap p50 / bare p50 = **{ratio:.2f}x** for print(1) ({ratio_test:.2f}x for the test program); "
        f"target <= {TARGET_BWRAP_RATIO}x: {verdict(ratio <= TARGET_BWRAP_RATIO)}"
    )
    print(
        f"- session call p50 = **{session_p50:.2f} ms**; target < {TARGET_SESSION_P50_MS} ms: "
        f"{verdict(session_p50 < TARGET_SESSION_P50_MS)}"
    )
    print(
        f"- issue 18.2: fresh sandbox p50 / bare p50 = {fresh_ratio['before']:.2f}x before, "
        f"**{fresh_ratio['after']:.2f}x** after; target <= {TARGET_FRESH_RATIO}x: "
        f"{verdict(fresh_ratio['after'] <= TARGET_FRESH_RATIO)}"
    )
    print(
        f"- issue 18.1: first call p50 / bare p50 = {first_ratio['before']:.2f}x before, "
        f"**{first_ratio['after']:.2f}x** after; target <= 1x: {verdict(first_ratio['after'] <= 1.0)}"
    )
    if docker_exec_p50 is not None:
        print(
            f"- docker warm-pool exec p50 = **{docker_exec_p50:.1f} ms**; target < {TARGET_DOCKER_EXEC_P50_MS} ms: "
            f"{verdict(docker_exec_p50 < TARGET_DOCKER_EXEC_P50_MS)}"
        )
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()

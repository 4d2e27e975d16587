"""Web env latency: our WebEnv (Playwright async on a loop thread, Debian Chromium) beside MiniWoB++'s own env.

What is timed, all in ONE run on the same machine (the references come from ``benchmarks/web_miniwob_ref.py``):

* ours, MiniWoB++ tasks (``arl/web.miniwob-v0``, ``task=...``) -- the SAME tasks and the same action as the
  references: ``reset(seed=i)``, then ``STEPS_PER_EPISODE`` steps of ``click(<bid of #area>)`` (the task area; the
  click ends no episode). Each step returns the full text observation (accessibility tree) and the validator's
  reading of the page state. Two observation modes: ``axtree`` and ``axtree+screenshot`` (PNG in info).
* ours, own tasks (``arl/web.click-button-v0``, ``arl/web.enter-text-v0``): the same loop, clicking the ``h1``.
* throughput: N = 1, 2, 4 envs (``arl/web.miniwob-v0``, ``click-test``) stepping a click on the instruction box
  with a reset every ``STEPS_PER_EPISODE`` steps, for a fixed time: total env calls (steps + resets) per second,
  (a) each env in its own thread sharing the process's one browser, (b) ``make_vec(..., mode="async")`` (one
  subprocess and one Chromium per env), (c) the ``miniwob`` package's own env in N processes (one Chromium each).
  Each row also gives the CPU milliseconds per env call spent by Python, the driver (Playwright's node process or
  chromedriver) and Chromium, read from ``/proc``, and the cores the run kept busy (calls/s x CPU per call): with
  2 cores, ``2000 / (CPU ms per call)`` calls/s is the ceiling, reached only when nothing else runs.
* references: the ``miniwob`` package's own Gymnasium env (Selenium, screenshots off) and BrowserGym's
  (``browsergym-miniwob`` at default settings, in the venv named by ``$ARL_BROWSERGYM_PYTHON``), if available.

Warm-up: one untimed reset per env (browser start). Percentiles by linear interpolation.

Run: ``python benchmarks/web_latency.py [--steps 40] [--threads-seconds 8] [--no-reference] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gymnasium as gym  # noqa: E402

import arl_envs  # noqa: E402,F401  (registers the ids)
from arl_envs.envs.web.browser import descends_from, hold_browser, process_table  # noqa: E402
from web_miniwob_ref import _summary  # noqa: E402  (one percentile summary for ours and the references)

#: MiniWoB++ tasks timed for ours and for the references (cheap, common; a click on #area ends no episode).
MINIWOB_TASKS = ("click-test", "click-button", "click-checkboxes", "enter-text", "login-user")
#: Our own tasks timed too.
OWN_TASKS = ("click-button", "enter-text")
#: Timed steps per episode: a new (timed) reset every this many steps.
STEPS_PER_EPISODE = 5
#: Parallel env counts for the throughput part.
PARALLEL = (1, 2, 4)


def _area_action(env: Any, selector: str) -> str:
    raw = env.unwrapped
    bids = [b for b in raw._host.call(raw._resolve_async(selector)) if b in raw._snap.bids]
    if not bids:
        raise RuntimeError(f"no element {selector} on {raw.task.name}")
    return f'click("{bids[0]}")'


def time_ours(env_id: str, kwargs: dict[str, Any], selector: str, n_steps: int, obs_mode: str) -> dict[str, float]:
    """Reset/step latencies of one of our envs (see the module docstring)."""
    env = gym.make(env_id, obs_mode=obs_mode, **kwargs)
    reset_s: list[float] = []
    step_s: list[float] = []
    try:
        env.reset(seed=0)  # warm-up
        episode, need_reset = 0, True
        while len(step_s) < n_steps:
            if need_reset:
                t0 = time.perf_counter()
                env.reset(seed=episode)
                reset_s.append(time.perf_counter() - t0)
                episode += 1
                need_reset = False
                action = _area_action(env, selector)  # untimed: the bid of the element to click
            t0 = time.perf_counter()
            _, _, term, trunc, info = env.step(action)
            step_s.append(time.perf_counter() - t0)
            if info.get("last_action_error"):
                raise RuntimeError(f"{env_id} {kwargs}: {info['last_action_error']}")
            need_reset = term or trunc or len(step_s) % STEPS_PER_EPISODE == 0
            if not need_reset:
                action = _area_action(env, selector)
    finally:
        env.close()
    return _summary(reset_s, step_s)


#: Task of the throughput runs, and the element every throughput step clicks: the instruction box (``#query``), the
#: first element with an id in the observation; a click there ends no episode.
THROUGHPUT_TASK = "click-test"
_FIRST_BID_RE = re.compile(r"^\s*\[([a-z]+\d+)\]", re.MULTILINE)


def _first_bid_action(obs: str) -> str:
    tree = obs[obs.index("Accessibility tree:"):]
    m = _FIRST_BID_RE.search(tree)
    if m is None:
        raise RuntimeError(f"no element id in the observation: {tree[:300]!r}")
    return f'click("{m.group(1)}")'


def tree_cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) used so far by this process and its descendants, by kind.

    Kinds: ``python`` (this process and Python workers), ``driver`` (Playwright's node driver, whose process is
    named ``node-MainThread``; chromedriver),
    ``browser`` (Chromium's processes: browser, renderers, GPU/utility), ``other``. Read from ``/proc``; a process
    that has exited is not counted (so take differences over runs whose processes outlive them).
    """
    table = process_table()
    root = os.getpid()
    out = {"python": 0.0, "driver": 0.0, "browser": 0.0, "other": 0.0}
    for pid, (_, name, cpu) in table.items():
        if not descends_from(pid, root, table):
            continue
        low = name.lower()
        kind = ("driver" if low.startswith("node") or low == "chromedriver" else "browser" if "chrom" in low
                else "python" if low.startswith("python") else "other")
        out[kind] += cpu
    return out


def _cpu_per_call(before: dict[str, float], after: dict[str, float], calls: float) -> dict[str, float]:
    return {k: 1000 * (after[k] - before[k]) / max(calls, 1.0) for k in before}


def throughput(n_envs: int, seconds: float) -> dict[str, Any]:
    """Total env calls/s (steps + resets) of ``n_envs`` envs stepped in parallel THREADS (one shared browser)."""
    envs = [gym.make("arl/web.miniwob-v0", task=THROUGHPUT_TASK) for _ in range(n_envs)]
    counts = [0] * n_envs
    errors: list[BaseException] = []
    start = threading.Barrier(n_envs + 1)
    stop = threading.Event()

    def work(i: int) -> None:
        try:
            env = envs[i]
            action = _first_bid_action(env.reset(seed=i)[0])
            start.wait()
            while not stop.is_set():
                _, _, term, trunc, _ = env.step(action)
                counts[i] += 1
                if term or trunc or counts[i] % STEPS_PER_EPISODE == 0:
                    action = _first_bid_action(env.reset()[0])
                    counts[i] += 1  # a reset counts as one env call
        except BaseException as exc:  # reported after the run
            errors.append(exc)
            with contextlib.suppress(threading.BrokenBarrierError):
                start.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_envs)]
    try:
        for t in threads:
            t.start()
        start.wait()
        cpu0 = tree_cpu_seconds()
        t0 = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        cpu1 = tree_cpu_seconds()
    finally:
        for e in envs:
            e.close()
    if errors:
        raise errors[0]
    calls = float(sum(counts))
    return {"envs": float(n_envs), "calls_per_s": calls / elapsed, "cpu_ms_per_call": _cpu_per_call(cpu0, cpu1, calls)}


def throughput_vec(n_envs: int, seconds: float) -> dict[str, Any]:
    """Env calls/s of ``make_vec(..., mode="async")``: one subprocess (and one Chromium) per env, stepped together.

    Every vector step is one call per sub-env; Gymnasium's next-step autoreset makes the step after an episode end a
    reset (counted as a call too). Episodes end every ``STEPS_PER_EPISODE`` steps by truncation (``max_turns``).
    """
    from arl_envs import make_vec

    vec = make_vec("arl/web.miniwob-v0", n_envs, mode="async", task=THROUGHPUT_TASK, max_turns=STEPS_PER_EPISODE)
    try:
        obs, _ = vec.reset(seed=0)
        actions = [_first_bid_action(o) for o in obs]
        vec.step(actions)  # warm-up
        obs, _ = vec.reset(seed=100)
        actions = [_first_bid_action(o) for o in obs]
        cpu0 = tree_cpu_seconds()
        t0 = time.perf_counter()
        calls = 0
        while time.perf_counter() - t0 < seconds:
            obs, _, term, trunc, _ = vec.step(actions)
            calls += n_envs
            actions = [_first_bid_action(o) for o in obs]
        elapsed = time.perf_counter() - t0
        cpu1 = tree_cpu_seconds()
    finally:
        vec.close()
    return {"envs": float(n_envs), "calls_per_s": calls / elapsed, "cpu_ms_per_call": _cpu_per_call(cpu0, cpu1, calls)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--steps", type=int, default=40, help="timed steps per task and mode")
    ap.add_argument("--threads-seconds", type=float, default=8.0, help="seconds per throughput run")
    ap.add_argument("--no-reference", action="store_true", help="skip the miniwob / BrowserGym references")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args()

    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_before": os.getloadavg()}
    with hold_browser():
        ours: dict[str, Any] = {}
        for mode in ("axtree", "axtree+screenshot"):
            rows = {}
            for task in MINIWOB_TASKS:
                rows[f"miniwob/{task}"] = time_ours("arl/web.miniwob-v0", {"task": task}, "#area", args.steps, mode)
                print(mode, task, json.dumps(rows[f"miniwob/{task}"]), flush=True)
            for task in OWN_TASKS:
                rows[task] = time_ours(f"arl/web.{task}-v0", {}, "h1", args.steps, mode)
                print(mode, task, json.dumps(rows[task]), flush=True)
            ours[mode] = rows
        out["ours"] = ours
        out["throughput"] = [throughput(n, args.threads_seconds) for n in PARALLEL]
        print("throughput", json.dumps(out["throughput"]), flush=True)
    out["throughput_vec"] = [throughput_vec(n, args.threads_seconds) for n in PARALLEL]
    print("throughput vec", json.dumps(out["throughput_vec"]), flush=True)
    if not args.no_reference:
        from web_miniwob_ref import (
            browsergym_reference_latency,
            miniwob_reference_latency,
            miniwob_reference_throughput,
        )

        try:
            out["miniwob_ref"] = miniwob_reference_latency(MINIWOB_TASKS, args.steps)
        except (RuntimeError, ImportError) as exc:
            out["miniwob_ref"] = {"unavailable": str(exc)}
        print("miniwob ref", json.dumps(out["miniwob_ref"].get("all", out["miniwob_ref"])), flush=True)
        try:
            out["browsergym_ref"] = browsergym_reference_latency(MINIWOB_TASKS, min(args.steps, 10))
        except RuntimeError as exc:
            out["browsergym_ref"] = {"unavailable": str(exc)[:500]}
        print("browsergym ref", json.dumps(out["browsergym_ref"].get("all", out["browsergym_ref"])), flush=True)
        try:
            out["miniwob_ref_parallel"] = [miniwob_reference_throughput(THROUGHPUT_TASK, n, args.threads_seconds,
                                                                        STEPS_PER_EPISODE, tree_cpu_seconds)
                                           for n in PARALLEL]
        except (RuntimeError, ImportError) as exc:
            out["miniwob_ref_parallel"] = [{"unavailable": str(exc)}]
        print("miniwob ref parallel", json.dumps(out["miniwob_ref_parallel"]), flush=True)
    out["load_after"] = os.getloadavg()
    _report(out)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)


def _report(out: dict[str, Any]) -> None:
    print(f"\n# web latency, {out['date']}, load {out['load_before'][0]:.1f} -> {out['load_after'][0]:.1f}")
    print("| env | task | obs | reset p50 | reset p99 | step p50 | step p99 |")
    print("|---|---|---|---:|---:|---:|---:|")
    for mode, rows in out["ours"].items():
        for task, s in rows.items():
            print(f"| ours | {task} | {mode} | {s['reset_p50_ms']:.1f} | {s['reset_p99_ms']:.1f} | "
                  f"{s['step_p50_ms']:.1f} | {s['step_p99_ms']:.1f} |")
    for key, label in (("miniwob_ref", "miniwob (own env)"), ("browsergym_ref", "BrowserGym")):
        ref = out.get(key)
        if not ref:
            continue
        if "unavailable" in ref:
            print(f"| {label} | - | - | unavailable: {ref['unavailable'][:120]} | | | |")
            continue
        for task, s in ref["tasks"].items():
            print(f"| {label} | miniwob/{task} | its default | {s['reset_p50_ms']:.1f} | {s['reset_p99_ms']:.1f} | "
                  f"{s['step_p50_ms']:.1f} | {s['step_p99_ms']:.1f} |")
    print(f"\n## throughput ({THROUGHPUT_TASK}, click on the instruction box, reset every {STEPS_PER_EPISODE} steps)")
    print("| env | how | parallel envs | env calls/s | CPU ms per call: python / driver / browser / other | cores busy |")
    print("|---|---|---:|---:|---|---:|")
    rows = [("ours", "threads, one browser", out.get("throughput", [])),
            ("ours", "make_vec async: processes, one browser each", out.get("throughput_vec", [])),
            ("miniwob (own env)", "processes, one browser each", out.get("miniwob_ref_parallel", []))]
    for label, how, runs in rows:
        for r in runs:
            if "unavailable" in r:
                print(f"| {label} | {how} | - | unavailable: {r['unavailable'][:100]} | | |")
                continue
            c = r["cpu_ms_per_call"]
            busy = r["calls_per_s"] * sum(c.values()) / 1000  # cores this run kept busy on average
            print(f"| {label} | {how} | {int(r['envs'])} | {r['calls_per_s']:.1f} | "
                  f"{c['python']:.1f} / {c['driver']:.1f} / {c['browser']:.1f} / {c['other']:.1f} | {busy:.2f} |")


if __name__ == "__main__":
    main()

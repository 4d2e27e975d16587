"""Web env latency: our WebEnv (Playwright async on a loop thread, Debian Chromium) beside MiniWoB++'s own env.

What is timed, all in ONE run on the same machine (the references come from ``benchmarks/web_miniwob_ref.py``):

* ours, MiniWoB++ tasks (``arl/web.miniwob-v0``, ``task=...``) -- the SAME tasks and the same action as the
  references: ``reset(seed=i)``, then ``STEPS_PER_EPISODE`` steps of ``click(<bid of #area>)`` (the task area; the
  click ends no episode). Each step returns the full text observation (accessibility tree) and the validator's
  reading of the page state. Two observation modes: ``axtree`` and ``axtree+screenshot`` (PNG in info).
* ours, own tasks (``arl/web.click-button-v0``, ``arl/web.enter-text-v0``): the same loop, clicking the ``h1``.
* throughput: N = 1, 2, 4 envs (``arl/web.miniwob-v0``, ``click-test``), each in its own thread sharing the process's
  one browser, stepping ``click(#area)`` with a reset every ``STEPS_PER_EPISODE`` steps, for a fixed time: total env
  calls (steps + resets) per second.
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
import sys
import threading
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gymnasium as gym  # noqa: E402

import arl_envs  # noqa: E402,F401  (registers the ids)
from arl_envs.envs.web.browser import hold_browser  # noqa: E402
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


def throughput(n_envs: int, seconds: float) -> dict[str, float]:
    """Total steps/s of ``n_envs`` envs stepped in parallel threads (one shared browser)."""
    envs = [gym.make("arl/web.miniwob-v0", task="click-test") for _ in range(n_envs)]
    counts = [0] * n_envs
    errors: list[BaseException] = []
    start = threading.Barrier(n_envs + 1)
    stop = threading.Event()

    def work(i: int) -> None:
        try:
            env = envs[i]
            env.reset(seed=i)
            action = _area_action(env, "#area")
            start.wait()
            while not stop.is_set():
                _, _, term, trunc, _ = env.step(action)
                counts[i] += 1
                if term or trunc or counts[i] % STEPS_PER_EPISODE == 0:
                    env.reset()
                    counts[i] += 1  # a reset counts as one env call
                    action = _area_action(env, "#area")  # (the bid stays valid while the page lives)
        except BaseException as exc:  # reported after the run
            errors.append(exc)
            with contextlib.suppress(threading.BrokenBarrierError):
                start.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_envs)]
    try:
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    finally:
        for e in envs:
            e.close()
    if errors:
        raise errors[0]
    return {"envs": float(n_envs), "calls_per_s": sum(counts) / elapsed}


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
    if not args.no_reference:
        from web_miniwob_ref import browsergym_reference_latency, miniwob_reference_latency

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
    print("\n| parallel envs (threads, one browser) | env calls/s |")
    print("|---:|---:|")
    for r in out["throughput"]:
        print(f"| {int(r['envs'])} | {r['calls_per_s']:.1f} |")


if __name__ == "__main__":
    main()

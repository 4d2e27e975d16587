"""Reference latencies for ``benchmarks/web_latency.py``: the ``miniwob`` package's OWN env (and BrowserGym's).

What is timed (per task, one env, one browser):

* ``miniwob_reference_latency``: the ``miniwob`` package's Gymnasium env (``miniwob.environment.MiniWoBEnvironment``,
  Selenium + chromedriver + Debian's Chromium, headless, pages from ``file://``), screenshots OFF
  (``options={"record_screenshots": False}``), ``wait_ms=0`` (its default). ``reset(seed=i)`` is timed, then
  ``STEPS_PER_EPISODE`` steps of ``CLICK_ELEMENT`` on the task's ``#area`` element (the task area; a click there ends no
  episode in the tasks used, so every timed step is a real in-episode step). Each of its steps reads the DOM
  (``core.getDOMInfo()``) and the reward globals, i.e. produces a full observation. If an episode does end,
  the next step is preceded by an (untimed) reset.
* ``browsergym_reference_latency``: BrowserGym's MiniWoB tasks (``browsergym-miniwob``) at their default
  settings, in the interpreter named by ``$ARL_BROWSERGYM_PYTHON`` (BrowserGym pins ``playwright==1.44``, so it
  lives in its own venv); see the function.

The ``miniwob`` env needs ``chromedriver`` (Debian: ``apt-get install -y chromium-driver``) and finds the browser
through ``MINIWOB_CHROME_BINARY``/``MINIWOB_CHROMEDRIVER`` (set here from ``ARL_ENVS_CHROMIUM`` or PATH), so
Selenium Manager never tries to download a driver.

Run alone: ``python benchmarks/web_miniwob_ref.py [--steps N] [task ...]`` prints the numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from typing import Any

#: Tasks used when none are given: cheap, common ones whose ``#area`` click never ends the episode.
DEFAULT_TASKS = ("click-test", "click-button", "click-checkboxes", "enter-text", "login-user")
#: Steps per task when not given.
DEFAULT_STEPS = 20
#: Timed steps per episode: a new (timed) reset every this many steps, so resets are sampled too.
STEPS_PER_EPISODE = 5


def _percentile(values: list[float], q: float) -> float:
    """``q``-th percentile (0-100) by linear interpolation; NaN for an empty list."""
    if not values:
        return float("nan")
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100.0
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _summary(reset_s: list[float], step_s: list[float]) -> dict[str, float]:
    """p50/p99 of reset and step latencies in milliseconds, and the sample counts."""
    return {
        "reset_p50_ms": 1000 * _percentile(reset_s, 50),
        "reset_p99_ms": 1000 * _percentile(reset_s, 99),
        "step_p50_ms": 1000 * _percentile(step_s, 50),
        "step_p99_ms": 1000 * _percentile(step_s, 99),
        "step_mean_ms": 1000 * statistics.fmean(step_s) if step_s else float("nan"),
        "n_resets": float(len(reset_s)),
        "n_steps": float(len(step_s)),
    }


def _chromium_paths() -> tuple[str, str]:
    """(chromium binary, chromedriver) paths.

    Raises:
        RuntimeError: One of them is not installed (the message names the apt package).
    """
    binary = os.environ.get("ARL_ENVS_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not binary:
        raise RuntimeError("no Chromium found: apt-get install -y chromium (or set ARL_ENVS_CHROMIUM)")
    if not driver:
        raise RuntimeError("no chromedriver found: apt-get install -y chromium-driver")
    return binary, driver


def miniwob_reference_latency(tasks: list[str] | tuple[str, ...] = DEFAULT_TASKS,
                              n_steps: int = DEFAULT_STEPS) -> dict[str, Any]:
    """Time the ``miniwob`` package's own Gymnasium env on ``tasks`` (screenshots off).

    Args:
        tasks: MiniWoB++ task names (``"click-test"``, ...), each run in its own env (its own Chromium).
        n_steps: Timed steps per task; a timed reset starts each episode of ``STEPS_PER_EPISODE`` steps.

    Returns:
        ``{"impl": "miniwob <version> (selenium)", "tasks": {task: summary}, "all": summary}``, where a summary
        has ``reset_p50_ms``, ``reset_p99_ms``, ``step_p50_ms``, ``step_p99_ms``, ``step_mean_ms`` (milliseconds),
        ``n_resets`` and ``n_steps``. ``"all"`` pools every task's samples.

    Raises:
        RuntimeError: Chromium or chromedriver is missing.
        ImportError: The ``miniwob`` package is not installed (``pip install miniwob``).
    """
    binary, driver = _chromium_paths()
    os.environ.setdefault("MINIWOB_CHROME_BINARY", binary)
    os.environ.setdefault("MINIWOB_CHROMEDRIVER", driver)
    import gymnasium as gym
    import miniwob
    from miniwob.action import ActionTypes

    gym.register_envs(miniwob)
    per_task: dict[str, Any] = {}
    all_reset: list[float] = []
    all_step: list[float] = []
    for task in tasks:
        env = gym.make(f"miniwob/{task}-v1")
        reset_s: list[float] = []
        step_s: list[float] = []
        try:
            raw = env.unwrapped
            obs, _ = env.reset(seed=0, options={"record_screenshots": False})  # warm-up (browser start)
            episode = 0
            need_reset = True
            while len(step_s) < n_steps:
                if need_reset:
                    t0 = time.perf_counter()
                    obs, _ = env.reset(seed=episode, options={"record_screenshots": False})
                    reset_s.append(time.perf_counter() - t0)
                    episode += 1
                    need_reset = False
                action = raw.create_action(ActionTypes.CLICK_ELEMENT, ref=_element_ref(obs, "area"))
                t0 = time.perf_counter()
                obs, _, terminated, truncated, _ = env.step(action)
                step_s.append(time.perf_counter() - t0)
                need_reset = terminated or truncated or len(step_s) % STEPS_PER_EPISODE == 0
        finally:
            env.close()
        per_task[task] = _summary(reset_s, step_s)
        all_reset += reset_s
        all_step += step_s
    return {"impl": f"miniwob {getattr(miniwob, '__version__', '?')} (selenium)", "tasks": per_task,
            "all": _summary(all_reset, all_step)}


def _element_ref(obs: dict[str, Any], element_id: str) -> int:
    """MiniWoB ref of the element with DOM id ``element_id`` (or of the first element if there is none)."""
    for el in obs["dom_elements"]:
        if el.get("id") == element_id:
            return int(el["ref"])
    return int(obs["dom_elements"][0]["ref"])


def _miniwob_throughput_worker(task: str, seed: int, steps_per_episode: int, barrier: Any, stop: Any,
                               counts: Any, i: int) -> None:
    """One process of :func:`miniwob_reference_throughput`: its own miniwob env (its own Chromium)."""
    import gymnasium as gym
    import miniwob
    from miniwob.action import ActionTypes

    gym.register_envs(miniwob)
    env = gym.make(f"miniwob/{task}-v1")
    try:
        raw = env.unwrapped
        opts = {"record_screenshots": False}
        obs, _ = env.reset(seed=seed, options=opts)
        barrier.wait()  # every worker is ready: the clock starts
        n = in_episode = 0
        while not stop.is_set():
            obs, _, term, trunc, _ = env.step(raw.create_action(ActionTypes.CLICK_ELEMENT,
                                                                ref=_element_ref(obs, "query")))
            n, in_episode = n + 1, in_episode + 1
            if term or trunc or in_episode == steps_per_episode:
                obs, _ = env.reset(options=opts)
                n, in_episode = n + 1, 0  # a reset counts as one env call
            counts[i] = n
        barrier.wait()  # the parent reads the CPU counters while every worker is still alive
        barrier.wait()
    finally:
        env.close()


def miniwob_reference_throughput(task: str, n_procs: int, seconds: float, steps_per_episode: int = STEPS_PER_EPISODE,
                                 cpu_fn: Any = None) -> dict[str, Any]:
    """Env calls/s (steps + resets) of the ``miniwob`` package's own env in ``n_procs`` processes (one Chromium each).

    Each process steps ``CLICK_ELEMENT`` on the instruction box (``#query``; ends no episode) with a reset every
    ``steps_per_episode`` steps, for ``seconds`` after every process is ready.

    Args:
        task: MiniWoB++ task name.
        n_procs: Parallel processes.
        seconds: Measured wall time.
        steps_per_episode: Steps between resets.
        cpu_fn: Optional ``() -> {kind: cpu seconds}`` of this process tree (see ``web_latency.tree_cpu_seconds``);
            when given, the result has ``cpu_ms_per_call``.

    Returns:
        ``{"envs", "calls_per_s"[, "cpu_ms_per_call"]}``.

    Raises:
        RuntimeError: Chromium or chromedriver is missing, or a worker failed.
    """
    import multiprocessing as mp

    binary, driver = _chromium_paths()
    os.environ.setdefault("MINIWOB_CHROME_BINARY", binary)
    os.environ.setdefault("MINIWOB_CHROMEDRIVER", driver)
    ctx = mp.get_context("spawn")
    barrier, stop, counts = ctx.Barrier(n_procs + 1, timeout=120), ctx.Event(), ctx.Array("l", n_procs)
    procs = [ctx.Process(target=_miniwob_throughput_worker, args=(task, i, steps_per_episode, barrier, stop, counts, i))
             for i in range(n_procs)]
    for p in procs:
        p.start()
    try:
        barrier.wait()
        cpu0 = cpu_fn() if cpu_fn else None
        t0 = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        barrier.wait()
        elapsed = time.perf_counter() - t0
        cpu1 = cpu_fn() if cpu_fn else None
        barrier.wait()
    except Exception as exc:
        raise RuntimeError(f"a miniwob worker failed: {exc}") from exc
    finally:
        stop.set()
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
    calls = float(sum(counts))
    out: dict[str, Any] = {"envs": float(n_procs), "calls_per_s": calls / elapsed}
    if cpu0 is not None and cpu1 is not None:
        out["cpu_ms_per_call"] = {k: 1000 * (cpu1[k] - cpu0[k]) / max(calls, 1.0) for k in cpu0}
    return out


#: Environment variable naming a Python interpreter that has ``browsergym-miniwob`` installed. BrowserGym pins
#: ``playwright==1.44`` (the system has a newer one), so it is installed into its own virtual environment, e.g.
#: ``python -m venv --system-site-packages /tmp/bgvenv && /tmp/bgvenv/bin/pip install browsergym-miniwob``.
BROWSERGYM_PYTHON_ENV = "ARL_BROWSERGYM_PYTHON"


def browsergym_reference_latency(tasks: list[str] | tuple[str, ...] = DEFAULT_TASKS,
                                 n_steps: int = DEFAULT_STEPS) -> dict[str, Any]:
    """Time BrowserGym's MiniWoB tasks (``browsergym-miniwob``) at their default settings.

    BrowserGym's env (``browsergym/miniwob.<task>``) runs with its defaults (its own observation: DOM snapshot,
    accessibility tree AND screenshot at every step, its action waits) on the ``miniwob`` package's pages
    (``MINIWOB_URL`` = ``file://`` path). Two local adaptations, neither changing what a step does: Playwright's
    browser download does not work here, so ``chromium.launch`` gets ``executable_path`` (Debian's Chromium),
    and the timed step is ``click(<bid of #area>)`` (the same element the ``miniwob`` reference clicks).

    It runs in the interpreter named by ``$ARL_BROWSERGYM_PYTHON`` (see :data:`BROWSERGYM_PYTHON_ENV`), or in
    this one if ``browsergym.miniwob`` imports here.

    Args:
        tasks: MiniWoB++ task names.
        n_steps: Timed steps per task.

    Returns:
        The same shape as :func:`miniwob_reference_latency` (``impl`` names the BrowserGym version).

    Raises:
        RuntimeError: BrowserGym is not installed (the message says how to install it) or its run failed.
    """
    import subprocess
    import sys

    python = os.environ.get(BROWSERGYM_PYTHON_ENV)
    if not python:
        try:
            import browsergym.miniwob  # noqa: F401
        except ImportError:
            raise RuntimeError(
                "browsergym-miniwob is not importable here; install it into its own venv (it pins playwright 1.44) "
                f"and set ${BROWSERGYM_PYTHON_ENV} to that venv's python"
            ) from None
        python = sys.executable
    cmd = [python, os.path.abspath(__file__), "--browsergym-worker", "--steps", str(n_steps), *tasks]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60 + 30 * n_steps * len(tasks))
    if proc.returncode != 0:
        raise RuntimeError(f"browsergym run failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _browsergym_worker(tasks: list[str], n_steps: int) -> dict[str, Any]:
    """Run inside an interpreter with browsergym-miniwob: time its envs (see browsergym_reference_latency)."""
    import pathlib

    import browsergym.core
    import browsergym.core.env as bg_env
    import browsergym.miniwob
    import gymnasium as gym
    import miniwob

    binary, _ = _chromium_paths()
    os.environ.setdefault("MINIWOB_URL", (pathlib.Path(miniwob.__file__).parent / "html" / "miniwob").as_uri() + "/")
    pw = bg_env._get_global_playwright()
    launch = pw.chromium.launch

    def launch_with_system_chromium(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("executable_path", binary)
        return launch(*args, **kwargs)

    pw.chromium.launch = launch_with_system_chromium  # BrowserGym also launches a chat window browser
    per_task: dict[str, Any] = {}
    all_reset: list[float] = []
    all_step: list[float] = []
    for task in tasks:
        env = gym.make(f"browsergym/miniwob.{task}")
        reset_s: list[float] = []
        step_s: list[float] = []
        try:
            env.reset(seed=0)  # warm-up (browser start)
            episode = 0
            need_reset = True
            while len(step_s) < n_steps:
                if need_reset:
                    t0 = time.perf_counter()
                    env.reset(seed=episode)
                    reset_s.append(time.perf_counter() - t0)
                    episode += 1
                    need_reset = False
                bid = env.unwrapped.page.evaluate("document.getElementById('area').getAttribute('bid')")
                t0 = time.perf_counter()
                _, _, terminated, truncated, _ = env.step(f'click("{bid}")')
                step_s.append(time.perf_counter() - t0)
                need_reset = terminated or truncated or len(step_s) % STEPS_PER_EPISODE == 0
        finally:
            env.close()
        per_task[task] = _summary(reset_s, step_s)
        all_reset += reset_s
        all_step += step_s
    version = getattr(browsergym.core, "__version__", "?")
    return {"impl": f"browsergym-miniwob {version} (playwright sync, default settings)", "tasks": per_task,
            "all": _summary(all_reset, all_step)}


def main() -> None:
    """CLI: print the reference numbers as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("tasks", nargs="*", default=list(DEFAULT_TASKS))
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    ap.add_argument("--browsergym-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.browsergym_worker:
        print(json.dumps(_browsergym_worker(args.tasks, args.steps)))
        return
    out: dict[str, Any] = {"miniwob": miniwob_reference_latency(args.tasks, args.steps)}
    try:
        out["browsergym"] = browsergym_reference_latency(args.tasks, args.steps)
    except RuntimeError as exc:
        out["browsergym"] = {"unavailable": str(exc)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

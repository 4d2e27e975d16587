"""Code envs compute references without interpreter-wide state, so envs stepped from threads stay correct."""

from __future__ import annotations

import sys
import threading

import gymnasium as gym

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.envs.code.generated import generated_task
from arl_envs.envs.code.isolated import IsolatedPackage, run_program
from arl_envs.envs.code.repo import parse_repo_id, repo_task
from arl_envs.envs.code.repo_templates import TEMPLATES

#: Program-mode families (their references read stdin and print).
PROGRAM_FAMILIES = ["eve", "yes_no", "word_freq"]
N_THREADS = 4
SEEDS_PER_THREAD = 6


def _snapshot() -> tuple:
    return sys.stdin, sys.stdout, sys.stderr, list(sys.meta_path), list(sys.path)


def test_run_program_and_isolated_package_are_private() -> None:
    src = "import sys\nn = int(input())\nprint(n * 2)\nprint(sys.stdin.read().split(), file=sys.stdout)\n"
    before = _snapshot()
    assert run_program(src, "21\na b\n") == "42\n['a', 'b']\n"
    files = {
        "isopkg/__init__.py": "from .a import f\n",
        "isopkg/a.py": "from isopkg.b import g\ndef f(x):\n    return g(x) + 1\n",
        "isopkg/b.py": "import math\ndef g(x):\n    return math.floor(x)\n",
    }
    pkg = IsolatedPackage("isopkg", files)
    assert pkg.function("a", "f")(2.5) == 3 and pkg.load("isopkg").f is pkg.function("a", "f")
    assert _snapshot() == before and not any(m == "isopkg" or m.startswith("isopkg.") for m in sys.modules)


def test_resets_from_threads_match_serial_and_leave_sys_alone() -> None:
    """Threads reset functions-v0 (program tasks) and repo-v1 while another thread prints; each task equals the
    task generated alone, and ``sys`` streams, ``sys.path``, ``sys.meta_path`` and ``sys.modules`` are untouched."""
    before = _snapshot()
    modules_before = set(sys.modules)  # lazy imports of real libraries may add entries; ours must not
    results: dict[tuple[int, int], tuple] = {}
    errors: list[BaseException] = []
    stop = threading.Event()

    def noise() -> None:  # a trainer logging from another thread: its prints must not end up in a reference
        while not stop.is_set():
            print("NOISE " * 20)

    def worker(k: int) -> None:
        try:
            fn_env = gym.make("arl/code.functions-v0", families=PROGRAM_FAMILIES, difficulty=2)
            repo_env = gym.make("arl/code.repo-v1")
            for s in range(SEEDS_PER_THREAD):
                seed = 100 * k + s
                _, info = fn_env.reset(seed=seed)
                task = fn_env.unwrapped.task
                _, rinfo = repo_env.reset(seed=seed)
                rtask = repo_env.unwrapped.task
                results[(k, s)] = (info["task_id"], task.visible, task.hidden, rinfo["task_id"], rtask.visible,
                                   rtask.hidden)
            fn_env.close()
            repo_env.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    printer = threading.Thread(target=noise)
    printer.start()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    printer.join()
    assert not errors, errors
    assert len(results) == N_THREADS * SEEDS_PER_THREAD
    for task_id, visible, hidden, repo_id, rvisible, rhidden in results.values():
        _, family, difficulty, seed = task_id.split("/")
        alone = generated_task(family, int(difficulty), int(seed))
        assert (visible, hidden) == (alone.visible, alone.hidden), task_id
        assert all("NOISE" not in str(c.expected) for c in visible + hidden)
        ralone = repo_task(*parse_repo_id(repo_id))
        assert (rvisible, rhidden) == (ralone.visible, ralone.hidden), repo_id
    assert _snapshot() == before
    new = set(sys.modules) - modules_before
    packages = {t.package for t in TEMPLATES.values()}
    assert not {m for m in new if m.split(".")[0] in packages or str(getattr(sys.modules[m], "__file__", "")).startswith("<memory>")}


def test_expert_episodes_in_threads_succeed(sandbox) -> None:  # noqa: ARG001 - skips where no sandbox runs
    """One expert episode of each code id per thread, all at once: every one is solved."""
    outcomes: list[tuple[str, bool]] = []
    errors: list[BaseException] = []

    def worker(env_id: str, seed: int) -> None:
        try:
            env = gym.make(env_id, **({"families": PROGRAM_FAMILIES} if "functions" in env_id else {}))
            env.reset(seed=seed)
            done, info = False, {}
            while not done:
                _, _, term, trunc, info = env.step(env.unwrapped.expert_action())
                done = term or trunc
            outcomes.append((env_id, bool(info["success"])))
            env.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i, s)) for i in ("arl/code.functions-v0", "arl/code.repo-v1")
               for s in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(outcomes) == sorted((i, True) for i in ("arl/code.functions-v0", "arl/code.repo-v1") for _ in (0, 1))

"""Snapshot + restore cost per env family, against a ``reset`` of the same env, interleaved in the same run.

For each id: ``reset(seed=0)``, up to ``--turns`` expert actions (fewer if the episode would end), then rounds of
``snapshot()`` / ``reset(seed=0)`` (the reference) / ``restore(snapshot)``, each timed, in that order in every
round, until ``--min-s`` seconds or ``--max-rounds`` rounds. Reported: the medians (ms), the ratio
``(snapshot + restore) / reset``, the mechanism (``copy`` or ``replay``), the turns saved and the pickled size.
A replay restore costs one reset plus one step per saved turn, so its ratio grows with ``--turns``.

Usage::

    python benchmarks/snapshot_cost.py                       # one id per family (web and ScienceWorld included)
    python benchmarks/snapshot_cost.py arl/embodied.sokoban-v0 --turns 5
"""

from __future__ import annotations

import argparse
import contextlib
import pickle
import statistics
import sys
import time

import gymnasium as gym

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.core.snapshot import SnapshotError

FAMILIES = (
    "arl/math.arithmetic-v1",
    "arl/math.dataset-v1",
    "arl/math.tool-v1",
    "arl/math.formal-v0",
    "arl/memory.bank-v1",
    "arl/selfplay.propose-solve-v1",
    "arl/search.multihop-v1",
    "arl/search.rewrite-v0",
    "arl/code.functions-v0",
    "arl/code.repo-v1",
    "arl/multiagent.tictactoe-v1",
    "arl/multiagent.kuhn_poker-v1",
    "arl/multiagent.negotiation-v1",
    "arl/multiagent.gridpath-v1",
    "arl/embodied.household-v0",
    "arl/embodied.sokoban-v0",
    "arl/embodied.frozenlake-v0",
    "arl/embodied.babyai-v0",
    "arl/embodied.scienceworld-v0",
    "arl/web.login-v0",
    "arl/web.miniwob-v0",
    "arl/example.guess-v0",
)


def measure(env_id: str, turns: int, min_s: float, max_rounds: int) -> dict[str, object]:
    env = gym.make(env_id)
    u = env.unwrapped
    try:
        env.reset(seed=0)
        played = 0
        for _ in range(turns):
            probe = u.snapshot()
            *_, term, trunc, _ = env.step(u.expert_action())
            if term or trunc:  # keep the saved state mid-episode
                u.restore(probe)
                break
            played += 1
        snap = u.snapshot()
        try:
            size = len(pickle.dumps(snap))
        except SnapshotError:
            size = -1
        t_snap, t_reset, t_restore = [], [], []
        start = time.perf_counter()
        while len(t_snap) < max_rounds and (time.perf_counter() - start < min_s or len(t_snap) < 3):
            t0 = time.perf_counter()
            u.snapshot()
            t1 = time.perf_counter()
            u.reset(seed=0)
            t2 = time.perf_counter()
            u.restore(snap)
            t3 = time.perf_counter()
            t_snap.append(t1 - t0)
            t_reset.append(t2 - t1)
            t_restore.append(t3 - t2)
        assert u.turn == played
        ms = {k: 1e3 * statistics.median(v) for k, v in (("snap", t_snap), ("reset", t_reset), ("restore", t_restore))}
        return {
            "id": env_id, "mode": u.snapshot_mode, "turns": played, "rounds": len(t_snap), "bytes": size,
            **ms, "ratio": (ms["snap"] + ms["restore"]) / ms["reset"],
        }
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="*", default=list(FAMILIES))
    ap.add_argument("--turns", type=int, default=3, help="expert turns before the snapshot (default 3)")
    ap.add_argument("--min-s", type=float, default=1.0, help="seconds of rounds per id (default 1)")
    ap.add_argument("--max-rounds", type=int, default=200)
    args = ap.parse_args(argv)
    hold: contextlib.AbstractContextManager = contextlib.nullcontext()
    if any(i.startswith("arl/web.") for i in args.ids):
        from arl_envs.envs.web.browser import hold_browser

        hold = hold_browser()
    print("| env id | mechanism | turns saved | snapshot ms | restore ms | reset ms | (snapshot+restore)/reset "
          "| pickled bytes | rounds |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    with hold:
        for env_id in args.ids:
            try:
                r = measure(env_id, args.turns, args.min_s, args.max_rounds)
            except Exception as exc:  # noqa: BLE001 - one id failing (no Java, no Chromium) is reported, not fatal
                print(f"| {env_id} | error: {type(exc).__name__}: {str(exc)[:80]} | | | | | | | |", flush=True)
                continue
            size = "unpicklable" if r["bytes"] == -1 else f"{r['bytes']:,}"
            print(f"| {r['id']} | {r['mode']} | {r['turns']} | {r['snap']:.3f} | {r['restore']:.3f} | "
                  f"{r['reset']:.3f} | {r['ratio']:.2f}x | {size} | {r['rounds']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

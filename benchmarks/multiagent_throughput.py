"""Game steps per second of ``tictactoe_v0`` (our PettingZoo AEC text env) beside TextArena's ``TicTacToe-v0``.

Both play the same kind of episode in the same process: both players pick a uniformly random legal move from a
seeded generator, the mover's observation string is fetched before every move (``env.last()`` here,
``env.get_observation()`` in TextArena), and a step is one move. Two settings:

* ``fresh``: a new env per episode (construction + reset + play);
Rates are game steps per CPU second of this process (``time.process_time``), measured in alternating rounds.

* ``reused``: one env instance over 10,000 episodes (reset + play), with steps/s per block of episodes to show
  whether it stays flat, and the longest observation of the first and last block (do observations grow?).

TextArena's reused run stops after ``--ta-reuse-seconds`` (default 30) when it slows down, since its history grows.

Usage: ``python benchmarks/multiagent_throughput.py [--episodes 10000] [--fresh-episodes 3000]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from arl_envs.envs.multiagent import tictactoe_v0  # noqa: E402

#: CPU seconds of this process: both envs are single-threaded pure Python, and on a shared machine wall time
#: swings with other processes' load (we saw 3x between consecutive rounds); CPU time measures our own work.
_clock = time.process_time


def _ours_episode(env, seed: int, rng: np.random.Generator) -> tuple[int, int]:
    env.reset(seed=seed)
    steps = longest = 0
    while env.agents:
        obs, _, term, trunc, info = env.last()
        longest = max(longest, len(obs))
        if term or trunc:
            env.step(None)
            continue
        legal = info["legal_moves"]
        env.step(f"[{legal[int(rng.integers(0, len(legal)))]}]")
        steps += 1
    return steps, longest


def _ta_legal(env) -> list[int]:
    board = env.state.game_state["board"]
    return [r * 3 + c for r in range(3) for c in range(3) if board[r][c] == ""]


def _ta_episode(env, seed: int, rng: np.random.Generator) -> tuple[int, int]:
    env.reset(num_players=2, seed=seed)
    steps = longest = 0
    done = False
    while not done:
        _, obs = env.get_observation()
        longest = max(longest, len(str(obs)))
        legal = _ta_legal(env)
        done, _ = env.step(action=f"[{legal[int(rng.integers(0, len(legal)))]}]")
        steps += 1
    return steps, longest


def fresh(make, episode, n: int, first_seed: int = 0) -> float:
    """Steps/s with a new env per episode."""
    rng = np.random.default_rng(first_seed)
    steps = 0
    start = _clock()
    for i in range(first_seed, first_seed + n):
        s, _ = episode(make(), i, rng)
        steps += s
    return steps / (_clock() - start)


def fresh_interleaved(makers: dict, n: int, rounds: int) -> dict:
    """:func:`fresh` for each env in alternating rounds of ``n // rounds`` episodes (a shared, loaded machine
    drifts: alternating puts both under the same load); the median rate of each and the median per-round ratio."""
    per = max(1, n // rounds)
    rates: dict[str, list[float]] = {k: [] for k in makers}
    for r in range(rounds):
        for name, (make, episode) in makers.items():
            rates[name].append(fresh(make, episode, per, first_seed=r * per))
    out = {name: round(float(np.median(v))) for name, v in rates.items()}
    if len(makers) == 2:
        a, b = list(makers)
        out["median_round_ratio"] = round(float(np.median([x / y for x, y in zip(rates[a], rates[b])])), 2)
        out["round_ratios"] = [round(x / y, 2) for x, y in zip(rates[a], rates[b])]
    return out


def reused(make, episode, n: int, block: int, max_seconds: float | None = None) -> dict:
    """Steps/s per block of ``block`` episodes on one instance, and the longest observation per block."""
    rng = np.random.default_rng(0)
    env = make()
    blocks, longest = [], []
    steps, t0, blen = 0, _clock(), 0
    start = t0
    for i in range(n):
        s, lo = episode(env, i, rng)
        steps += s
        blen = max(blen, lo)
        if (i + 1) % block == 0:
            now = _clock()
            blocks.append(steps / (now - t0))
            longest.append(blen)
            steps, t0, blen = 0, now, 0
            if max_seconds is not None and now - start > max_seconds:
                break
    return {"episodes": len(blocks) * block, "steps_per_s_by_block": [round(b) for b in blocks],
            "longest_obs_by_block": longest}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=10_000, help="episodes of the reused-instance runs")
    ap.add_argument("--fresh-episodes", type=int, default=3_000, help="episodes of the fresh-env runs")
    ap.add_argument("--rounds", type=int, default=30, help="alternating rounds of the fresh-env runs")
    ap.add_argument("--block", type=int, default=1_000, help="episodes per reported block")
    ap.add_argument("--ta-reuse-seconds", type=float, default=30.0, help="cap on TextArena's reused run")
    args = ap.parse_args()

    results: dict = {"machine": f"{platform.processor() or platform.machine()}, Python {platform.python_version()}"}
    ours_make = tictactoe_v0.env
    makers = {"ours": (ours_make, _ours_episode)}
    try:
        import textarena as ta
    except ImportError:
        results["textarena"] = "not installed (pip install textarena)"
        ta = None
    else:
        results["textarena_version"] = getattr(ta, "__version__", "?")
        makers["textarena"] = (lambda: ta.make("TicTacToe-v0"), _ta_episode)
    results["fresh_steps_per_s"] = fresh_interleaved(makers, args.fresh_episodes, args.rounds)
    results["ours_reused"] = reused(ours_make, _ours_episode, args.episodes, args.block)
    if ta is not None:
        results["textarena_reused"] = reused(makers["textarena"][0], _ta_episode, args.episodes, args.block // 10,
                                             args.ta_reuse_seconds)
    blocks = results["ours_reused"]["steps_per_s_by_block"]
    results["ours_reused_last_over_first_block"] = round(blocks[-1] / blocks[0], 2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""reasoning-gym ids vs reasoning-gym's own loop: items per second, interleaved in one run.

Per dataset, two series alternate round by round (``--rounds``), each timed for ``--items`` items:

* reference: reasoning-gym's own generate + score loop, ``item = dataset[i]`` then
  ``dataset.score_answer(item["answer"], item)`` on the same dataset object, over the same item indices that our
  resets draw (item cost varies a lot between items, so both series make the same items);
* ours: ``env.reset()`` (seeded once per round) then ``env.step(env.unwrapped.expert_action())`` on ``gym.make("arl/reasoning.<name>-v0")``
  (wrappers included): the item is drawn, the prompt built, the reply parsed and scored by the same ``score_answer``.

The ratio is ours / reference in items per second (1.0 = no overhead; the target is >= 0.8). The median over rounds
is reported. ``python benchmarks/reasoning_gym_throughput.py [--items 300] [--rounds 5] [--all | dataset ...]``
(``--all``: every dataset of ``datasets.json``; the summary then counts the datasets at or above 0.8).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import arl_envs  # noqa: F401 - registers the ids

#: Datasets timed by default: cheap items (where a per-step overhead shows most) and typical ones.
DEFAULT_DATASETS = ("chain_sum", "basic_arithmetic", "letter_counting", "word_sorting", "knights_knaves",
                    "mini_sudoku", "family_relationships", "shortest_path", "jugs")


def drawn_indices(env, start: int, n: int) -> list[int]:
    """The item indices ``env.reset(seed=i)`` draws for ``i`` in ``[start, start + n)`` (not timed)."""
    out = []
    for i in range(start, start + n):
        env.reset(seed=start) if i == start else env.reset()
        out.append(env.unwrapped.index)
    return out


def reference(dataset, indices: list[int]) -> float:
    n = len(indices)
    t = time.perf_counter()
    total = 0.0
    for i in indices:
        item = dataset[i]
        total += dataset.score_answer(item["answer"], item)
    dt = time.perf_counter() - t
    assert total == n, f"the reference's own answers scored {total}/{n}"
    return n / dt


def ours(env, start: int, n: int) -> float:
    t = time.perf_counter()
    total = 0.0
    for i in range(start, start + n):
        env.reset(seed=start) if i == start else env.reset()  # one seed, then the env's own stream (a trainer's loop)
        total += env.step(env.unwrapped.expert_action())[1]
    dt = time.perf_counter() - t
    assert total == n, f"the expert scored {total}/{n}"
    return n / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="*", default=list(DEFAULT_DATASETS))
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--all", action="store_true", help="every dataset of datasets.json")
    args = ap.parse_args()
    if args.all:
        from arl_envs.envs.reasoning.env import dataset_table

        args.datasets = list(dataset_table()["datasets"])
    print("| dataset | reasoning-gym items/s | ours items/s | ratio (ours / theirs) |")
    print("|---|---:|---:|---:|")
    ratios = []
    for name in args.datasets:
        env = gym.make(f"arl/reasoning.{name}-v0")
        dataset = env.unwrapped._build()
        ours(env, 10**6, 20)  # warm both paths (imports, caches)
        reference(dataset, drawn_indices(env, 10**6, 20))
        ref, our = [], []
        for r in range(args.rounds):
            start = r * args.items
            indices = drawn_indices(env, start, args.items)
            if r % 2:
                our.append(ours(env, start, args.items))
                ref.append(reference(dataset, indices))
            else:
                ref.append(reference(dataset, indices))
                our.append(ours(env, start, args.items))
        ratio = statistics.median(o / f for o, f in zip(our, ref))
        ratios.append(ratio)
        print(f"| {name} | {statistics.median(ref):,.0f} | {statistics.median(our):,.0f} | {ratio:.2f} |", flush=True)
        env.close()
    print(f"\nmedian ratio over {len(ratios)} datasets: {statistics.median(ratios):.2f}; "
          f"min {min(ratios):.2f} ({args.datasets[ratios.index(min(ratios))]}); "
          f"{sum(r >= 0.8 for r in ratios)} of {len(ratios)} at or above 0.8")


if __name__ == "__main__":
    main()

"""Boot time of ``arl/code.swe-v0``: reset to the first observation vs a fresh ``pip install -e`` per episode.

Ours: ``env.reset()`` (fresh sandbox work directory, the cached project tree with the instance's mutation copied
in; the project was "installed" once: pure Python, importable from the tree). Peer, interleaved in the same run:
copy the same cached tree to a fresh directory and ``pip install --no-deps --no-build-isolation -e`` it into a
fresh prefix (what an episode costs when each one installs its project). Both offline.

    python benchmarks/swe_boot.py --episodes 10 --projects inflection cachetools [--sandbox docker]

On ``--sandbox docker`` a reset leases a warm pooled container and writes the tree into its ``/work``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gymnasium as gym

import arl_envs  # noqa: F401 - registers the ids
from arl_envs.envs.code.swe.projects import PROJECTS, project_tree


def peer_episode(project: str) -> float:
    """Seconds to copy the tree and ``pip install -e`` it into a fresh prefix."""
    tree = project_tree(PROJECTS[project])
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        work = Path(tmp) / "repo"
        shutil.copytree(tree, work)
        res = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
             "--disable-pip-version-check", "--prefix", str(Path(tmp) / "prefix"), "-e", str(work)],
            capture_output=True, text=True, check=False)
        took = time.perf_counter() - start
        if res.returncode != 0:
            raise RuntimeError(f"pip install -e failed for {project}: {res.stderr[-800:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--projects", nargs="+", default=["inflection", "cachetools"])
    ap.add_argument("--sandbox", default="bwrap", choices=["bwrap", "docker"])
    args = ap.parse_args()
    print("| project | sandbox | reset p50 (s) | reset p90 (s) | pip install -e p50 (s) | ratio |")
    print("|---|---|---|---|---|---|")
    for project in args.projects:
        env = gym.make("arl_envs:arl/code.swe-v0", project=project, split="all", sandbox=args.sandbox)
        env.reset(seed=0)  # sandbox start-up, tree cache: once per env, not per episode
        ours, peer = [], []
        for ep in range(args.episodes):
            start = time.perf_counter()
            env.reset(seed=ep + 1)
            ours.append(time.perf_counter() - start)
            peer.append(peer_episode(project))
        env.close()
        o50, p50 = statistics.median(ours), statistics.median(peer)
        o90 = sorted(ours)[max(0, int(0.9 * len(ours)) - 1)]
        print(f"| {project} | {args.sandbox} | {o50:.3f} | {o90:.3f} | {p50:.3f} | {p50 / o50:.1f}x |", flush=True)


if __name__ == "__main__":
    main()

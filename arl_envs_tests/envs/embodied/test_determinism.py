"""Same seed -> same world and episode, across processes with different string-hash seeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys

_SCRIPT = r"""
import json, sys
import gymnasium as gym
import arl_envs
from arl_envs.agents import RandomAgent
out = []
for env_id, kwargs in json.loads(sys.argv[1]):
  env = gym.make(env_id, **kwargs)
  for seed in range(3):
    obs, info = env.reset(seed=seed)
    out.append(obs)
    rand = RandomAgent(env, seed=seed, p_tool_call=0.0)
    for i in range(30):
        # expert moves mixed with admissible moves chosen by a seeded RNG
        adm = info["admissible_actions"]
        cmd = env.unwrapped.expert_action() if i % 2 else adm[int(rand.rng.integers(0, len(adm)))]
        obs, r, term, trunc, info = env.step(cmd)
        out.append([obs, r, term, trunc, info["admissible_actions"]])
        if term or trunc:
            break
print(json.dumps(out))
"""


CONFIGS = [
    ("arl/embodied.household-v0", {"difficulty": 5}),
    ("arl/embodied.sokoban-v0", {"size": 7, "num_boxes": 2}),
    ("arl/embodied.frozenlake-v0", {"slippery": True}),
]


def test_episodes_do_not_depend_on_the_hash_seed() -> None:
    runs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        proc = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(CONFIGS)], capture_output=True,
                              text=True, env=env, timeout=300, check=True)
        runs.append(json.loads(proc.stdout))
    assert len(runs[0]) > 3 * len(CONFIGS)
    assert runs[0] == runs[1]

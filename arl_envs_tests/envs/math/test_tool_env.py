"""arl/math.tool-v1 through the real bubblewrap sandbox."""

from __future__ import annotations

import shutil

import gymnasium as gym
import pytest

import arl_envs  # noqa: F401
from arl_envs.agents import ExpertAgent, run_episode

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap: apt-get install -y bubblewrap")


@pytest.mark.parametrize("source,kw", [("arithmetic", {"difficulty": 4}), ("countdown", {}), ("dataset", {})])
def test_expert_computes_then_answers(source: str, kw: dict) -> None:
    env = gym.make("arl/math.tool-v1", source=source, source_kwargs=kw)
    try:
        for seed in range(3):
            ep = run_episode(env, ExpertAgent(env), seed=seed)
            assert ep.success and ep.steps == 2, ep.observations
            assert ep.observations[1].startswith("Tool output:")
    finally:
        env.close()


def test_session_state_budget_restart_and_action_order() -> None:
    env = gym.make("arl/math.tool-v1", max_tool_calls=3, reward_weights={"tool": 1.0})
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step("```python\nx = 20 + 21\nprint(x)\n```")
        assert "41" in obs and reward == 1.0
        obs, *_ = env.step("<python>print(x + 1)</python>")
        assert "42" in obs and "1 python call(s) left" in obs
        obs, reward, *_ = env.step("<python>import os; os._exit(3)</python>")
        assert "state lost" in obs and reward == 0.0
        obs, reward, term, trunc, info = env.step("<python>print(x)</python>")
        assert "budget used up" in obs and not term and not trunc and info["action_error"] is None
        # Box after code: the answer counts. (Code after box would run instead.)
        gold = env.unwrapped.task.answer
        *_, term, _, info = env.step(f"```python\nprint(1)\n```\nSo \\boxed{{{gold}}}")
        assert term and info["success"]
    finally:
        env.close()


def test_episodes_do_not_share_state() -> None:
    env = gym.make("arl/math.tool-v1")
    try:
        env.reset(seed=0)
        env.step("<python>secret = 7\nopen('f.txt', 'w').write('x')</python>")
        env.reset(seed=1)
        obs, *_ = env.step("<python>import os\nprint('secret' in globals(), os.listdir('.'))</python>")
        assert "False []" in obs
    finally:
        env.close()


def test_python_tool_cannot_read_the_shipped_gold_answers() -> None:
    """Reward hack: with the package visible in the sandbox (installed under /usr/local, a bound python prefix or a
    site_packages entry), the tool grepped the question in the shipped GSM8K JSONL and boxed its answer (task 1)."""
    from pathlib import Path

    root = str(Path(arl_envs.__file__).resolve().parent.parent)
    try:
        env = gym.make("arl/math.tool-v1", source="dataset", sandbox_kwargs={"site_packages": [root]})
        env.reset(seed=0)
    except ValueError as exc:
        pytest.skip(f"the package's parent cannot be bound here: {exc}")
    try:
        question = env.unwrapped.task.question.strip()[:80]
        code = (
            "import glob, json\n"
            "for p in glob.glob('/opt/arl/site-packages*/arl_envs/envs/math/data/*.jsonl'):\n"
            "    for line in open(p):\n"
            "        row = json.loads(line)\n"
            f"        if row['question'].strip()[:80] == {question!r}: print('GOLD', row['answer'].split('####')[-1])\n"
            "print('searched')\n"
        )
        obs, *_ = env.step(f"```python\n{code}```")
        assert "searched" in obs and "GOLD" not in obs, obs
    finally:
        env.close()

"""Branched rollouts (GiGPO step groups by construction): branches start from the trunk's exact state, every env
step is counted, advantages have the trunk + branch layout, and the trunk episodes are those of a plain rollout."""

from __future__ import annotations

from typing import Any

import pytest

from arl_envs_tests.conftest import TEST_THREADS

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from arl_baselines.grpo.branching import Brancher  # noqa: E402
from arl_baselines.grpo.config import GRPOConfig  # noqa: E402
from arl_baselines.grpo.loss import ADVANTAGE_EPS  # noqa: E402
from arl_baselines.grpo.rollout import Episode  # noqa: E402
from arl_baselines.grpo.train import Trainer  # noqa: E402

LAKE = "arl/embodied.frozenlake-v0"
SMALL: dict[str, Any] = {
    "env_kwargs": {"max_turns": 6}, "max_new_tokens": 8, "max_seq_len": 384, "sft_episodes": 8, "sft_steps": 20,
    "sft_lr": 3e-3, "sft_batch_size": 8, "num_groups": 2, "group_size": 4, "eval_tasks": 2, "eval_samples": 1,
    "log_samples": 0, "progress": False, "lr": 5e-4,
}
BRANCH: dict[str, Any] = {"advantage_level": "step", "branch_k": 3, "branch_points": 2}


@pytest.fixture(scope="module")
def lake_weights(tmp_path_factory) -> dict[str, Any]:
    """A tiny model after a short SFT on FrozenLake (it writes moves, some good, so episodes last several turns)."""
    torch.set_num_threads(TEST_THREADS)
    tr = Trainer(LAKE, "tiny", GRPOConfig(**SMALL), tmp_path_factory.mktemp("sft"))
    tr.sft()
    tr.engine.close()
    return {k: v.clone() for k, v in tr.policy.model.state_dict().items()}


def _trainer(tmp_path, weights: dict[str, Any], **over: Any) -> Trainer:
    tr = Trainer(LAKE, "tiny", GRPOConfig(**{**SMALL, **over}), tmp_path)
    tr.policy.model.load_state_dict(weights)
    tr.setup_grpo()
    return tr


def test_greedy_branches_replay_the_trunk_from_its_exact_state(tmp_path, lake_weights) -> None:
    """At temperature 0 a branch must repeat its trunk from turn t on: same tokens, actions, observations and
    rewards (the env was restored to the state before turn t, the turn counter and map included)."""
    tr = _trainer(tmp_path, lake_weights, temperature=0.0, **BRANCH)
    assert tr.brancher is not None
    eps = tr.brancher.rollout([11, 12], 4, temperature=0.0, generator=tr.gen)
    points, branches = tr.brancher.points, tr.brancher.branches
    assert len(points) == 2 * 2 and len(branches) == 2 * 2 * 3
    assert any(t > 0 for _, t in points)  # some branch starts mid-episode, not at the reset state
    for p, (i, t) in enumerate(points):
        trunk = eps[i]
        assert i % 4 < 2  # the first branch_points episodes of each group are the trunks
        for b in branches[3 * p : 3 * p + 3]:
            start = trunk.turn_spans[t][0]
            assert b.group == trunk.group and b.states[0] == trunk.states[t]
            assert b.ids == trunk.ids and b.mask == [0] * start + trunk.mask[start:]
            assert b.actions == trunk.actions[t:] and b.observations == trunk.observations[t:]
            assert b.step_rewards == trunk.step_rewards[t:] and b.success == trunk.success
            assert b.turns == trunk.turns - t and b.turn_spans == trunk.turn_spans[t:]
    tr.engine.close()


def test_trunks_are_the_plain_rollout_and_env_steps_are_counted(tmp_path, lake_weights, monkeypatch) -> None:
    """Snapshotting does not change the trunk episodes (same seeds and sampling stream as ``engine.run``); the
    metrics' ``env_steps`` is the number of ``env.step`` calls, branches included; off, nothing is branched."""
    plain = _trainer(tmp_path / "plain", lake_weights, advantage_level="step")
    assert plain.brancher is None
    ref = plain.engine.run([5, 6], 4, generator=torch.Generator().manual_seed(3))
    tr = _trainer(tmp_path / "branch", lake_weights, **BRANCH)
    got = tr.brancher.rollout([5, 6], 4, generator=torch.Generator().manual_seed(3))
    assert [e.ids for e in got] == [e.ids for e in ref] and [e.reward for e in got] == [e.reward for e in ref]
    env_cls = type(tr.engine.envs[0].unwrapped)
    calls = []
    real_step = env_cls.step
    monkeypatch.setattr(env_cls, "step", lambda self, action: (calls.append(1), real_step(self, action))[1])
    for t in (tr, plain):
        calls.clear()
        row = t.grpo_step()
        assert row["env_steps"] == len(calls) > 0
    assert tr.history[-1]["branch_episodes"] == 2 * 2 * 3 and plain.history[-1]["branch_episodes"] == 0
    assert tr.history[-1]["env_steps"] > sum(e.turns for e in tr.brancher.branches) > 0
    tr.engine.close()
    plain.engine.close()


def _ep(group: int, states: list[str], rewards: list[float], start: int = 0) -> Episode:
    """An episode of one-token turns after a ``start``-token prefix."""
    e = Episode(group=group, seed=group)
    e.ids = list(range(start + 2 * len(states)))
    e.mask = [0] * start + [1, 0] * len(states)
    e.prompt_len, e.states, e.step_rewards = start, list(states), list(rewards)
    e.turns, e.reward = len(states), sum(rewards)
    e.turn_spans = [(start + 2 * k, start + 2 * k + 1) for k in range(len(states))]
    return e


def test_branch_advantages_layout_and_values() -> None:
    """Trunks keep episode + omega * step advantages; branches get only step advantages, from the step group
    they share with their trunk's turn (exact values for a hand-made batch)."""
    cfg = GRPOConfig(group_size=2, num_groups=1, advantage_level="step", branch_k=2, step_gamma=1.0,
                     step_advantage_weight=0.5)
    br = Brancher(None, cfg)  # type: ignore[arg-type]
    trunks = [_ep(0, ["s0", "s1"], [0.0, 1.0]), _ep(0, ["s0", "x1"], [0.0, 0.0])]
    br.branches = [_ep(0, ["s1"], [0.0], start=2), _ep(0, ["s1", "y"], [0.0, 1.0], start=2)]
    episode_adv = torch.tensor([0.7, -0.7])
    trained, rows, signal = br.advantages(trunks, episode_adv, torch.tensor([True, True]))
    assert trained == trunks + br.branches
    assert [len(r) for r in rows] == [len(e.ids) for e in trained] and signal == [True] * 4
    # step group "s0": returns 1 and 0 (trunks' first turns); step group "s1": trunk 0's turn 1 and both branches
    s0 = [0.5 / (0.5**0.5 + ADVANTAGE_EPS), -0.5 / (0.5**0.5 + ADVANTAGE_EPS)]
    s1_std = (1 / 3) ** 0.5  # returns 1, 0, 1: mean 2/3, unbiased std sqrt(1/3)
    s1 = [(1 - 2 / 3) / (s1_std + ADVANTAGE_EPS), (0 - 2 / 3) / (s1_std + ADVANTAGE_EPS), (1 - 2 / 3) / (s1_std + ADVANTAGE_EPS)]
    assert rows[0][0] == pytest.approx(0.7 + 0.5 * s0[0]) and rows[0][2] == pytest.approx(0.7 + 0.5 * s1[0])
    assert rows[0][1] == pytest.approx(0.7)  # an observation token keeps the episode advantage (masked anyway)
    assert rows[1][0] == pytest.approx(-0.7 + 0.5 * s0[1]) and rows[1][2] == pytest.approx(-0.7)
    assert rows[2][2] == pytest.approx(0.5 * s1[1]) and rows[2][:2] == [0.0, 0.0]
    assert rows[3][2] == pytest.approx(0.5 * s1[2]) and rows[3][4] == 0.0


def test_branching_needs_step_level_advantages() -> None:
    with pytest.raises(ValueError, match="advantage_level='step'"):
        GRPOConfig(branch_k=2)
    with pytest.raises(ValueError, match="branch_points"):
        GRPOConfig(branch_k=2, branch_points=0, advantage_level="step")
    with pytest.raises(ValueError, match="more than the group's 4 episodes"):
        GRPOConfig(branch_k=2, branch_points=5, group_size=4, advantage_level="step")

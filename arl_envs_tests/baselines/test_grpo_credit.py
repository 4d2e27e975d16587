"""GiGPO step-level advantages on a hand-made case, and DARLING's diversity-fused reward (exact values)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from arl_baselines.grpo.diversity import diversity_rewards, group_diversity, jaccard, ngrams  # noqa: E402
from arl_baselines.grpo.loss import ADVANTAGE_EPS, grpo_loss, step_group_advantages  # noqa: E402

# one group of 3 episodes; states are the observations each action was taken from
STATES = [["A", "B"], ["A", "C"], ["A", "B"]]
REWARDS = [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]


def test_step_group_advantages_hand_made_case() -> None:
    """gamma 0.5: returns ep0 [0.5, 1], ep1 [0, 0], ep2 [0, 0]. Step group A = {0.5, 0, 0}, B = {1, 0} (ep0 and
    ep2 reached the same state), C = {ep1's turn 2} alone -> 0."""
    adv = step_group_advantages(STATES, REWARDS, 3, gamma=0.5)
    std_a, std_b = math.sqrt(1 / 12), math.sqrt(0.5)
    assert adv[0] == pytest.approx([(0.5 - 1 / 6) / (std_a + ADVANTAGE_EPS), 0.5 / (std_b + ADVANTAGE_EPS)])
    assert adv[1] == pytest.approx([(-1 / 6) / (std_a + ADVANTAGE_EPS), 0.0])
    assert adv[2] == pytest.approx([(-1 / 6) / (std_a + ADVANTAGE_EPS), -0.5 / (std_b + ADVANTAGE_EPS)])
    raw = step_group_advantages(STATES, REWARDS, 3, gamma=0.5, scale=False)
    assert raw == [pytest.approx([1 / 3, 0.5]), pytest.approx([-1 / 6, 0.0]), pytest.approx([-1 / 6, -0.5])]


def test_step_groups_stay_inside_their_episode_group_and_skip_invalid() -> None:
    states = STATES + [["A", "B"], ["A", "B"], ["A", "B"]]
    rewards = REWARDS + [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]]
    adv = step_group_advantages(states, rewards, 3, gamma=0.5)
    assert adv[3:] == [[0.0, 0.0]] * 3  # the second group's steps all have equal returns
    assert adv[:3] == step_group_advantages(STATES, REWARDS, 3, gamma=0.5)
    left_out = step_group_advantages(STATES, REWARDS, 3, gamma=0.5, valid=[True, True, False])
    assert left_out[2] == [0.0, 0.0] and left_out[0][1] == 0.0  # B has one valid member left
    with pytest.raises(ValueError):
        step_group_advantages(STATES, REWARDS, 2)


def test_per_token_advantages_in_the_loss() -> None:
    """(B, T) advantages give each token its own weight: gradient of -A_t * logp_t."""
    logp = torch.zeros(1, 4, requires_grad=True)
    adv = torch.tensor([[0.0, 1.0, -2.0, 3.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0, 1.0]])
    loss, _ = grpo_loss(logp, logp.detach(), adv, mask, num_items_in_batch=3.0)
    loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([0.0, -1 / 3, 2 / 3, -1.0])


def test_ngrams_and_jaccard() -> None:
    assert ngrams("\\boxed{(3 + 4) * 2}", 1) == frozenset(
        {("\\",), ("boxed",), ("{",), ("(",), ("3",), ("+",), ("4",), (")",), ("*",), ("2",), ("}",)}
    )
    assert ngrams("one", 2) == frozenset({("one",)}) and ngrams("", 2) == frozenset()
    assert jaccard(ngrams("a b c", 2), ngrams("a b d", 2)) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 1.0


def test_group_diversity_partition_and_soft_scores() -> None:
    x, y, z = "the answer is 7", "so it must be 12", "I think 9 because"
    assert group_diversity([x, x, y, z]) == pytest.approx([2 / 3, 2 / 3, 1.0, 1.0])
    j = jaccard(ngrams(x, 2), ngrams("the answer is 8", 2))  # 2 of 4 bigrams shared
    assert j == pytest.approx(0.5)
    soft = group_diversity([x, "the answer is 8"], threshold=None)
    assert soft == pytest.approx([1 - j, 1 - j])
    assert group_diversity([x, "the answer is 8"], threshold=0.5) == [0.0, 0.0]  # Jaccard 0.5 >= threshold
    with pytest.raises(ValueError):
        group_diversity([x])


def test_diversity_rewards_multiply_quality_and_keep_penalties() -> None:
    x, y = "the answer is 7", "so it must be 12"
    fused, div = diversity_rewards(torch.tensor([1.0, 1.0, 1.0, -0.1]), [x, x, y, x], 4)
    assert div.tolist() == pytest.approx([1 / 3, 1 / 3, 1.0, 1 / 3])
    assert fused.tolist() == pytest.approx([1 / 3, 1 / 3, 1.0, -0.1])
    with pytest.raises(ValueError):
        diversity_rewards(torch.tensor([1.0, 0.0, 1.0]), [x, y, x], 2)

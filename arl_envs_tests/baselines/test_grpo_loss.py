"""GRPO advantages and loss against hand-computed values (plain-Python arithmetic, not the code under test)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from arl_baselines.grpo.loss import ADVANTAGE_EPS, group_advantages, grpo_loss  # noqa: E402


def _std(xs: list[float]) -> float:
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


# ----------------------------------------------------------------------------- advantages
def test_group_scaling_matches_hand_computation() -> None:
    r = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.5]
    adv = group_advantages(torch.tensor(r), 4, scale_rewards="group").advantages.tolist()
    for g in range(2):
        grp = r[4 * g : 4 * g + 4]
        mean, std = sum(grp) / 4, _std(grp)
        for i, x in enumerate(grp):
            assert adv[4 * g + i] == pytest.approx((x - mean) / (std + ADVANTAGE_EPS), rel=1e-6)
    # group 0 by hand: mean 0.25, unbiased std 0.5
    assert adv[0] == pytest.approx(0.75 / (0.5 + 1e-4), rel=1e-6)


def test_batch_and_none_scaling() -> None:
    r = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    batch = group_advantages(torch.tensor(r), 4, scale_rewards="batch").advantages.tolist()
    none = group_advantages(torch.tensor(r), 4, scale_rewards="none").advantages.tolist()
    s = _std(r)  # 0.5175...
    assert s == pytest.approx(0.517549, rel=1e-5)
    assert batch[0] == pytest.approx(0.75 / (s + ADVANTAGE_EPS), rel=1e-6)
    assert batch[6] == pytest.approx(-0.5 / (s + ADVANTAGE_EPS), rel=1e-6)
    assert none == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.5, 0.5, -0.5, -0.5])


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_zero_spread_groups_get_exactly_zero_advantage(scale: str) -> None:
    r = torch.tensor([1.0, 1.0, 1.0, 0.3, 0.3, 0.3, 1.0, 0.0, 0.0])
    res = group_advantages(r, 3, scale_rewards=scale)
    assert res.zero_spread.tolist() == [True, True, False]
    assert res.advantages[:6].tolist() == [0.0] * 6
    assert res.advantages[6:].abs().min() > 0


def test_invalid_episodes_are_left_out_of_group_statistics() -> None:
    r = torch.tensor([1.0, 0.0, 0.0, 123.0])
    res = group_advantages(r, 4, valid=torch.tensor([True, True, True, False]))
    mean, std = 1 / 3, _std([1.0, 0.0, 0.0])
    assert res.advantages.tolist() == pytest.approx(
        [(1 - mean) / (std + ADVANTAGE_EPS), -mean / (std + ADVANTAGE_EPS), -mean / (std + ADVANTAGE_EPS), 0.0], rel=1e-6
    )
    one_valid = group_advantages(torch.tensor([1.0, 0.0]), 2, valid=torch.tensor([True, False]))
    assert one_valid.zero_spread.tolist() == [True] and one_valid.advantages.tolist() == [0.0, 0.0]


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="multiple of group_size"):
        group_advantages(torch.zeros(5), 2)
    with pytest.raises(ValueError, match="scale_rewards"):
        group_advantages(torch.zeros(4), 2, scale_rewards="std")
    z = torch.zeros(1, 3)
    with pytest.raises(ValueError, match="loss_type"):
        grpo_loss(z, z, torch.zeros(1), z, loss_type="ppo")
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(z, z, torch.zeros(1), z, beta=0.1)
    with pytest.raises(ValueError, match="max_completion_length"):
        grpo_loss(z, z, torch.zeros(1), z, loss_type="dr_grpo")
    with pytest.raises(ValueError, match="shape mismatch"):
        grpo_loss(z, z, torch.zeros(2), z)


# ----------------------------------------------------------------------------- loss values
MASK = [[0, 1, 1, 0], [0, 1, 1, 1]]
LOG_RATIO = [[0.0, 0.1, -0.1, 0.0], [0.0, 0.05, 0.0, -0.05]]  # all inside the clip range [0.8, 1.28]
ADV = [1.0, -0.5]


def _hand_terms() -> list[list[float]]:
    """Per-token -min(r A, clip(r) A) with no clipping active: -r * A, 0 where masked."""
    return [[-math.exp(LOG_RATIO[b][t]) * ADV[b] * MASK[b][t] for t in range(4)] for b in range(2)]


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    old = torch.tensor([[-1.0, -2.0, -0.5, -3.0], [-0.7, -1.5, -2.5, -0.2]])
    logp = old + torch.tensor(LOG_RATIO)
    return logp, old, torch.tensor(ADV), torch.tensor(MASK, dtype=torch.float32)


def test_aggregations_match_hand_computation() -> None:
    terms = _hand_terms()
    seq_sums = [sum(row) for row in terms]
    lens = [sum(row) for row in MASK]
    total = sum(seq_sums)
    expected = {
        "grpo": sum(s / n for s, n in zip(seq_sums, lens)) / 2,
        "bnpo": total / sum(lens),
        "dr_grpo": total / (2 * 8),
        "dapo": total / 10,  # num_items_in_batch: tokens of the whole optimisation batch (other micro-batches too)
    }
    logp, old, adv, mask = _inputs()
    for loss_type, want in expected.items():
        loss, stats = grpo_loss(
            logp, old, adv, mask, loss_type=loss_type, max_completion_length=8, num_items_in_batch=10
        )
        assert float(loss) == pytest.approx(want, rel=1e-6), loss_type
        assert stats["clip_region"] == 0.0
    # grpo/bnpo/dr_grpo are divided by the number of micro-batches (gradient accumulation); dapo is not
    for loss_type in ("grpo", "bnpo", "dr_grpo"):
        one = grpo_loss(logp, old, adv, mask, loss_type=loss_type, max_completion_length=8)[0]
        two = grpo_loss(logp, old, adv, mask, loss_type=loss_type, max_completion_length=8, num_micro_batches=2)[0]
        assert float(two) == pytest.approx(float(one) / 2, rel=1e-6)
    dapo_local = grpo_loss(logp, old, adv, mask, loss_type="dapo", num_micro_batches=2)[0]
    assert float(dapo_local) == pytest.approx(total / sum(lens), rel=1e-6)


def test_k3_kl_term() -> None:
    logp, old, adv, mask = _inputs()
    ref = logp.detach() + torch.tensor([[0.0, 0.3, -0.2, 0.0], [0.0, 0.0, 0.1, 0.4]])
    beta = 0.1
    loss, stats = grpo_loss(logp, old, adv, mask, loss_type="bnpo", beta=beta, ref_logp=ref)
    d = [[0.0, 0.3, -0.2, 0.0], [0.0, 0.0, 0.1, 0.4]]
    kl = [[(math.exp(d[b][t]) - d[b][t] - 1) * MASK[b][t] for t in range(4)] for b in range(2)]
    terms = _hand_terms()
    want = sum(terms[b][t] + beta * kl[b][t] for b in range(2) for t in range(4)) / 5
    assert float(loss) == pytest.approx(want, rel=1e-6)
    assert stats["kl"] == pytest.approx(sum(map(sum, kl)) / 5, rel=1e-6)


def test_sequence_level_ratio_gspo() -> None:
    logp, old, adv, mask = _inputs()
    loss, _ = grpo_loss(logp, old, adv, mask, loss_type="grpo", importance_sampling_level="sequence")
    # s_i = exp(mean over the sequence's tokens of log ratio); loss_i = -min(s A, clip(s) A) for every token
    s = [math.exp(sum(LOG_RATIO[b][t] * MASK[b][t] for t in range(4)) / sum(MASK[b])) for b in range(2)]
    want = sum(-s[b] * ADV[b] for b in range(2)) / 2
    assert float(loss) == pytest.approx(want, rel=1e-6)


# ----------------------------------------------------------------------------- gradients
def test_clipped_tokens_get_zero_gradient() -> None:
    # token 0: A>0, ratio 1.5 > 1.28 -> clipped; token 1: A>0, ratio 1.1 -> not clipped;
    # token 2: A<0 (row 2), ratio 0.5 < 0.8 -> clipped; token 3: A>0 ratio 0.5 -> NOT clipped (min keeps r*A)
    old = torch.zeros(2, 3)
    log_r = torch.tensor([[0.0, math.log(1.5), math.log(1.1)], [0.0, math.log(0.5), math.log(0.5)]])
    logp = (old + log_r).requires_grad_(True)
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[0.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    loss, stats = grpo_loss(logp, old, adv, mask, loss_type="bnpo")
    loss.backward()
    g = logp.grad
    assert g[0, 1].item() == 0.0  # upper clip, positive advantage
    assert g[1, 1].item() == 0.0  # lower clip, negative advantage
    assert g[0, 2].item() == pytest.approx(-1.1 / 3, rel=1e-5)  # d(-r A)/dlogp = -r A / n_tokens
    assert stats["clip_high"] == pytest.approx(1 / 3) and stats["clip_low"] == pytest.approx(1 / 3)
    pos = torch.tensor([[0.0, math.log(0.5)]], requires_grad=True)
    grpo_loss(pos, torch.zeros(1, 2), torch.tensor([1.0]), torch.tensor([[0.0, 1.0]]))[0].backward()
    assert pos.grad[0, 1].item() == pytest.approx(-0.5, rel=1e-5)


def test_ratio_one_loss_zero_but_gradient_not() -> None:
    base = torch.tensor([[0.0, -1.2, -0.3, -2.0], [0.0, -0.4, -0.9, -1.1]])
    logp = base.clone().requires_grad_(True)
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[0.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]])
    loss, stats = grpo_loss(logp, logp.detach(), adv, mask)
    assert float(loss.detach()) == 0.0
    assert stats["ratio_mean"] == 1.0
    loss.backward()
    assert logp.grad[0, 1:].tolist() == pytest.approx([-1 / 6] * 3)
    assert logp.grad[1, 1:].tolist() == pytest.approx([1 / 6] * 3)
    assert logp.grad[:, 0].tolist() == [0.0, 0.0]


def test_entropy_bonus_exact_value_and_direction() -> None:
    """``entropy_coef``: DAPO loss minus coef * (sum of masked entropies / token count), by hand; its gradient alone
    (advantages 0) raises the entropy of a 2-token distribution; bad use raises."""
    logits = torch.tensor([[0.0, 0.0], [2.0, -1.0], [1.0, 0.5]], requires_grad=True)  # 3 positions, vocab 2
    logz = torch.log_softmax(logits, -1)
    ent = -(logz.exp() * logz).sum(-1)[None, :]  # (1, 3)
    logp = logz[:, 0][None, :]
    mask = torch.tensor([[0.0, 1.0, 1.0]])
    adv = torch.tensor([0.5])
    base, _ = grpo_loss(logp, logp.detach(), adv, mask)
    with_bonus, _ = grpo_loss(logp, logp.detach(), adv, mask, entropy=ent, entropy_coef=0.1)
    # by hand: entropies of softmax([2, -1]) and softmax([1, 0.5]); only positions 1 and 2 are masked in
    h = []
    for a, b in ((2.0, -1.0), (1.0, 0.5)):
        pa = math.exp(a) / (math.exp(a) + math.exp(b))
        h.append(-(pa * math.log(pa) + (1 - pa) * math.log(1 - pa)))
    assert with_bonus.item() == pytest.approx(base.item() - 0.1 * sum(h) / 2, rel=1e-6)
    only, _ = grpo_loss(logp, logp.detach(), torch.tensor([0.0]), mask, entropy=ent, entropy_coef=1.0)
    only.backward()
    with torch.no_grad():
        stepped = logits - 0.5 * logits.grad
        z = torch.log_softmax(stepped, -1)
        assert float(-(z.exp() * z).sum(-1)[1:].sum()) > sum(h)
    assert logits.grad[0].abs().sum() == 0  # the unmasked position gets no gradient
    with pytest.raises(ValueError, match="entropy_coef"):
        grpo_loss(logp, logp.detach(), adv, mask, entropy_coef=0.1)
    with pytest.raises(ValueError, match="entropy_coef"):
        grpo_loss(logp, logp.detach(), adv, mask, entropy=ent, entropy_coef=-1.0)
    with pytest.raises(ValueError, match="shape mismatch"):
        grpo_loss(logp, logp.detach(), adv, mask, entropy=ent[:, :2], entropy_coef=0.1)

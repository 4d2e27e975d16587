"""GRPO advantages and the clipped policy loss, with TRL-compatible semantics.

Sources of the formulas:

* GRPO, group-relative advantages ``A_i = (r_i - mean(r_group)) / std(r_group)``, the clipped surrogate and the
  k3 KL estimator ``exp(q - p) - (q - p) - 1``: Shao et al. 2024, "DeepSeekMath: Pushing the Limits of
  Mathematical Reasoning in Open Language Models", arXiv:2402.03300, eq. 3-4 (k3 from J. Schulman, "Approximating
  KL Divergence", 2020).
* Decoupled clip range ``[1 - eps_low, 1 + eps_high]`` (0.2 / 0.28), token-level aggregation over the whole batch,
  dropping groups whose rewards have zero spread (dynamic sampling), masking truncated samples (overlong
  filtering): Yu et al. 2025, "DAPO: An Open-Source LLM Reinforcement Learning System at Scale", arXiv:2503.14476.
* No per-sequence length normalisation and no std scaling (``loss_type="dr_grpo"``, ``scale_rewards="none"``): Liu
  et al. 2025, "Understanding R1-Zero-Like Training: A Critical Perspective" (Dr. GRPO), arXiv:2503.20783.
* Sequence-level importance ratio ``s_i = exp(mean_t log(pi / pi_old))`` (``importance_sampling_level=
  "sequence"``): Zheng et al. 2025, "Group Sequence Policy Optimization" (GSPO), arXiv:2507.18071.
* Aggregations, the advantage epsilon and the clip statistics follow Hugging Face TRL's ``GRPOTrainer``
  (``trl/trainer/grpo_trainer.py``, ``_compute_loss`` and ``_generate_and_score_completions``):

  - ``grpo``: ``mean_i( sum_t l_it m_it / max(sum_t m_it, 1) )``, divided by the number of micro-batches;
  - ``bnpo``: ``sum_it l_it m_it / max(sum_it m_it, 1)`` per micro-batch, divided by the number of micro-batches;
  - ``dr_grpo``: ``sum_it l_it m_it / (B_micro * max_completion_length)``, divided by the number of micro-batches;
  - ``dapo``: ``sum_it l_it m_it / num_items_in_batch`` (tokens of the WHOLE optimisation batch, all micro-batches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from arl_baselines.grpo.config import IMPORTANCE_SAMPLING_LEVELS, LOSS_TYPES, SCALE_REWARDS

#: Added to the std before dividing (TRL uses 1e-4).
ADVANTAGE_EPS = 1e-4
#: A group whose reward std is at most this is a zero-spread group.
ZERO_SPREAD_TOL = 1e-6


@dataclass
class Advantages:
    """Result of :func:`group_advantages`.

    Attributes:
        advantages: ``(N,)`` float32; exactly 0 for invalid episodes and zero-spread groups.
        zero_spread: ``(N // G,)`` bool, groups whose valid rewards have no spread (or fewer than 2 valid members).
        group_mean: ``(N // G,)`` mean valid reward per group (NaN when a group has no valid member).
        group_std: ``(N // G,)`` unbiased std of valid rewards per group (NaN with fewer than 2 valid members).
    """

    advantages: torch.Tensor
    zero_spread: torch.Tensor
    group_mean: torch.Tensor
    group_std: torch.Tensor


def group_advantages(
    rewards: torch.Tensor,
    group_size: int,
    *,
    scale_rewards: str = "group",
    valid: torch.Tensor | None = None,
) -> Advantages:
    """Group-relative advantages (GRPO outcome supervision, DeepSeekMath eq. 3's Â_i,t = r̃_i).

    ``A_i = (r_i - mean_g) / (s + ADVANTAGE_EPS)`` where ``mean_g`` is the mean reward of episode i's group and
    ``s`` is the group's std (``group``), the whole batch's std (``batch``, as TRL and "Tricks or Traps?"
    arXiv:2508.08221 recommend) or 1 without epsilon (``none``, Dr. GRPO). Stds are unbiased (``torch.std``), as
    in TRL. Episodes with ``valid=False`` (env errors) are left out of every statistic and get advantage 0.

    Args:
        rewards: ``(N,)`` episode returns; episodes of a group are contiguous (``N = num_groups * group_size``).
        group_size: G.
        scale_rewards: ``group`` | ``batch`` | ``none``.
        valid: ``(N,)`` bool, or None (all valid).

    Raises:
        ValueError: ``N`` not a multiple of ``group_size``, or unknown ``scale_rewards``.
    """
    if scale_rewards not in SCALE_REWARDS:
        raise ValueError(f"scale_rewards must be one of {SCALE_REWARDS}, got {scale_rewards!r}")
    r = rewards.detach().float().flatten()
    if r.numel() % group_size:
        raise ValueError(f"{r.numel()} rewards is not a multiple of group_size={group_size}")
    ok = torch.ones_like(r, dtype=torch.bool) if valid is None else valid.to(r.device).bool().flatten()
    rg = torch.where(ok, r, torch.nan).view(-1, group_size)
    count = ok.view(-1, group_size).sum(-1)
    mean = torch.nanmean(rg, dim=-1)
    var = torch.nansum((rg - mean[:, None]) ** 2, dim=-1) / (count - 1).clamp(min=1)
    std = torch.where(count >= 2, var.sqrt(), torch.nan)
    zero_spread = (count < 2) | (std <= ZERO_SPREAD_TOL)
    centred = rg - mean[:, None]
    if scale_rewards == "group":
        centred = centred / (std[:, None] + ADVANTAGE_EPS)
    elif scale_rewards == "batch":
        valid_r = r[ok]
        batch_std = valid_r.std() if valid_r.numel() >= 2 else torch.tensor(0.0, device=r.device)
        centred = centred / (batch_std + ADVANTAGE_EPS)
    adv = torch.where(zero_spread[:, None] | torch.isnan(centred), torch.zeros_like(centred), centred)
    return Advantages(adv.flatten(), zero_spread, mean, std)


def step_group_advantages(
    states: list[list[Any]],
    step_rewards: list[list[float]],
    group_size: int,
    *,
    gamma: float = 0.95,
    scale: bool = True,
    valid: list[bool] | None = None,
) -> list[list[float]]:
    """GiGPO's step-level advantages: turns of one group's episodes that act from the same state form a step group.

    Source: Feng et al. 2025, "Group-in-Group Policy Optimization for LLM Agent Training" (GiGPO, verl-agent),
    arXiv:2505.10978, section 3.2: for step ``t`` of episode ``i`` with state ``s``, the discounted return
    ``R_t = sum_{k >= t} gamma^(k - t) r_k``; within the step group ``{(j, u): s_ju == s}`` of the same episode
    group, ``A^S = (R_t - mean) / (std + ADVANTAGE_EPS)`` (std unbiased, as :func:`group_advantages`; or without
    the division when ``scale=False``). A step group of one turn, or one whose returns have no spread, gets 0.
    The trainer adds ``omega * A^S`` to the episode advantage on that turn's tokens.

    Args:
        states: Per episode, the (hashable) state each action was taken from, e.g. the observation text.
        step_rewards: Per episode, the reward of each step (same lengths as ``states``).
        group_size: G; episodes of a group are contiguous.
        gamma: Discount.
        scale: Divide by the step group's std.
        valid: Per episode, False to leave it out (env errors): its steps get 0 and join no step group.

    Returns:
        Per episode, one advantage per step.

    Raises:
        ValueError: Length mismatches, or a number of episodes that is not a multiple of ``group_size``.
    """
    if len(states) != len(step_rewards) or len(states) % group_size:
        raise ValueError(f"{len(states)} state lists, {len(step_rewards)} reward lists, group_size={group_size}")
    ok = valid if valid is not None else [True] * len(states)
    returns: list[list[float]] = []
    for s, r in zip(states, step_rewards):
        if len(s) != len(r):
            raise ValueError(f"an episode has {len(s)} states but {len(r)} step rewards")
        acc, out = 0.0, [0.0] * len(r)
        for t in range(len(r) - 1, -1, -1):
            acc = r[t] + gamma * acc
            out[t] = acc
        returns.append(out)
    adv = [[0.0] * len(r) for r in step_rewards]
    for g0 in range(0, len(states), group_size):
        groups: dict[Any, list[tuple[int, int]]] = {}
        for i in range(g0, g0 + group_size):
            if ok[i]:
                for t, st in enumerate(states[i]):
                    groups.setdefault(st, []).append((i, t))
        for members in groups.values():
            if len(members) < 2:
                continue
            vals = torch.tensor([returns[i][t] for i, t in members], dtype=torch.float64)
            std = float(vals.std())
            if std <= ZERO_SPREAD_TOL:
                continue
            mean = float(vals.mean())
            for (i, t), v in zip(members, vals.tolist()):
                adv[i][t] = (v - mean) / (std + ADVANTAGE_EPS) if scale else v - mean
    return adv


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    loss_type: str = "dapo",
    epsilon_low: float = 0.2,
    epsilon_high: float = 0.28,
    beta: float = 0.0,
    ref_logp: torch.Tensor | None = None,
    importance_sampling_level: str = "token",
    max_completion_length: int | None = None,
    num_items_in_batch: float | None = None,
    num_micro_batches: int = 1,
    entropy: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped GRPO surrogate for one micro-batch.

    Per token (DeepSeekMath eq. 3 with DAPO's decoupled clip): ``rho = exp(logp - old_logp)`` (token level) or
    ``exp(mean_t(logp - old_logp))`` per sequence (GSPO), ``l_t = -min(rho * A, clip(rho, 1 - eps_low,
    1 + eps_high) * A) + beta * KL_t`` with ``KL_t = exp(ref - logp) - (ref - logp) - 1`` (k3). Aggregation
    by ``loss_type`` as in the module docstring. With one update per rollout batch ``old_logp`` is
    ``logp.detach()``: the ratio is 1, the loss value may be 0 while the gradient (``-A * grad logp``) is not.

    Args:
        logp: ``(B, T)`` log-probs of the current policy (with grad); 0 where ``mask`` is 0.
        old_logp: ``(B, T)`` log-probs of the sampling policy (no grad).
        advantages: ``(B,)``, or ``(B, T)`` per-token advantages (GiGPO's episode + step advantages).
        mask: ``(B, T)`` 1 on the policy's own sampled tokens (EOS included), 0 on prompt/observation/padding.
        loss_type: ``grpo`` | ``bnpo`` | ``dr_grpo`` | ``dapo``.
        epsilon_low: Lower clip (ratio floor ``1 - epsilon_low``).
        epsilon_high: Upper clip (ratio ceiling ``1 + epsilon_high``).
        beta: KL weight; needs ``ref_logp`` when > 0.
        ref_logp: ``(B, T)`` log-probs of the frozen reference policy.
        importance_sampling_level: ``token`` or ``sequence`` (GSPO).
        max_completion_length: Constant normaliser of ``dr_grpo`` (sampled tokens per episode, at most).
        num_items_in_batch: Token count of the whole optimisation batch (``dapo``); default: this micro-batch's.
        num_micro_batches: Gradient-accumulation steps (divides ``grpo``/``bnpo``/``dr_grpo`` losses).
        entropy: ``(B, T)`` per-token entropy (nats, with grad) of the current policy; needed when
            ``entropy_coef > 0``.
        entropy_coef: Entropy bonus weight: ``l_t`` becomes ``l_t - entropy_coef * entropy_t`` before aggregation
            (PPO's ``c2``, Schulman et al. 2017).

    Returns:
        ``(loss, stats)``: a scalar tensor, and floats ``clip_low``, ``clip_high``, ``clip_region`` (fractions of
        masked tokens, TRL definitions: low = ratio below the floor with A < 0, high = above the ceiling with
        A > 0), ``ratio_mean``, ``kl`` (masked mean, 0 when beta is 0), ``tokens``.

    Raises:
        ValueError: Unknown option, ``beta > 0`` without ``ref_logp``, ``dr_grpo`` without
            ``max_completion_length``, ``entropy_coef`` negative or > 0 without ``entropy``, or shape mismatch.
    """
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    if importance_sampling_level not in IMPORTANCE_SAMPLING_LEVELS:
        raise ValueError(f"importance_sampling_level must be one of {IMPORTANCE_SAMPLING_LEVELS}")
    adv_ok = advantages.shape == logp.shape[:1] or advantages.shape == logp.shape
    if logp.shape != old_logp.shape or logp.shape != mask.shape or not adv_ok:
        raise ValueError(
            f"shape mismatch: logp {tuple(logp.shape)}, old_logp {tuple(old_logp.shape)}, mask {tuple(mask.shape)}, "
            f"advantages {tuple(advantages.shape)} (want (B, T), (B, T), (B, T), (B,) or (B, T))"
        )
    if beta > 0 and ref_logp is None:
        raise ValueError("beta > 0 needs ref_logp (log-probs of the reference model)")
    if entropy_coef < 0 or (entropy_coef > 0 and entropy is None):
        raise ValueError(f"entropy_coef must be >= 0 and needs the per-token entropy when > 0, got {entropy_coef}")
    if entropy is not None and entropy.shape != logp.shape:
        raise ValueError(f"shape mismatch: entropy {tuple(entropy.shape)}, logp {tuple(logp.shape)}")
    if loss_type == "dr_grpo" and not max_completion_length:
        raise ValueError("loss_type='dr_grpo' needs max_completion_length")
    m = mask.to(logp.dtype)
    adv = advantages.to(logp.dtype)
    adv = adv[:, None] if adv.dim() == 1 else adv
    log_ratio = (logp - old_logp) * m
    if importance_sampling_level == "token":
        log_w = log_ratio
    else:
        log_w = (log_ratio.sum(-1) / m.sum(-1).clamp(min=1.0))[:, None]
    coef1 = torch.exp(log_w)
    coef2 = torch.clamp(coef1, 1 - epsilon_low, 1 + epsilon_high)
    per_token = -torch.min(coef1 * adv, coef2 * adv)
    kl = None
    if beta > 0:
        assert ref_logp is not None
        d = (ref_logp - logp) * m
        kl = torch.exp(d) - d - 1
        per_token = per_token + beta * kl
    per_token = per_token.expand_as(m)
    if entropy_coef > 0:
        assert entropy is not None
        per_token = per_token - entropy_coef * entropy.to(logp.dtype)
    total = (per_token * m).sum()
    if loss_type == "grpo":
        loss = ((per_token * m).sum(-1) / m.sum(-1).clamp(min=1.0)).mean() / num_micro_batches
    elif loss_type == "bnpo":
        loss = total / m.sum().clamp(min=1.0) / num_micro_batches
    elif loss_type == "dr_grpo":
        assert max_completion_length is not None
        loss = total / (m.shape[0] * max_completion_length) / num_micro_batches
    else:
        normalizer = float(num_items_in_batch) if num_items_in_batch is not None else float(m.sum().item())
        loss = total / max(normalizer, 1.0)

    with torch.no_grad():
        n = m.sum().clamp(min=1.0)
        c = coef1.detach().expand_as(m)
        low = ((c < 1 - epsilon_low) & (adv < 0)).to(m.dtype)
        high = ((c > 1 + epsilon_high) & (adv > 0)).to(m.dtype)
        stats = {
            "clip_low": float((low * m).sum() / n),
            "clip_high": float((high * m).sum() / n),
            "clip_region": float((torch.maximum(low, high) * m).sum() / n),
            "ratio_mean": float((c * m).sum() / n),
            "kl": float((kl.detach() * m).sum() / n) if kl is not None else 0.0,
            "tokens": float(m.sum()),
        }
    return loss, stats

"""Group-level diversity bonus multiplied into the reward (DARLING), off by default.

Source: T. Li et al. 2025, "Jointly Reinforcing Diversity and Quality in Language Model Generations" (DARLING,
arXiv:2509.02534). DARLING partitions the ``G`` responses of a group into equivalence classes (a learned semantic
classifier there), scores each response's diversity as the fraction of the OTHER responses outside its class, and
multiplies the quality reward by that score before the group-relative advantage: a correct answer that many group
members repeat earns less than a correct answer nobody else found, so the policy is pushed toward distinct correct
solutions (e.g. Countdown, where many expressions reach the target) instead of collapsing onto one.

Here the classifier is replaced by a lexical one that needs no model: two completions are equivalent when the
Jaccard similarity of their word n-gram sets is at least ``threshold`` (``threshold=None``: a soft score, the mean
of ``1 - Jaccard`` over the other members). Words are ``\\w+`` runs and single punctuation marks, so
``\\boxed{(3 + 4) * 2}`` splits into symbols. Only non-negative rewards are multiplied (DARLING's quality rewards
are in [0, 1]); penalties (``r < 0``, e.g. the ``format`` part) are kept as they are, so a duplicated malformed
answer is not rewarded for being duplicated.
"""

from __future__ import annotations

import re

import torch

from arl_baselines.grpo.config import DIVERSITY_MODES  # noqa: F401  (re-exported: the config's mode names)

#: Word pattern of :func:`ngrams`: runs of word characters, or one non-space symbol.
WORD_RE = re.compile(r"\w+|[^\w\s]")


def ngrams(text: str, n: int) -> frozenset[tuple[str, ...]]:
    """Set of word n-grams of ``text`` (lower-cased; a text shorter than ``n`` words gives its one whole-text tuple).

    Raises:
        ValueError: ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    words = WORD_RE.findall(text.lower())
    if len(words) < n:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    """``|a & b| / |a | b|``; two empty sets are identical (1.0)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def group_diversity(texts: list[str], *, n: int = 2, threshold: float | None = 0.5) -> list[float]:
    """Diversity score in [0, 1] of each completion of ONE group.

    With ``threshold``: the fraction of the other completions NOT equivalent to it (equivalent: n-gram Jaccard
    >= threshold), DARLING's partition score. With ``threshold=None``: the mean of ``1 - Jaccard`` over the others.

    Args:
        texts: The group's completions (G >= 2).
        n: n-gram length in words.
        threshold: Equivalence threshold in (0, 1], or None for the soft score.

    Raises:
        ValueError: Fewer than 2 texts, or a threshold outside (0, 1].
    """
    if len(texts) < 2:
        raise ValueError("a group needs at least 2 completions")
    if threshold is not None and not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1] or None, got {threshold}")
    grams = [ngrams(t, n) for t in texts]
    g = len(texts)
    out = []
    for i in range(g):
        sims = [jaccard(grams[i], grams[j]) for j in range(g) if j != i]
        if threshold is None:
            out.append(sum(1.0 - s for s in sims) / (g - 1))
        else:
            out.append(sum(s < threshold for s in sims) / (g - 1))
    return out


def diversity_rewards(
    rewards: torch.Tensor,
    texts: list[str],
    group_size: int,
    *,
    n: int = 2,
    threshold: float | None = 0.5,
) -> tuple[torch.Tensor, torch.Tensor]:
    """DARLING's fused reward ``r * diversity`` for ``r >= 0`` (``r`` unchanged when negative), group by group.

    Args:
        rewards: ``(N,)`` episode returns, groups contiguous.
        texts: ``N`` completions (an episode's actions joined by newlines).
        group_size: G.
        n: n-gram length (words).
        threshold: Equivalence threshold, or None for the soft score (see :func:`group_diversity`).

    Returns:
        ``(fused rewards (N,), diversity scores (N,))``.

    Raises:
        ValueError: Length mismatch, or ``N`` not a multiple of ``group_size``.
    """
    r = rewards.detach().float().flatten()
    if len(texts) != r.numel() or r.numel() % group_size:
        raise ValueError(f"need N = len(texts) = a multiple of group_size, got {r.numel()}, {len(texts)}, {group_size}")
    div = torch.tensor(
        [d for k in range(0, len(texts), group_size) for d in group_diversity(texts[k : k + group_size], n=n, threshold=threshold)],
        dtype=torch.float32,
    )
    return torch.where(r >= 0, r * div, r), div

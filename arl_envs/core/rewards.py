"""Named reward parts and their weights.

An env emits *raw* reward parts per step (e.g. ``task=1.0`` when solved, ``format=-1.0`` for a malformed action,
``progress`` for partial credit). The step reward is ``sum(weight[k] * raw[k])``, and each weighted term is
reported in ``info["reward_components"]`` so that the components always sum to the reward.
Setting every weight but ``task`` to zero gives the pure outcome reward.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Raw value of the ``format`` part for one malformed action (scaled by the ``format`` weight).
FORMAT_PENALTY_RAW = -1.0


def resolve_weights(defaults: Mapping[str, float], overrides: Mapping[str, float] | None) -> dict[str, float]:
    """Merge user weights over an env's defaults.

    Args:
        defaults: The env's reward parts and their default weights.
        overrides: User weights (subset of the parts), e.g. ``{"format": 0.0}``.

    Returns:
        A new dict with every part of ``defaults``.

    Raises:
        ValueError: If ``overrides`` names a part the env does not emit, or a weight is not a finite number.
    """
    weights = dict(defaults)
    for key, value in (overrides or {}).items():
        if key not in weights:
            raise ValueError(f"unknown reward part {key!r}; this env emits {sorted(weights)}")
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"reward weight for {key!r} must be finite, got {value}")
        weights[key] = value
    return weights


def weigh(raw: Mapping[str, float], weights: Mapping[str, float]) -> tuple[float, dict[str, float]]:
    """Weight raw parts.

    Args:
        raw: Raw part values for this step; parts not present count as 0.
        weights: Every part the env emits and its weight.

    Returns:
        ``(reward, components)`` where ``components[k] = weights[k] * raw.get(k, 0)`` for every part and
        ``reward == sum(components.values())`` exactly (same summation order).

    Raises:
        KeyError: If ``raw`` has a part that is not in ``weights`` (an env bug).
    """
    for key in raw:
        if key not in weights:
            raise KeyError(f"env emitted undeclared reward part {key!r}")
    components = {k: float(w * raw.get(k, 0.0)) + 0.0 for k, w in weights.items()}
    reward = 0.0
    for v in components.values():
        reward += v
    return reward, components

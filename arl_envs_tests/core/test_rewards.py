from __future__ import annotations

import pytest

from arl_envs.core.rewards import resolve_weights, weigh


def test_weights_merge_and_reject_unknown() -> None:
    w = resolve_weights({"task": 1.0, "format": 0.1}, {"format": 0.0})
    assert w == {"task": 1.0, "format": 0.0}
    with pytest.raises(ValueError, match="unknown reward part"):
        resolve_weights({"task": 1.0}, {"speed": 1.0})
    with pytest.raises(ValueError, match="finite"):
        resolve_weights({"task": 1.0}, {"task": float("nan")})


def test_components_sum_to_reward_and_fill_all_parts() -> None:
    reward, comps = weigh({"task": 1.0, "progress": 0.5}, {"task": 1.0, "progress": 0.2, "format": 0.1})
    assert comps == {"task": 1.0, "progress": 0.1, "format": 0.0}
    assert sum(comps.values()) == reward
    with pytest.raises(KeyError):
        weigh({"bogus": 1.0}, {"task": 1.0})

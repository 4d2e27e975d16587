"""GRPOConfig validates every field: types (pydantic), lower bounds, unknown names."""

from __future__ import annotations

import pytest

from arl_baselines.grpo.config import FIELD_MINIMUMS, GRPOConfig


def test_defaults_validate_and_lax_strings_convert() -> None:
    cfg = GRPOConfig()
    assert GRPOConfig(lr="2e-4").lr == 2e-4 and GRPOConfig(adam_betas=[0.9, 0.99]).adam_betas == (0.9, 0.99)
    assert set(FIELD_MINIMUMS) <= set(cfg.to_dict())


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"lr": "abc"}, "lr"), ({"warmup_steps": -5}, "warmup_steps"), ({"lr": 0.0}, "lr"),
     ({"num_groups": "eight"}, "num_groups"), ({"adam_betas": (0.9,)}, "adam_betas"), ({"progress": "maybe"}, "progress"),
     ({"time_limit_s": -1.0}, "time_limit_s"), ({"env_kwargs": ["difficulty", 3]}, "env_kwargs"),
     ({"entropy_coef": -0.1}, "entropy_coef"), ({"entropy_coef": float("nan")}, "entropy_coef"),
     ({"lr": float("nan")}, "lr"), ({"beta": float("inf")}, "beta"), ({"temperature": "nan"}, "temperature")],
)
def test_bad_values_name_the_field(changes: dict, field: str) -> None:
    with pytest.raises(ValueError, match=rf"GRPOConfig\.{field}\b"):
        GRPOConfig(**changes)
    with pytest.raises(ValueError, match=rf"GRPOConfig\.{field}\b"):
        GRPOConfig().replace(**changes)


def test_unknown_setting_is_named() -> None:
    with pytest.raises(TypeError, match="'lrr'"):
        GRPOConfig.from_kwargs(lrr=1e-4)


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan")])
def test_sft_error_rate_must_be_a_probability(rate: float) -> None:
    with pytest.raises(ValueError, match="sft_error_rate"):
        GRPOConfig(sft_error_rate=rate)
    assert GRPOConfig(sft_error_rate=1.0).sft_error_rate == 1.0


def test_to_dict_records_an_uncopyable_env_kwarg_by_its_repr() -> None:
    """An opponent object holding a lock in ``env_kwargs`` (deepcopy refuses it) is recorded by its repr, so the
    run's config.json can be written; copyable values are copied as before."""
    import json
    import threading

    class Opponent:
        def __init__(self) -> None:
            self.lock = threading.Lock()

    cfg = GRPOConfig(env_kwargs={"opponent": Opponent(), "games": 3})
    out = cfg.to_dict()
    assert out["env_kwargs"]["games"] == 3 and "Opponent object" in out["env_kwargs"]["opponent"]
    json.dumps(out["env_kwargs"])

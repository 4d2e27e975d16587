"""Integrations (baselines/arl_baselines/integrations): TRL GRPOTrainer, plain REINFORCE, asyncio rollouts (tiny, CPU)."""

from __future__ import annotations

import asyncio
import math

import gymnasium as gym
import pytest
import torch

pytest.importorskip("transformers")

from arl_baselines.integrations import async_rollout, reinforce  # noqa: E402
from arl_baselines.integrations.trl_grpo import (  # noqa: E402
    ArlRollout,
    EnvScorer,
    env_reward_funcs,
    tiny_model_and_tokenizer,
    train_multi_turn,
    train_single_turn,
)


def test_reward_funcs_are_the_env_reward_parts() -> None:
    scorer = EnvScorer("arl/math.arithmetic-v1")
    env = gym.make("arl/math.arithmetic-v1")
    env.reset(seed=3)
    good = env.unwrapped.expert_action()
    funcs = env_reward_funcs(scorer, ["format", "task"])
    completions = [[{"role": "assistant", "content": good}], "no answer here"]
    per_func = [f(completions=completions, seed=[3, 3]) for f in funcs]
    totals = [sum(col) for col in zip(*per_func)]
    for text, total in zip([good, "no answer here"], totals):
        env.reset(seed=3)
        assert math.isclose(env.step(text)[1], total)
    assert per_func[1][0] == 1.0 and totals[1] < 0  # task part of the expert; format penalty of the bad answer
    scorer.close()
    env.close()


@pytest.mark.slow
def test_trl_grpo_single_turn_logs_reward_parts(tmp_path) -> None:
    pytest.importorskip("trl")
    log = train_single_turn(steps=1, group=2, seeds=2, max_completion_length=4, output_dir=str(tmp_path))
    step = next(r for r in log if "reward" in r)
    parts = step["rewards/arl_format/mean"] + step["rewards/arl_task/mean"]
    assert math.isclose(step["reward"], parts, abs_tol=1e-6) and "arl/success" in step


class RecordingRollout(ArlRollout):
    """Keeps what the rollout gave TRL."""

    outputs: list[dict] = []

    def __call__(self, prompts, trainer):
        out = super().__call__(prompts, trainer)
        RecordingRollout.outputs.append(out)
        return out


@pytest.mark.slow
def test_trl_grpo_multi_turn_rollout_masks_observations(tmp_path, monkeypatch) -> None:
    pytest.importorskip("trl")
    from arl_baselines.integrations import trl_grpo

    monkeypatch.setattr(trl_grpo, "ArlRollout", RecordingRollout)
    RecordingRollout.outputs.clear()
    # A turn cut at max_new_tokens ends the episode (truncated_turn), so the random tiny model is biased towards its
    # stop token: its turns end on their own (terminated), and the env's observations of them follow as new turns.
    model, tok = trl_grpo.tiny_model_and_tokenizer()
    head = model.lm_head
    biased = torch.nn.Linear(head.in_features, head.out_features, bias=True)
    with torch.no_grad():
        biased.weight.copy_(head.weight)
        biased.bias.zero_()
        biased.bias[tok.eos_token_id] = 12.0  # p(stop) ~ 1: every turn ends on its own
    model.lm_head = biased
    log = train_multi_turn("arl/math.tool-v1", steps=1, group=2, seeds=1, max_new_tokens=4, max_seq_len=4096,
                           output_dir=str(tmp_path), model=model, tokenizer=tok)
    out = RecordingRollout.outputs[0]
    assert len(out["completion_ids"]) == 2  # TRL's sampler repeated the prompt num_generations times
    for ids, mask, lps in zip(out["completion_ids"], out["env_mask"], out["logprobs"]):
        assert len(ids) == len(mask) == len(lps)
        assert 0 < sum(mask) < len(mask)  # actions trained on, observations (math.tool: several turns) masked
        assert all(lp == 0.0 for lp, m in zip(lps, mask) if m == 0)
    step = next(r for r in log if "reward" in r)
    assert step["completions/mean_length"] == sum(map(sum, out["env_mask"])) / 2  # TRL counted env_mask tokens
    assert step["reward"] == pytest.approx(sum(out["env_return"]) / 2)


def test_reinforce_updates_the_policy() -> None:
    model, tok = tiny_model_and_tokenizer()
    before = [p.detach().clone() for p in model.parameters()]
    hist = reinforce.train("arl/math.tool-v1", num_envs=2, iterations=2, steps=3, max_new_tokens=4, model=model,
                           tokenizer=tok)
    assert any(h["episodes_steps"] > 0 for h in hist) and all(math.isfinite(h["loss"]) for h in hist)
    assert "reward/format" in hist[0] and hist[0]["env_errors"] == 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert sum(1 for line in open(reinforce.__file__)) < 100


def test_async_rollouts_concurrent_and_batched() -> None:
    seeds = list(range(6))
    res = asyncio.run(async_rollout.rollouts("arl/math.tool-v1", seeds, async_rollout.expert_act, concurrency=6))
    assert [r.seed for r in res] == seeds and all(r.success and r.env_error is None for r in res)
    for r in res:
        assert r.trainable == [m["role"] == "assistant" for m in r.messages] and sum(r.trainable) == len(r.rewards)
        assert any(m["role"] == "tool" for m in r.messages)  # the python tool's output is a tool turn

    async def batched() -> tuple[list, list[int]]:
        policy = async_rollout.BatchedPolicy(lambda batch: ["\\boxed{0}"] * len(batch), max_wait_s=0.05)
        out = await async_rollout.rollouts("arl/math.arithmetic-v1", seeds, policy.act, concurrency=6)
        await policy.aclose()
        return out, policy.batch_sizes

    out, sizes = asyncio.run(batched())
    assert sum(sizes) == sum(len(r.rewards) for r in out) and max(sizes) > 1

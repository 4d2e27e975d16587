"""Trainer correctness cases with exact values (issue 16, item 4), and the two logging fixes.

* DAPO normaliser with a truncated, masked completion; a fully masked batch.
* Stop tokens: any of the model's stop ids ends a turn as terminated; nothing after it is trained.
* Near-constant groups: finite advantages of the right sign and size; equal-up-to-1e-7 rewards are zero-spread.
* A turn cut at ``max_new_tokens`` ends the episode, identically in the batched and one-episode paths; an
  observation that does not fit ends the episode as a scored failure that is trained on.
* Clip statistics over every optimisation pass; the learning-rate schedule counts every GRPO step.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from arl_envs_tests.conftest import TEST_THREADS

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from arl_baselines.grpo import train as train_mod  # noqa: E402
from arl_baselines.grpo import trainer as trainer_mod  # noqa: E402
from arl_baselines.grpo.config import GRPOConfig  # noqa: E402
from arl_baselines.grpo.decode import FastDecoder  # noqa: E402
from arl_baselines.grpo.loss import LOSS_TYPES, group_advantages, grpo_loss  # noqa: E402
from arl_baselines.grpo.policy import load_policy  # noqa: E402
from arl_baselines.grpo.rollout import Episode, RolloutEngine  # noqa: E402
from arl_baselines.grpo.train import Trainer, grpo_lr_at  # noqa: E402

MATH = "arl/math.arithmetic-v1"
MATH_KW: dict[str, Any] = {"difficulty": 1, "kinds": ["integer"]}


@pytest.fixture(autouse=True)
def _threads() -> None:
    torch.set_num_threads(TEST_THREADS)


def _trainer(tmp_path, **over: Any) -> Trainer:
    cfg = GRPOConfig(
        **{"env_kwargs": MATH_KW, "num_groups": 2, "group_size": 3, "max_seq_len": 128, "progress": False, **over}
    )
    tr = Trainer(MATH, "tiny", cfg, tmp_path)
    tr.setup_grpo()
    return tr


def _episode(group: int, reward: float, *, truncated: bool = False, sampled: int = 5) -> Episode:
    prompt = [10, 11, 12]
    ids = prompt + [40 + k for k in range(sampled)]
    return Episode(
        group=group,
        seed=group,
        ids=ids,
        mask=[0] * len(prompt) + [1] * sampled,
        sample_logprobs=[0.0] * len(ids),
        reward=reward,
        truncated_turn=truncated,
        prompt_len=len(prompt),
    )


# ----------------------------------------------------------------------------- DAPO normaliser
def test_dapo_normaliser_leaves_out_the_masked_truncated_completion(tmp_path) -> None:
    """6 completions x 5 tokens = 30 tokens; one is truncated and masked: loss = sum over the 25 others / 25."""
    tr = _trainer(tmp_path)
    rewards = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    eps = [_episode(i // 3, r, truncated=(i == 5)) for i, r in enumerate(rewards)]
    adv = group_advantages(torch.tensor(rewards), 3)
    keep = tr.loss_batch(eps, adv.zero_spread)
    assert keep == [0, 1, 2, 3, 4]
    a = adv.advantages
    # ratio 1 on the first pass: every token's loss is -A_i
    expected = sum(-float(a[i]) * 5 for i in keep) / 25
    wrong = sum(-float(a[i]) * 5 for i in keep) / 30
    stats = tr._update([eps[i] for i in keep], a[keep])
    assert stats["trained_tokens"] == 25.0
    assert stats["loss"] == pytest.approx(expected, abs=1e-6)
    assert abs(expected - wrong) > 1e-3
    tr.engine.close()


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_fully_masked_batch_gives_zero_loss_without_division_by_zero(loss_type: str) -> None:
    logp = torch.zeros(4, 6, requires_grad=True)
    mask = torch.zeros(4, 6)
    loss, st = grpo_loss(
        logp, logp.detach(), torch.tensor([1.0, -1.0, 2.0, 0.5]), mask, loss_type=loss_type,
        max_completion_length=6, num_items_in_batch=0.0,
    )
    loss.backward()
    assert loss.item() == 0.0 and math.isfinite(loss.item())
    assert logp.grad is not None and torch.equal(logp.grad, torch.zeros_like(logp))
    assert st["tokens"] == 0.0 and st["clip_region"] == 0.0


def test_all_truncated_step_trains_nothing(tmp_path) -> None:
    tr = _trainer(tmp_path)
    eps = [_episode(i // 3, float(i % 2), truncated=True) for i in range(6)]
    adv = group_advantages(torch.tensor([e.reward for e in eps]), 3)
    assert tr.loss_batch(eps, adv.zero_spread) == []
    tr.engine.close()


# ----------------------------------------------------------------------------- stop tokens
def _free_run(p, prompt: list[int], stop_ids: list[int], *, ignore_stop: bool) -> Any:
    dec = FastDecoder(p.model.eval(), batch_size=1, max_len=len(prompt) + 40, pad_id=p.pad_id, stop_ids=stop_ids)
    dec.start([prompt])
    gen = torch.Generator().manual_seed(0)
    return dec.generate([True], 30, temperature=1.0, ignore_stop=ignore_stop, generator=gen)[0]


def _first_new_token(ids: list[int]) -> int:
    """Index of the first sampled id (after the first) that did not occur before it."""
    return next(i for i in range(1, len(ids)) if ids[i] not in ids[:i])


def test_any_stop_id_ends_the_turn_as_terminated() -> None:
    """A second stop id (a chat template's end-of-turn token; here a byte the model happens to sample) ends a turn
    exactly like EOS: stopped=True, the stop token is the last sampled id (same RNG stream, so the same tokens)."""
    p = load_policy("tiny", seed=3)
    prompt = p.chat.prompt_ids("Compute 2 + 2.")
    free = _free_run(p, prompt, p.stop_ids, ignore_stop=True).ids
    k = _first_new_token(free)
    for stops in ([p.tokenizer.eos_token_id, free[k]], [free[k]]):
        out = _free_run(p, prompt, stops, ignore_stop=False)
        assert out.stopped and out.ids == free[: k + 1]


def test_tokens_after_a_stop_id_are_never_trained() -> None:
    """Episodes whose turns end on extra end-of-turn stop ids (most bytes, so the untrained model stops quickly):
    not truncated; every sampled segment ends on a stop id, and the token after it is observation (mask 0)."""
    p = load_policy("tiny", seed=3)
    p.stop_ids = sorted({*p.stop_ids, *range(32, 256)})
    eng = RolloutEngine(
        p, MATH, env_kwargs={**MATH_KW, "max_attempts": 3}, batch_size=4, max_new_tokens=30, max_seq_len=256,
        use_instructions=False,
    )
    eps = eng.run([5], 4, generator=torch.Generator().manual_seed(0))
    eng.close()
    stops = set(p.stop_ids)
    for e in eps:
        assert not e.truncated_turn and e.turns >= 2  # multi-turn: malformed answers get feedback and retry
        segs = [i for i in range(len(e.mask)) if e.mask[i] == 1 and (i + 1 == len(e.mask) or e.mask[i + 1] == 0)]
        assert len(segs) == e.turns
        for end in segs:
            assert e.ids[end] in stops
            if end + 1 < len(e.mask):
                assert e.mask[end + 1] == 0


# ----------------------------------------------------------------------------- near-constant groups
def test_near_constant_group_has_finite_right_sized_advantages() -> None:
    r = torch.tensor([0.35] * 7 + [0.0])
    adv = group_advantages(r, 8)
    mean = 0.35 * 7 / 8
    std = math.sqrt((7 * (0.35 - mean) ** 2 + mean**2) / 7)
    a = adv.advantages
    assert bool(torch.isfinite(a).all()) and not bool(adv.zero_spread[0])
    assert a[:7].tolist() == pytest.approx([(0.35 - mean) / (std + 1e-4)] * 7, rel=1e-5)
    assert float(a[7]) == pytest.approx(-mean / (std + 1e-4), rel=1e-5)
    assert float(a[0]) > 0 > float(a[7]) and float(a.abs().max()) < math.sqrt(8)
    assert float(a.sum()) == pytest.approx(0.0, abs=1e-5)


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_rewards_equal_up_to_1e7_are_zero_spread(scale: str) -> None:
    r = torch.tensor([0.5, 0.5 + 1e-7, 0.5 - 1e-7, 0.5, 1.0, 0.0, 1.0, 0.0])
    adv = group_advantages(r, 4, scale_rewards=scale)
    assert adv.zero_spread.tolist() == [True, False]
    assert adv.advantages[:4].tolist() == [0.0] * 4


# ----------------------------------------------------------------------------- truncated turns, context budget
def _engine(policy, **over: Any) -> RolloutEngine:
    args = {"batch_size": 4, "max_new_tokens": 3, "max_seq_len": 256, "use_instructions": False} | over
    return RolloutEngine(policy, MATH, env_kwargs={**MATH_KW, "max_attempts": 3}, **args)


def _same(a: Episode, b: Episode) -> None:
    assert a.ids == b.ids and a.mask == b.mask
    assert (a.truncated_turn, a.context_truncated, a.turns, a.reward, a.success, a.actions) == (
        b.truncated_turn, b.context_truncated, b.turns, b.reward, b.success, b.actions
    )
    assert a.sample_logprobs == pytest.approx(b.sample_logprobs, abs=1e-4)


def test_turn_cut_at_max_new_tokens_ends_the_episode_in_both_paths() -> None:
    p = load_policy("tiny", seed=3)  # untrained: never samples EOS within 3 tokens
    eng = _engine(p)
    batched = eng.run([7, 8], 1, temperature=0.0)
    for seed, b in zip([7, 8], batched):
        one = eng.play_episode(seed, temperature=0.0)
        _same(b, one)
        assert b.truncated_turn and not b.context_truncated and b.turns == 1  # the env allows 3 attempts
        assert b.sampled_tokens == 3 and not b.trainable() and b.trainable(mask_truncated=False)
        assert b.invalid_actions == 1 and b.reward < 0  # the cut text was sent to the env and scored
    eng.close()


def test_observation_that_does_not_fit_ends_the_episode_as_a_scored_failure() -> None:
    p = load_policy("tiny", seed=3)
    p.stop_ids = list(range(len(p.tokenizer)))  # every token ends a turn: one-token actions, always malformed
    probe = _engine(p)
    plen = len(probe.prompt(probe._env(0), 7)[0])
    probe.close()
    eng = _engine(p, max_seq_len=plen + 4)  # room for the action, not for the error observation
    b = eng.run([7], 1, temperature=0.0)[0]
    one = eng.play_episode(7, temperature=0.0)
    _same(b, one)
    assert b.context_truncated and not b.truncated_turn and b.turns == 1 and not b.success
    assert b.reward < 0 and b.trainable()  # scored (format penalty) and trained on, never silently masked
    eng.close()


# ----------------------------------------------------------------------------- logging fixes
def test_clip_statistics_cover_every_optimisation_pass(tmp_path, monkeypatch) -> None:
    tr = _trainer(tmp_path, num_iterations=3, lr=0.05, warmup_steps=0, micro_batch_size=2)
    calls: list[dict[str, float]] = []
    real = trainer_mod.grpo_loss

    def spy(*args: Any, **kwargs: Any):
        loss, st = real(*args, **kwargs)
        calls.append(dict(st))
        return loss, st

    monkeypatch.setattr(trainer_mod, "grpo_loss", spy)
    rewards = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0]
    eps = [_episode(i // 3, r) for i, r in enumerate(rewards)]
    adv = group_advantages(torch.tensor(rewards), 3).advantages
    stats = tr._update(eps, adv)
    assert len(calls) == 9  # 3 passes x 3 micro-batches
    w = sum(c["tokens"] for c in calls)
    for key in ("clip_region", "clip_low", "clip_high", "ratio_mean"):
        assert stats[key] == pytest.approx(sum(c[key] * c["tokens"] for c in calls) / w, abs=1e-9)
    assert stats["clip_region"] > 0  # passes 2 and 3 move the ratio out of the clip range at this lr
    assert calls[0]["clip_region"] == 0.0  # ...which the first pass alone never shows
    tr.engine.close()


def test_lr_schedule_counts_steps_without_updates_and_zero_spread_warns(tmp_path) -> None:
    """An untrained model gets zero-spread groups only: no update happens, yet the warm-up advances; after
    ZERO_SPREAD_WARN_STEPS such steps the trainer warns."""
    tr = _trainer(tmp_path, lr=1e-3, warmup_steps=4, max_new_tokens=4)
    rows = []
    with pytest.warns(RuntimeWarning, match="zero reward spread"):
        for _ in range(train_mod.ZERO_SPREAD_WARN_STEPS):
            rows.append(tr.grpo_step())
    assert all(r["frac_zero_spread"] == 1.0 and r["trained_episodes"] == 0 for r in rows)
    assert [r["lr"] for r in rows] == pytest.approx([grpo_lr_at(tr.cfg, s) for s in range(len(rows))])
    assert [r["lr"] for r in rows] == pytest.approx([2e-4, 4e-4, 6e-4, 8e-4, 1e-3])
    tr.engine.close()

"""End-to-end GRPO training: outputs and logs, every loss variant, learning a one-step task, the demo's curve."""

from __future__ import annotations

import json
import math
import warnings

import pytest

from arl_envs_tests.conftest import TEST_THREADS

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("matplotlib")

from arl_baselines.grpo.config import ARITHMETIC_LEARNING_RECIPE, GRPOConfig  # noqa: E402
from arl_baselines.grpo.train import METRIC_KEYS, demo_run, train  # noqa: E402

MATH = "arl/math.arithmetic-v1"
SMALL = {
    "env_kwargs": {"difficulty": 1, "kinds": ["integer"]},
    "num_groups": 2,
    "group_size": 4,
    "max_seq_len": 128,
    "eval_tasks": 4,
    "eval_samples": 2,
    "progress": False,
    "env_defaults": False,
}


@pytest.fixture(autouse=True)
def _threads() -> None:
    torch.set_num_threads(TEST_THREADS)


def test_train_writes_metrics_plot_and_summary(tmp_path) -> None:
    s = train(MATH, "tiny", 3, tmp_path, sft_steps=5, eval_every=2, save_model=True, **SMALL)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    for r in rows:
        assert set(METRIC_KEYS) <= set(r)
        assert math.isfinite(r["reward_mean"]) and r["tokens_per_s"] > 0
    assert "eval_success" in rows[1]
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    assert len((tmp_path / "sft.jsonl").read_text().splitlines()) == 5
    assert set(s["evals"]) == {"before", "after_sft", "step_2", "final"}
    for res in s["evals"].values():
        assert {"success", "mean_return", "pass@1", "pass@2"} <= set(res)
    assert s["tokens_generated"] > 0
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == 3
    assert (tmp_path / "model" / "config.json").exists()


@pytest.mark.parametrize(
    "variant",
    [
        {"loss_type": "grpo"},
        {"loss_type": "bnpo", "scale_rewards": "batch"},
        {"loss_type": "dr_grpo", "scale_rewards": "none"},
        {"loss_type": "dapo", "importance_sampling_level": "sequence"},
        {"beta": 0.05, "num_iterations": 2, "micro_batch_size": 3},
        {"entropy_coef": 0.01, "num_iterations": 2},
        {"optimizer": "sgd", "lr": 0.01, "drop_zero_spread": False, "mask_truncated": False},
        {"advantage_level": "step", "diversity": "ngram", "sft_steps": 3, "sft_schedule": "cosine"},
    ],
)
def test_every_loss_variant_runs(tmp_path, variant) -> None:
    train(MATH, "tiny", 2, tmp_path, **{**SMALL, "eval_tasks": 2, "eval_samples": 1}, **variant)
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(math.isfinite(r["loss"]) for r in rows)
    if variant.get("diversity") == "ngram":
        assert all(0.0 <= r["diversity_mean"] <= 1.0 for r in rows)
    if variant.get("num_iterations", 1) == 1:
        assert all(r["ratio_mean"] == 1.0 or math.isnan(r["ratio_mean"]) for r in rows)


def test_bad_settings_raise_clear_errors(tmp_path) -> None:
    with pytest.raises(TypeError, match="unknown GRPO setting"):
        train(MATH, "tiny", 1, tmp_path, learning_rate=1.0)
    with pytest.raises(ValueError, match="loss_type"):
        GRPOConfig(loss_type="ppo")
    with pytest.raises(ValueError, match="group_size"):
        GRPOConfig(group_size=1)
    with pytest.raises(ValueError, match="needs CUDA"):
        train(MATH, "tiny", 1, tmp_path, dtype="bfloat16", device="cpu")


#: The learning test's recipe (also ``benchmarks/grpo_cpu.py``'s): see its definition.
LEARN = ARITHMETIC_LEARNING_RECIPE


@pytest.mark.slow
def test_tiny_model_learns_one_step_task(tmp_path) -> None:
    """From chance to > 0.9 held-out success (sampled at temperature 1) on arithmetic difficulty 1, integer kind
    (single-digit +, -, *; 243 distinct problems; held-out seeds are disjoint from training seeds)."""
    s = train(MATH, "tiny-S", 20, tmp_path, **LEARN)
    ev = s["evals"]
    assert ev["before"]["success"] < 0.05
    assert ev["final"]["success"] > 0.9
    assert ev["final"]["pass@4"] >= ev["final"]["success"]


@pytest.mark.slow
def test_demo_compares_grpo_and_sft_from_the_same_checkpoint_at_equal_compute(tmp_path) -> None:
    """The demo's machinery at a smaller size, from the shipped SFT checkpoint (so that file loads with the
    demo's settings): a GRPO branch and an SFT-only branch given the GRPO branch's wall time, both evaluated on the
    same held-out seeds. (Its lift is measured by ``benchmarks/grpo_cpu.py``, not asserted here: see
    benchmarks/RESULTS.md.)"""
    from arl_baselines.grpo.train import DEMO_SETTINGS, DEMO_SFT_CHECKPOINT

    assert DEMO_SFT_CHECKPOINT.is_file()
    r = demo_run(tmp_path, progress=False, grpo_steps=3, num_groups=4, eval_tasks=8, eval_samples=2)
    assert r["sft_extra_steps"] >= 1 and r["grpo_s"] > 0
    assert r["lift"] == pytest.approx(r["success_sft_grpo"] - r["success_sft_only"])
    # the demonstrator is wrong on ~30% of tasks and the checkpoint imitates it (not the untrained model)
    assert 0.6 < r["demonstrator_success"] < 0.8 and r["after_sft"]["success"] > 0.3
    assert set(r["grpo"]["evals"]) >= {"after_sft", "final", "sft_only"}
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and (tmp_path / "curves.png").exists() and (tmp_path / "comparison.json").exists()
    sft_rows = [json.loads(x) for x in (tmp_path / "sft.jsonl").read_text().splitlines()]
    first = DEMO_SETTINGS["sft_steps"] + 1  # SFT-only continues the checkpoint's schedule
    assert [x["sft_step"] for x in sft_rows] == list(range(first, first + r["sft_extra_steps"]))


@pytest.mark.slow
def test_demo_grpo_beats_more_sft_when_the_demonstrator_is_wrong(tmp_path) -> None:
    """The demo itself (seed 0, its full settings: ~80 s on 2 quiet cores): from the shipped checkpoint, GRPO ends
    above both its checkpoint and SFT-only of equal compute. Measured lifts (benchmarks/RESULTS.md, issue 16):
    +0.184 / +0.312 / +0.188 on seeds 0-2 (+0.148 to +0.219 in three earlier runs from a sibling checkpoint); the
    margin asserted is 0.08, a third of the mean, so evaluation noise (256 episodes: std ~0.03) cannot fail it."""
    r = demo_run(tmp_path, progress=False, seed=0)
    assert r["lift"] >= 0.08, r["lift"]
    assert r["success_sft_grpo"] >= r["after_sft"]["success"] + 0.08


def _grpo_phase_from_checkpoint(env_id, checkpoint, out, steps, settings, *, demonstrations=True,
                                eval_seed=None) -> tuple[float, float]:
    """Held-out success of a tiny-default run loaded from ``checkpoint``, before and after ``steps`` GRPO steps
    (``eval_seed``: both evaluations sample from a generator reseeded to it)."""
    from arl_baselines.grpo.train import _trainer

    tr = _trainer(env_id, "tiny", out, {"progress": False, "log_samples": 0, **settings})
    try:
        tr.load_sft_checkpoint(checkpoint, demonstrations=demonstrations)
        if eval_seed is not None:
            tr.gen.manual_seed(eval_seed)
        before = tr.evaluate("sft")["success"]
        tr.setup_grpo()
        for _ in range(steps):
            tr.grpo_step()
        if eval_seed is not None:
            tr.gen.manual_seed(eval_seed)
        after = tr.evaluate("grpo")["success"]
    finally:
        tr.engine.close()
    return before, after


@pytest.mark.slow
def test_countdown_defaults_grpo_phase_lifts_held_out_success(tmp_path) -> None:
    """Countdown's tiny defaults (item 1 of issue 16), GRPO phase: from the shipped checkpoint of their SFT phase
    (1500 constant-lr steps on the in-order expert; the loader refuses it unless its SFT settings equal today's
    defaults), 40 GRPO steps at the defaults raise held-out success (~100 s on one thread). Measured (1 thread,
    256 held-out episodes, benchmarks/RESULTS.md "GRPO defaults"): +0.113 / +0.098 / +0.070 on seeds 0-2 (0.047 ->
    0.160 for seed 0, the one run here); the margin asserted, 0.03, is under half of the smallest."""
    from arl_baselines.grpo.train import COUNTDOWN_SFT_CHECKPOINT

    before, after = _grpo_phase_from_checkpoint(
        "arl/math.countdown-v1", COUNTDOWN_SFT_CHECKPOINT, tmp_path, 40, {"eval_tasks": 128, "eval_samples": 2})
    assert before > 0.02, before  # the SFT phase learned to copy the numbers (0.000 with the generator's expert)
    assert after >= before + 0.03, (before, after)


#: GRPO steps of the code.functions defaults' test (8 x 4 sandboxed episodes each, ~8 s a step on one core).
CODE_GRPO_STEPS = 20


@pytest.mark.slow
def test_code_functions_defaults_grpo_phase_lifts_held_out_success(tmp_path) -> None:
    """code.functions' tiny defaults (item 1 of issue 16: difficulty 1 of the generated set, single-turn), GRPO
    phase: from the shipped checkpoint of their SFT phase (600 constant-lr steps; loaded weights only, so the 512
    sandboxed demonstrations are not re-run), CODE_GRPO_STEPS GRPO steps raise held-out success on 64 episodes
    (both evaluations sample from the same generator seed). Measured with this code (benchmarks/RESULTS.md, "GRPO
    defaults", 1 thread): 0.109 -> 0.141 and 0.109 -> 0.156 (GRPO seeds 0 and 1), and +0.047 / +0.125 / +0.094
    with independent evaluation streams (seeds 0-2). One 64-episode evaluation has a std of ~0.04, so the test
    asserts a strict rise (at least one more solved episode), not the measured size; the SFT phase's own lift
    (from 0.000 untrained) has a wide margin."""
    from arl_baselines.grpo.train import CODE_SFT_CHECKPOINT

    before, after = _grpo_phase_from_checkpoint(
        "arl/code.functions-v0", CODE_SFT_CHECKPOINT, tmp_path, CODE_GRPO_STEPS, {"eval_samples": 2},
        demonstrations=False, eval_seed=12345)
    assert before > 0.03, before  # the SFT phase writes working code (0.000 over all difficulties, or untrained)
    assert after > before, (before, after)


def test_demo_checkpoint_builder_writes_a_checkpoint_the_demo_starts_from(tmp_path) -> None:
    """``build_demo_checkpoint`` (``python -m arl_baselines.grpo.demo_checkpoint``) at a few steps: its curve has
    one row per evaluation and ``demo_run`` continues from the file it writes."""
    from arl_baselines.grpo.train import build_demo_checkpoint

    small = {"sft_steps": 4, "sft_episodes": 64, "eval_tasks": 4, "eval_samples": 1}
    b = build_demo_checkpoint(tmp_path / "ck.pt", tmp_path / "build", eval_every=2, progress=False, **small)
    assert [c["sft_steps"] for c in b["curve"]] == [2, 4] and 0.5 < b["demonstrator_success"] < 0.9
    r = demo_run(tmp_path / "demo", progress=False, sft_checkpoint=tmp_path / "ck.pt", grpo_steps=1, num_groups=2,
                 **small)
    assert r["demonstrator_success"] == b["demonstrator_success"] and r["sft_extra_steps"] >= 1
    with pytest.raises(ValueError, match="sft_steps"):
        demo_run(tmp_path / "bad", progress=False, sft_checkpoint=tmp_path / "ck.pt", grpo_steps=1,
                 **{**small, "sft_steps": 5})


def test_checkpoint_weights_only_load_skips_the_demonstrations(tmp_path) -> None:
    """``load_sft_checkpoint(demonstrations=False)``: the same checks and weights, no demonstrations rebuilt, and an
    SFT continuation refused with a clear error (as is a second load)."""
    from arl_baselines.grpo.train import _trainer, build_sft_checkpoint

    small = {**SMALL, "sft_steps": 3, "sft_episodes": 8, "eval_tasks": 2, "eval_samples": 1}
    build_sft_checkpoint(MATH, tmp_path / "ck.pt", tmp_path / "build", eval_every=0, **small)
    full = _trainer(MATH, "tiny", tmp_path / "full", small)
    light = _trainer(MATH, "tiny", tmp_path / "light", small)
    try:
        meta = full.load_sft_checkpoint(tmp_path / "ck.pt")
        assert light.load_sft_checkpoint(tmp_path / "ck.pt", demonstrations=False)["sha256"] == meta["sha256"]
        assert full._sft_data is not None and light._sft_data is None
        assert light.demonstrator_success == meta["demonstrator_success"]
        w_full, w_light = full.policy.model.state_dict(), light.policy.model.state_dict()
        assert all(torch.equal(w_full[k], w_light[k]) for k in w_full)
        with pytest.raises(RuntimeError, match="weights"):
            light.sft(1)
        with pytest.raises(RuntimeError, match="already loaded"):
            light.load_sft_checkpoint(tmp_path / "ck.pt", demonstrations=False)
        assert light.summary()["sft_checkpoint"] == {"path": str(tmp_path / "ck.pt"), "sha256": meta["sha256"],
                                                     "sft_steps_done": 3, "weights_only": True}
        light.setup_grpo()
        assert light.grpo_step()["step"] == 1  # a GRPO phase needs only the weights
        late = _trainer(MATH, "tiny", tmp_path / "late", small)
        late.setup_grpo()
        with pytest.raises(RuntimeError, match="before setup_grpo"):  # its optimiser would hold the old weights
            late.load_sft_checkpoint(tmp_path / "ck.pt", demonstrations=False)
        late.engine.close()
        with pytest.raises(ValueError, match="sft_steps"):  # the checks still apply
            _trainer(MATH, "tiny", tmp_path / "bad", {**small, "sft_steps": 4}).load_sft_checkpoint(
                tmp_path / "ck.pt", demonstrations=False)
    finally:
        full.engine.close()
        light.engine.close()


def test_checkpoint_cli_needs_out_for_an_env_without_a_shipped_checkpoint(capsys) -> None:
    from arl_baselines.grpo.demo_checkpoint import main

    with pytest.raises(SystemExit):  # (an env with a shipped file would rebuild it in place)
        main(["--env", "arl/search.multihop-v1"])
    assert "--out is needed" in capsys.readouterr().err
    from arl_baselines.grpo.train import build_sft_checkpoint

    with pytest.raises(ValueError, match="sft_steps >= 1"):
        build_sft_checkpoint("arl/math.arithmetic-v1", "unused.pt", "unused", sft_steps=0)


def test_recommended_settings_fit_each_env(tmp_path) -> None:
    """Per-env defaults: a tiny model gets an SFT warm start (no zero-spread-only run), GRPO lr at or below the
    SFT's final lr, a ``max_new_tokens`` that holds the expert's actions (issue 16: the old countdown budget of 48
    cut 94% of them, so no sampled answer could be complete), and a ``max_seq_len`` that holds an expert episode
    and, after a full-length malformed action, the error observation (which issue 16 found cut and masked in
    every malformed episode)."""
    from arl_baselines.grpo.config import ENV_DEFAULTS, recommended_settings
    from arl_baselines.grpo.policy import load_policy
    from arl_baselines.grpo.rollout import RolloutEngine, expert_episodes
    from arl_baselines.grpo.train import sft_lr_at

    p = load_policy("tiny")
    multi_turn: set[str] = set()
    for env_id in ENV_DEFAULTS:
        rec = recommended_settings(env_id, tiny=True)
        cfg = GRPOConfig.from_kwargs(**rec)
        assert cfg.sft_steps > 0 and cfg.lr <= sft_lr_at(cfg, cfg.sft_steps - 1), env_id
        assert recommended_settings(env_id, tiny=False).get("sft_steps") is None
        eng = RolloutEngine(
            p, env_id, batch_size=1, max_new_tokens=cfg.max_new_tokens, max_seq_len=cfg.max_seq_len,
            use_instructions=False, env_kwargs=cfg.env_kwargs,
        )
        assert not any(e.context_truncated for e in expert_episodes(eng, [0, 1]))
        env = eng._env(0)
        for seed in range(40):  # the expert's action and its end-of-turn id fit one turn
            env.reset(seed=seed)
            n = len(p.tokenizer.encode(env.unwrapped.expert_action(), add_special_tokens=False)) + 1
            assert n <= cfg.max_new_tokens, (env_id, seed, n)
        ids, _, _ = eng.prompt(env, 0)
        obs, _, terminated, truncated, _ = env.step("x" * cfg.max_new_tokens)
        if terminated or truncated:  # single-turn (code.functions' tiny defaults, max_turns=1): no next turn
            assert cfg.env_kwargs.get("max_turns") == 1, env_id
            assert len(ids) + cfg.max_new_tokens < cfg.max_seq_len, env_id
        else:  # the error observation enters the context before the next turn
            obs_ids = p.chat.observation_ids(obs, ended_with=None)
            assert len(ids) + cfg.max_new_tokens + len(obs_ids) < cfg.max_seq_len, env_id
            multi_turn.add(env_id)
        eng.close()
    assert multi_turn >= {"arl/math.arithmetic-v1", "arl/math.countdown-v1", "arl/search.multihop-v1"}
    assert recommended_settings("arl/unknown-v0", tiny=False) == {}


def test_recommended_env_kwargs_merge_with_the_users() -> None:
    """Countdown's tiny defaults bring the in-order expert (its SFT demonstrations); a user's env kwargs are laid
    over them key by key, and ``env_defaults=False`` drops them."""
    from arl_baselines.grpo.config import recommended_settings
    from arl_baselines.grpo.train import _config

    cd = "arl/math.countdown-v1"
    assert _config(cd, "tiny", {}).env_kwargs == {"expert": "ordered"}
    assert _config(cd, "tiny", {"env_kwargs": {"max_number": 20}}).env_kwargs == {"expert": "ordered", "max_number": 20}
    assert _config(cd, "tiny", {"env_kwargs": {"expert": "generator"}}).env_kwargs == {"expert": "generator"}
    assert _config(cd, "tiny", {"env_defaults": False}).env_kwargs == {}
    assert "env_kwargs" not in recommended_settings(cd, tiny=False)
    recommended_settings(cd, tiny=True)["env_kwargs"]["expert"] = "x"  # a fresh dict each call
    assert recommended_settings(cd, tiny=True)["env_kwargs"] == {"expert": "ordered"}



def test_train_seeds_fix_the_training_tasks(tmp_path) -> None:
    """``train_seeds``: every GRPO group plays one of the given task seeds (a fixed training set)."""
    import gymnasium as gym

    env = gym.make(MATH, **SMALL["env_kwargs"])
    allowed = {env.reset(seed=s)[1]["task_id"] for s in (11, 12, 13)}
    train(MATH, "tiny", 3, tmp_path, sft_steps=2, train_seeds=[11, 12, 13], log_samples=4,
          **{**SMALL, "num_groups": 2})
    seen = {json.loads(x)["task_id"] for x in (tmp_path / "samples.jsonl").read_text().splitlines()}
    assert seen and seen <= allowed
    with pytest.raises(ValueError, match="train_seeds"):
        GRPOConfig(train_seeds=[])


def test_expert_actions_longer_than_a_turn_warn(tmp_path) -> None:
    """An SFT set whose expert actions cannot fit ``max_new_tokens`` warns (every imitating turn would be cut)."""
    with pytest.warns(UserWarning, match="longer than max_new_tokens=8"):
        train(MATH, "tiny", 0, tmp_path, sft_steps=1, max_new_tokens=8, **SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        train(MATH, "tiny", 0, tmp_path / "fits", sft_steps=1, max_new_tokens=40, **SMALL)


def test_cosine_sft_schedule_holds_its_floor_past_sft_steps() -> None:
    """The SFT-only branch of ``sft_vs_grpo`` continues SFT past ``sft_steps``: a cosine schedule must stay at its
    floor there (the unclamped formula climbed back to ``sft_lr`` by step ``2 * sft_steps``)."""
    from arl_baselines.grpo.train import sft_lr_at

    cfg = GRPOConfig.from_kwargs(sft_steps=100, sft_lr=1e-2, sft_schedule="cosine", sft_min_lr_ratio=0.1)
    assert sft_lr_at(cfg, 0) == pytest.approx(1e-2)
    assert sft_lr_at(cfg, 50) == pytest.approx(1e-2 * (0.1 + 0.9 * 0.5))
    for step in (100, 101, 150, 200, 10_000):
        assert sft_lr_at(cfg, step) == pytest.approx(1e-3), step
    lrs = [sft_lr_at(cfg, s) for s in range(300)]
    assert all(a >= b for a, b in zip(lrs, lrs[1:]))  # never rises
    const = GRPOConfig.from_kwargs(sft_steps=100, sft_lr=1e-2, sft_schedule="constant")
    assert {sft_lr_at(const, s) for s in (0, 99, 100, 500)} == {1e-2}


def test_train_warm_starts_from_the_shipped_checkpoint_of_the_tiny_defaults(tmp_path) -> None:
    """``sft_checkpoint="auto"`` (the default): with countdown's tiny defaults ``train`` loads the shipped SFT
    checkpoint's weights instead of running the SFT, and says so in the summary; the untrained model is still
    evaluated first, the warm-started one after it."""
    from arl_baselines.grpo.train import COUNTDOWN_SFT_CHECKPOINT

    small = {"eval_tasks": 2, "eval_samples": 1, "progress": False, "log_samples": 0}
    s = train("arl/math.countdown-v1", "tiny", 0, tmp_path, **small)
    assert s["sft_source"] == "shipped" and s["sft_checkpoint_skipped"] is None
    assert s["sft_checkpoint"]["path"] == str(COUNTDOWN_SFT_CHECKPOINT) and s["sft_checkpoint"]["weights_only"]
    assert s["sft_examples"] == 0 and (tmp_path / "sft.jsonl").read_text() == ""  # no SFT step ran here
    assert set(s["evals"]) == {"before", "after_sft"}


def test_arithmetic_defaults_start_from_a_warm_start_that_has_learned(tmp_path) -> None:
    """arithmetic's tiny defaults with no flags: the untrained model solves none of the held-out tasks and the
    shipped SFT warm start (500 cosine steps) solves some: 8 / 10 / 7 / 3 of 256 episodes under evaluation seeds
    0-3 (RESULTS.md, "Defaults (item 1), 2026-12-04"); the untrained model 0 under each. At a success rate of 0.027,
    P(0 of 256) is about 0.001."""
    s = train(MATH, "tiny", 0, tmp_path, progress=False, log_samples=0)
    ev = s["evals"]
    assert s["sft_source"] == "shipped"
    assert ev["before"]["success"] == 0.0 and ev["after_sft"]["success"] > 0.0, ev


def test_warm_start_loads_the_shipped_weights_or_says_why_not(tmp_path) -> None:
    """``_warm_start``: the shipped file's weights exactly when the settings are the env's tiny defaults; otherwise
    (another SFT setting, the GRPO/SFT gradient clip, another seed, another model, an env without a shipped file,
    ``"none"``) nothing is loaded and the reason is kept; an explicit path that does not match the run raises."""
    from arl_baselines.grpo.train import (
        SHIPPED_SFT_CHECKPOINTS,
        SHIPPED_SFT_SEED,
        _trainer,
        _warm_start,
        sft_checkpoint_spec,
        read_sft_checkpoint,
    )

    assert all(p.is_file() for p in SHIPPED_SFT_CHECKPOINTS.values())
    assert {read_sft_checkpoint(p)["demonstrator_seed"] for p in SHIPPED_SFT_CHECKPOINTS.values()} == {
        f"{SHIPPED_SFT_SEED}-demonstrator"}  # what the seed rule of "auto" relies on
    small = {"eval_tasks": 1, "eval_samples": 1, "progress": False}
    cases = [  # (env, model, settings, spec, loads, reason)
        (MATH, "tiny", {}, "auto", True, None),
        (MATH, "tiny", {}, "AUTO", True, None),
        (MATH, "tiny", {"sft_steps": 10}, "auto", False, "does not match"),
        (MATH, "tiny", {"max_grad_norm": 0.5}, "auto", False, "max_grad_norm"),
        (MATH, "tiny", {"seed": 1}, "auto", False, "seed"),
        (MATH, "tiny-S", {}, "auto", False, "does not match"),
        (MATH, "tiny", {}, "none", False, None),
        (MATH, "tiny", {}, "None", False, None),
        ("arl/search.multihop-v1", "tiny", {}, "auto", False, "no shipped SFT checkpoint"),
    ]
    for i, (env_id, model, settings, spec, loads, reason) in enumerate(cases):
        tr = _trainer(env_id, model, tmp_path / str(i), {**small, **settings})
        try:
            assert _warm_start(tr, sft_checkpoint_spec(spec)) is loads, (env_id, model, settings, spec)
            assert tr.sft_source == ("shipped" if loads else None)  # None: no SFT yet
            assert (tr.sft_checkpoint_skipped is None) if reason is None else reason in tr.sft_checkpoint_skipped
            if loads:
                want = read_sft_checkpoint(SHIPPED_SFT_CHECKPOINTS[env_id])["model"]
                have = tr.policy.model.state_dict()
                assert set(have) == set(want) and all(torch.equal(have[k], want[k]) for k in want)
        finally:
            tr.engine.close()
    tr = _trainer(MATH, "tiny", tmp_path / "explicit", {**small, "sft_steps": 10})
    try:
        with pytest.raises(ValueError, match="does not match"):
            _warm_start(tr, SHIPPED_SFT_CHECKPOINTS[MATH])
    finally:
        tr.engine.close()


def test_warm_start_from_a_file_is_the_same_run_as_its_sft(tmp_path) -> None:
    """A run that loads an SFT checkpoint (weights only) goes on as the run that trained that SFT itself: the same
    weights and the same GRPO task seeds next (the demonstrations' draw from the task-seed stream is skipped)."""
    from arl_baselines.grpo.train import TRAIN_SEED_RANGE, _trainer, _warm_start, build_sft_checkpoint

    small = {**SMALL, "sft_steps": 3, "sft_episodes": 8, "eval_tasks": 2, "eval_samples": 1, "num_threads": 1}
    build_sft_checkpoint(MATH, tmp_path / "ck.pt", tmp_path / "build", eval_every=0, **small)
    here = _trainer(MATH, "tiny", tmp_path / "here", small)
    loaded = _trainer(MATH, "tiny", tmp_path / "loaded", small)
    try:
        here.sft()
        assert _warm_start(loaded, tmp_path / "ck.pt")
        assert (here.sft_source, loaded.sft_source) == ("trained", "file")
        a, b = here.policy.model.state_dict(), loaded.policy.model.state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a)
        draw = [tr.task_rng.integers(0, TRAIN_SEED_RANGE, size=4).tolist() for tr in (here, loaded)]
        assert draw[0] == draw[1]
    finally:
        here.engine.close()
        loaded.engine.close()


def test_checkpoint_of_another_architecture_is_refused_before_any_weight_is_loaded(tmp_path, monkeypatch) -> None:
    """A checkpoint whose tensors do not fit the model (another vocabulary or size under the same settings) is a
    ValueError from ``load_sft_checkpoint`` with the model untouched (``load_state_dict`` would copy the tensors
    that fit before raising); ``"auto"`` then runs the SFT and says why."""
    from arl_baselines.grpo import train as train_mod
    from arl_baselines.grpo.train import SHIPPED_SFT_CHECKPOINTS, _trainer, _warm_start

    ck = torch.load(SHIPPED_SFT_CHECKPOINTS[MATH], weights_only=True)
    name = next(k for k in ck["model"] if k.endswith("embed_tokens.weight"))
    ck["model"][name] = ck["model"][name][:-1]  # one token fewer
    torch.save(ck, tmp_path / "other.pt")
    tr = _trainer(MATH, "tiny", tmp_path / "run", {"eval_tasks": 1, "eval_samples": 1, "progress": False})
    try:
        before = {k: v.clone() for k, v in tr.policy.model.state_dict().items()}
        with pytest.raises(ValueError, match="another architecture"):
            tr.load_sft_checkpoint(tmp_path / "other.pt", demonstrations=False)
        after = tr.policy.model.state_dict()
        assert all(torch.equal(before[k], after[k]) for k in before) and tr.sft_checkpoint is None
        monkeypatch.setitem(train_mod.SHIPPED_SFT_CHECKPOINTS, MATH, tmp_path / "other.pt")
        assert not _warm_start(tr, "auto") and "another architecture" in tr.sft_checkpoint_skipped
    finally:
        tr.engine.close()


def test_train_checks_an_sft_checkpoint_path_before_touching_the_run_directory(tmp_path) -> None:
    """``train(sft_checkpoint=PATH)`` with no such file, or a file that does not fit the run, raises before the run
    directory's logs are emptied (and before any evaluation); the message names the keywords for a misspelt one."""
    from arl_baselines.grpo.train import SHIPPED_SFT_CHECKPOINTS

    out = tmp_path / "old-run"
    out.mkdir()
    (out / "metrics.jsonl").write_text('{"step": 1}\n')
    with pytest.raises(FileNotFoundError, match="auto, none or the path"):
        train(MATH, "tiny", 1, out, sft_checkpoint="atuo", progress=False, overwrite=True)
    with pytest.raises(FileNotFoundError, match="auto, none or the path"):
        train(MATH, "tiny", 1, out, sft_checkpoint=tmp_path, progress=False, overwrite=True)  # a directory
    with pytest.raises(ValueError, match="does not match"):
        train(MATH, "tiny", 1, out, sft_checkpoint=SHIPPED_SFT_CHECKPOINTS["arl/math.countdown-v1"], progress=False,
              overwrite=True)
    with pytest.raises(FileExistsError, match="earlier run"):  # and without overwrite, an earlier run is kept
        train(MATH, "tiny", 1, out, progress=False)
    with pytest.raises(ValueError, match="steps must be >= 0"):
        train(MATH, "tiny", -1, tmp_path / "new", progress=False)
    assert (out / "metrics.jsonl").read_text() == '{"step": 1}\n' and sorted(p.name for p in out.iterdir()) == [
        "metrics.jsonl"]


def test_train_runs_the_sft_when_told_not_to_use_a_checkpoint(tmp_path) -> None:
    """``sft_checkpoint="none"`` runs the SFT even where a shipped checkpoint would fit."""
    s = train(MATH, "tiny", 0, tmp_path, sft_checkpoint="none", sft_steps=2, sft_episodes=8, eval_tasks=1,
              eval_samples=1, progress=False)
    assert s["sft_source"] == "trained" and s["sft_checkpoint"] is None and s["sft_examples"] == 8
    assert len((tmp_path / "sft.jsonl").read_text().splitlines()) == 2


def test_recommended_steps() -> None:
    from arl_baselines.grpo.config import DEFAULT_GRPO_STEPS, recommended_steps

    assert recommended_steps("arl/code.functions-v0", tiny=True) == 40
    assert recommended_steps("arl/code.functions-v0", tiny=False) == DEFAULT_GRPO_STEPS == 100
    assert recommended_steps(MATH, tiny=True) == DEFAULT_GRPO_STEPS

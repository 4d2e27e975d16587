"""The imperfect demonstrator (``sft_error_rate``) and SFT checkpoints that two runs can continue from."""

from __future__ import annotations

import random

import pytest

from arl_envs_tests.conftest import TEST_THREADS

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from arl_baselines.grpo.config import GRPOConfig  # noqa: E402
from arl_baselines.grpo.policy import load_policy  # noqa: E402
from arl_baselines.grpo.rollout import RolloutEngine, expert_episodes  # noqa: E402
from arl_baselines.grpo.train import Trainer, sft_vs_grpo  # noqa: E402

MATH = "arl/math.arithmetic-v1"
KW = {"difficulty": 1, "kinds": ["integer"]}
SMALL = {"env_kwargs": KW, "num_groups": 2, "group_size": 4, "max_seq_len": 256, "max_new_tokens": 40,
         "eval_tasks": 4, "eval_samples": 2, "progress": False, "sft_episodes": 64, "sft_steps": 4}


@pytest.fixture(autouse=True)
def _threads() -> None:
    torch.set_num_threads(TEST_THREADS)


@pytest.fixture(scope="module")
def engine():
    eng = RolloutEngine(load_policy("tiny"), MATH, env_kwargs=KW, batch_size=1, max_new_tokens=40, max_seq_len=256,
                        use_instructions=False)
    yield eng
    eng.close()


def test_clean_demonstrator_always_succeeds_and_decoys_lower_its_success(engine) -> None:
    """error_rate 0 is the expert (every demonstration succeeds); at 0.5 about half the turns are a different
    task's answer: well-formed (reward is not the format penalty), mostly wrong, and seeded by ``rng``."""
    seeds = list(range(400))
    clean = expert_episodes(engine, seeds)
    assert all(e.success for e in clean)
    noisy = expert_episodes(engine, seeds, error_rate=0.5, rng=random.Random(0))
    rate = sum(e.success for e in noisy) / len(noisy)
    # 243 problems and 48 distinct answers: a decoy is right by chance a few % of the time
    assert 0.42 < rate < 0.62, rate
    wrong = [e for e in noisy if not e.success]
    assert wrong and all("\\boxed{" in engine.policy.tokenizer.decode(e.ids[e.prompt_len:]) for e in wrong)
    again = expert_episodes(engine, seeds, error_rate=0.5, rng=random.Random(0))
    assert [e.ids for e in again] == [e.ids for e in noisy]
    assert all(e.success for e in expert_episodes(engine, seeds[:20], error_rate=0.0, rng=random.Random(0)))


def test_demonstrator_arguments_are_checked(engine) -> None:
    with pytest.raises(ValueError, match="error_rate"):
        expert_episodes(engine, [0], error_rate=1.2, rng=random.Random(0))
    with pytest.raises(ValueError, match="rng"):
        expert_episodes(engine, [0], error_rate=0.3)


def test_sft_checkpoint_round_trip_restores_weights_optimiser_and_demonstrations(tmp_path) -> None:
    cfg = GRPOConfig.from_kwargs(**SMALL, sft_error_rate=0.3, seed=3)
    a = Trainer(MATH, "tiny", cfg, tmp_path / "a")
    a.sft()
    path = a.save_sft_checkpoint(tmp_path / "ck" / "sft.pt")
    a.engine.close()
    b = Trainer(MATH, "tiny", cfg.replace(seed=9), tmp_path / "b")  # another continuation seed
    meta = b.load_sft_checkpoint(path)
    b.engine.close()
    assert meta["sft_steps_done"] == 4 and meta["demonstrator_success"] == a.demonstrator_success < 1
    assert len(meta["sha256"]) == 64
    for k, v in a.policy.model.state_dict().items():
        assert torch.equal(v, b.policy.model.state_dict()[k]), k
    sa, sb = a._sft_opt.state_dict()["state"], b._sft_opt.state_dict()["state"]
    assert sa.keys() == sb.keys() and all(torch.equal(sa[i]["exp_avg"], sb[i]["exp_avg"]) for i in sa)
    assert [e.ids for e in a._sft_data] == [e.ids for e in b._sft_data]
    assert b._sft_step == 4


def test_sft_checkpoint_refuses_another_run_and_bad_files(tmp_path) -> None:
    cfg = GRPOConfig.from_kwargs(**SMALL)
    a = Trainer(MATH, "tiny", cfg, tmp_path / "a")
    with pytest.raises(RuntimeError, match="sft"):
        a.save_sft_checkpoint(tmp_path / "x.pt")
    a.sft()
    path = a.save_sft_checkpoint(tmp_path / "sft.pt")
    with pytest.raises(RuntimeError, match="before any sft"):  # this run already has its own demonstrations
        a.load_sft_checkpoint(path)
    a.engine.close()
    # settings that shape the data, the schedule or the restored SFT optimiser; a partial SFT
    for changes in ({"sft_error_rate": 0.5}, {"max_seq_len": 300}, {"env_kwargs": {"difficulty": 2}},
                    {"weight_decay": 0.1}, {"adam_betas": (0.5, 0.9)}, {"sft_steps": 3}):
        b = Trainer(MATH, "tiny", cfg.replace(**changes), tmp_path / "b")
        with pytest.raises(ValueError, match="does not match"):
            b.load_sft_checkpoint(path)
        b.engine.close()
    c = Trainer(MATH, "tiny", cfg.replace(use_instructions=True), tmp_path / "c")
    with pytest.raises(ValueError, match="use_instructions"):
        c.load_sft_checkpoint(path)
    c.engine.close()
    # kinds as a tuple is the same setting as the list it was saved with
    ok = Trainer(MATH, "tiny", cfg.replace(env_kwargs={"difficulty": 1, "kinds": ("integer",)}), tmp_path / "ok")
    assert ok.load_sft_checkpoint(path)["sft_steps_done"] == 4
    ok.engine.close()
    d = Trainer(MATH, "tiny-S", cfg, tmp_path / "d")
    with pytest.raises(ValueError, match="model_spec"):
        d.load_sft_checkpoint(path)
    with pytest.raises(FileNotFoundError):
        d.load_sft_checkpoint(tmp_path / "nope.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "cut.pt").write_bytes(path.read_bytes()[:5000])
    torch.save({"format": 1}, tmp_path / "bare.pt")
    for name in ("junk.pt", "empty.pt", "cut.pt", "bare.pt"):
        with pytest.raises(ValueError, match="SFT checkpoint"):
            d.load_sft_checkpoint(tmp_path / name)
    d.engine.close()
    # a partial SFT (2 of the configured 4 steps) is refused for a 4-step run
    e = Trainer(MATH, "tiny", cfg, tmp_path / "e")
    e.sft(steps=2)
    partial = e.save_sft_checkpoint(tmp_path / "partial.pt")
    e.engine.close()
    f = Trainer(MATH, "tiny", cfg, tmp_path / "f")
    with pytest.raises(ValueError, match="partial SFT"):
        f.load_sft_checkpoint(partial)
    f.engine.close()


def test_a_refused_checkpoint_leaves_the_run_directory_alone(tmp_path) -> None:
    """The checkpoint is checked before the run's Trainer empties ``metrics.jsonl`` / ``sft.jsonl``."""
    a = Trainer(MATH, "tiny", GRPOConfig.from_kwargs(**SMALL), tmp_path / "a")
    a.sft()
    path = a.save_sft_checkpoint(tmp_path / "sft.pt")
    a.engine.close()
    run = tmp_path / "run"
    run.mkdir()
    (run / "sft.jsonl").write_text("earlier\n")
    (run / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="sft_lr"):
        sft_vs_grpo(MATH, "tiny", run, grpo_steps=1, sft_checkpoint=path, env_defaults=False, **{**SMALL, "sft_lr": 1e-3})
    assert (run / "sft.jsonl").read_text() == "earlier\n" and (run / "config.json").read_text() == "{}"
    with pytest.raises(ValueError, match="not both"):
        sft_vs_grpo(MATH, "tiny", run, grpo_steps=1, sft_checkpoint=path, save_sft_checkpoint=tmp_path / "y.pt",
                    env_defaults=False, **SMALL)


def test_sft_vs_grpo_continues_from_a_saved_checkpoint(tmp_path) -> None:
    """Saving in one comparison and starting another from the file: the second skips SFT (no ``before``
    evaluation, no new SFT rows before the SFT-only branch) and records which file it started from."""
    r1 = sft_vs_grpo(MATH, "tiny", tmp_path / "one", grpo_steps=1, save_sft_checkpoint=tmp_path / "sft.pt",
                     env_defaults=False, **SMALL)
    assert "before" in r1["grpo"]["evals"]
    r2 = sft_vs_grpo(MATH, "tiny", tmp_path / "two", grpo_steps=1, sft_checkpoint=tmp_path / "sft.pt",
                     env_defaults=False, **SMALL)
    assert "before" not in r2["grpo"]["evals"] and r2["demonstrator_success"] == r1["demonstrator_success"] == 1.0
    assert r1["sft_checkpoint"] is None and r2["sft_checkpoint"]["sft_steps_done"] == 4
    assert len(r2["sft_checkpoint"]["sha256"]) == 64
    rows = (tmp_path / "two" / "sft.jsonl").read_text().splitlines()
    assert len(rows) == r2["sft_extra_steps"] and '"sft_step": 5' in rows[0]

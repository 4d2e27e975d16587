"""reasoning-gym ids (``arl/reasoning.<dataset>-v0``): the shipped list against the installed package, a light
check of every id, the full conformance suite on a sample, partial credit, config pass-through."""

from __future__ import annotations

import gymnasium as gym
import pytest

import arl_envs
from arl_envs.registration import ENVS

reasoning_gym = pytest.importorskip("reasoning_gym", reason="reasoning-gym not installed: pip install 'arl-envs[reasoning]'")

from arl_envs.envs.reasoning.env import ReasoningGymEnv, dataset_table  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402

IDS = [row.id for row in ENVS if row.entry_point.endswith(":ReasoningGymEnv")]
#: The full conformance suite runs on these (the light check below covers every id): a plain one, one with a long
#: multi-line answer, one with a non-default size, one with partial credit, one whose item takes seconds to make.
SAMPLE = ["chain_sum", "tower_of_hanoi", "acre", "word_sorting", "arc_agi", "knights_knaves"]


def test_shipped_list_matches_the_installed_package() -> None:
    from reasoning_gym.factory import DATASETS

    table = dataset_table()
    offered, excluded = set(table["datasets"]), set(table["excluded"])
    assert not offered & excluded
    assert offered | excluded == set(DATASETS), "regenerate arl_envs/envs/reasoning/datasets.json"
    assert IDS == [f"arl/reasoning.{n}-v0" for n in table["datasets"]] and len(IDS) >= 95
    assert all(table["excluded"][n] for n in excluded)


@pytest.mark.slow
def test_every_id_light_check() -> None:
    """Every id: deterministic item from the seed, expert answer scores 1 (native and json), a wrong answer does
    not, a reply without an answer is a format error and the episode goes on."""
    import random

    import numpy as np

    failures = []
    for env_id in IDS:
        env = gym.make(env_id)
        random.seed(11)
        np.random.seed(11)
        globals_before = (random.getstate(), np.random.get_state()[1].tolist())
        obs_a, info = env.reset(seed=3)
        obs_b, info_b = env.reset(seed=3)
        if obs_a != obs_b or info["task_id"] != info_b["task_id"]:
            failures.append(f"{env_id}: same seed, different item")
        _, r, term, trunc, info = env.step("I am not sure.")
        if term or not info["action_error"] or r >= 0:
            failures.append(f"{env_id}: a reply without an answer is not a format error")
        _, r, term, _, info = env.step(env.unwrapped.expert_action())
        if not (term and info["success"] and r == 1.0 and info["reward_components"]["task"] == 1.0):
            failures.append(f"{env_id}: expert scored {r}")
        env.reset(seed=4)
        _, r, term, _, info = env.step("<answer>zzzz-not-it</answer>")
        if not term or info["success"] or r >= 1.0:
            failures.append(f"{env_id}: a wrong answer scored {r}")
        if (random.getstate(), np.random.get_state()[1].tolist()) != globals_before:
            failures.append(f"{env_id}: an episode changed the random module's or NumPy's global generator (a "
                            "dataset that draws from one belongs in GLOBAL_RNG_DATASETS)")
        env.close()
        env = gym.make(env_id, action_format="json")
        env.reset(seed=5)
        _, r, term, _, info = env.step(env.unwrapped.expert_action())
        if not (term and info["success"] and r == 1.0):
            failures.append(f"{env_id}: json expert scored {r}")
        env.close()
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("name", SAMPLE)
def test_conformance_sample(name: str) -> None:
    report = check_conformance(f"arl/reasoning.{name}-v0", n_fuzz=40)
    assert report.passed, report.summary()


def test_partial_credit_kept_and_boxed_answers() -> None:
    env = gym.make("arl/reasoning.word_sorting-v0")
    env.reset(seed=0)
    gold = str(env.unwrapped.item["answer"])
    _, r, term, _, info = env.step(f"<think>\\boxed{{no}}</think>Sorted: <answer>{gold[:-1]}</answer>")
    assert term and 0.0 < r < 1.0 and not info["success"] and info["score"] == r
    env.reset(seed=0)
    _, r, _, _, info = env.step(f"The answer is \\boxed{{{gold}}}")
    assert r == 1.0 and info["success"]


def test_config_passed_through_and_bad_config_rejected() -> None:
    env = gym.make("arl/reasoning.chain_sum-v0", config={"min_terms": 6, "max_terms": 6, "min_digits": 1,
                                                          "max_digits": 1})
    obs, _ = env.reset(seed=1)
    assert obs.rstrip().splitlines()[-1].count(" ") >= 11  # 6 one-digit terms, 5 operators
    assert env.unwrapped.item["metadata"]["num_terms"] == 6
    with pytest.raises(ValueError, match="rejected the config"):
        gym.make("arl/reasoning.chain_sum-v0", config={"min_terms": 9, "max_terms": 2})
    with pytest.raises(ValueError, match="env's"):
        gym.make("arl/reasoning.chain_sum-v0", config={"seed": 3})
    with pytest.raises(ValueError, match="not offered"):
        ReasoningGymEnv(dataset="composite")
    env.reset(options={"task_id": "17"})
    assert env.unwrapped.index == 17


def test_decimal_context_of_the_caller_is_kept_and_does_not_change_items() -> None:
    """decimal_arithmetic sets ``decimal.getcontext().prec`` while it makes an item: an episode leaves the caller's
    decimal context as it was, and the caller's context (precision, rounding, traps) does not change the items."""
    import decimal

    def items(name: str) -> list[str]:
        env = gym.make(f"arl/reasoning.{name}-v0")
        out = []
        for seed in range(6):
            obs, _ = env.reset(seed=seed)
            _, r, *_ = env.step(f"<answer>{env.unwrapped.item['answer']}</answer>")
            out.append(f"{obs} {env.unwrapped.item['answer']} {r}")
        env.close()
        return out

    for name in ("decimal_arithmetic", "decimal_chain_sum"):
        want = items(name)
        with decimal.localcontext(decimal.Context(prec=5, rounding=decimal.ROUND_DOWN,
                                                  traps=[decimal.Inexact])) as ctx:
            assert items(name) == want, name
            assert (ctx.prec, ctx.rounding, decimal.getcontext() is ctx) == (5, decimal.ROUND_DOWN, True)


def test_numpy_global_generator_left_alone() -> None:
    """pool_matrix seeds NumPy's global generator to make an item; the caller's draws go on where they were."""
    import numpy as np

    np.random.seed(5)
    want = np.random.random(4)
    np.random.seed(5)
    env = gym.make("arl/reasoning.pool_matrix-v0")
    env.reset(seed=0)
    env.step(f"<answer>{env.unwrapped.item['answer']}</answer>")
    env.close()
    assert np.random.random(4).tolist() == want.tolist()


def test_list_functions_items_depend_on_the_seed_only() -> None:
    """list_functions draws some numbers from the ``random`` module's global generator without seeding it; the env
    seeds it from the item's seed, so the caller's global state changes no item (and is left as it was)."""
    import random

    def items(global_seed: int) -> list[str]:
        random.seed(global_seed)
        env = gym.make("arl/reasoning.list_functions-v0")
        out = [env.reset(options={"task_id": str(i)})[0] for i in range(40)]
        env.close()
        state = random.getstate()
        random.seed(global_seed)
        assert state == random.getstate()
        return out

    assert items(1) == items(2)


def test_import_arl_envs_does_not_import_reasoning_gym() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import sys, arl_envs; print('reasoning_gym' in sys.modules)"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False" and len(arl_envs.env_ids()) > 100

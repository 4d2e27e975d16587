"""referential_v0: PettingZoo tests, shared reward, hidden target, message rules, scripted players, the view."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

from arl_envs.envs.multiagent import referential_v0  # noqa: E402
from arl_envs.envs.multiagent.referential_v0 import LISTENER, SPEAKER, name_of  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # text spaces are not Box/Discrete: PettingZoo warns, by design
        return fn(*args, **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"num_objects": 8, "max_words": 1}])
def test_pettingzoo_api_parallel_and_seed(kwargs) -> None:
    _quiet(api_test, referential_v0.env(**kwargs), num_cycles=1000)
    _quiet(seed_test, lambda: referential_v0.env(**kwargs), num_cycles=500)
    _quiet(parallel_api_test, referential_v0.parallel_env(**kwargs), num_cycles=200)
    _quiet(parallel_seed_test, lambda: referential_v0.parallel_env(**kwargs))


def _listener_number(env, obj_index: int) -> str:
    return str(env.listener_order.index(obj_index) + 1)


def test_shared_reward_and_the_listener_does_not_see_the_target() -> None:
    env = referential_v0.env()
    for seed in range(20):
        env.reset(seed=seed)
        target = name_of(env.objects[env.target])
        assert "TARGET" in env.observe(SPEAKER) and "TARGET" not in env.observe(LISTENER)
        env.step(f"[{target}]")
        assert f'"{target}"' in env.observe(LISTENER)
        wrong = (env.target + 1) % env.num_objects
        pick = env.target if seed % 2 == 0 else wrong
        env.step(f"[{_listener_number(env, pick)}]")
        r = 1.0 if pick == env.target else 0.0
        assert env.rewards == {SPEAKER: r, LISTENER: r}
        assert all(env.terminations.values())


def test_orders_differ_so_only_a_description_helps() -> None:
    env = referential_v0.env(num_objects=6)
    differ = 0
    for seed in range(20):
        env.reset(seed=seed)
        differ += env.listener_order != list(range(env.num_objects))
    assert differ >= 15


def test_message_rules() -> None:
    env = referential_v0.env(max_words=2, max_invalid_actions=5)
    env.reset(seed=0)
    for bad, why in (("[small red circle]", "at most 2"), ("[red 3]", "letters only"), ("[ ]", "empty"),
                     ("[" + "a" * 90 + "]", "characters")):
        env.step(bad)
        assert why in env.infos[SPEAKER]["reason"], (bad, env.infos[SPEAKER]["reason"])
        assert env.agent_selection == SPEAKER
    env.step("I will say <think>the target is red</think> [Red  Star]")
    assert env.message == "red star" and env.agent_selection == LISTENER
    env.step("[9]")
    assert env.infos[LISTENER]["reason"] and env.agent_selection == LISTENER


def test_forfeit_costs_the_team() -> None:
    env = referential_v0.env(max_invalid_actions=0)
    env.reset(seed=0)
    env.step("")
    assert env.forfeited == SPEAKER and env.rewards == {SPEAKER: -1.0, LISTENER: -1.0}


def test_scripted_players() -> None:
    rng = np.random.default_rng(0)
    env = referential_v0.env()
    results = {}
    for combo in (("expert", "expert"), ("random", "expert"), ("expert", "random")):
        wins = 0
        for seed in range(100):
            env.reset(seed=seed)
            for kind in combo:
                agent = env.agent_selection
                move = env.expert_move(agent, rng) if kind == "expert" else env.random_move(agent, rng)
                env.step(f"[{move}]")
            wins += env.returns[SPEAKER] > 0
        results[combo] = wins
    assert results[("expert", "expert")] == 100
    assert results[("random", "expert")] < 60 and results[("expert", "random")] < 50, results
    # one word is not always enough among 8 objects: the scripted pair then sometimes fails
    env = referential_v0.env(num_objects=8, max_words=1)
    wins = 0
    for seed in range(100):
        env.reset(seed=seed)
        for _ in range(2):
            env.step(f"[{env.expert_move(env.agent_selection, rng)}]")
        wins += env.returns[SPEAKER] > 0
    assert 30 < wins < 100


def test_single_agent_view_conformance() -> None:
    report = check_conformance("arl_envs:arl/multiagent.referential-v1", n_fuzz=60)
    assert report.passed, report.summary()

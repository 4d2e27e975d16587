"""negotiation_v0: PettingZoo tests, deals and payoffs, messages, private values, limits, the view."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

from arl_envs.envs.multiagent import negotiation_v0  # noqa: E402
from arl_envs.envs.multiagent.negotiation_v0 import MAX_MESSAGE_CHARS, VALUE_TOTAL, _value_pairs  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # text spaces are not Box/Discrete: PettingZoo warns, by design
        return fn(*args, **kwargs)


def test_pettingzoo_api_parallel_and_seed() -> None:
    _quiet(api_test, negotiation_v0.env(), num_cycles=1000)
    _quiet(seed_test, negotiation_v0.env, num_cycles=500)
    _quiet(parallel_api_test, negotiation_v0.parallel_env(), num_cycles=200)
    _quiet(parallel_seed_test, negotiation_v0.parallel_env)


def test_pools_and_values_follow_the_setup() -> None:
    env = negotiation_v0.env()
    seen = set()
    for seed in range(50):
        env.reset(seed=seed)
        c = env.counts
        assert 5 <= sum(c) <= 7 and all(1 <= n <= 4 for n in c)
        a, b = env.values["player_0"], env.values["player_1"]
        assert env.value("player_0", c) == VALUE_TOTAL == env.value("player_1", c)
        assert all(x or y for x, y in zip(a, b)) and any(x and y for x, y in zip(a, b))
        seen.add((c, a, b))
    assert len(seen) > 40
    assert all(len(_value_pairs(c)) > 0 for c in negotiation_v0._pools())


def test_deal_pays_each_its_value_and_messages_pass() -> None:
    env = negotiation_v0.env()
    env.reset(seed=3)
    c = env.counts
    keep = (c[0], 0, 0)
    env.step(f"I only need the books. [propose {keep[0]} 0 0] Deal?")
    assert env.infos["player_0"]["reason"] is None and env.agent_selection == "player_1"
    obs1 = env.observe("player_1")
    assert 'Message: "I only need the books. Deal?"' in obs1
    assert f"they take {keep[0]} book" in obs1
    # player_1 sees its own values, never player_0's
    v0 = ", ".join(f"{i}={v}" for i, v in zip(negotiation_v0.ITEMS, env.values["player_0"]))
    v1 = ", ".join(f"{i}={v}" for i, v in zip(negotiation_v0.ITEMS, env.values["player_1"]))
    assert v1 in obs1 and (v0 == v1 or v0 not in obs1)
    assert env.infos["player_1"]["offer"] == [0, c[1], c[2]]
    env.step("[accept] thank you")
    assert all(env.terminations.values())
    assert env.rewards == {"player_0": float(env.value("player_0", keep)),
                           "player_1": float(env.value("player_1", (0, c[1], c[2])))}
    assert 'Message: "thank you"' in env.observe("player_0")


def test_no_deal_pays_zero_after_max_turns_and_reject() -> None:
    env = negotiation_v0.env(max_turns=4)
    env.reset(seed=0)
    env.step("[propose 1 1 1]")
    env.step("[reject] no way")
    assert env.infos["player_0"]["offer"] is None and "rejected your proposal" in env.observe("player_0")
    env.step("[accept]")  # nothing to accept now: invalid, with a reason
    assert "no standing proposal" in env.infos["player_0"]["reason"]
    env.step("[propose 0 0 0]")
    env.step("[propose 0 0 0]")
    assert all(env.terminations.values()) and env.rewards == {"player_0": 0.0, "player_1": 0.0}
    assert env.move_number == 4


def test_move_forms_limits_and_forfeit() -> None:
    env = negotiation_v0.env(max_invalid_actions=1)
    env.reset(seed=1)
    c = env.counts
    env.step(f'<tool_call>{{"name": "move", "arguments": {{"move": "propose {c[0]}, 0, 0", '
             f'"message": "{"x" * 1000}"}}}}</tool_call>')
    assert env.infos["player_0"]["reason"] is None
    msg = env.observe("player_1").split('Message: "')[1].split('"')[0]
    assert len(msg) == MAX_MESSAGE_CHARS, "messages are capped so observations stay bounded"
    env.step("[propose 4 4 4]")  # more than the pool (at most 7 items): not legal now
    assert "the pool has only" in env.infos["player_1"]["reason"]
    env.step("I refuse to play")
    assert env.forfeited == "player_1"
    assert env.rewards == {"player_0": 0.0, "player_1": -1.0}


def test_expert_beats_random_and_experts_agree() -> None:
    rng = np.random.default_rng(0)
    env = negotiation_v0.env()
    def play(kinds: dict[str, str], seed: int) -> dict[str, float]:
        env.reset(seed=seed)
        while env.agents:
            agent = env.agent_selection
            _, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            move = env.expert_move(agent, rng) if kinds[agent] == "expert" else env.random_move(agent, rng)
            env.step(f"[{move}]")
        return dict(env.returns)

    expert, rand = [], []
    for seed in range(60):
        seats = {"player_0": "expert", "player_1": "random"} if seed % 2 == 0 else \
            {"player_0": "random", "player_1": "expert"}
        r = play(seats, seed)
        e = "player_0" if seed % 2 == 0 else "player_1"
        expert.append(r[e])
        rand.append(r["player_1" if e == "player_0" else "player_0"])
    assert np.mean(expert) > 8 and np.mean(expert) > np.mean(rand) + 3
    deals = [play({"player_0": "expert", "player_1": "expert"}, s) for s in range(30)]
    assert sum(1 for d in deals if d["player_0"] > 0 and d["player_1"] > 0) >= 25, "two experts reach deals"


def test_single_agent_view_conformance() -> None:
    report = check_conformance("arl_envs:arl/multiagent.negotiation-v1", n_fuzz=60)
    assert report.passed, report.summary()

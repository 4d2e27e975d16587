"""gridpath_v0: PettingZoo tests, the cycle order after removals (must hold), conflicts, rewards, the view."""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

from arl_envs.envs.multiagent import gridpath_v0  # noqa: E402
from arl_envs.envs.multiagent.gridpath_v0 import COLLISION_PENALTY, GOAL_REWARD, resolve_moves  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # text spaces are not Box/Discrete: PettingZoo warns, by design
        return fn(*args, **kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"num_agents": 5, "size": 6}, {"num_agents": 1}])
def test_pettingzoo_api_parallel_and_seed(kwargs) -> None:
    _quiet(api_test, gridpath_v0.env(**kwargs), num_cycles=1000)
    _quiet(seed_test, lambda: gridpath_v0.env(**kwargs), num_cycles=500)
    _quiet(parallel_api_test, gridpath_v0.parallel_env(**kwargs), num_cycles=500)
    _quiet(parallel_seed_test, lambda: gridpath_v0.parallel_env(**kwargs), num_cycles=500)


# agent_1 is one step from its goal; agent_0 and agent_2 are far from theirs.
LAYOUT = (
    "0...c",
    ".1b..",
    ".....",
    ".....",
    "a...2",
)


def test_after_a_removal_every_remaining_agent_acts_once_per_cycle_in_order() -> None:
    env = gridpath_v0.env(layout=LAYOUT, max_cycles=12)
    env.reset(seed=0)
    live_actors: list[str] = []
    removed_at: dict[str, int] = {}
    for agent in env.agent_iter(1000):
        _, _, term, trunc, _ = env.last()
        if term or trunc:
            removed_at.setdefault(agent, len(live_actors))
            env.step(None)
            continue
        live_actors.append(agent)
        # agent_1 steps right onto its goal at once; the others wait in place
        env.step("[right]" if agent == "agent_1" else "[stay]")
    # cycle 1: all three act; agent_1 arrives and leaves; then agent_0, agent_2 alternate every cycle
    assert live_actors[:3] == ["agent_0", "agent_1", "agent_2"]
    assert removed_at["agent_1"] == 3, "agent_1 leaves right after the cycle in which it arrived"
    rest = live_actors[3:]
    assert len(rest) == 2 * 11 and rest == ["agent_0", "agent_2"] * 11, rest
    assert env.agents == [] and env.truncations == {}


def test_removal_in_the_middle_keeps_the_order_for_many_layouts() -> None:
    # Random layouts, random legal moves: in every cycle each agent not yet arrived acts exactly once, in seat order.
    rng = np.random.default_rng(0)
    env = gridpath_v0.env(num_agents=4, size=5, num_walls=2)
    removals = 0
    for seed in range(30):
        env.reset(seed=seed)
        cycle_actors: dict[int, list[str]] = {}
        left_after: dict[str, int] = {}  # agent -> number of cycles it took part in
        while env.agents:
            agent = env.agent_selection
            _, _, term, trunc, _ = env.last()
            if term or trunc:
                left_after[agent] = env.cycle
                env.step(None)
                continue
            cycle_actors.setdefault(env.cycle, []).append(agent)
            env.step(f"[{env.random_move(agent, rng)}]")
        removals += sum(1 for a, c in left_after.items() if c < env.cycle)
        for cycle, actors in cycle_actors.items():
            expected = [a for a in env.possible_agents if left_after.get(a, 10**9) > cycle]
            assert actors == expected, f"seed {seed} cycle {cycle}: {actors} != {expected}"
    assert removals >= 5, "the layouts must exercise agents leaving before the game ends"


def test_goal_reward_leaving_and_team_success() -> None:
    env = gridpath_v0.env(layout=LAYOUT, max_cycles=10)
    env.reset(seed=0)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    rng = np.random.default_rng(0)
    while env.agents:
        agent = env.agent_selection
        _, r, term, trunc, _ = env.last()
        totals[agent] += r
        env.step(None if (term or trunc) else f"[{env.expert_move(agent, rng)}]")
    assert sorted(env.arrived) == ["agent_0", "agent_1", "agent_2"]
    assert env.success("agent_0", 0.0)
    for a in env.possible_agents:
        assert totals[a] == pytest.approx(env.returns[a])  # what last() paid out is what the game counted
        assert env.returns[a] == pytest.approx(GOAL_REWARD)  # the planners never collide on this open map
    assert env.arrived[0] == "agent_1"


def test_conflicts_are_resolved_simultaneously() -> None:
    pos = {"a": (0, 0), "b": (0, 2), "c": (1, 1)}
    # a and b both into (0, 1): vertex conflict, both stay; c moves freely
    new, blocked = resolve_moves(pos, {"a": (0, 1), "b": (0, 1), "c": (2, 1)})
    assert new == {"a": (0, 0), "b": (0, 2), "c": (2, 1)} and blocked == {"a", "b"}
    # swap: both stay
    new, blocked = resolve_moves({"a": (0, 0), "b": (0, 1)}, {"a": (0, 1), "b": (0, 0)})
    assert new == {"a": (0, 0), "b": (0, 1)} and blocked == {"a", "b"}
    # a follows b, which moves on: allowed; d into a cell whose agent stays: blocked, and then e behind d too
    new, blocked = resolve_moves({"a": (0, 0), "b": (0, 1)}, {"a": (0, 1), "b": (0, 2)})
    assert new == {"a": (0, 1), "b": (0, 2)} and not blocked
    new, blocked = resolve_moves({"s": (0, 2), "d": (0, 1), "e": (0, 0)}, {"s": (0, 2), "d": (0, 2), "e": (0, 1)})
    assert new == {"s": (0, 2), "d": (0, 1), "e": (0, 0)} and blocked == {"d", "e"}


def test_collision_penalty_and_hidden_choices() -> None:
    env = gridpath_v0.env(layout=("0.1", "...", "a.b"), max_cycles=5)
    env.reset(seed=0)
    env.step("[right]")  # agent_0 into (0, 1)
    assert "right" not in env.observe("agent_1"), "choices of the cycle are hidden until it resolves"
    env.step("[left]")  # agent_1 into (0, 1) too: vertex conflict
    assert env.rewards == {"agent_0": COLLISION_PENALTY, "agent_1": COLLISION_PENALTY}
    assert env.pos == {"agent_0": (0, 0), "agent_1": (0, 2)}
    assert "Blocked by a conflict" in env.observe("agent_1") and "Blocked by a conflict" in env.observe("agent_0")


def test_invalid_moves_and_forfeit() -> None:
    env = gridpath_v0.env(layout=("0.1", "...", "a.b"), max_invalid_actions=1)
    env.reset(seed=0)
    env.step("[up]")  # off the grid
    assert env.agent_selection == "agent_0" and "off the grid" in env.infos["agent_0"]["reason"]
    env.step("[up]")
    assert env.forfeited == "agent_0" and all(env.terminations.values())
    assert env.rewards == {"agent_0": -1.0, "agent_1": 0.0}


def test_parallel_invalid_move_resumes_the_cycle() -> None:
    par = gridpath_v0.parallel_env(layout=("0.1", "...", "a.b"))
    obs, infos = par.reset(seed=0)
    # every agent of the cycle is prompted with its legal moves, not only the AEC env's selected one
    assert infos["agent_1"]["legal_moves"] == ["down", "left", "stay"] and "Legal moves" in obs["agent_1"]
    obs, rew, term, trunc, infos = par.step({"agent_0": "[down]", "agent_1": "[jump]"})
    assert infos["agent_1"]["reason"] and par.aec_env.pending == {"agent_0": "down"}
    obs, rew, term, trunc, infos = par.step({"agent_0": "[up]", "agent_1": "[down]"})  # agent_0's action ignored
    assert par.aec_env.pos == {"agent_0": (1, 0), "agent_1": (1, 2)} and par.aec_env.cycle == 1
    obs, rew, term, trunc, infos = par.step({"agent_0": "[down]", "agent_1": "[down]"})
    assert term == {"agent_0": True, "agent_1": True} and rew == {"agent_0": 1.0, "agent_1": 1.0}
    assert par.agents == []


def test_layout_validation() -> None:
    with pytest.raises(ValueError):
        gridpath_v0.env(layout=("0#a", "###", "..."))  # unreachable goal
    with pytest.raises(ValueError):
        gridpath_v0.env(layout=("0..", "..."))  # not square
    with pytest.raises(ValueError):
        gridpath_v0.env(layout=("0..", "...", "..."))  # no goal


def test_expert_team_beats_random_team() -> None:
    rng = np.random.default_rng(1)
    env = gridpath_v0.env()
    wins = {"expert": 0, "random": 0}
    for kind in wins:
        for seed in range(20):
            env.reset(seed=seed)
            while env.agents:
                agent = env.agent_selection
                _, _, term, trunc, _ = env.last()
                if term or trunc:
                    env.step(None)
                    continue
                move = env.expert_move(agent, rng) if kind == "expert" else env.random_move(agent, rng)
                env.step(f"[{move}]")
            wins[kind] += env.success("agent_0", 0.0)
    assert wins["expert"] >= 19 and wins["random"] <= 5, wins


def test_single_agent_view_conformance() -> None:
    report = check_conformance("arl_envs:arl/multiagent.gridpath-v1", n_fuzz=60)
    assert report.passed, report.summary()

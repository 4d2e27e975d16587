"""Regression tests from trying to break the multi-agent domain (issue 17 review): opponent failures, malformed
moves, aliasing of info lists, truncation semantics, texts passed between agents, odd configurations."""

from __future__ import annotations

import time

import gymnasium as gym
import pytest

pytest.importorskip("pettingzoo")

import arl_envs  # noqa: E402,F401
from arl_envs.core.errors import ArlError  # noqa: E402
from arl_envs.envs.multiagent import (  # noqa: E402
    connect_four_v0,
    gridpath_v0,
    kuhn_poker_v0,
    negotiation_v0,
    referential_v0,
    tictactoe_v0,
)
from arl_envs.envs.multiagent.view import OpponentError  # noqa: E402

GAMES = [tictactoe_v0, connect_four_v0, kuhn_poker_v0, negotiation_v0, referential_v0, gridpath_v0]


def _raises(observation: str, info: dict) -> str:
    raise RuntimeError("policy server down")


# ---------------------------------------------------------------- a failing opponent is never scored
@pytest.mark.parametrize("reply", [_raises, lambda o, i: None, lambda o, i: 4, lambda o, i: "no idea"],
                         ids=["raises", "returns-None", "returns-int", "garbage-forfeits"])
def test_opponent_failure_in_step_is_env_error_not_a_win(reply) -> None:
    env = gym.make("arl/multiagent.tictactoe-v1", seat="first", opponent=reply)
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step("[0]")
    assert trunc and not term and not info["success"]
    assert "opponent" in info["env_error"] and info["reward_components"].get("task", 0.0) == 0.0 and r == 0.0
    assert "outcome" not in info
    with pytest.raises(ArlError):  # the episode is over
        env.step("[1]")


@pytest.mark.parametrize("reply", [_raises, lambda o, i: None, lambda o, i: "no idea"])
def test_opponent_failure_before_the_first_move_raises_from_reset(reply) -> None:
    env = gym.make("arl/multiagent.tictactoe-v1", seat="second", opponent=reply)
    with pytest.raises(OpponentError, match="opponent"):
        env.reset(seed=0)


def test_cooperative_partner_failure_does_not_punish_the_agent() -> None:
    # referential: the agent speaks, a callable listener writes garbage until it forfeits (-1 for both in the game)
    env = gym.make("arl/multiagent.referential-v1", seat="first", opponent=lambda o, i: "hmm")
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
    assert trunc and not term and r == 0.0 and "env_error" in info


def test_opponent_invalid_moves_below_the_limit_are_retried() -> None:
    replies = iter(["??", "[99]", "[8]", "[7]", "[6]", "[5]"])
    env = gym.make("arl/multiagent.tictactoe-v1", seat="first", opponent=lambda o, i: next(replies))
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step("[0]")
    assert not (term or trunc) and "played [8]" in obs and "env_error" not in info


def test_opponent_cannot_corrupt_the_games_legal_moves() -> None:
    def vandal(observation: str, info: dict) -> str:
        move = info["legal_moves"][0]
        info["legal_moves"].clear()  # a policy that consumes its list
        return f"[{move}]"

    env = gym.make("arl/multiagent.tictactoe-v1", seat="second", opponent=vandal)
    obs, info = env.reset(seed=0)
    assert "X (player_0) played [0]" in obs and info["legal_moves"] == [str(i) for i in range(1, 9)]


@pytest.mark.parametrize("module", GAMES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_mutating_an_aec_info_does_not_change_the_rules(module) -> None:
    env = module.env()
    env.reset(seed=0)
    agent = env.agent_selection
    legal = list(env.infos[agent]["legal_moves"])
    if not legal:  # the referential speaker: free text
        pytest.skip("no legal-move list for this seat")
    env.last()[4]["legal_moves"].clear()
    env.step(f"[{legal[0]}]")
    assert env.move_number == 1 and env.infos.get(agent, {}).get("reason") is None


def test_openspiel_legal_actions_are_copies() -> None:
    openspiel_v0 = pytest.importorskip("arl_envs.envs.multiagent.openspiel_v0")
    pytest.importorskip("pyspiel")
    env = openspiel_v0.env(game="tic_tac_toe")
    env.reset(seed=0)
    info = env.infos["player_0"]
    info["legal_moves"].clear()
    info["legal_actions"].clear()
    env.step("[4]")
    assert env.infos["player_0"]["reason"] is None and env.move_number == 1


# ---------------------------------------------------------------- malformed moves never raise
HUGE_INT_CALL = '<tool_call>{"name": "move", "arguments": {"move": ' + "9" * 5000 + "}}</tool_call>"


@pytest.mark.parametrize("module", GAMES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("action_format", ["native", "json"])
def test_tool_call_with_a_huge_integer_is_an_invalid_move(module, action_format) -> None:
    env = module.env(action_format=action_format)
    env.reset(seed=0)
    agent = env.agent_selection
    env.step(HUGE_INT_CALL)
    assert env.agent_selection == agent and env.infos[agent]["reason"] and env.infos[agent]["invalid_moves"] == 1


# ---------------------------------------------------------------- episode-end semantics
def test_gridpath_cycle_limit_is_truncation_in_the_view() -> None:
    env = gym.make("arl/multiagent.gridpath-v1", opponent="expert", seat="first")
    env.reset(seed=0)
    for _ in range(100):
        obs, r, term, trunc, info = env.step("[stay]")
        if term or trunc:
            break
    assert trunc and not term and not info["success"]
    assert "cycle 20 of 20" in obs and "cycle 21" not in obs


def test_gridpath_arrival_is_termination_in_the_view() -> None:
    env = gym.make("arl/multiagent.gridpath-v1", opponent="expert", seat="first")
    env.reset(seed=0)
    for _ in range(100):
        obs, r, term, trunc, info = env.step(env.unwrapped.expert_action())
        if term or trunc:
            break
    assert term and not trunc and info["success"]


def test_seat_that_never_gets_a_turn_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="seat"):
        gym.make("arl/multiagent.gridpath-v1", seat="second", game_kwargs={"num_agents": 1})
    env = gym.make("arl/multiagent.negotiation-v1", seat="second", game_kwargs={"max_turns": 1})
    with pytest.raises(ValueError, match="before"):
        env.reset(seed=0)


# ---------------------------------------------------------------- text passed to the other agent
def test_negotiation_message_is_cleaned_before_the_other_agent_reads_it() -> None:
    env = negotiation_v0.env()
    env.reset(seed=0)
    env.step('deal? \ud800\x1b[2J\x07\u202e "quoted" [propose 1 1 1]')
    obs = env.observe("player_1")
    obs.encode("utf-8")  # no lone surrogate
    message = obs.split("Message: ", 1)[1].split("\n", 1)[0]
    assert "\x1b" not in message and "\x07" not in message and "\u202e" not in message
    assert message.count('"') == 2 and "deal?" in message and "quoted" in message


# ---------------------------------------------------------------- the turn-based Parallel API
@pytest.mark.parametrize("module", [tictactoe_v0, kuhn_poker_v0, negotiation_v0],
                         ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_parallel_step_without_the_movers_action_is_an_invalid_move(module) -> None:
    par = module.parallel_env()
    obs, infos = par.reset(seed=0)
    mover = next(a for a in par.agents if infos[a]["to_move"])
    other = next(a for a in par.agents if a != mover)
    obs, rewards, terms, truncs, infos = par.step({other: "[4]"})  # the wrong agent's move
    assert infos[mover]["to_move"] and infos[mover]["invalid_moves"] == 1 and infos[mover]["reason"]
    assert obs[mover].startswith("Invalid move:")


def test_parallel_step_after_the_game_raises_reset_needed() -> None:
    par = tictactoe_v0.parallel_env()
    obs, infos = par.reset(seed=0)
    while par.agents:
        mover = next(a for a in par.agents if infos[a]["to_move"])
        obs, rewards, terms, truncs, infos = par.step({mover: f"[{infos[mover]['legal_moves'][0]}]"})
    with pytest.raises(ArlError):
        par.step({"player_0": "[1]"})


# ---------------------------------------------------------------- parsing stays linear (no regex backtracking)
#: Replies that made the former bracket/keyword regexes backtrack quadratically ("[" then a long blank run).
BLANK_RUNS = ("[{}", "column{}", "move{}:{}", "[a{}", "[{}\n")
RATIO_LIMIT = 8.0  # 4x the text: ~4x the time when linear, ~16x when quadratic


def _parse_seconds(game, text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        try:
            game._parse_move(game.agent_selection, text)
        except ArlError:
            pass
        best = min(best, time.process_time() - t0)
    return best


@pytest.mark.parametrize("module", GAMES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_move_parsing_is_linear_in_blank_runs(module) -> None:
    game = module.env()
    game.reset(seed=0)
    for shape in BLANK_RUNS:
        small = _parse_seconds(game, shape.replace("{}", " " * 4_000))
        large = _parse_seconds(game, shape.replace("{}", " " * 16_000))
        ratio = large / max(small, 0.02)  # floor: CPU-time noise on a loaded machine
        assert ratio < RATIO_LIMIT, f"{shape!r}: {small:.3f} s at 4k blanks, {large:.3f} s at 16k (ratio {ratio:.1f})"

"""The single-agent ids ``arl/multiagent.<game>-v0``: opponents, seats, self-play, expert vs random."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("pettingzoo")

import arl_envs  # noqa: E402,F401
from arl_envs.agents import ExpertAgent, RandomAgent, run_episode  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402

#: OpenSpiel ids whose MCTS expert takes seconds per game are checked in test_openspiel_ids.py only.
IDS = [i for i in arl_envs.env_ids() if i.startswith("arl/multiagent.")
       and i not in ("arl/multiagent.othello-v0", "arl/multiagent.amazons-v0")]
OURS = ["arl/multiagent.tictactoe-v1", "arl/multiagent.connect_four-v1", "arl/multiagent.kuhn_poker-v1"]


@pytest.mark.parametrize("env_id", IDS)
def test_conformance_json_format_and_expert_opponent(env_id) -> None:
    report = check_conformance(env_id, env_kwargs={"action_format": "json"}, n_fuzz=60, expert_seeds=(0, 1))
    assert report.passed, report.summary()


@pytest.mark.parametrize("env_id", OURS)
def test_expert_beats_random_reference_agent(env_id) -> None:
    env = gym.make(env_id)
    expert = [run_episode(env, ExpertAgent(env), seed=s) for s in range(20)]
    rand = [run_episode(env, RandomAgent(env, seed=s), seed=s) for s in range(20)]
    assert sum(e.total_reward for e in expert) > sum(e.total_reward for e in rand)
    assert sum(e.success for e in expert) >= 19 and sum(e.success for e in rand) <= 2


def test_opponent_moves_appear_in_next_observation_and_legal_moves() -> None:
    env = gym.make("arl/multiagent.tictactoe-v1", seat="first", opponent="random")
    obs, info = env.reset(seed=0)
    assert info["legal_moves"] == [str(i) for i in range(9)] and info["seat"] == "player_0"
    obs, r, term, trunc, info = env.step("[4]")
    assert "O (player_1) played [" in obs
    assert len(info["legal_moves"]) == 7 and "4" not in info["legal_moves"]
    assert info["tool_calls"] == [{"name": "move", "arguments": {"move": "4"}}]


def test_second_seat_opponent_moves_first() -> None:
    env = gym.make("arl/multiagent.connect_four-v1", seat="second", opponent="expert")
    obs, info = env.reset(seed=0)
    assert "x (player_0) played [3]." in obs and "You play o" in obs  # the expert opens in the centre


def test_invalid_move_reason_retry_and_forfeit() -> None:
    env = gym.make("arl/multiagent.tictactoe-v1", seat="first", max_invalid_actions=2)
    env.reset(seed=0)
    for i in range(2):
        obs, r, term, trunc, info = env.step("I pass")
        assert not term and info["reason"] and info["action_error"] == info["reason"]
        assert info["reward_components"]["format"] == -0.1 and info["reward_components"].get("task", 0.0) == 0.0
        assert obs.startswith("Invalid move: no move found")
    obs, r, term, trunc, info = env.step("I pass")
    assert term and not info["success"] and info["outcome"] == "loss"
    assert info["reward_components"] == {"format": -0.1, "task": -1.0}


def test_self_play_with_a_callable_opponent() -> None:
    calls = []

    def frozen_policy(observation: str, info: dict) -> str:
        calls.append((observation, info))
        return f"[{info['legal_moves'][-1]}]"

    env = gym.make("arl/multiagent.tictactoe-v1", seat="first", opponent=frozen_policy)
    ep = run_episode(env, ExpertAgent(env), seed=0)
    assert ep.terminated and calls
    obs, info = calls[0]
    assert isinstance(obs, str) and "You play O" in obs and info["legal_moves"]
    # an opponent that writes garbage forfeits: a void game (env_error, truncated), not a win for the agent
    env = gym.make("arl/multiagent.tictactoe-v1", seat="first", opponent=lambda o, i: "no idea")
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step("[0]")
    assert trunc and not term and r == 0.0 and "forfeited" in obs and "forfeited" in info["env_error"]


def test_kuhn_match_alternates_seats_and_sums_chips() -> None:
    env = gym.make("arl/multiagent.kuhn_poker-v1", games=4, seat="first")
    obs, info = env.reset(seed=0)
    assert "Game 1 of 4" in obs and "match of 4 games" in info["instructions"]
    ep = run_episode(env, ExpertAgent(env), seed=0)
    seats = {i.get("seat") for i in ep.infos[1:]}
    assert seats == {"player_0", "player_1"}
    assert ep.infos[-1]["games_played"] == 4
    assert ep.total_reward == pytest.approx(ep.infos[-1]["match_return"])


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError):
        gym.make("arl/multiagent.tictactoe-v1", opponent="grandmaster")
    with pytest.raises(ValueError):
        gym.make("arl/multiagent.tictactoe-v1", seat="third")
    with pytest.raises(ValueError):
        gym.make("arl/multiagent.tictactoe-v1", game="no_such_game")


def test_max_invalid_moves_is_a_deprecated_alias() -> None:
    from arl_envs.envs.multiagent import tictactoe_v0

    with pytest.warns(DeprecationWarning, match="max_invalid_actions"):
        game = tictactoe_v0.env(max_invalid_moves=2)
    assert game.max_invalid_actions == 2
    with pytest.warns(DeprecationWarning, match="max_invalid_actions"):
        env = gym.make("arl/multiagent.tictactoe-v1", seat="first", max_invalid_moves=1)
    assert env.unwrapped.max_invalid_actions == env.unwrapped.game.max_invalid_actions == 1
    with pytest.raises(ValueError, match="disagree"):
        tictactoe_v0.env(max_invalid_actions=1, max_invalid_moves=2)


def test_game_play_reports_what_it_did() -> None:
    from arl_envs.envs.multiagent import tictactoe_v0

    game = tictactoe_v0.env(max_invalid_actions=1)
    game.reset(seed=0)
    first = game.agent_selection
    report = game.play("[4]")
    assert report.agent == first and report.valid and report.move == "4" and not report.forfeit
    second = game.agent_selection
    report = game.play("[4]")  # taken
    assert not report.valid and "not legal" in report.reason and report.invalid_moves == 1 and not report.forfeit
    report = game.play("no move")
    assert report.agent == second and report.forfeit and report.invalid_moves == 2

"""The AEC/Parallel text games: PettingZoo's own tests, the must-hold rules, parsing and invalid moves."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test  # noqa: E402

from arl_envs.envs.multiagent import connect_four_v0, kuhn_poker_v0, tictactoe_v0  # noqa: E402
from arl_envs.envs.multiagent.kuhn_poker_v0 import best_response_vs_random, terminal_returns  # noqa: E402
from arl_envs.envs.multiagent.tictactoe_v0 import best_move, winner  # noqa: E402

GAMES = [tictactoe_v0, connect_four_v0, kuhn_poker_v0]
#: A Connect Four game whose 42nd move fills the board and completes o's line (found by a seeded search).
C4_FULL_BOARD_WIN = [4, 1, 4, 4, 6, 4, 6, 6, 0, 0, 3, 3, 3, 5, 2, 1, 4, 3, 6, 0, 4, 5, 1, 0, 1, 3, 6, 6, 0, 1, 2, 5,
                     0, 3, 5, 5, 1, 2, 5, 2, 2, 2]


@pytest.mark.parametrize("module", GAMES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("action_format", ["native", "json"])
def test_pettingzoo_api_tests(module, action_format) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo warns that text spaces are not Box/Discrete
        api_test(module.env(action_format=action_format), num_cycles=300)
        parallel_api_test(module.parallel_env(action_format=action_format), num_cycles=300)
        seed_test(lambda: module.env(action_format=action_format), num_cycles=100)
        parallel_seed_test(lambda: module.parallel_env(action_format=action_format), num_cycles=100)
        render_test(lambda render_mode: module.env(action_format=action_format, render_mode=render_mode))


def _play(env, moves):
    for m in moves:
        env.step(m)


def test_tictactoe_x_completes_row_rewards_once() -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    totals = {a: 0.0 for a in env.possible_agents}
    for m in ["[0]", "[3]", "[1]", "[4]"]:
        env.step(m)
        for a, r in env.rewards.items():
            totals[a] += r
        assert not any(env.terminations.values())
    env.step("[2]")  # X completes the top row
    for a, r in env.rewards.items():
        totals[a] += r
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env.terminations == {"player_0": True, "player_1": True}  # set in the step the game ends
    assert not any(env.truncations.values())
    # last() for the selected agent and the accumulated rewards agree with env.rewards
    seen = {}
    while env.agents:
        agent = env.agent_selection
        obs, reward, term, trunc, info = env.last()
        assert term and not trunc
        assert reward == env._cumulative_rewards[agent]
        seen[agent] = reward
        env.step(None)
        for a, r in env.rewards.items():
            totals[a] += r
    assert seen == {"player_0": 1.0, "player_1": -1.0}
    assert totals == {"player_0": 1.0, "player_1": -1.0}  # each paid exactly once


def test_tictactoe_parallel_rewards_once() -> None:
    env = tictactoe_v0.parallel_env()
    obs, infos = env.reset(seed=0)
    totals = {a: 0.0 for a in env.possible_agents}
    for cell in [0, 3, 1, 4, 2]:
        actions = {a: f"[{cell}]" for a in env.agents}
        obs, rew, term, trunc, infos = env.step(actions)
        for a, r in rew.items():
            totals[a] += r
    assert all(term.values()) and totals == {"player_0": 1.0, "player_1": -1.0}
    assert not env.agents


def test_connect_four_full_board_last_move_wins() -> None:
    env = connect_four_v0.env()
    env.reset(seed=0)
    for i, c in enumerate(C4_FULL_BOARD_WIN[:-1]):
        env.step(f"[{c}]")
        assert not any(env.terminations.values()), f"ended early at move {i + 1}"
    assert env.legal_moves(env.agent_selection) == [str(C4_FULL_BOARD_WIN[-1])]
    env.step(f"column {C4_FULL_BOARD_WIN[-1]}")
    assert env.mask == connect_four_v0._FULL  # the board is full ...
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0}  # ... and o's line wins: not a draw
    assert all(env.terminations.values())


@pytest.mark.parametrize("module", GAMES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("bad", ["[99]", "", "I think I will wait.", "<think>[0]"])
def test_repeating_an_invalid_move_forever_ends_in_bounded_steps(module, bad) -> None:
    env = module.env(max_invalid_actions=3)
    env.reset(seed=1)
    first = env.agent_selection
    steps = 0
    while env.agents and not all(env.terminations.values()):
        env.step(bad)
        steps += 1
        assert env.infos[first]["reason"], "every invalid move has a reason"
        assert steps <= 4
    assert steps == 4 and env.forfeited == first
    assert env.rewards[first] == -1.0 and sum(env.rewards.values()) == 0.0


def test_reason_on_first_invalid_move_after_reset_and_retry() -> None:
    env = tictactoe_v0.env()
    for _ in range(2):  # also after a second reset
        env.reset(seed=3)
        agent = env.agent_selection
        assert env.infos[agent]["reason"] is None
        env.step("hmm, let me think")  # no parsable move: invalid, never a silent pass
        assert env.agent_selection == agent
        assert "no move found" in env.infos[agent]["reason"]
        assert env.observe(agent).startswith("Invalid move: no move found")
        assert env.board == [0] * 9
        env.step("[4]")
        assert env.infos[agent]["reason"] is None and env.board[4] == 1
        env.step("[4]")  # O: an illegal (taken) cell
        assert "taken" in env.infos["player_1"]["reason"]


@pytest.mark.parametrize(
    "text,move",
    [("[4]", "4"), ("cell 4", "4"), ("4", "4"), ("I consider [2] but play [4].", "4"), ("Move: 4", "4"),
     ('<tool_call>{"name": "move", "arguments": {"move": "4"}}</tool_call>', "4"),
     ('<tool_call>{"name": "move", "arguments": {"move": 4}}</tool_call>', "4"),
     ("<think>maybe [0]</think>[4]", "4"), ("I will play cell 4.", "4"), ("[cell 4]", "4"), ("4.", "4")],
)
def test_native_and_json_move_forms(text, move) -> None:
    env = tictactoe_v0.env()
    env.reset(seed=0)
    env.step(text)
    assert env.infos["player_0"]["reason"] is None and env.last_moves["player_0"] == move


def test_json_format_requires_tool_call() -> None:
    env = connect_four_v0.env(action_format="json")
    env.reset(seed=0)
    env.step("[3]")
    assert "no <tool_call>" in env.infos["player_0"]["reason"]
    env.step('<tool_call>{"name": "move", "arguments": {"move": "3"}}</tool_call>')
    assert env.infos["player_0"]["reason"] is None and env.agent_selection == "player_1"


def test_legal_moves_in_info_of_mover_only() -> None:
    env = connect_four_v0.env()
    env.reset(seed=0)
    assert env.infos["player_0"]["legal_moves"] == [str(c) for c in range(7)]
    assert env.infos["player_1"]["legal_moves"] == []
    for _ in range(6):
        env.step("[0]")
    assert "0" not in env.infos["player_0"]["legal_moves"]
    env.step("[0]")
    assert "full" in env.infos["player_0"]["reason"]


def _episode(module, seed, policy_seed):
    env = module.env()
    env.reset(seed=seed)
    rng = np.random.default_rng(policy_seed)
    trace = []
    for agent in env.agent_iter(200):
        obs, r, term, trunc, info = env.last()
        info = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in info.items()}  # action_mask
        trace.append((agent, str(obs), r, term, trunc, info))
        if term or trunc:
            env.step(None)
            continue
        env.step(f"[{env.random_move(agent, rng)}]" if rng.random() < 0.9 else "junk")
    return trace


@pytest.mark.parametrize("module", GAMES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_same_seed_same_actions_same_episode(module) -> None:
    for seed in range(20):
        assert _episode(module, seed, seed) == _episode(module, seed, seed)


def test_kuhn_deal_from_seed_and_private_cards() -> None:
    env = kuhn_poker_v0.env()
    deals = set()
    for seed in range(60):
        env.reset(seed=seed)
        deals.add(env.cards)
        again = kuhn_poker_v0.env()
        again.reset(seed=seed)
        assert again.cards == env.cards
        names = kuhn_poker_v0.CARD_NAMES
        for i, agent in enumerate(env.possible_agents):
            obs = env.observe(agent)
            assert f"Your card: {names[env.cards[i]]}" in obs
            assert names[env.cards[1 - i]] not in obs  # the opponent's card is hidden
    assert len(deals) == 6  # all deals occur


def test_kuhn_terminal_returns_and_best_response_values() -> None:
    assert terminal_returns("pp", (2, 0)) == (1.0, -1.0)
    assert terminal_returns("pbp", (2, 0)) == (-1.0, 1.0)
    assert terminal_returns("pbb", (0, 1)) == (-2.0, 2.0)
    # exact expected values of the best response to a uniformly random opponent
    for seat, expected in ((0, 0.5), (1, 5 / 12)):
        pol = best_response_vs_random(seat)
        total = 0.0
        for deal in itertools.permutations(range(3), 2):
            def value(h, p, deal=deal):
                if h in kuhn_poker_v0.TERMINAL:
                    return p * terminal_returns(h, deal)[seat]
                if len(h) % 2 == seat:
                    return value(h + pol[(deal[seat], h)], p)
                return value(h + "b", p / 2) + value(h + "p", p / 2)
            total += value("", 1.0) / 6
        assert total == pytest.approx(expected)


def test_tictactoe_expert_never_loses_against_any_opponent() -> None:
    """Exhaustive: against every sequence of opponent replies, from both seats."""
    def explore(board, mark, expert_mark):
        w = winner(board)
        if w:
            assert w == expert_mark, f"expert lost: {board}"
            return
        if all(board):
            return
        if mark == expert_mark:
            c = best_move(tuple(board), mark)
            assert board[c] == 0
            nxt = list(board)
            nxt[c] = mark
            explore(nxt, 3 - mark, expert_mark)
        else:
            for c in range(9):
                if not board[c]:
                    nxt = list(board)
                    nxt[c] = mark
                    explore(nxt, 3 - mark, expert_mark)
    explore([0] * 9, 1, 1)
    explore([0] * 9, 1, 2)


@pytest.mark.slow
@pytest.mark.parametrize("module,episodes", [(tictactoe_v0, 10_000), (kuhn_poker_v0, 10_000), (connect_four_v0, 2_000)],
                         ids=["tictactoe_v0", "kuhn_poker_v0", "connect_four_v0"])
def test_one_instance_10000_episodes_observations_do_not_grow(module, episodes) -> None:
    env = module.env()
    rng = np.random.default_rng(0)
    longest_early = longest_late = 0
    for ep in range(episodes):
        env.reset(seed=ep)
        for agent in env.agent_iter(500):
            obs, *_, term, trunc, _ = env.last()
            n = len(obs)
            if ep < 100:
                longest_early = max(longest_early, n)
            else:
                longest_late = max(longest_late, n)
            env.step(None if term or trunc else f"[{env.random_move(agent, rng)}]")
    assert longest_late <= longest_early  # bounded by the state, not by the instance's history


def _best_response_hand_distribution(seat):
    pol = best_response_vs_random(seat)
    out = {}
    for deal in itertools.permutations(range(3), 2):
        def walk(h, p, deal=deal):
            if h in kuhn_poker_v0.TERMINAL:
                r = terminal_returns(h, deal)[seat]
                out[r] = out.get(r, 0.0) + p / 6
            elif len(h) % 2 == seat:
                walk(h + pol[(deal[seat], h)], p)
            else:
                walk(h + "b", p / 2)
                walk(h + "p", p / 2)
        walk("", 1.0)
    return out


def test_kuhn_view_expert_wins_a_100_hand_match_with_probability_above_99_7_percent() -> None:
    """The documented success rate of arl/multiagent.kuhn_poker-v1's expert: exact, by convolution of the hands
    (seats alternate); one hand alone is won only 75% / 62.5% of the time."""
    hands = [_best_response_hand_distribution(0), _best_response_hand_distribution(1)]
    assert sum(p for r, p in hands[0].items() if r > 0) == pytest.approx(0.75)
    assert sum(p for r, p in hands[1].items() if r > 0) == pytest.approx(0.625)
    total = {0.0: 1.0}
    for i in range(100):
        nxt = {}
        for s, p in total.items():
            for r, q in hands[i % 2].items():
                nxt[s + r] = nxt.get(s + r, 0.0) + p * q
        total = nxt
    p_win = sum(p for s, p in total.items() if s > 0)
    assert 0.997 < p_win < 0.999  # 99.78%

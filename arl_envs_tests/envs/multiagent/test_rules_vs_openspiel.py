"""Our rules against OpenSpiel's (``pyspiel``, the optional ``openspiel`` extra) on thousands of random playouts:
the same legal moves at every step, the same terminal step, the same returns."""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open-spiel is not installed: pip install 'arl-envs[openspiel]'")

from arl_envs.envs.multiagent import connect_four_v0, kuhn_poker_v0, tictactoe_v0  # noqa: E402

PLAYOUTS = 2000
#: Our Kuhn move names -> OpenSpiel's actions (0 = Pass, 1 = Bet).
KUHN_ACTION = {"check": 0, "fold": 0, "bet": 1, "call": 1}


def _ours_to_spiel(module, move: str) -> int:
    return KUHN_ACTION[move] if module is kuhn_poker_v0 else int(move)


@pytest.mark.parametrize(
    "module,spiel_name",
    [(tictactoe_v0, "tic_tac_toe"), (connect_four_v0, "connect_four"), (kuhn_poker_v0, "kuhn_poker")],
    ids=["tictactoe", "connect_four", "kuhn_poker"],
)
def test_random_playouts_agree_with_openspiel(module, spiel_name) -> None:
    game = pyspiel.load_game(spiel_name)
    env = module.env()
    rng = np.random.default_rng(0)
    outcomes = set()
    for i in range(PLAYOUTS):
        env.reset(seed=i)
        state = game.new_initial_state()
        if module is kuhn_poker_v0:  # OpenSpiel deals player 0's card, then player 1's, at chance nodes
            for card in env.cards:
                assert state.is_chance_node()
                state.apply_action(card)
        moves = 0
        while not state.is_terminal():
            agent = env.agent_selection
            assert agent == env.possible_agents[state.current_player()]
            legal = env.legal_moves(agent)
            assert sorted(_ours_to_spiel(module, m) for m in legal) == state.legal_actions()
            assert not any(env.terminations.values())
            move = legal[int(rng.integers(0, len(legal)))]
            env.step(f"[{move}]")
            state.apply_action(_ours_to_spiel(module, move))
            moves += 1
        assert all(env.terminations.values()), f"playout {i}: OpenSpiel ended after {moves} moves, we did not"
        assert [env.returns[a] for a in env.possible_agents] == list(state.returns())
        outcomes.add(tuple(state.returns()))
    assert len(outcomes) >= 3  # wins, losses and draws (or every chip result) occurred


def test_connect_four_full_board_win_agrees_with_openspiel() -> None:
    from arl_envs_tests.envs.multiagent.test_games import C4_FULL_BOARD_WIN

    state = pyspiel.load_game("connect_four").new_initial_state()
    for c in C4_FULL_BOARD_WIN:
        state.apply_action(c)
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]

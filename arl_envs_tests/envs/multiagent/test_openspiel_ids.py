"""The OpenSpiel games registered as single-agent ids (``OPENSPIEL_GAMES``): conformance, legal moves in info,
private information, the mcts / callable opponents and the exact solver."""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("pyspiel", reason="open-spiel is not installed (pip install 'arl-envs[openspiel]')")

import arl_envs  # noqa: E402, F401
from arl_envs.registration import OPENSPIEL_GAMES  # noqa: E402
from arl_envs.testing import check_conformance  # noqa: E402

NAMES = [row[0] for row in OPENSPIEL_GAMES]
#: Games whose expert plays seconds per episode (MCTS over long games): their full conformance run is replaced by
#: the light check below plus one expert game (benchmarks/openspiel_experts.py measures their strength).
LONG = {"othello", "amazons"}


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in NAMES if n not in LONG])
def test_conformance(name: str) -> None:
    report = check_conformance(f"arl/multiagent.{name}-v0", n_fuzz=30)
    assert report.passed, report.summary()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LONG))
def test_long_games_light_check(name: str) -> None:
    report = check_conformance(f"arl/multiagent.{name}-v0", n_fuzz=20, expert_seeds=(0,),
                               skip=("snapshot", "determinism"))
    assert report.passed, report.summary()


@pytest.mark.parametrize("name", NAMES)
def test_legal_moves_in_info_and_prompt(name: str) -> None:
    env = gym.make(f"arl/multiagent.{name}-v0")
    obs, info = env.reset(seed=0)
    assert info["legal_moves"] and all(f"[{m}]" in obs for m in info["legal_moves"][:3])
    _, _, _, _, info = env.step("[not a move]")
    assert info["action_error"] and info["legal_moves"]


def test_private_card_shown_only_to_its_owner() -> None:
    env = gym.make("arl/multiagent.leduc_poker-v0", seat="first")
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        own, their = env.unwrapped.game.spiel_state.history()[:2]  # the deal: player 0's card, then player 1's
        assert f"[Private: {own}]" in obs and f"[Private: {their}]" not in obs
        assert f"Your card: {'JQK'[own // 2]}" in obs


def test_mcts_and_callable_opponents() -> None:
    env = gym.make("arl/multiagent.hex-v0", opponent="mcts", seat="second")
    obs, info = env.reset(seed=0)
    assert env.unwrapped.opponent_kind == "mcts" and "played" in obs
    seen = []

    def first_legal(observation: str, info: dict) -> str:
        seen.append(list(info["legal_moves"]))
        return f"[{info['legal_moves'][0]}]"

    env = gym.make("arl/multiagent.nim-v0", opponent=first_legal, seat="first")
    env.reset(seed=0)
    env.step(env.unwrapped.expert_action())
    assert seen and seen[0]
    with pytest.raises(ValueError, match="opponent must be one of"):
        gym.make("arl/multiagent.nim-v0", opponent="alphazero")


def test_exact_solver_never_loses_a_won_position_and_rejects_big_games() -> None:
    # nim 1,3,5,7 has XOR 0: the first player loses under perfect play, so the solver as second seat wins every
    # game even against itself.
    env = gym.make("arl/multiagent.nim-v0", opponent="expert", seat="second")
    for seed in range(3):
        env.reset(seed=seed)
        done = False
        while not done:
            _, _, term, trunc, info = env.step(env.unwrapped.expert_action())
            done = term or trunc
        assert info["outcome"] == "win"
    with pytest.raises(ValueError, match="solver"):
        gym.make("arl/multiagent.leduc_poker-v0", game_kwargs={"game": "leduc_poker", "expert": "solver"})


def test_cfr_expert_is_reproducible_across_processes() -> None:
    """leduc_poker's CFR+ expert: the same seed gives the same match in a fresh interpreter (OpenSpiel's IS-MCTS
    does not), and it beats the random opponent on seeds 0-4."""
    import json
    import subprocess
    import sys

    code = ("import json, gymnasium as gym, arl_envs\n"
            "env = gym.make('arl/multiagent.leduc_poker-v0'); out = []\n"
            "for seed in range(5):\n"
            "    env.reset(seed=seed); done = False; total = 0.0\n"
            "    while not done:\n"
            "        _, r, term, trunc, info = env.step(env.unwrapped.expert_action()); total += r; done = term or trunc\n"
            "    out.append([total, bool(info['success'])])\n"
            "print(json.dumps(out))\n")
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      timeout=600).stdout.splitlines()[-1]) for _ in range(2)]
    assert runs[0] == runs[1]
    assert all(success for _, success in runs[0])


def test_cfr_expert_refuses_games_it_cannot_solve() -> None:
    from arl_envs.envs.multiagent.openspiel_v0 import OpenSpielEnv

    with pytest.raises(ValueError, match="expert='cfr' needs a two-player zero-sum turn-based game"):
        OpenSpielEnv("goofspiel(num_cards=4)", expert="cfr")  # simultaneous moves


def test_cfr_expert_refuses_game_trees_too_large_to_solve() -> None:
    """CFR+ walks the whole game tree every iteration: on connect_four the first expert move never returned (a hang
    inside step() when the opponent is the expert). Trees over CFR_MAX_STATES histories are refused at make."""
    import gymnasium as gym

    from arl_envs.envs.multiagent.openspiel_experts import CFR_MAX_STATES

    for game in ("connect_four", "tic_tac_toe"):
        with pytest.raises(ValueError, match=f"expert='cfr'.*more than {CFR_MAX_STATES:,}"):
            gym.make("arl/multiagent.leduc_poker-v0", game_kwargs={"game": game, "expert": "cfr"})
    env = gym.make("arl/multiagent.leduc_poker-v0", game_kwargs={"game": "kuhn_poker", "expert": "cfr"})
    env.reset(seed=0)
    assert env.unwrapped.expert_action()
    env.close()

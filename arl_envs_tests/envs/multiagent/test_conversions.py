"""Every game through every conversion PettingZoo offers (``parallel_to_aec``, ``turn_based_aec_to_parallel``,
``aec_to_parallel`` where the game says it is parallelizable, and their round trips): PettingZoo's ``api_test`` /
``parallel_api_test`` on each form, and random LEGAL games (moves from ``info["legal_moves"]``) played to their end
through each form, with no invalid move and the same rewards as the game's own returns."""

from __future__ import annotations

import contextlib
import importlib
import io
import warnings
from typing import Any, Callable

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test  # noqa: E402
from pettingzoo.utils.conversions import (  # noqa: E402
    aec_to_parallel,
    parallel_to_aec,
    turn_based_aec_to_parallel,
)

from arl_envs.envs.multiagent.base import TextGameEnv  # noqa: E402

FIRST_CLASS = ("tictactoe_v0", "connect_four_v0", "kuhn_poker_v0", "negotiation_v0", "referential_v0", "gridpath_v0")
#: OpenSpiel games through the bridge (the API_GAMES of test_openspiel.py): perfect/imperfect information, chance,
#: a simultaneous-move game, 1-3 players, repeated turns, information-state-only games.
OPENSPIEL = ("tic_tac_toe", "connect_four", "kuhn_poker", "leduc_poker", "liars_dice", "hex(board_size=5)",
             "breakthrough(rows=6,columns=6)", "othello", "battleship", "nim", "dots_and_boxes",
             "goofspiel(num_cards=4)", "phantom_ttt", "pig(winscore=20)", "oh_hell", "blackjack", "clobber", "mancala")
GAMES = FIRST_CLASS + tuple(f"openspiel:{g}" for g in OPENSPIEL)


def _module(game: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """``(aec_factory, parallel_factory)`` of a game."""
    if game.startswith("openspiel:"):
        pytest.importorskip("pyspiel", reason="open-spiel is not installed (pip install 'arl-envs[openspiel]')")
        from arl_envs.envs.multiagent import openspiel_v0

        name = game.split(":", 1)[1]
        return (lambda: openspiel_v0.env(game=name)), (lambda: openspiel_v0.parallel_env(game=name))
    mod = importlib.import_module(f"arl_envs.envs.multiagent.{game}")
    return mod.env, mod.parallel_env


def _aec_forms(game: str) -> dict[str, Callable[[], Any]]:
    aec, par = _module(game)
    return {
        "env": aec,
        "parallel_to_aec(parallel_env)": lambda: parallel_to_aec(par()),
        "parallel_to_aec(turn_based_aec_to_parallel(env))": lambda: parallel_to_aec(turn_based_aec_to_parallel(aec())),
    }


def _parallel_forms(game: str) -> dict[str, Callable[[], Any]]:
    aec, par = _module(game)
    forms = {
        "parallel_env": par,
        "turn_based_aec_to_parallel(env)": lambda: turn_based_aec_to_parallel(aec()),
        "aec_to_parallel(parallel_to_aec(parallel_env))": lambda: aec_to_parallel(parallel_to_aec(par())),
    }
    probe = aec()
    if probe.metadata.get("is_parallelizable", False):  # the only case where PettingZoo offers aec_to_parallel
        forms["aec_to_parallel(env)"] = lambda: aec_to_parallel(aec())
    return forms


def _quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")  # PettingZoo warns that text spaces are not Box/Discrete
        return fn(*args, **kwargs)


def _game(env: Any) -> TextGameEnv:
    """The :class:`TextGameEnv` under PettingZoo's conversion wrappers."""
    seen = 0
    while not isinstance(env, TextGameEnv):
        env = getattr(env, "aec_env", None) or getattr(env, "env", None) or getattr(env, "par_env", None)
        seen += 1
        assert env is not None and seen < 10, "no TextGameEnv under the wrappers"
    return env


def _legal_action(env: Any, agent: str, info: dict[str, Any], rng: np.random.Generator) -> str:
    """A random legal move of ``agent`` from its info ("" when it is not to move: the no-move reply)."""
    legal = info.get("legal_moves") or []
    if legal:
        return str(legal[int(rng.integers(len(legal)))])
    if info.get("to_move"):  # free-text moves (the referential speaker): the mask's vocabulary
        return env.action_space(agent).sample(info["action_mask"])
    return ""


def _check_ended_cleanly(game: TextGameEnv, totals: dict[str, float], moves: int) -> None:
    assert game.forfeited is None and moves > 0
    assert all(n == 0 for n in game.invalid_moves.values()), game.last_reason
    assert totals == pytest.approx(game.returns)


def _play_aec(env: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    game = _game(env)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    moves = 0
    for _ in range(5000):
        if not env.agents:
            break
        agent = env.agent_selection
        _, _, term, trunc, info = env.last()
        assert info["reason"] is None, info["reason"]
        action = None if (term or trunc) else _legal_action(env, agent, info, rng)
        moves += bool(action)
        env.step(action)
        for a, r in env.rewards.items():
            totals[a] += r
    else:
        raise AssertionError("the game did not end")
    _check_ended_cleanly(game, totals, moves)


def _play_parallel(env: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    _, infos = env.reset(seed=seed)
    game = _game(env)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    moves = 0
    for _ in range(5000):
        if not env.agents:
            break
        actions = {a: _legal_action(env, a, infos[a], rng) for a in env.agents}
        assert any(actions.values()), "no agent may move"
        moves += sum(bool(v) for v in actions.values())
        _, rewards, _, _, infos = env.step(actions)
        for a, r in rewards.items():
            totals[a] += r
        assert all(info["reason"] is None for info in infos.values())
    else:
        raise AssertionError("the game did not end")
    _check_ended_cleanly(game, totals, moves)


@pytest.mark.parametrize("game", GAMES)
def test_every_aec_form_passes_api_test_and_plays_legal_games(game: str) -> None:
    for name, make in _aec_forms(game).items():
        try:
            _quiet(api_test, make(), num_cycles=200)
            for seed in range(3):
                _play_aec(make(), seed)
        except Exception as exc:
            raise AssertionError(f"{game} as {name}: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("game", GAMES)
def test_every_parallel_form_passes_parallel_api_test_and_plays_legal_games(game: str) -> None:
    for name, make in _parallel_forms(game).items():
        try:
            _quiet(parallel_api_test, make(), num_cycles=200)
            for seed in range(3):
                _play_parallel(make(), seed)
        except Exception as exc:
            raise AssertionError(f"{game} as {name}: {type(exc).__name__}: {exc}") from exc


def test_an_all_zero_mask_samples_the_no_move_reply() -> None:
    from arl_envs.envs.multiagent.base import MoveText

    space = MoveText(100, moves=("a", "b"))
    assert space.sample(np.zeros(2, dtype=np.int8)) == ""  # as Discrete.sample gives `start` there
    assert space.sample(np.array([0, 1], dtype=np.int8)) == "b"
    assert space.contains("")


@pytest.mark.parametrize("game", ("tictactoe_v0", "connect_four_v0", "kuhn_poker_v0"))
def test_api_test_samples_legal_moves_in_the_first_class_games(game: str) -> None:
    """Their infos carry ``action_mask`` over a fixed vocabulary, so PettingZoo's random player is a legal one."""
    env = _module(game)[0]()
    env.reset(seed=0)
    agent = env.agent_selection
    info = env.infos[agent]
    for _ in range(20):
        assert env.action_space(agent).sample(info["action_mask"]) in info["legal_moves"]
    other = next(a for a in env.agents if a != agent)
    assert not env.infos[other]["action_mask"].any()


def test_gridpath_does_not_claim_aec_to_parallel() -> None:
    """Its AEC form retries an invalid move with the same agent, which ``aec_to_parallel`` cannot express."""
    from arl_envs.envs.multiagent import gridpath_v0

    assert gridpath_v0.env().metadata["is_parallelizable"] is False

"""The OpenSpiel bridge (issue 17, item 2): PettingZoo's own tests over many games, moves, chance, forfeits."""

from __future__ import annotations

import contextlib
import io
import sys
import warnings

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open-spiel is not installed (pip install 'arl-envs[openspiel]')")
pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

from arl_envs.core.errors import DependencyNotInstalled, InvalidActionType, ResetNeeded  # noqa: E402
from arl_envs.envs.multiagent import openspiel_v0  # noqa: E402

#: Games run through PettingZoo's api_test and seed_test: perfect and imperfect information, chance, a
#: simultaneous-move game (goofspiel, played turn by turn), 1-, 2- and 3-player games, repeated turns
#: (dots-and-boxes), and an information-state-only game (liars_dice).
API_GAMES = (
    "tic_tac_toe",
    "connect_four",
    "kuhn_poker",
    "leduc_poker",
    "liars_dice",
    "hex(board_size=5)",
    "breakthrough(rows=6,columns=6)",
    "othello",
    "battleship",
    "nim",
    "dots_and_boxes",
    "goofspiel(num_cards=4)",
    "phantom_ttt",
    "pig(winscore=20)",
    "oh_hell",
    "blackjack",
    "clobber",
    "mancala",
)


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        # PettingZoo warns that text spaces are not Box/Discrete; that is the point of a text env.
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _random_playout(env, seed: int, max_steps: int = 5000) -> dict[str, float]:
    """Play random legal moves (through ``sample(action_mask)``) to the end; return each agent's total reward."""
    env.reset(seed=seed)
    for space_seed, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed * 10 + space_seed)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for _ in range(max_steps):
        if not env.agents:
            break
        agent = env.agent_selection
        _, reward, term, trunc, info = env.last()
        totals[agent] += reward
        env.step(None if (term or trunc) else env.action_space(agent).sample(info["action_mask"]))
    else:
        raise AssertionError("game did not end")
    return totals


@pytest.mark.parametrize("game", API_GAMES)
def test_pettingzoo_api_and_seed(game: str) -> None:
    _quiet(api_test, openspiel_v0.env(game=game), num_cycles=1000)
    _quiet(seed_test, lambda: openspiel_v0.env(game=game), num_cycles=1000)


@pytest.mark.parametrize("game", ("tic_tac_toe", "leduc_poker", "goofspiel(num_cards=4)", "dots_and_boxes"))
def test_parallel_api_and_seed(game: str) -> None:
    _quiet(parallel_api_test, openspiel_v0.parallel_env(game=game), num_cycles=200)
    _quiet(parallel_seed_test, lambda: openspiel_v0.parallel_env(game=game), num_cycles=200)


@pytest.mark.parametrize("game", ("tic_tac_toe", "kuhn_poker", "liars_dice", "dots_and_boxes", "pig(winscore=20)",
                                  "oh_hell", "goofspiel(num_cards=4)"))
def test_rewards_sum_to_openspiel_returns(game: str) -> None:
    env = openspiel_v0.env(game=game)
    for seed in range(5):
        totals = _random_playout(env, seed)
        assert env.spiel_state.is_terminal(), "random legal moves must reach OpenSpiel's terminal state"
        assert env.forfeited is None
        assert totals == pytest.approx(dict(zip(env.possible_agents, env.spiel_state.returns())))


def test_same_seed_same_chance_and_different_seeds_differ() -> None:
    def deal(seed: int) -> str:
        env = openspiel_v0.env(game="leduc_poker")
        env.reset(seed=seed)
        return str(env.spiel_state)

    assert deal(3) == deal(3)
    assert len({deal(s) for s in range(12)}) > 1, "the deal must depend on the seed"
    env = openspiel_v0.env(game="liars_dice")
    first = _random_playout(env, 5), str(env.spiel_state)
    again = _random_playout(env, 5), str(env.spiel_state)
    assert first == again
    # reset() without a seed continues the generator (as Gymnasium does): a new deal, deterministically.
    a, b = openspiel_v0.env(game="kuhn_poker"), openspiel_v0.env(game="kuhn_poker")
    seq_a, seq_b = [], []
    for e, seq in ((a, seq_a), (b, seq_b)):
        e.reset(seed=1)
        for _ in range(6):
            e.reset()
            seq.append(str(e.spiel_state))
    assert seq_a == seq_b and len(set(seq_a)) > 1


def test_int_action_is_api_misuse_and_step_before_reset() -> None:
    env = openspiel_v0.env(game="tic_tac_toe")
    with pytest.raises(ResetNeeded):
        env.step("x(0,0)")
    env.reset(seed=0)
    with pytest.raises(InvalidActionType):
        env.step(4)  # type: ignore[arg-type]


def test_move_forms() -> None:
    env = openspiel_v0.env(game="tic_tac_toe")
    env.reset(seed=0)
    assert env.infos["player_0"]["legal_moves"][4] == "x(1,1)" and env.infos["player_0"]["legal_actions"][4] == 4
    replies = ("x(1,1)",  # exact name
               "O(0,0)",  # case ignored
               "I take the corner [x(2,2)]",  # the last bracketed name
               "1",  # an OpenSpiel action id
               '<tool_call>{"name": "move", "arguments": {"move": "x(0,2)"}}</tool_call>')
    for reply in replies:
        agent = env.agent_selection
        env.step(reply)
        assert env.infos[agent]["reason"] is None, (reply, env.infos[agent]["reason"])
        assert env.agent_selection != agent
    assert str(env.spiel_state) == "oox\n.x.\n..x"
    # long names and names with brackets work as the whole reply
    bs = openspiel_v0.env(game="battleship")
    bs.reset(seed=0)
    name = bs.infos["player_0"]["legal_moves"][3]
    assert len(name) > 40
    bs.step(name)
    assert bs.infos["player_0"]["reason"] is None and bs.agent_selection == "player_1"
    gs = openspiel_v0.env(game="goofspiel(num_cards=4)")
    gs.reset(seed=0)
    name = gs.infos["player_0"]["legal_moves"][1]
    assert name.startswith("[P0]")
    gs.step(name)
    assert gs.infos["player_0"]["reason"] is None and gs.agent_selection == "player_1"


def test_invalid_moves_reason_retry_then_forfeit() -> None:
    env = openspiel_v0.env(game="connect_four", max_invalid_actions=2)
    env.reset(seed=0)
    env.step("I resign")  # the first invalid move after reset has a reason too
    assert env.agent_selection == "player_0"
    assert env.infos["player_0"]["reason"] and env.infos["player_0"]["invalid_moves"] == 1
    assert env.observe("player_0").startswith("Invalid move:")
    env.step("x3")  # a valid move clears the reason
    assert env.infos["player_0"]["reason"] is None and env.agent_selection == "player_1"
    steps = 0
    while not any(env.terminations.values()):
        env.step("[99]")  # the same invalid move forever
        steps += 1
        assert steps <= 3
    assert steps == 3 and env.forfeited == "player_1"
    assert env.rewards == {"player_0": 1.0, "player_1": -1.0}
    assert env._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}


def test_forfeit_in_general_sum_game_costs_only_the_forfeiter() -> None:
    env = openspiel_v0.env(game="oh_hell", max_invalid_actions=0)
    env.reset(seed=0)
    loser = env.agent_selection
    env.step("nonsense")
    assert env.forfeited == loser
    assert env.rewards[loser] == -1.0 and all(v == 0.0 for a, v in env.rewards.items() if a != loser)


def test_information_state_view_and_hidden_information() -> None:
    env = openspiel_v0.env(game="liars_dice")
    assert env.view == "information_state"
    env.reset(seed=2)
    for agent in env.possible_agents:
        assert env.spiel_state.information_state_string(env.agent_index[agent]) in env.observe(agent)
    # Kuhn poker: each player sees its own card, not the other's.
    kp = openspiel_v0.env(game="kuhn_poker")
    kp.reset(seed=4)
    o0, o1 = kp.observe("player_0"), kp.observe("player_1")
    assert kp.spiel_state.observation_string(0) in o0 and kp.spiel_state.observation_string(1) in o1
    assert kp.spiel_state.observation_string(0) != kp.spiel_state.observation_string(1)
    kp.step("Bet")
    assert "played" not in kp.observe("player_1"), "imperfect-information moves are not echoed as events"


def test_max_moves_truncates() -> None:
    env = openspiel_v0.env(game="chess", max_moves=4)
    _random_playout(env, 0)
    assert env.move_number == 4 and not env.spiel_state.is_terminal()


def test_game_params_and_errors() -> None:
    env = openspiel_v0.env(game="hex", game_params={"board_size": 4})
    env.reset(seed=0)
    assert len(env.infos["player_0"]["legal_moves"]) == 16
    with pytest.raises(ValueError):
        openspiel_v0.env(game="no_such_game_xyz")
    with pytest.raises(ValueError):
        openspiel_v0.env(game="hex(board_size=4)", game_params={"board_size": 5})


def test_missing_pyspiel_raises_dependency_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspiel", None)  # makes `import pyspiel` raise ImportError
    with pytest.raises(DependencyNotInstalled, match=r"arl-envs\[openspiel\]"):
        openspiel_v0.env(game="tic_tac_toe")


def test_expert_beats_random() -> None:
    rng = np.random.default_rng(0)
    for game, n in (("tic_tac_toe", 4), ("connect_four", 2), ("breakthrough(rows=5,columns=5)", 2)):
        env = openspiel_v0.env(game=game)
        for seed in range(n):
            env.reset(seed=seed)
            expert = env.possible_agents[seed % 2]
            while env.agents:
                agent = env.agent_selection
                _, _, term, trunc, info = env.last()
                if term or trunc:
                    env.step(None)
                    continue
                env.step(env.expert_move(agent, rng) if agent == expert else env.random_move(agent, rng))
            assert env.returns[expert] == 1.0, f"{game}: the MCTS expert did not beat random (seed {seed})"
    # IS-MCTS (imperfect information) returns a legal move
    kp = openspiel_v0.env(game="kuhn_poker")
    kp.reset(seed=0)
    assert kp.expert_move(kp.agent_selection, rng) in kp.infos[kp.agent_selection]["legal_moves"]


#: Move names of our first-class games -> OpenSpiel action ids (Kuhn poker: 0 = Pass, 1 = Bet).
_KUHN_ACTION = {"check": 0, "fold": 0, "bet": 1, "call": 1}
BRIDGE_PLAYOUTS = 200


@pytest.mark.parametrize("module_name,spiel_name", [("tictactoe_v0", "tic_tac_toe"),
                                                    ("connect_four_v0", "connect_four"),
                                                    ("kuhn_poker_v0", "kuhn_poker")])
def test_first_class_games_agree_with_the_bridge(module_name: str, spiel_name: str) -> None:
    """Our own rules (tictactoe_v0, connect_four_v0, kuhn_poker_v0) and OpenSpiel's through this bridge, driven in
    lockstep with the same random moves: same mover, same legal moves, same step rewards, same terminal step."""
    import importlib

    module = importlib.import_module(f"arl_envs.envs.multiagent.{module_name}")
    ours, bridge = module.env(), openspiel_v0.env(game=spiel_name)
    assert ours.possible_agents == bridge.possible_agents
    kuhn = spiel_name == "kuhn_poker"

    def to_id(move: str) -> int:
        return _KUHN_ACTION[move] if kuhn else int(move)

    rng = np.random.default_rng(0)
    results = set()
    for i in range(BRIDGE_PLAYOUTS):
        ours.reset(seed=i)
        # Kuhn poker: OpenSpiel's chance nodes deal player 0's card, then player 1's; replay our deal.
        bridge.reset(seed=i, options={"chance_outcomes": list(ours.cards)} if kuhn else None)
        while ours.agents or bridge.agents:
            assert ours.agent_selection == bridge.agent_selection
            agent = ours.agent_selection
            o_last, b_last = ours.last(), bridge.last()
            assert o_last[1:4] == b_last[1:4], f"playout {i}: reward/termination differ: {o_last[1:4]} {b_last[1:4]}"
            if o_last[2] or o_last[3]:
                ours.step(None)
                bridge.step(None)
                continue
            legal = ours.infos[agent]["legal_moves"]
            assert sorted(to_id(m) for m in legal) == sorted(bridge.infos[agent]["legal_actions"])
            move = legal[int(rng.integers(0, len(legal)))]
            ours.step(f"[{move}]")
            bridge.step(f"[{to_id(move)}]")
            assert bridge.infos.get(agent, {}).get("reason") is None
            assert ours.rewards == bridge.rewards and ours.terminations == bridge.terminations
        assert ours.returns == bridge.returns
        results.add(tuple(bridge.returns.values()))
    # wins and losses (draws too, except in Connect Four where random play almost never fills the board)
    assert len(results) >= (2 if spiel_name == "connect_four" else 3), results


def test_expert_unsupported_game_says_so() -> None:
    env = openspiel_v0.env(game="liars_dice")
    env.reset(seed=0)
    with pytest.raises(NotImplementedError, match="ResampleFromInfostate"):
        env.expert_move(env.agent_selection, np.random.default_rng(0))


@pytest.mark.slow
@pytest.mark.parametrize("module_name,kwargs,episodes", [
    ("openspiel_v0", {"game": "leduc_poker"}, 1000),
    ("negotiation_v0", {}, 1000),
    ("referential_v0", {}, 1000),
    ("gridpath_v0", {}, 200),
])
def test_one_instance_many_episodes_observations_do_not_grow(module_name: str, kwargs: dict, episodes: int) -> None:
    """The bridge and the sibling games: one instance replaying the same 20 games (same seed, same moves) over and
    over gives exactly the same observations every time, so nothing accumulates across resets."""
    import importlib

    env = importlib.import_module(f"arl_envs.envs.multiagent.{module_name}").env(**kwargs)
    first: dict[int, list[str]] = {}
    for ep in range(episodes):
        game = ep % 20
        env.reset(seed=game)
        rng = np.random.default_rng(game)
        trace = []
        for agent in env.agent_iter(2000):
            obs, _, term, trunc, _ = env.last()
            trace.append(str(obs))
            env.step(None if (term or trunc) else f"[{env.random_move(agent, rng)}]")
        if game not in first:
            first[game] = trace
        else:
            assert trace == first[game], f"episode {ep} differs from its first run"


def test_simultaneous_game_hides_the_first_move() -> None:
    env = openspiel_v0.env(game="matrix_rps")
    assert env.simultaneous and not env.perfect_information
    env.reset(seed=0)
    env.step("Rock")
    seen = env.observe("player_1")
    assert "Rock" not in seen.split("Legal moves")[0], "player_1 must not see player_0's simultaneous move"
    env.step("Paper")
    assert env.rewards == {"player_0": -1.0, "player_1": 1.0} and all(env.terminations.values())


def test_parallel_simultaneous_games_one_step_per_round() -> None:
    par = openspiel_v0.parallel_env(game="matrix_rps")
    assert isinstance(par, openspiel_v0.CycleParallelEnv)
    obs, infos = par.reset(seed=0)
    assert all(infos[a]["legal_moves"] == ["Rock", "Paper", "Scissors"] for a in par.agents)
    assert all("Legal moves" in obs[a] for a in par.agents), "every player is prompted at once"
    obs, rew, term, trunc, infos = par.step({"player_0": "[Scissors]", "player_1": "Paper"})
    assert rew == {"player_0": 1.0, "player_1": -1.0} and all(term.values()) and par.agents == []
    # goofspiel to the end with random legal moves from every player's mask at once
    par = openspiel_v0.parallel_env(game="goofspiel(num_cards=4)")
    for seed in range(5):
        obs, infos = par.reset(seed=seed)
        totals = dict.fromkeys(par.possible_agents, 0.0)
        rounds = 0
        while par.agents:
            actions = {a: par.action_space(a).sample(infos[a]["action_mask"]) for a in par.agents}
            obs, rew, term, trunc, infos = par.step(actions)
            assert all(i["reason"] is None for i in infos.values())
            for a, r in rew.items():
                totals[a] += r
            rounds += 1
        state = par.aec_env.spiel_state
        assert state.is_terminal() and rounds == 3  # the 4th card of each hand is played by OpenSpiel itself
        assert totals == pytest.approx(dict(zip(par.possible_agents, state.returns())))
    # an invalid move repeats the round for that player only
    par = openspiel_v0.parallel_env(game="matrix_rps")
    par.reset(seed=0)
    obs, rew, term, trunc, infos = par.step({"player_0": "Rock", "player_1": "Lizard"})
    assert infos["player_1"]["reason"] and not any(term.values())
    obs, rew, term, trunc, infos = par.step({"player_0": "Paper", "player_1": "Paper"})  # player_0's is ignored
    assert rew == {"player_0": -1.0, "player_1": 1.0}

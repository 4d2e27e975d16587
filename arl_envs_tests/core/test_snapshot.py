"""Snapshot, restore and fork (arl_envs.core.snapshot): API, errors, both mechanisms, wrappers, PettingZoo games.

The per-id check (``check_snapshot``) runs inside ``check_conformance`` over every registered id; this file tests
the machinery itself and that the check catches a broken snapshot.
"""

from __future__ import annotations

import functools
import pickle
from typing import Any, ClassVar

import gymnasium as gym
import pytest

import arl_envs
from arl_envs import Snapshot, SnapshotError, fork
from arl_envs.core.errors import ResetNeeded
from arl_envs.envs.example.guess import GuessEnv
from arl_envs.testing import check_snapshot
from arl_envs.wrappers import ChatMessages

GUESS = "arl/example.guess-v0"


def _guess(n: int) -> str:
    return f'<tool_call>{{"name": "guess", "arguments": {{"number": {n}}}}}</tool_call>'


def _play(env: gym.Env, actions: list[str]) -> list[tuple[Any, ...]]:
    return [env.step(a) for a in actions]


def test_restore_same_env_gives_the_same_transcript() -> None:
    env = gym.make(GUESS)
    env.reset(seed=0)
    env.step(_guess(50))
    snap = env.unwrapped.snapshot()
    assert isinstance(snap, Snapshot) and snap.turn == 1 and snap.mode == "copy"
    first = _play(env, [_guess(25), _guess(75), "garbage"])
    env.unwrapped.restore(snap)
    assert env.unwrapped.turn == 1
    assert _play(env, [_guess(25), _guess(75), "garbage"]) == first
    env.close()


def test_snapshot_before_reset_and_after_close() -> None:
    env = gym.make(GUESS)
    with pytest.raises(ResetNeeded):
        env.unwrapped.snapshot()
    env.reset(seed=0)
    snap = env.unwrapped.snapshot()
    env.close()
    with pytest.raises(SnapshotError, match="closed"):
        env.unwrapped.snapshot()
    with pytest.raises(SnapshotError, match="closed"):
        env.unwrapped.restore(snap)


def test_restore_checks_class_and_kwargs() -> None:
    a = gym.make(GUESS, high=100)
    a.reset(seed=0)
    snap = a.unwrapped.snapshot()
    b = gym.make(GUESS, high=50)
    with pytest.raises(SnapshotError, match=r"high.*100.*50"):
        b.unwrapped.restore(snap)
    c = gym.make("arl/embodied.frozenlake-v0")
    with pytest.raises(SnapshotError, match="cannot be restored into"):
        c.unwrapped.restore(snap)
    with pytest.raises(TypeError, match="Snapshot"):
        a.unwrapped.restore({"not": "a snapshot"})
    for e in (a, b, c):
        e.close()


def test_pickled_snapshot_restores_into_a_fresh_env() -> None:
    env = gym.make(GUESS)
    env.reset(seed=1)
    env.step(_guess(50))
    snap = pickle.loads(pickle.dumps(env.unwrapped.snapshot()))
    want = _play(env, [_guess(30), _guess(70)])
    other = gym.make(GUESS)
    other.unwrapped.restore(snap)  # never reset: restore runs the snapshot's reset first
    assert _play(other.unwrapped, [_guess(30), _guess(70)]) == want
    env.close()
    other.close()


def test_unpicklable_snapshot_names_the_reason() -> None:
    def opponent(obs: str, info: dict) -> str:
        return info["legal_moves"][0]

    env = gym.make("arl/multiagent.tictactoe-v1", opponent=lambda o, i: opponent(o, i), seat="first")
    env.reset(seed=0)
    snap = env.unwrapped.snapshot()
    with pytest.raises(SnapshotError, match="constructor kwarg 'opponent'"):
        pickle.dumps(snap)
    env.close()


def test_opponent_rng_is_part_of_the_snapshot() -> None:
    env = gym.make("arl/multiagent.connect_four-v1", seat="first")
    env.reset(seed=4)
    snap = env.unwrapped.snapshot()
    moves = ["<move>3</move>", "<move>3</move>", "<move>4</move>"]
    first = [r[0] for r in _play(env, moves)]  # the random opponent's replies are in the observations
    env.unwrapped.restore(snap)
    assert [r[0] for r in _play(env, moves)] == first


def test_slippery_frozenlake_rng_is_restored() -> None:
    env = gym.make("arl/embodied.frozenlake-v0", slippery=True, max_turns=50)
    env.reset(seed=2)
    snap = env.unwrapped.snapshot()
    moves = ["right", "down", "right", "down", "down", "right"]
    first = _play(env, moves)
    env.unwrapped.restore(snap)
    assert _play(env, moves) == first


class _ReplayGuess(GuessEnv):
    snapshot_mode: ClassVar[str] = "replay"


def test_replay_mode_after_an_unseeded_reset() -> None:
    env = _ReplayGuess()
    env.reset(seed=5)
    env.reset()  # unseeded: the generator goes on; the replay must start from the same generator state
    env.step(_guess(50))
    snap = env.snapshot()
    assert snap.mode == "replay" and snap.state.seed is None and snap.state.actions == [_guess(50)]
    want = _play(env, [_guess(20), _guess(80)])
    other = _ReplayGuess()
    other.reset(seed=99)
    other.restore(pickle.loads(pickle.dumps(snap)))
    assert other.secret == env.secret and other.turn == 1
    assert _play(other, [_guess(20), _guess(80)]) == want


def test_fork_copies_wrappers_and_forks_are_independent() -> None:
    env = ChatMessages(gym.make(GUESS))
    env.reset(seed=3)
    env.step(_guess(50))
    forks = fork(env, 3)
    assert len(forks) == 3 and all(isinstance(f, ChatMessages) for f in forks)
    assert all(f.unwrapped is not env.unwrapped for f in forks)
    assert forks[0].messages == env.messages and forks[0].messages is not env.messages
    forks[1].step(_guess(10))
    forks[2].step("not an action")
    want = env.step(_guess(25))
    got = forks[0].step(_guess(25))
    assert got == want and len(forks[0].messages) == len(env.messages)
    assert forks[1].unwrapped.turn == 2 and forks[2].unwrapped.invalid_actions == 1
    assert env.unwrapped.invalid_actions == 0
    with pytest.raises(ValueError):
        fork(env, -1)
    for f in [*forks, env]:
        f.close()


class _ForgetfulGuess(GuessEnv):
    """A broken snapshot: the secret is left out of the copy, so a restored env plays another game."""

    snapshot_exclude: ClassVar[tuple[str, ...]] = ("secret",)


def test_check_snapshot_catches_a_broken_snapshot() -> None:
    check_snapshot(GuessEnv)
    with pytest.raises(AssertionError, match="differs|steps instead"):
        check_snapshot(_ForgetfulGuess)


def test_conformance_report_has_the_snapshot_check() -> None:
    report = arl_envs.testing.check_conformance(GUESS, n_fuzz=5, n_random_episodes=1)
    assert "snapshot" in [r.name for r in report.results] and report.passed


@pytest.mark.parametrize("game", ["kuhn_poker", "tictactoe", "gridpath"])
def test_pettingzoo_game_snapshot(game: str) -> None:
    import importlib

    mod = importlib.import_module(f"arl_envs.envs.multiagent.{game}_v0")
    aec = mod.env()
    with pytest.raises(ResetNeeded):
        aec.unwrapped.snapshot()
    aec.reset(seed=7)

    def play(n: int) -> list[Any]:
        out = []
        for _ in range(n):
            if not aec.agents:
                break
            agent = aec.agent_selection
            obs, rew, term, trunc, info = aec.last()
            aec.step(None if term or trunc else info["legal_moves"][0])
            out.append((agent, str(obs), rew, term, trunc))
        return out

    play(2)
    snap = pickle.loads(pickle.dumps(aec.unwrapped.snapshot()))
    want = play(4)
    aec.unwrapped.restore(snap)
    assert play(4) == want
    other = mod.env()
    other.reset(seed=123)
    other.unwrapped.restore(snap)
    aec = other
    assert play(4) == want


def test_openspiel_game_snapshot() -> None:
    pytest.importorskip("pyspiel")
    from arl_envs.envs.multiagent import openspiel_v0

    aec = openspiel_v0.env(game="leduc_poker")
    aec.reset(seed=1)
    snap = aec.unwrapped.snapshot()

    def play() -> list[Any]:
        out = []
        while aec.agents and len(out) < 6:
            obs, rew, term, trunc, info = aec.last()
            aec.step(None if term or trunc else info["legal_moves"][-1])
            out.append((str(obs), rew))
        return out

    want = play()
    aec.unwrapped.restore(snap)
    assert play() == want


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["arl/math.tool-v1", "arl/code.repo-v1"])
def test_replay_envs_with_a_sandbox(env_id: str) -> None:
    # the conformance suite runs check_snapshot on these too; this pins that they use the replay mechanism
    env = gym.make(env_id)
    assert env.unwrapped.snapshot_mode == "replay"
    env.close()
    check_snapshot(functools.partial(gym.make, env_id))


def test_lookahead_agent_picks_the_best_candidate_and_leaves_the_env_alone() -> None:
    from arl_envs.agents import LookaheadAgent, RandomAgent

    env = gym.make(GUESS, high=8)
    env.reset(seed=0)
    secret = env.unwrapped.secret
    cands = [_guess(n) for n in range(1, 9)]
    agent = LookaheadAgent(env, propose=lambda obs, info: cands)
    before = env.unwrapped.snapshot()
    action = agent.act("", {})
    assert action == _guess(secret)  # the only candidate with reward
    assert env.unwrapped.turn == 0 and env.unwrapped.transcript == before.state["transcript"]
    assert agent.branch_steps == 8 and len(agent.last_scores) == 8
    # with a rollout, an early wrong guess is scored by where the rollout leads: still the best is played
    agent2 = LookaheadAgent(env, RandomAgent(env, seed=1, p_tool_call=1.0), k=3, horizon=2,
                            rollout=lambda b: RandomAgent(b, seed=2, p_tool_call=1.0))
    a2 = agent2.act("", {})
    assert a2 == max(agent2.last_scores, key=lambda cs: cs[1])[0]
    assert env.unwrapped.turn == 0
    for a in (agent, agent2):
        a.close()
        a.close()
    env.close()


class _DriftingGuess(_ReplayGuess):
    """Not deterministic across instances: the replay gives another transcript, which restore must report."""

    drift = 0

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        _DriftingGuess.drift += 1
        tid, text = super()._reset_task(task_id)
        return tid, f"{text} (run {_DriftingGuess.drift})"


def test_replay_divergence_is_reported() -> None:
    env = _DriftingGuess()
    env.reset(seed=0)
    env.step(_guess(50))
    snap = env.snapshot()
    with pytest.raises(SnapshotError, match="diverged at transcript entry 1"):
        _DriftingGuess().restore(snap)


def test_pettingzoo_parallel_snapshot() -> None:
    from arl_envs.envs.multiagent import gridpath_v0, kuhn_poker_v0

    for par in (gridpath_v0.parallel_env(), kuhn_poker_v0.parallel_env()):
        obs, infos = par.reset(seed=1)

        def play(n: int) -> list[Any]:
            nonlocal infos
            out = []
            for _ in range(n):
                if not par.agents:
                    break
                acts = {a: (infos[a].get("legal_moves") or ["x"])[-1] for a in par.agents}
                o, r, t, tr, infos = par.step(acts)
                out.append((dict(o), r, t, tr, sorted(par.agents)))
            return out

        play(1)
        snap = pickle.loads(pickle.dumps(par.snapshot()))
        keep_infos = infos
        want = play(3)
        par.restore(snap)
        infos = keep_infos
        assert play(3) == want


def _bench(name: str) -> Any:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).resolve().parents[2] / "benchmarks"
                                                  / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_scripts_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The two benchmark scripts at a tiny budget (the figures themselves are in benchmarks/RESULTS.md)."""
    assert _bench("snapshot_cost").main([GUESS, "arl/embodied.sokoban-v0", "--min-s", "0", "--max-rounds", "3"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| arl/")]
    assert [r.split(" | ")[1] for r in rows] == ["copy", "copy"], rows
    assert _bench("lookahead").main(["arl/embodied.frozenlake-v0", "--episodes", "1", "--k", "2", "--horizon", "1"]) == 0
    assert "| arl/embodied.frozenlake-v0 |" in capsys.readouterr().out

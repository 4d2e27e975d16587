"""arl/embodied.scienceworld-v0: success only at score 100, progress from score increments, the JVM lifecycle.

The simulator runs in a JVM (seconds to start), so these tests are few, marked slow, and run one env at a time:
each test closes its env, which hands the JVM to the process pool for the next test.
"""

from __future__ import annotations

import pytest

pytest.importorskip("scienceworld", reason="ScienceWorld needs the scienceworld package: pip install 'arl-envs[embodied]'")

import arl_envs.envs.embodied.scienceworld as swmod  # noqa: E402
from arl_envs.core.errors import DependencyNotInstalled  # noqa: E402
from arl_envs.envs.embodied.scienceworld import COMPLETED_SCORE, ScienceWorldEnv  # noqa: E402

needs_java = pytest.mark.skipif(
    not swmod.java_available(),
    reason="ScienceWorld's simulator needs Java and `java` is not on PATH (apt-get install default-jre-headless)",
)


def _run(env: ScienceWorldEnv, actions) -> list[tuple]:
    out = []
    for a in actions:
        res = env.step(a)
        out.append(res)
        if res[2] or res[3]:
            break
    return out


def test_missing_java_is_dependency_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(swmod.shutil, "which", lambda name: None)
    with pytest.raises(DependencyNotInstalled, match="default-jre-headless"):
        ScienceWorldEnv()


def test_bad_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown ScienceWorld task"):
        ScienceWorldEnv(task="bake-a-cake")
    with pytest.raises(ValueError, match="simplification"):
        ScienceWorldEnv(simplification="openDoors,fly")
    with pytest.raises(ValueError, match="electrical"):
        ScienceWorldEnv(task="power-component", simplification="noElectricalAction")


@pytest.mark.slow
@needs_java
def test_step_limit_with_partial_score_is_not_success() -> None:
    env = ScienceWorldEnv(max_turns=3)
    try:
        _, info = env.reset(seed=0)
        gold = env.gold_actions()
        assert len(gold) > 3  # the gold path does not finish within the turn limit
        steps = _run(env, gold)
        assert len(steps) == 3
        _, _, terminated, truncated, last = steps[-1]
        assert truncated and not terminated
        assert 0 < last["score"] < COMPLETED_SCORE  # ScienceWorld's own score is partial
        assert last["success"] is False
        assert sum(s[4]["reward_components"]["task"] for s in steps) == 0.0
        progress = sum(s[4]["reward_components"]["progress"] for s in steps)
        assert progress == pytest.approx(env.reward_weights["progress"] * last["score"] / COMPLETED_SCORE)
    finally:
        env.close()


@pytest.mark.slow
@needs_java
def test_gold_path_completes_with_score_100_after_detours() -> None:
    env = ScienceWorldEnv()
    try:
        _, info = env.reset(seed=1)
        start = info["score"]
        # Commands that change nothing first: the expert's gold path is generated lazily (reload + replay).
        steps = _run(env, ["look around", "inventory", "reset task", "jump over the moon"])
        assert "disabled" in steps[2][0]
        assert "env_error" not in steps[-1][4]
        while True:
            res = env.step(env.expert_action())
            steps.append(res)
            if res[2] or res[3]:
                break
        _, _, terminated, truncated, last = steps[-1]
        assert terminated and last["success"] and last["score"] == COMPLETED_SCORE
        assert sum(s[4]["reward_components"]["task"] for s in steps) == 1.0
        progress = sum(s[4]["reward_components"]["progress"] for s in steps)
        assert progress == pytest.approx(env.reward_weights["progress"] * (COMPLETED_SCORE - start) / COMPLETED_SCORE)
    finally:
        env.close()


@pytest.mark.slow
@needs_java
def test_failure_is_terminal_and_unrewarded_and_odd_text_is_harmless() -> None:
    env = ScienceWorldEnv(task="lifespan-longest-lived")
    try:
        env.reset(seed=0)
        gold = env.gold_actions()
        go_outside = [a for a in gold if not a.startswith("focus")][:2]
        odd = ["\ud800 lone surrogate", "\x00\x1b[31m", "中文 click(12) 🙂", "<action>look around</action>"]
        steps = _run(env, odd + go_outside)
        assert all("env_error" not in s[4] for s in steps)
        assert steps[0][4]["action_error"] and steps[1][4]["action_error"] and steps[2][4]["action_error"] is None
        _, reward, terminated, truncated, info = env.step("focus on axe")  # the wrong thing: ScienceWorld fails it
        assert terminated and not truncated and info["success"] is False and info["score"] < 0
        assert info["reward_components"]["task"] == 0.0 and reward <= 0.0
    finally:
        env.close()


@pytest.mark.slow
@needs_java
def test_jvm_is_kept_across_resets_and_pooled_on_close_and_seeds_replay_exactly() -> None:
    env = ScienceWorldEnv()
    first, _ = env.reset(seed=0)
    pid = env._sw._gateway.java_process.pid
    env.reset(seed=1)
    assert env._sw._gateway.java_process.pid == pid  # one JVM across resets
    second, _ = env.reset(seed=0)
    # Same seed, same text, on any load of the JVM (room contents are listed in a stable order: JVM_OPTIONS).
    assert second == first
    env.close()
    env.close()  # safe twice
    again = ScienceWorldEnv(keep_jvm_warm=False)
    third, _ = again.reset(seed=0)
    assert third == first
    proc = again._sw._gateway.java_process
    assert proc.pid == pid  # the pooled JVM was reused
    again.close()
    assert proc.poll() is not None  # keep_jvm_warm=False shut it down


@pytest.mark.slow
@needs_java
def test_jvm_killed_mid_episode_is_env_error_and_killed_between_episodes_restarts_at_reset() -> None:
    env = ScienceWorldEnv(keep_jvm_warm=False)
    first, _ = env.reset(seed=0)
    env._sw._gateway.java_process.kill()
    env._sw._gateway.java_process.wait(timeout=10)
    _, reward, terminated, truncated, info = env.step("look around")
    assert info["env_error"] and truncated and not terminated and reward == 0 and not info["success"]
    assert env.reset(seed=0)[0] == first  # a fresh JVM, the same world
    # a JVM that dies while the env is idle between episodes (or in the pool) is replaced at the next reset
    env._sw._gateway.java_process.kill()
    env._sw._gateway.java_process.wait(timeout=10)
    assert env.reset(seed=0)[0] == first
    _, _, _, truncated, info = env.step("look around")
    assert not info.get("env_error") and not truncated
    env.close()


def _in_thread(fn, limit_s: float = 120.0):
    """Run ``fn`` in a thread; the test fails (instead of hanging) when it has not returned after ``limit_s``."""
    import threading

    box: dict = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(limit_s)
    assert not t.is_alive(), f"still blocked after {limit_s} s (no deadline on the simulator call)"
    return box


@pytest.mark.slow
@needs_java
def test_stopped_jvm_is_killed_at_the_deadline_and_reported_as_env_error() -> None:
    """A JVM that stops answering (SIGSTOP) held ``step`` for as long as it stayed stopped; now the call deadline
    kills it and the step is ``env_error`` (truncated); a reset on a stopped JVM raises InfrastructureError."""
    import os
    import signal

    from arl_envs.core.errors import InfrastructureError

    env = ScienceWorldEnv(keep_jvm_warm=False, call_timeout_s=3)
    procs = []
    try:
        first, _ = env.reset(seed=0)
        proc = env._sw._gateway.java_process
        procs.append(proc)
        os.kill(proc.pid, signal.SIGSTOP)
        box = _in_thread(lambda: env.step("look around"))
        _, reward, terminated, truncated, info = box["value"]
        assert truncated and not terminated and reward == 0 and not info["success"]
        assert "did not answer within 3 s" in info["env_error"], info["env_error"]
        assert proc.wait(timeout=10) == -signal.SIGKILL  # the deadline killed the stopped JVM
        assert env.reset(seed=0)[0] == first  # a fresh JVM, the same world
        proc = env._sw._gateway.java_process
        procs.append(proc)
        os.kill(proc.pid, signal.SIGSTOP)
        env.load_timeout_s = 3  # the first load in a fresh JVM may take longer than 3 s: lowered only now
        box = _in_thread(lambda: env.reset(seed=1))
        assert isinstance(box.get("error"), InfrastructureError), box
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        env.close()

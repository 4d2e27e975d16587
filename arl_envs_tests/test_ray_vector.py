"""make_vec(mode="ray"): the same results as the sync vector env, and a killed actor survived without loss.

One local Ray (loopback, 2 CPUs, no dashboard) serves the whole module; each actor reserves a quarter CPU so
several fit. Real envs throughout: the code env's bubblewrap sandbox, the web env's Chromium and the search env's
shared retrieval server all start inside the actors.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import arl_envs

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'arl-envs[ray]')")

#: Under pytest-xdist (``--dist loadgroup``) the whole module runs on one worker: its module fixture starts one
#: local Ray, and a second worker's ``ray.init()`` could join that cluster (Ray looks for the latest local one) and
#: lose it at the first worker's ``ray.shutdown()``.
pytestmark = pytest.mark.xdist_group("ray")

ACTOR = {"num_cpus": 0.25}
#: The info keys of the env contract, compared value by value (others may hold timings, e.g. sandbox durations).
CONTRACT_KEYS = ("task_id", "turn", "reward_components", "action_error", "success", "env_error", "legal_moves")


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    kwargs = {"num_cpus": 2, "include_dashboard": False, "_node_ip_address": "127.0.0.1", "log_to_driver": False,
              "configure_logging": False}
    try:
        ray.init(**kwargs)
    except Exception:  # noqa: BLE001 - Ray's "node timed out during startup" on an overloaded machine: once more
        ray.shutdown()
        ray.init(**kwargs)
    try:
        yield
    finally:
        ray.shutdown()


def _info_at(info: dict[str, Any], key: str, i: int) -> Any:
    return info[key][i] if key in info and info[f"_{key}"][i] else None


def _assert_same_step(a: tuple, b: tuple, where: str) -> None:
    assert a[0] == b[0], f"observations differ at {where}"
    for k, name in ((1, "rewards"), (2, "terminations"), (3, "truncations")):
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), f"{name} differ at {where}: {a[k]} {b[k]}"
    ia, ib = a[-1], b[-1]
    assert sorted(ia) == sorted(ib), f"info keys differ at {where}"
    for key in CONTRACT_KEYS:
        if key in ia:
            assert np.array_equal(ia[f"_{key}"], ib[f"_{key}"]), f"info mask {key} differs at {where}"
            assert list(ia[key]) == list(ib[key]), f"info[{key!r}] differs at {where}"


def _expert_or_junk(sync: Any, rng: np.random.Generator, junk: str) -> list[str]:
    """Per sub-env: the sync env's expert action (p=0.6) or a junk action; sub-envs between episodes get junk."""
    out = []
    for env in sync.envs:
        try:
            expert = env.unwrapped.expert_action()
        except arl_envs.ArlError:
            expert = junk
        out.append(expert if rng.random() < 0.6 else junk)
    return out


def _run_side_by_side(env_id: str, n: int, per_actor: int, steps: int, junk: str, seed: int = 7,
                      ray_kwargs: dict[str, Any] | None = None, check: Callable[[Any], None] | None = None,
                      **env_kwargs: Any) -> Any:
    """Step a ray and a sync vector env with the same seeds and actions; assert equality; check that every
    sub-env crossed at least one episode boundary; run ``check(ray_env)``; return the ray env (closed)."""
    sync = arl_envs.make_vec(env_id, n, **env_kwargs)
    venv = arl_envs.make_vec(env_id, n, mode="ray", envs_per_actor=per_actor, actor_options=ACTOR,
                             **(ray_kwargs or {}), **env_kwargs)
    try:
        a, b = venv.reset(seed=seed), sync.reset(seed=seed)
        assert a[0] == b[0] and sorted(a[1]) == sorted(b[1])
        rng = np.random.default_rng(seed)
        crossed = np.zeros(n, dtype=bool)  # a reset step followed an episode end
        pending = np.zeros(n, dtype=bool)
        for t in range(steps):
            actions = _expert_or_junk(sync, rng, junk)
            if t % 3 == 1:
                venv.step_async(actions)
                got = venv.step_wait(timeout=120)
            elif t % 3 == 2:
                got = asyncio.run(venv.astep(actions))
            else:
                got = venv.step(actions)
            _assert_same_step(got, sync.step(actions), f"{env_id} step {t}")
            crossed |= pending
            pending = got[2] | got[3]
            if crossed.all():
                break
        assert crossed.all(), f"not every sub-env crossed an episode boundary in {steps} steps: {crossed}"
        counts = venv.episode_counters()
        assert (counts["started"] >= 2).all() and (counts["env_errors"] == 0).all()
        worker = venv.worker_counters()
        assert np.array_equal(worker["resets"], worker["expected_resets"])
        assert np.array_equal(worker["steps"], worker["expected_steps"])
        if check is not None:
            check(venv)
        return venv
    finally:
        venv.close()
        sync.close()


def _ray_kill_and_wait(actor: Any, timeout_s: float = 30.0) -> None:
    """``ray.kill`` and wait until the actor is dead: ``ray.kill`` is asynchronous, so a call sent right after it can
    still be answered by the dying actor (the vector env then sees the death one step later, losing nothing; see
    ``benchmarks/ray_kill_race.py``), which these tests, written for the death to show in the next step, must not
    race against."""
    import time

    ray.kill(actor)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.__ray_ready__.remote(), timeout=timeout_s)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError(f"actor still answers {timeout_s} s after ray.kill")


def _kill_between_episodes(venv: Any) -> None:
    """An actor killed while all its sub-envs wait for their autoreset: they reset on the new actor, uncut."""
    venv.reset(seed=0)
    assert venv.step(venv.call("expert_action"))[2].all()
    _ray_kill_and_wait(venv.actors[0])  # sub-envs 0, 1
    got = venv.step(["x"] * venv.num_envs)
    assert not (got[2] | got[3]).any() and list(got[1]) == [0.0] * venv.num_envs
    assert "_env_error" not in got[-1] and all(o.startswith("Solve") for o in got[0])
    counts = venv.episode_counters()
    assert list(counts["env_errors"]) == [0] * venv.num_envs and list(counts["restarts"][:2]) == [1, 1]
    worker = venv.worker_counters()
    assert np.array_equal(worker["resets"], worker["expected_resets"]) and list(worker["resets"][:2]) == [1, 1]
    # Replacements are bounded: with none left, a death raises instead of looping.
    venv.max_restarts = 1
    _ray_kill_and_wait(venv.actors[0])
    with pytest.raises(arl_envs.ArlError, match="max_restarts=1"):
        venv.step(["x"] * venv.num_envs)


def test_math_equals_sync_then_survives_a_kill_between_episodes() -> None:
    # Plain, step_async/step_wait and awaitable steps in turn; 2 actors of 2 sub-envs.
    venv = _run_side_by_side("arl/math.arithmetic-v1", 4, 2, 30, "no idea", check=_kill_between_episodes)
    assert len(venv._slices) == 2 and venv.closed


def test_code_sandbox_equals_sync() -> None:
    from arl_envs.sandbox import get_sandbox

    try:
        get_sandbox("bwrap").close()
    except arl_envs.SandboxUnavailable as exc:  # pragma: no cover - depends on the host
        pytest.skip(f"the bubblewrap sandbox cannot run here: {exc}")
    _run_side_by_side("arl/code.functions-v0", 2, 2, 12, "```python\nprint(0)\n```")


def test_search_with_one_shared_retriever_per_node_equals_sync() -> None:
    # The sync envs search their own in-process BM25 index; the ray envs (two actors) query the node's one server.
    def one_server(venv: Any) -> None:
        urls = venv.get_attr("retriever_url")
        assert len(set(urls)) == 1 and urls[0].startswith("http://127.0.0.1:"), urls
        assert set(venv.get_attr("retriever_kind")) == {"remote"}
        assert len(venv._pool.retrievers) == len([nd for nd in ray.nodes() if nd["Alive"]]) == 1

    _run_side_by_side("arl/search.multihop-v1", 2, 1, 20, "<answer>nobody</answer>",
                      ray_kwargs={"shared_retriever": True}, check=one_server)


@pytest.mark.slow
def test_web_browser_equals_sync() -> None:
    pytest.importorskip("playwright.async_api", reason="playwright is not installed (pip install 'arl-envs[web]')")
    from arl_envs.envs.web.browser import BrowserUnavailable, find_chromium

    try:
        find_chromium()
    except BrowserUnavailable as exc:  # pragma: no cover - CI installs Debian's chromium
        pytest.skip(f"no Chromium on this machine: {exc}")
    _run_side_by_side("arl/web.click-button-v0", 2, 2, 12, 'click("zz")')


def test_multiagent_seat_equals_sync() -> None:
    _run_side_by_side("arl/multiagent.tictactoe-v1", 2, 2, 20, "[9]")


def _first_legal(info: dict[str, Any], n: int) -> list[str]:
    moves = [_info_at(info, "legal_moves", i) for i in range(n)]
    return [f"[{m[0]}]" if m else "[0]" for m in moves]


def test_killed_actor_is_replaced_and_only_its_envs_are_cut() -> None:
    n, env_id = 4, "arl/multiagent.tictactoe-v1"
    ref = arl_envs.make_vec(env_id, n)  # what sub-envs 0, 1 (actor 0) must keep doing
    venv = arl_envs.make_vec(env_id, n, mode="ray", envs_per_actor=2, actor_options=ACTOR)
    try:
        obs, info = venv.reset(seed=3)
        assert obs == ref.reset(seed=3)[0]
        pids = venv.worker_counters()["pid"]
        seen_done = np.zeros(n, dtype=np.int64)
        actions = _first_legal(info, n)
        got = venv.step(actions)  # one move each: no tic-tac-toe game can end before the agent's second move
        _assert_same_step(got, ref.step(actions), "step 0")
        assert not (got[2] | got[3]).any()

        _ray_kill_and_wait(venv.actors[1])  # sub-envs 2 and 3, mid-episode
        actions = _first_legal(got[-1], n)
        cut = venv.step(actions)
        want = ref.step(actions)
        assert cut[0][:2] == want[0][:2] and np.array_equal(cut[1][:2], want[1][:2])
        assert np.array_equal(cut[2][:2], want[2][:2]) and np.array_equal(cut[3][:2], want[3][:2])
        assert list(cut[3][2:]) == [True, True] and list(cut[2][2:]) == [False, False]
        assert list(cut[1][2:]) == [0.0, 0.0] and cut[0][2:] == got[0][2:]  # last observation kept
        errors = [_info_at(cut[-1], "env_error", i) for i in range(n)]
        assert errors[:2] == [None, None] and all("died" in e for e in errors[2:]), errors
        seen_done += cut[2] | cut[3]

        fresh = venv.step(_first_legal(cut[-1], n))  # sub-envs 2, 3 reset on the new actor
        ref_step = ref.step(_first_legal(cut[-1], n))
        assert fresh[0][:2] == ref_step[0][:2] and np.array_equal(fresh[1][:2], ref_step[1][:2])
        assert [_info_at(fresh[-1], "turn", i) for i in (2, 3)] == [0, 0]
        assert list(fresh[1][2:]) == [0.0, 0.0] and not (fresh[2][2:] | fresh[3][2:]).any()
        seen_done += fresh[2] | fresh[3]
        for t in range(8):  # actor 0's sub-envs go on exactly as the reference, across episode ends
            actions = _first_legal(fresh[-1], n)
            fresh, ref_step = venv.step(actions), ref.step(actions)
            assert fresh[0][:2] == ref_step[0][:2] and np.array_equal(fresh[2][:2], ref_step[2][:2]), t
            assert np.array_equal(fresh[1][:2], ref_step[1][:2]) and np.array_equal(fresh[3][:2], ref_step[3][:2])
            assert "_env_error" not in fresh[-1] or not fresh[-1]["_env_error"].any()
            seen_done += fresh[2] | fresh[3]

        counts = venv.episode_counters()
        assert list(counts["env_errors"]) == [0, 0, 1, 1] and list(counts["restarts"]) == [0, 0, 1, 1]
        assert np.array_equal(counts["finished"], seen_done)  # every end shown once, counted once
        assert set(counts["started"] - counts["finished"]) <= {0, 1}
        worker = venv.worker_counters()
        assert np.array_equal(worker["resets"], worker["expected_resets"])  # nothing lost or applied twice
        assert np.array_equal(worker["steps"], worker["expected_steps"])
        assert list(worker["pid"][:2]) == list(pids[:2]) and worker["pid"][2] != pids[2]
    finally:
        venv.close()
        ref.close()


def test_without_ray_import_works_and_mode_ray_names_the_extra() -> None:
    # arl_envs alone never imports ray; with ray hidden, mode="ray" names the extra.
    code = ("import sys, arl_envs, arl_envs.vector\nprint('IMPORTED_RAY', 'ray' in sys.modules)\n"
            "sys.modules['ray'] = None\n"
            "from arl_envs.vector import RayVectorEnv\n"
            "try:\n    arl_envs.make_vec('arl/math.arithmetic-v1', 2, mode='ray')\n"
            "except arl_envs.DependencyNotInstalled as e:\n    print('RAISED', e)\n")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "IMPORTED_RAY False" in out.stdout
    assert "RAISED" in out.stdout and "arl-envs[ray]" in out.stdout


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        arl_envs.make_vec("arl/math.arithmetic-v1", 2, mode="ray", envs_per_actor=0)
    with pytest.raises(ValueError, match="search id"):
        arl_envs.make_vec("arl/math.arithmetic-v1", 2, mode="ray", shared_retriever=True, actor_options=ACTOR)


def _crash_mid_episode(venv: Any) -> None:
    """transport="socket": actor 1's process is SIGKILLed mid-episode (a real crash, not ray.kill): its sub-envs
    are cut with env_error, the others go on; a step collected after a zero timeout still returns that step."""

    sync = arl_envs.make_vec("arl/math.arithmetic-v1", venv.num_envs)
    try:
        assert venv.reset(seed=5)[0] == sync.reset(seed=5)[0]
        venv.step_async(["no idea"] * venv.num_envs)
        try:
            got = venv.step_wait(timeout=0)
        except TimeoutError:  # the usual case: the answers are read on the next call, none lost or doubled
            got = venv.step_wait()
        _assert_same_step(got, sync.step(["no idea"] * venv.num_envs), "after a zero timeout")
        pid = int(venv.worker_counters()["pid"][2])
        _sigkill_and_wait(pid)
        cut = venv.step(["no idea"] * venv.num_envs)
        want = sync.step(["no idea"] * venv.num_envs)
        assert cut[0][:2] == want[0][:2] and list(cut[3]) == [False, False, True, True]
        errors = [_info_at(cut[-1], "env_error", i) for i in range(venv.num_envs)]
        assert errors[:2] == [None, None] and all("died" in e for e in errors[2:]), errors
        fresh = venv.step(["no idea"] * venv.num_envs)
        assert [_info_at(fresh[-1], "turn", i) for i in (2, 3)] == [0, 0]
        counts = venv.episode_counters()
        assert list(counts["env_errors"]) == [0, 0, 1, 1] and list(counts["restarts"]) == [0, 0, 1, 1]
        worker = venv.worker_counters()
        assert np.array_equal(worker["resets"], worker["expected_resets"])
        assert np.array_equal(worker["steps"], worker["expected_steps"]) and int(worker["pid"][2]) != pid
    finally:
        sync.close()


def test_socket_transport_equals_sync_and_survives_a_crash() -> None:
    with pytest.raises(ValueError, match="transport"):
        arl_envs.make_vec("arl/math.arithmetic-v1", 2, mode="ray", transport="pigeon")
    venv = _run_side_by_side("arl/math.arithmetic-v1", 4, 2, 30, "no idea", ray_kwargs={"transport": "socket"},
                             check=_crash_mid_episode)
    assert venv.transport == "socket" and venv.closed


def _sigkill_and_wait(pid: int) -> None:
    import os
    import signal
    import time

    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().split()[2] == "Z":
                return
        time.sleep(0.05)


def test_same_step_autoreset_equals_sync_and_cuts_a_crashed_actor() -> None:
    # Gymnasium's SAME_STEP: a finished sub-env is reset in the step that ended it, final_obs/final_info beside.
    n, env_id = 4, "arl/math.arithmetic-v1"
    sync = arl_envs.make_vec(env_id, n, autoreset_mode="same_step")
    venv = arl_envs.make_vec(env_id, n, mode="ray", envs_per_actor=2, actor_options=ACTOR, transport="socket",
                             autoreset_mode="same_step")
    try:
        assert venv.metadata["autoreset_mode"] == sync.metadata["autoreset_mode"]
        assert venv.reset(seed=11)[0] == sync.reset(seed=11)[0]
        rng = np.random.default_rng(0)
        ended = 0
        for t in range(12):
            actions = _expert_or_junk(sync, rng, "no idea")
            got, want = venv.step(actions), sync.step(actions)
            _assert_same_step(got, want, f"same-step {t}")
            assert ("final_obs" in got[-1]) == ("final_obs" in want[-1])
            if "final_obs" in want[-1]:
                assert np.array_equal(got[-1]["_final_obs"], want[-1]["_final_obs"])
                assert list(got[-1]["final_obs"]) == list(want[-1]["final_obs"])
                for key in ("reward_components", "success", "action_error"):
                    assert list(got[-1]["final_info"][key]) == list(want[-1]["final_info"][key]), (t, key)
                ended += int(want[-1]["_final_obs"].sum())
        assert ended >= n  # every sub-env went through at least one same-step reset on average
        last_obs = got[0]
        _sigkill_and_wait(int(venv.worker_counters()["pid"][0]))
        cut = venv.step(["no idea"] * n)
        assert list(cut[3]) == [True, True, False, False] and list(cut[1][:2]) == [0.0, 0.0]
        assert list(cut[-1]["final_obs"][:2]) == list(last_obs[:2]) and all(o.startswith("Solve") for o in cut[0][:2])
        assert all("died" in e for e in cut[-1]["final_info"]["env_error"][:2])
        assert all("died" in e for e in cut[-1]["env_error"][:2]) and not cut[-1]["_env_error"][2:].any()
        counts, worker = venv.episode_counters(), venv.worker_counters()
        assert list(counts["env_errors"]) == [1, 1, 0, 0] and list(counts["restarts"]) == [1, 1, 0, 0]
        assert np.array_equal(worker["resets"], worker["expected_resets"])
        assert np.array_equal(worker["steps"], worker["expected_steps"])
    finally:
        venv.close()
        sync.close()


def test_a_stopped_actor_is_killed_at_the_step_deadline() -> None:
    """A hung actor process (SIGSTOP) held ``step`` for as long as it stayed stopped; with ``actor_timeout_s`` the
    step kills it: its sub-envs end truncated with env_error on a replacement actor, the others go on."""
    import os
    import signal
    import threading

    venv = arl_envs.make_vec("arl/math.arithmetic-v1", 4, mode="ray", envs_per_actor=2, actor_options=ACTOR,
                             actor_timeout_s=5)
    box: dict[str, Any] = {}
    try:
        venv.reset(seed=3)
        pid = int(venv.worker_counters()["pid"][2])
        os.kill(pid, signal.SIGSTOP)
        t = threading.Thread(target=lambda: box.update(step=venv.step(["no idea"] * 4)), daemon=True)
        t.start()
        t.join(180)
        assert not t.is_alive(), "step still blocked on the stopped actor (no deadline)"
        _, _, _, trunc, info = box["step"]
        assert list(trunc) == [False, False, True, True]
        errors = [_info_at(info, "env_error", i) for i in range(4)]
        assert errors[:2] == [None, None] and all("did not answer within 5 s" in e for e in errors[2:]), errors
        assert list(venv.episode_counters()["restarts"]) == [0, 0, 1, 1]
        fresh = venv.step(["no idea"] * 4)
        assert [_info_at(fresh[-1], "turn", i) for i in (2, 3)] == [0, 0]
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except (OSError, UnboundLocalError):
            pass
        venv.close()

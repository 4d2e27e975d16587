"""Concurrency and isolation: 256 concurrent sessions of light envs on one server, nothing leaked after 500
open/close cycles (sessions, threads, sockets), sandbox processes reaped with their session, env calls off the event
loop, ``--workers``."""

from __future__ import annotations

import asyncio
import os
import time

import gymnasium as gym
import httpx
import psutil
import pytest
from openenv.core.generic_client import GenericEnvClient

import arl_envs

from .conftest import start_server, start_thread_server, stop_server

#: (id, an action) of the light envs the 256 sessions are spread over (math, multi-agent, embodied).
LIGHT = (("arl/math.arithmetic-v1", "\\boxed{0}"), ("arl/multiagent.tictactoe-v1", "[4]"),
         ("arl/embodied.frozenlake-v0", "right"))


def _wait_for(predicate, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.slow
def test_256_concurrent_sessions(server) -> None:
    n = 256

    async def one(i: int, client: GenericEnvClient) -> dict:
        env_id, action = LIGHT[i % len(LIGHT)]
        first = await client.reset(env_id=env_id, seed=i)
        assert first.observation["env_id"] == env_id
        return (await client.step({"text": action})).observation["info"]

    async def main() -> None:
        clients = [GenericEnvClient(base_url=server.url, message_timeout_s=300) for _ in range(n)]
        for batch in range(0, n, 64):  # connect in batches (the handshakes), then play all at once
            await asyncio.gather(*(c.connect() for c in clients[batch:batch + 64]))
        infos = await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))
        assert all("reward_components" in info for info in infos)
        stats = await asyncio.to_thread(server.stats)
        assert stats["by_kind"].get("ws", 0) >= n and stats["session_threads"] >= n
        await asyncio.gather(*(c.close() for c in clients))

    asyncio.run(main())
    assert _wait_for(lambda: server.stats()["by_kind"].get("ws", 0) == 0)


@pytest.mark.slow
def test_500_open_close_cycles_leak_nothing() -> None:
    srv = start_thread_server(env_patterns=["arl/example.guess-v0"], max_sessions=64)
    proc = psutil.Process()
    try:
        def ws_cycle_batch(seeds: range) -> None:
            async def one(seed: int) -> None:
                async with GenericEnvClient(base_url=srv.url) as client:
                    await client.reset(seed=seed)
                    await client.step({"text": "a guess"})

            async def main() -> None:
                await asyncio.gather(*(one(s) for s in seeds))

            asyncio.run(main())

        ws_cycle_batch(range(5))  # warm-up: lazily created pools and imports are not leaks
        http = httpx.Client(base_url=srv.url, timeout=60)
        http.post("/close", json={"session_id": http.post("/reset", json={}).json()["observation"]["session_id"]})
        assert _wait_for(lambda: srv.stats()["active"] == 0)
        threads0, fds0 = srv.stats()["threads"], proc.num_fds()
        for start in range(0, 400, 25):
            ws_cycle_batch(range(start, start + 25))
        for seed in range(100):
            sid = http.post("/reset", json={"seed": seed}).json()["observation"]["session_id"]
            assert http.post("/close", json={"session_id": sid}).status_code == 200
        assert _wait_for(lambda: srv.stats()["active"] == 0)
        stats = srv.stats()
        assert stats["opened"] >= 506 and stats["closed"] == stats["opened"]
        assert _wait_for(lambda: srv.stats()["session_threads"] == 0), srv.stats()
        assert srv.stats()["threads"] <= threads0, (threads0, srv.stats())
        http.close()
        assert proc.num_fds() <= fds0 + 5, (fds0, proc.num_fds())
    finally:
        stop_server(srv)


def _descendants() -> list[psutil.Process]:
    return psutil.Process().children(recursive=True)


def _bwrap_descendants() -> list[psutil.Process]:
    """Sandboxes still running (bubblewrap processes under this test process)."""
    out = []
    for p in _descendants():
        try:
            if p.name() == "bwrap":
                out.append(p)
        except psutil.Error:
            pass
    return out


@pytest.mark.slow
def test_sandbox_sessions_are_reaped_and_never_block_the_loop() -> None:
    """arl/math.tool-v1 runs model code in a bubblewrap sandbox: a long sandboxed step in one session does not hold
    up /health or another session, and closing sessions leaves no sandbox behind: after the first session (which
    starts the process-wide sandbox spawners, kept by design) no process is added by later open/close cycles."""
    srv = start_thread_server(env_patterns=["arl/math.tool-v1"], max_sessions=16)
    env = gym.make("arl/math.tool-v1")
    env.reset(seed=0)
    slow = env.unwrapped.render_call("python", {"code": "import time; time.sleep(4); print('done')"})
    quick = env.unwrapped.render_call("python", {"code": "print(6 * 7)"})
    env.close()
    try:
        async def main() -> None:
            async with GenericEnvClient(base_url=srv.url) as a, GenericEnvClient(base_url=srv.url) as b, \
                    httpx.AsyncClient(base_url=srv.url) as http:
                await a.reset(seed=0)
                await b.reset(seed=1)
                sleeping = asyncio.ensure_future(a.step({"text": slow}))
                await asyncio.sleep(0.5)
                assert (await http.get("/health")).status_code == 200
                result = await b.step({"text": quick})
                assert "42" in result.observation["text"]
                assert not sleeping.done()  # /health and session b answered while a's sandbox was still running
                assert "done" in (await sleeping).observation["text"]

        asyncio.run(main())
        assert _wait_for(lambda: srv.stats()["active"] == 0 and not _bwrap_descendants())
        baseline = len(_descendants())
        for seed in range(5):  # open/close cycles that each start a sandboxed Python session
            with GenericEnvClient(base_url=srv.url).sync() as client:
                client.reset(seed=seed)
                assert "42" in client.step({"text": quick}).observation["text"]
        assert _wait_for(lambda: srv.stats()["active"] == 0)
        assert _wait_for(lambda: not _bwrap_descendants()), _bwrap_descendants()
        assert _wait_for(lambda: len(_descendants()) <= baseline), (baseline, _descendants())
    finally:
        stop_server(srv)


@pytest.mark.slow
def test_workers_pin_sessions_and_a_frozen_or_killed_server_is_env_error() -> None:
    """``arl-envs serve --workers 2`` as a subprocess: sessions stay in one worker for a whole episode; a worker
    frozen (SIGSTOP) mid-episode -> that step's deadline, then ``env_error``; killed -> ``env_error`` at once; the
    whole server stopped -> ``reset`` raises. Never an exception out of ``step``, never a hang."""
    srv = start_server("--env", "arl/example.guess-v0", "--workers", "2", timeout_s=180)
    try:
        assert _wait_for(lambda: len(psutil.Process(srv.proc.pid).children()) >= 2)
        workers = {p.pid for p in psutil.Process(srv.proc.pid).children()}
        pids = set()
        for i in range(4):
            env = gym.make("arl_envs:arl/remote-v0", url=srv.url, env_id="arl/example.guess-v0")
            pids.add(env.unwrapped._spec()["server_pid"])
            env.reset(seed=i)
            while True:  # a whole expert episode over one connection: every call reaches the same worker
                *_, term, trunc, info = env.step(env.unwrapped.expert_action())
                if term or trunc:
                    break
            assert info["success"] is True
            env.close()
        assert pids <= workers and os.getpid() not in pids

        frozen = gym.make("arl_envs:arl/remote-v0", url=srv.url, env_id="arl/example.guess-v0", timeout_s=1.5)
        frozen.reset(seed=0)
        worker = psutil.Process(frozen.unwrapped._spec()["server_pid"])
        worker.suspend()
        try:
            start = time.monotonic()
            *_, truncated, info = frozen.step("anything")
            assert truncated and "did not answer" in info["env_error"]
            assert time.monotonic() - start < 5
        finally:
            worker.resume()
        frozen.close()

        killed = gym.make("arl_envs:arl/remote-v0", url=srv.url, env_id="arl/example.guess-v0", timeout_s=5.0)
        killed.reset(seed=0)
        killed.step(killed.unwrapped.expert_action())
        psutil.Process(killed.unwrapped._spec()["server_pid"]).kill()
        start = time.monotonic()
        obs, reward, terminated, truncated, info = killed.step(
            '<tool_call>{"name": "guess", "arguments": {"number": 1}}</tool_call>')
        assert time.monotonic() - start < 10  # the client's own deadline (5 s), not a hang
        assert truncated and not terminated and reward == 0.0
        assert "env_error" in info and info["reward_components"] == {}
        with pytest.raises(arl_envs.ResetNeeded):
            killed.step("x")  # the episode is over, as in-process after truncation
        stop_server(srv)
        with pytest.raises(arl_envs.ArlError, match="cannot reach"):
            killed.reset()  # no server answers any more
        killed.close()
    finally:
        stop_server(srv)

"""Step round trip of ``arl-envs serve`` (WebSocket and HTTP) vs the env in-process, beside OpenEnv's own server
stack serving a minimal echo env the same way (the peer), interleaved in one run; prints a markdown table.

Measured, for 1, 16 and 256 concurrent sessions (asyncio clients, one server process each, on loopback):

* ``arl ws``: ``arl/example.guess-v0`` through ``arl-envs serve``'s ``/ws``, OpenEnv's ``GenericEnvClient``;
* ``arl http``: the same env through ``POST /step`` with its ``session_id`` (httpx, keep-alive);
* ``peer ws``: an echo env (``message`` in, ``message`` out; the shape of OpenEnv's ``envs/echo_env``, which ships
  in the OpenEnv repository, not in the ``openenv-core`` wheel) served by ``openenv-core``'s own ``create_app`` /
  ``HTTPEnvServer``, through ``/ws`` with ``GenericEnvClient``;
* ``arl in-process`` / ``echo in-process``: the env's own ``step`` in this process (the env's cost).

Overhead = served p50 - in-process p50 of the same env. Server CPU per step = the server process's user + system
CPU time over the configuration's rounds (connections, resets and closes included) / timed steps: what a step costs
the server, less sensitive to the machine's load than the round trip. Rounds of every configuration are interleaved, so machine
load hits them alike. Only ``step`` calls are timed, once every session of the round is connected and reset (an
episode that ends is reset untimed). Client and servers share this machine's cores: with many sessions the client's
own CPU (OpenEnv's client, httpx) is part of each round trip.

Usage::

    python benchmarks/serve_latency.py                       # the RESULTS.md table
    python benchmarks/serve_latency.py --sessions 1,16 --rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV_ID = "arl/example.guess-v0"
#: A guess that rarely wins: the episode goes on (``Higher.``) until its turn limit.
ACTION = '<tool_call>{"name": "guess", "arguments": {"number": 1}}</tool_call>'
#: Timed steps per session per round, by session count (about 300 steps per configuration and round).
STEPS = {1: 300, 16: 20, 256: 2}


# ----------------------------------------------------------------------------- the peer: OpenEnv's own server
def peer_app(max_sessions: int):
    """OpenEnv's ``create_app`` over a minimal echo env (OpenEnv's own server machinery end to end)."""
    from openenv.core.env_server.http_server import create_app
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, Observation, State

    class EchoAction(Action):
        message: str

    class EchoObservation(Observation):
        echoed_message: str = ""

    class EchoEnv(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._state = State(step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs) -> EchoObservation:
            self._state = State(episode_id=episode_id, step_count=0)
            return EchoObservation(echoed_message="ready")

        def step(self, action: EchoAction, **kwargs) -> EchoObservation:
            self._state.step_count += 1
            return EchoObservation(echoed_message=action.message, reward=0.1 * len(action.message), done=False)

        @property
        def state(self) -> State:
            return self._state

    return create_app(EchoEnv, EchoAction, EchoObservation, max_concurrent_envs=max_sessions), EchoEnv, EchoAction


def run_peer_server(port: int, max_sessions: int) -> None:
    import uvicorn

    app, _, _ = peer_app(max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


# ----------------------------------------------------------------------------- servers
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(cmd: list[str], port: int) -> subprocess.Popen:
    import httpx

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "baselines"),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{cmd} did not start")


# ----------------------------------------------------------------------------- clients
async def ws_round(url: str, sessions: int, steps: int, reset: dict, action: dict) -> list[float]:
    from openenv.core.generic_client import GenericEnvClient

    clients = [GenericEnvClient(base_url=url, message_timeout_s=300) for _ in range(sessions)]
    for i in range(0, sessions, 64):
        await asyncio.gather(*(c.connect() for c in clients[i:i + 64]))
    out: list[float] = []
    await asyncio.gather(*(c.reset(**reset) for c in clients))  # every session set up before any step is timed

    async def one(c) -> None:
        for _ in range(steps):
            t = time.perf_counter()
            r = await c.step(action)
            out.append(time.perf_counter() - t)
            if r.done:
                await c.reset(**reset)

    await asyncio.gather(*(one(c) for c in clients))
    await asyncio.gather(*(c.close() for c in clients))
    return out


async def http_round(url: str, sessions: int, steps: int) -> list[float]:
    import httpx

    out: list[float] = []
    limits = httpx.Limits(max_connections=sessions, max_keepalive_connections=sessions)
    async with httpx.AsyncClient(base_url=url, timeout=300, limits=limits) as http:
        async def open_session() -> str:
            return (await http.post("/reset", json={"env_id": ENV_ID})).json()["observation"]["session_id"]

        sids = await asyncio.gather(*(open_session() for _ in range(sessions)))  # set up before any step is timed

        async def one(sid: str) -> None:
            for _ in range(steps):
                t = time.perf_counter()
                r = (await http.post("/step", json={"session_id": sid, "action": {"text": ACTION}})).json()
                out.append(time.perf_counter() - t)
                if r["done"]:
                    await http.post("/reset", json={"session_id": sid})
            await http.post("/close", json={"session_id": sid})

        await asyncio.gather(*(one(sid) for sid in sids))
    return out


def in_process_round(make, step, steps: int) -> list[float]:
    env = make()
    out = []
    for _ in range(steps):
        t = time.perf_counter()
        done = step(env)
        out.append(time.perf_counter() - t)
        if done:
            env.reset()
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sessions", default="1,16,256")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--peer-server", type=int, default=0, help=argparse.SUPPRESS)  # run the peer on this port
    args = ap.parse_args()
    if args.peer_server:
        run_peer_server(args.peer_server, 300)
        return
    import gymnasium as gym

    import arl_envs  # noqa: F401

    sessions = [int(s) for s in args.sessions.split(",")]
    arl_port, peer_port = free_port(), free_port()
    arl = start([sys.executable, "-m", "arl_envs.cli", "serve", "--port", str(arl_port), "--env", ENV_ID,
                 "--max-sessions", "300"], arl_port)
    peer = start([sys.executable, __file__, "--peer-server", str(peer_port)], peer_port)
    _, EchoEnv, EchoAction = peer_app(1)
    arl_url, peer_url = f"http://127.0.0.1:{arl_port}", f"http://127.0.0.1:{peer_port}"
    samples: dict[tuple[str, int], list[float]] = {}
    cpu: dict[tuple[str, int], float] = {}  # server CPU seconds (user + system) spent on each configuration
    import psutil

    procs = {"arl": psutil.Process(arl.pid), "peer": psutil.Process(peer.pid)}

    def add(key: tuple[str, int], xs: list[float]) -> None:
        samples.setdefault(key, []).extend(xs)

    def served(key: tuple[str, int], server: str, coro) -> None:
        t0 = sum(procs[server].cpu_times()[:2])
        add(key, asyncio.run(coro))
        cpu[key] = cpu.get(key, 0.0) + sum(procs[server].cpu_times()[:2]) - t0

    def guess_env():
        env = gym.make(ENV_ID)
        env.reset(seed=0)
        return env

    def echo_env():
        env = EchoEnv()
        env.reset()
        return env

    try:
        for _ in range(args.rounds):
            add(("arl in-process", 1), in_process_round(guess_env, lambda e: any(e.step(ACTION)[2:4]), 300))
            add(("echo in-process", 1), in_process_round(
                echo_env, lambda e: e.step(EchoAction(message="hello")).done, 300))
            for s in sessions:
                steps = STEPS.get(s, max(1, 300 // s))
                served(("arl ws", s), "arl", ws_round(arl_url, s, steps, {"env_id": ENV_ID}, {"text": ACTION}))
                served(("peer ws", s), "peer", ws_round(peer_url, s, steps, {}, {"message": "hello"}))
                served(("arl http", s), "arl", http_round(arl_url, s, steps))
    finally:
        for proc in (arl, peer):
            proc.terminate()
            proc.wait(timeout=30)

    base = {"arl": statistics.median(samples[("arl in-process", 1)]) * 1e3,
            "peer": statistics.median(samples[("echo in-process", 1)]) * 1e3}
    print(f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f} at the end; {args.rounds} interleaved rounds.\n")
    print("| configuration | sessions | steps | p50 ms | p99 ms | overhead p50 ms (vs its env in-process) "
          "| server CPU ms per step (incl. connect + reset) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (name, s), xs in samples.items():
        system = "peer" if name.startswith(("peer", "echo")) else "arl"
        over = "" if "in-process" in name else f"{pct(xs, 0.5) - base[system]:.3f}"
        per_step = f"{cpu[(name, s)] / len(xs) * 1e3:.3f}" if (name, s) in cpu else ""
        print(f"| {name} | {s} | {len(xs)} | {pct(xs, 0.5):.3f} | {pct(xs, 0.99):.3f} | {over} | {per_step} |")


if __name__ == "__main__":
    main()

"""A real ``arl-envs serve`` subprocess on a free loopback port, shared by the server tests of one module."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="needs pip install 'arl-envs[serve]' (openenv-core)")
httpx = pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
#: Light ids (one per domain family that needs no browser, JVM or sandbox) the server tests open.
LIGHT_IDS = ("arl/example.guess-v0", "arl/math.arithmetic-v0", "arl/multiagent.tictactoe-v0",
             "arl/embodied.frozenlake-v0", "arl/search.multihop-v0", "arl/memory.bank-v0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    proc: subprocess.Popen
    token: str | None = None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def stats(self) -> dict:
        return httpx.get(f"{self.url}/sessions", headers=self.headers(), timeout=10).json()


def start_server(*args: str, token: str | None = None, timeout_s: float = 60.0) -> Server:
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "baselines"),
                                                       os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "arl_envs.cli", "serve", "--port", str(port), *args]
    if token:
        cmd += ["--token", token]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
        try:
            if httpx.get(f"{url}/health", headers=headers, timeout=1).status_code == 200:
                return Server(url, proc, token)
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start within 60 s")


def stop_server(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait()


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    srv = start_server(*[a for i in LIGHT_IDS for a in ("--env", i)], "--max-sessions", "300")
    yield srv
    stop_server(srv)

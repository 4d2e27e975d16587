"""Real ``arl-envs serve`` servers on free loopback ports: uvicorn in a thread of the test process (the app of
``arl-envs serve``, its imports paid once), or the ``arl-envs serve`` command as a subprocess where a test kills or
freezes the server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="needs pip install 'arl-envs[serve]' (openenv-core)")
httpx = pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
#: Light ids (one per domain family that needs no browser, JVM or sandbox) the server tests open.
LIGHT_IDS = ("arl/example.guess-v0", "arl/math.arithmetic-v1", "arl/multiagent.tictactoe-v1",
             "arl/embodied.frozenlake-v0", "arl/search.multihop-v1", "arl/memory.bank-v1")
#: One id of each remaining domain: sandboxed code, sandboxed self-play, a browser.
HEAVY_IDS = ("arl/code.functions-v0", "arl/selfplay.propose-solve-v1", "arl/web.click-button-v0")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    proc: subprocess.Popen | None = None
    token: str | None = None
    uvicorn_server: object = None
    thread: threading.Thread | None = None

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
    _kill_tree(proc)
    raise RuntimeError(f"server did not start within {timeout_s:g} s")


def _kill_tree(proc: subprocess.Popen) -> None:
    """Kill the server and its worker processes (``--workers``)."""
    import psutil

    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    proc.kill()
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass
    proc.wait()


def start_thread_server(*, token: str | None = None, **kwargs: object) -> Server:
    """The app of ``arl-envs serve`` (``kwargs`` to :class:`ArlServer`) under uvicorn in a daemon thread."""
    import uvicorn

    from arl_envs.server.app import ArlServer, create_app

    port = free_port()
    app = create_app(ArlServer(token=token, **kwargs))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws_max_size=2 ** 24)
    userver = uvicorn.Server(config)
    thread = threading.Thread(target=userver.run, daemon=True, name="test-uvicorn")
    thread.start()
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", headers=headers, timeout=1).status_code == 200:
                return Server(url, token=token, uvicorn_server=userver, thread=thread)
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("server thread did not start within 60 s")


def stop_server(server: Server) -> None:
    if server.thread is not None:
        server.uvicorn_server.should_exit = True
        server.thread.join(timeout=15)
        return
    if server.proc.poll() is None:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            _kill_tree(server.proc)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    srv = start_thread_server(env_patterns=[*LIGHT_IDS, *HEAVY_IDS], max_sessions=300, max_message_bytes=2**20)
    yield srv
    stop_server(srv)

"""Our standard-library retrieval server vs the same ``/retrieve`` on FastAPI + uvicorn: compatibility and speed.

Usage:
    pip install fastapi uvicorn   # benchmark-only peer, not a dependency of arl-envs
    python benchmarks/search_server_fastapi.py [--requests 400] [--rounds 5] [--steps 1000]

Both servers answer from one BM25 index (the ``arl/search.multihop-v1`` world of 3,000 articles) with the same
request handling (:meth:`~arl_envs.envs.search.server.RetrievalServer.retrieve`). The FastAPI app is the one a port
would use to stay byte-compatible with Search-R1's ``/retrieve``: it returns the very bytes our server sends
(FastAPI's default ``JSONResponse`` writes compact separators, so its bytes would differ). Checked first: the
response bodies and status codes of a set of good and bad requests are identical. Then, in interleaved rounds,
the keep-alive :class:`~arl_envs.envs.search.retrievers.RemoteRetriever` sends the same single-query requests to
each (latency p50/p90), and the expert steps ``arl/search.multihop-v1`` through each (steps/s).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request

import gymnasium as gym

import arl_envs  # noqa: F401
from arl_envs.agents.agents import ExpertAgent
from arl_envs.envs.search.retrievers import BM25Retriever, RemoteRetriever
from arl_envs.envs.search.server import RetrievalServer, _BadRequest
from arl_envs.envs.search.world import load_world

try:  # module level: FastAPI resolves the handler's (string) annotations in this module's globals
    from fastapi import FastAPI, Request, Response
except ImportError:  # pragma: no cover
    raise SystemExit("pip install fastapi uvicorn  (benchmark-only peer)") from None

N_ARTICLES = 3000


def fastapi_app(ours: RetrievalServer):
    """A FastAPI app serving ``POST /retrieve`` with our request handling and our exact response bytes."""
    app = FastAPI(title="arl-envs retrieval (FastAPI port, benchmark only)")

    def reply(status: int, body: dict) -> Response:
        return Response(json.dumps(body, ensure_ascii=False).encode("utf-8"), status, media_type="application/json")

    @app.post("/retrieve")
    async def retrieve(request: Request) -> Response:
        raw = await request.body()
        try:
            payload = json.loads(raw or b"null")
        except RecursionError:
            return reply(400, {"error": "body is nested too deeply to parse", "detail": "body is nested too deeply to parse"})
        except ValueError:
            return reply(400, {"error": "body is not valid JSON", "detail": "body is not valid JSON"})
        try:
            return reply(200, ours.retrieve(payload))
        except _BadRequest as exc:
            return reply(int(exc.status), {"error": str(exc), "detail": str(exc)})

    return app


def start_uvicorn(app) -> tuple[object, str]:
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", access_log=False))
    threading.Thread(target=server.run, daemon=True).start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.01)
    return server, f"http://127.0.0.1:{port}"


def post(url: str, body: bytes) -> tuple[int, bytes]:
    req = urllib.request.Request(url + "/retrieve", data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1000, help="env steps per server per round")
    args = ap.parse_args()
    world = load_world(N_ARTICLES)
    ours = RetrievalServer(BM25Retriever(world.documents), port=0).start()
    uv, uv_url = start_uvicorn(fastapi_app(ours))
    urls = {"stdlib http.server (ours)": ours.url, "FastAPI + uvicorn": uv_url}
    try:
        probes = [
            {"queries": [world.documents[7].title, "river born"], "topk": 3, "return_scores": True},
            {"queries": ["caf\u00e9 noir"], "topk": 2},
            {"queries": "single string", "topk": 1},
            {"queries": [1, 2]},
            {"queries": ["x"], "topk": 0},
            {"queries": ["x"], "return_scores": "yes"},
        ]
        bodies = [json.dumps(p).encode() for p in probes] + [b"not json", b"[" * 100_000, b"{}"]
        same = [post(ours.url, b) == post(uv_url, b) for b in bodies]
        print(f"identical status and body bytes: {sum(same)}/{len(same)}")

        queries = [d.title for d in world.documents[: args.requests]]
        lat: dict[str, list[float]] = {name: [] for name in urls}
        steps: dict[str, list[float]] = {name: [] for name in urls}
        clients = {name: RemoteRetriever(url) for name, url in urls.items()}
        envs = {}
        for name, url in urls.items():
            env = gym.make("arl/search.multihop-v1", n_articles=N_ARTICLES, retriever="remote", retriever_url=url)
            envs[name] = (env, ExpertAgent(env))
        for _ in range(args.rounds):
            for name, client in clients.items():
                for q in queries:
                    t0 = time.perf_counter()
                    client.search(q, 3)
                    lat[name].append((time.perf_counter() - t0) * 1e3)
                env, agent = envs[name]
                obs, info = env.reset(seed=0)
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    obs, _, term, trunc, info = env.step(agent.act(obs, info))
                    if term or trunc:
                        obs, info = env.reset()
                steps[name].append(args.steps / (time.perf_counter() - t0))
        for client in clients.values():
            client.close()
        for env, _ in envs.values():
            env.close()
    finally:
        uv.should_exit = True
        ours.stop()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, CPython {platform.python_version()}; "
          f"{args.rounds} interleaved rounds; {args.requests} requests and {args.steps} env steps per server per round\n")
    print("| server | request p50 ms | request p90 ms | env steps/s (median of rounds) |\n|---|---:|---:|---:|")
    for name in urls:
        q = statistics.quantiles(lat[name], n=10)
        print(f"| {name} | {statistics.median(lat[name]):.2f} | {q[8]:.2f} | {statistics.median(steps[name]):,.0f} |")


if __name__ == "__main__":
    main()

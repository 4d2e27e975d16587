"""Remote retriever client: keep-alive connections (now) vs a new connection per request (before issue 9).

Usage:
    python benchmarks/search_remote_client.py [--requests 500] [--rounds 5]

One retrieval server (BM25 over the shipped 200-article sample) on 127.0.0.1; the same single-query ``/retrieve``
requests (k=3) are sent by (a) ``urllib.request`` opening a new TCP connection per request, as the client did
before, and (b) :class:`~arl_envs.envs.search.retrievers.RemoteRetriever`, which keeps one HTTP/1.1 connection per
thread alive. Rounds alternate (a)/(b) so machine noise hits both; prints per-request latency p50/p90 (ms) per
client and the median ratio of the round medians.
"""

from __future__ import annotations

import argparse
import json
import platform
import os
import statistics
import time
import urllib.request

from arl_envs.envs.search.corpus import load_corpus
from arl_envs.envs.search.env import SAMPLE_CORPUS_PATH
from arl_envs.envs.search.retrievers import BM25Retriever, RemoteRetriever
from arl_envs.envs.search.server import RetrievalServer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    docs = load_corpus(SAMPLE_CORPUS_PATH)
    server = RetrievalServer(BM25Retriever(docs), port=0).start()
    remote = RemoteRetriever(server.url)

    def new_connection(query: str) -> None:
        body = json.dumps({"queries": [query], "topk": 3, "return_scores": True}).encode()
        req = urllib.request.Request(server.url + "/retrieve", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()

    clients = {"new connection per request (before)": new_connection,
               "keep-alive RemoteRetriever (now)": lambda q: remote.search(q, 3)}
    samples: dict[str, list[float]] = {name: [] for name in clients}
    medians: dict[str, list[float]] = {name: [] for name in clients}
    try:
        for _ in range(args.rounds):
            for name, call in clients.items():
                times = []
                for i in range(args.requests):
                    t0 = time.perf_counter()
                    call(docs[i % len(docs)].title)
                    times.append((time.perf_counter() - t0) * 1000)
                samples[name] += times
                medians[name].append(statistics.median(times))
    finally:
        remote.close()
        server.stop()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, CPython {platform.python_version()}; "
          f"{args.rounds} alternating rounds x {args.requests} requests per client\n")
    print("| client | p50 ms | p90 ms |\n|---|---:|---:|")
    for name, times in samples.items():
        q = statistics.quantiles(times, n=10)
        print(f"| {name} | {statistics.median(times):.2f} | {q[8]:.2f} |")
    before, now = (medians[n] for n in clients)
    ratio = statistics.median(b / a for a, b in zip(now, before))
    print(f"\nmedian per-round speed-up of keep-alive: {ratio:.2f}x")


if __name__ == "__main__":
    main()

"""Retrieval benchmark: world generation, BM25 index build/load time and query latency (p50/p99) per corpus size.

Usage:
    python benchmarks/search_retrieval.py [--sizes 10000 100000] [--queries 1000] [--dense-sizes 10000]

For each size N, a fictional world of N articles is generated (:func:`arl_envs.envs.search.world.generate_world`),
its BM25 index is built cold (in a fresh temporary cache dir), saved, and loaded back from disk in a new
retriever (the in-memory cache cleared). Then ``--queries`` single queries are timed one by one: half are the
expert's entity queries (2-4 words), half full question texts (10-20 words), all with k=3; p50/p99 are over those
per-query wall times. Each query is also timed, interleaved, with the previous top-k (a partial sort over every
document's score) and with raw ``bm25s.BM25.retrieve`` on the same index (the peer). The remote retriever is timed too: the same queries through our HTTP server on 127.0.0.1
(one client on a keep-alive connection, as the env does). ``--dense-sizes`` adds the dense retriever
(all-MiniLM-L6-v2 on CPU) for those sizes: embedding time and query latency.

Prints a markdown block for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

import numpy as np


def _percentiles(samples_s: list[float]) -> tuple[float, float, float]:
    ms = np.asarray(samples_s) * 1e3
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99)), float(statistics.fmean(ms))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="corpus sizes (articles)")
    parser.add_argument("--queries", type=int, default=1000, help="timed queries per size")
    parser.add_argument("--dense-sizes", type=int, nargs="*", default=[], help="sizes to also run dense on")
    args = parser.parse_args()

    cache = tempfile.mkdtemp(prefix="arl-bench-cache-")
    os.environ["ARL_ENVS_CACHE"] = cache  # cold caches: every build below is a real build

    from arl_envs.envs.search import retrievers as R
    from arl_envs.envs.search.server import RetrievalServer
    from arl_envs.envs.search.world import generate_world

    rows = []
    peer_rows: list[tuple[int, float, float, float, float, float]] = []
    for n in args.sizes:
        t0 = time.perf_counter()
        world = generate_world(n, seed=0, n_questions=max(args.queries, 100))
        gen_s = time.perf_counter() - t0
        words = sum(len(d.text.split()) for d in world.documents)
        rng = np.random.default_rng(0)
        picks = rng.integers(0, len(world.questions), size=args.queries)
        queries = [
            world.questions[i].expert_queries[0] if j % 2 == 0 else world.questions[i].question
            for j, i in enumerate(picks)
        ]

        R._BM25_MEMORY.clear()
        t0 = time.perf_counter()
        bm25 = R.BM25Retriever(world.documents)  # builds and saves to the fresh cache
        build_s = time.perf_counter() - t0
        R._BM25_MEMORY.clear()
        t0 = time.perf_counter()
        loaded = R.BM25Retriever(world.documents)
        load_s = time.perf_counter() - t0
        assert loaded.index is not bm25.index

        def dense_top_k(q: str, loaded: R.BM25Retriever = loaded) -> object:  # before: sort over every document
            scores = loaded.scores(q)
            return [(loaded.corpus.docs[i], float(scores[i])) for i in R._top_k(scores, 3)]

        tokens = [[t for t in R.tokenize(q)[: R.MAX_QUERY_TOKENS] if t in loaded.vocab] for q in queries]

        def raw_bm25s(i: int, loaded: R.BM25Retriever = loaded, tokens: list = tokens) -> object:  # the peer
            if not tokens[i]:
                return None
            return loaded.index.retrieve([tokens[i]], k=3, show_progress=False, n_threads=0)

        series = {
            "ours": lambda i, r=loaded, qs=queries: r.search(qs[i], 3),
            "dense": lambda i, qs=queries: dense_top_k(qs[i]),
            "bm25s": raw_bm25s,
        }
        for fn in series.values():  # warm-up
            for i in range(20):
                fn(i)
        lat: dict[str, list[float]] = {name: [] for name in series}
        for i in range(len(queries)):  # interleaved, query by query
            for name, fn in series.items():
                t = time.perf_counter()
                fn(i)
                lat[name].append(time.perf_counter() - t)
        p50, p99, mean = _percentiles(lat["ours"])
        dp50, _, _ = _percentiles(lat["dense"])
        bp50, bp99, _ = _percentiles(lat["bm25s"])
        peer_rows.append((n, p50, p99, dp50, bp50, bp99))

        server = RetrievalServer(loaded, port=0).start()
        remote = R.RemoteRetriever(server.url)
        for q in queries[:20]:
            remote.search(q, 3)
        rlat = []
        for q in queries:
            t = time.perf_counter()
            remote.search(q, 3)
            rlat.append(time.perf_counter() - t)
        server.stop()
        rp50, rp99, _ = _percentiles(rlat)
        rows.append(("bm25", n, words, gen_s, build_s, load_s, p50, p99, mean, rp50, rp99))
        print(f"[{n}] gen {gen_s:.2f}s build {build_s:.2f}s load {load_s:.2f}s p50 {p50:.2f}ms p99 {p99:.2f}ms "
              f"remote p50 {rp50:.2f}ms p99 {rp99:.2f}ms", flush=True)

        if n in args.dense_sizes:
            t0 = time.perf_counter()
            dense = R.DenseRetriever(world.documents)
            embed_s = time.perf_counter() - t0
            for q in queries[:5]:
                dense.search(q, 3)
            dlat = []
            for q in queries[: min(len(queries), 300)]:
                t = time.perf_counter()
                dense.search(q, 3)
                dlat.append(time.perf_counter() - t)
            dp50, dp99, dmean = _percentiles(dlat)
            rows.append(("dense", n, words, gen_s, embed_s, float("nan"), dp50, dp99, dmean, float("nan"),
                         float("nan")))
            print(f"[{n}] dense embed {embed_s:.1f}s p50 {dp50:.2f}ms p99 {dp99:.2f}ms", flush=True)

    print()
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.python_implementation()} "
          f"{platform.python_version()}; queries per size: {args.queries} (k=3)")
    print()
    print("| retriever | articles | words | generate s | index build s | index load s | query p50 ms | "
          "query p99 ms | query mean ms | over HTTP p50 ms | over HTTP p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind, n, words, gen_s, build_s, load_s, p50, p99, mean, rp50, rp99 in rows:
        def f(x: float, spec: str) -> str:
            return "-" if x != x else format(x, spec)

        print(f"| {kind} | {n:,} | {words:,} | {gen_s:.2f} | {build_s:.2f} | {f(load_s, '.2f')} | {p50:.2f} | "
              f"{p99:.2f} | {mean:.2f} | {f(rp50, '.2f')} | {f(rp99, '.2f')} |")
    print()
    print("BM25 top-k, same index and queries, timed interleaved query by query (ms): ours = partial sort over the")
    print("documents at or above a bound from the rarest query token; before = partial sort over every document;")
    print("bm25s = raw bm25s.BM25.retrieve (k=3, n_threads=0) on the same token ids.")
    print()
    print("| articles | ours p50 | ours p99 | before p50 | raw bm25s p50 | raw bm25s p99 | ours vs before | ours vs bm25s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, p50, p99, dp50, bp50, bp99 in peer_rows:
        print(f"| {n:,} | {p50:.3f} | {p99:.3f} | {dp50:.3f} | {bp50:.3f} | {bp99:.3f} | {dp50 / p50:.2f}x | "
              f"{bp50 / p50:.2f}x |")
    import shutil

    shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()

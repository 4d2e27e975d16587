"""Build the SFT checkpoint ``arl-envs demo`` starts from, or (``--env ID``) one of an env's tiny defaults.

    python -m arl_baselines.grpo.demo_checkpoint [--env ID] [--out PATH] [--run-dir DIR]

With ``--env`` it runs :func:`arl_baselines.grpo.train.build_sft_checkpoint` at that env's recommended tiny
settings on one torch thread (``--env arl/math.countdown-v1`` writes the shipped ``countdown_sft.pt`` by default,
~8 min; ``--env arl/code.functions-v0`` the shipped ``code_sft.pt``, ~14 min; ``--env arl/math.arithmetic-v1`` the
shipped ``arithmetic_sft.pt``, ~2 min). ``arl-envs train`` starts from these files when its settings are the env's
tiny defaults (:data:`arl_baselines.grpo.train.SHIPPED_SFT_CHECKPOINTS`).

See :func:`arl_baselines.grpo.train.build_demo_checkpoint` (~150 s on 2 CPU cores); prints the held-out success
curve of the SFT and the file's sha256. The default ``--out`` is the shipped file inside the package (what
``demo_run`` loads), so a rebuild replaces it; measured results in benchmarks/RESULTS.md are for the shipped one.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from typing import Any


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Build the checkpoint; returns the build's result (``path``, ``curve``, ``sha256``, ...)."""
    from arl_baselines.grpo.train import (
        DEMO_SFT_CHECKPOINT,
        SHIPPED_SFT_CHECKPOINTS,
        build_demo_checkpoint,
        build_sft_checkpoint,
    )

    shipped = SHIPPED_SFT_CHECKPOINTS
    ap = argparse.ArgumentParser(description="Build the SFT checkpoint the GRPO demo starts from.")
    ap.add_argument("--env", default=None, help="build this env's tiny-default SFT checkpoint instead of the demo's")
    ap.add_argument("--out", default=None, help="checkpoint file to write (default: the shipped one)")
    ap.add_argument("--run-dir", default=None,
                    help="run directory for sft.jsonl and sft_curve.json (default: runs/demo-sft, or runs/<env>-sft)")
    args = ap.parse_args(argv)
    if args.env is None:
        res = build_demo_checkpoint(args.out or DEMO_SFT_CHECKPOINT, args.run_dir or "runs/demo-sft")
    else:
        if args.out is None and args.env not in shipped:
            ap.error(f"--out is needed for {args.env} (shipped checkpoints: {', '.join(shipped)})")
        # one torch thread: the SFT's trajectory depends on the thread count (countdown seed 0 learned to copy the
        # numbers by 1250 steps on 1 thread, and not before ~2300 on 2), and the shipped file was built on 1
        run_dir = args.run_dir or f"runs/{args.env.split('/')[-1]}-sft"
        res = build_sft_checkpoint(args.env, args.out or shipped[args.env], run_dir, progress=False, num_threads=1)
    with open(res["path"], "rb") as f:
        res["sha256"] = hashlib.sha256(f.read()).hexdigest()
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()

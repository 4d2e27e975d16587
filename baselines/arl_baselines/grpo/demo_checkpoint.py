"""Build the SFT checkpoint ``arl-envs demo`` starts from.

    python -m arl_baselines.grpo.demo_checkpoint [--out PATH] [--run-dir DIR]

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
    from arl_baselines.grpo.train import DEMO_SFT_CHECKPOINT, build_demo_checkpoint

    ap = argparse.ArgumentParser(description="Build the SFT checkpoint the GRPO demo starts from.")
    ap.add_argument("--out", default=str(DEMO_SFT_CHECKPOINT), help="checkpoint file to write (default: the shipped one)")
    ap.add_argument("--run-dir", default="runs/demo-sft", help="run directory for sft.jsonl and sft_curve.json")
    args = ap.parse_args(argv)
    res = build_demo_checkpoint(args.out, args.run_dir)
    with open(res["path"], "rb") as f:
        res["sha256"] = hashlib.sha256(f.read()).hexdigest()
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()

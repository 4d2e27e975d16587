"""Build the SFT checkpoint ``arl-envs demo`` starts from: ``python -m arl_baselines.grpo.demo_checkpoint [OUT]``.

See :func:`arl_baselines.grpo.train.build_demo_checkpoint`; prints the held-out success curve of the SFT and the
checkpoint's sha256.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> dict:
    """Build the checkpoint (to ``argv[0]``, default the shipped path); returns the build's result."""
    from arl_baselines.grpo.train import DEMO_SFT_CHECKPOINT, build_demo_checkpoint

    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEMO_SFT_CHECKPOINT
    res = build_demo_checkpoint(path)
    res["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    print(json.dumps(res, indent=2))
    return res


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Run the GRPO GPU benchmark on the device machine (one H200; no network; at most 64 MiB of files travel).
# Prepare here first: bash benchmarks/grpo_gpu_wheels.sh   (writes wheels-gpu/, carried along)
# Then on the device:  bash benchmarks/grpo_gpu_device.sh   (results under $OUT, or runs/grpo_gpu without $OUT)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python -c "import gymnasium, pydantic, math_verify, tqdm" 2>/dev/null; then
    if [ -d wheels-gpu ]; then
        pip install --no-index --no-deps --quiet wheels-gpu/*.whl
    else
        echo "missing Python packages and no wheels-gpu/ directory: run benchmarks/grpo_gpu_wheels.sh first" >&2
        exit 2
    fi
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python benchmarks/grpo_gpu.py --out "${OUT:-runs/grpo_gpu}" "$@"

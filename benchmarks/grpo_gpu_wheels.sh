#!/usr/bin/env bash
# Download (here, with network) the pure-Python and cp312 wheels the GPU benchmark needs beyond what the device
# machine has (Python 3.12, torch 2.11, transformers 5.17; no network there). About 3.5 MiB; numpy and sympy are
# left out because torch brings them. Usage: bash benchmarks/grpo_gpu_wheels.sh [DIR]   (default: wheels-gpu)
set -euo pipefail
DIR="${1:-wheels-gpu}"
mkdir -p "$DIR"
pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    -d "$DIR" \
    gymnasium cloudpickle farama-notifications \
    pydantic pydantic-core annotated-types typing-inspection typing-extensions \
    math-verify latex2sympy2_extended "antlr4-python3-runtime==4.13.2" \
    tqdm
du -sh "$DIR"

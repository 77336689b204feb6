#!/usr/bin/env bash
# Sets up, builds, and runs a real force evaluation with built-in defaults: a 2^20-body Plummer
# sphere, theta = 0.5, on the GPU when one is present, else on the CPU; prints per-phase timings,
# interactions per body and the error against exact direct summation on 1000 bodies.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cmake --build build -j "$(nproc)" --target octwalk
build/octwalk forces "$@"

#!/usr/bin/env bash
# Sets up, builds everything that can be built here (device code too when nvcc is present) and runs
# every test. GPU tests (label gpu) skip without a GPU; OCTWALK_REQUIRE_GPU=1 makes them fail instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --build build -j "$(nproc)"
ctest --test-dir build -j "$(nproc)" --output-on-failure

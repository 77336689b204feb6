#!/usr/bin/env bash
# Sets up (Debian packages), builds, and runs a real simulation with built-in defaults: a 65536-body
# Plummer sphere (Henon units, eps = 0.01, theta = 0.5, dt = 1/128) for one time unit, on the GPU
# when one is present, else on the CPU. Outputs go to a new directory runs/quickstart-<time>/
# (energy.csv, lagrange.csv, snapshots, run.json, checkpoint.bin). Extra arguments go to `octwalk run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cmake --build build -j "$(nproc)" --target octwalk
dir="runs/quickstart-$(date +%Y%m%d-%H%M%S)"
build/octwalk run --output-dir "$dir" "$@"
echo "plot it: /usr/bin/python3 scripts/plot_energy.py $dir   (needs python3-matplotlib)"

#!/usr/bin/env bash
# Sets up (Debian packages), builds, and runs a real simulation with built-in defaults: a 65536-body
# Plummer sphere (Henon units, eps = 0.01, theta = 0.5, dt = 1/128) for one time unit, on the GPU
# when one is present, else on the CPU. Outputs go to a new directory runs/quickstart-<time>/
# (energy.csv, lagrange.csv, snapshots, run.json, checkpoint.bin, and energy.png from scripts/plot_energy.py).
# Extra arguments go to `octwalk run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cmake --build build -j "$(nproc)" --target octwalk
dir="runs/quickstart-$(date +%Y%m%d-%H%M%S)"
build/octwalk run --output-dir "$dir" "$@"
# The plot is a convenience: the run's outputs are the result, so a failed plot is reported, not fatal.
if /usr/bin/python3 scripts/plot_energy.py "$dir" -o "$dir/energy.png" >/dev/null; then
  echo "energy error, virial ratio and Lagrangian radii: $dir/energy.png"
else
  echo "quickstart: no plot (scripts/plot_energy.py failed, see above; it needs python3-matplotlib); the run's outputs are in $dir"
fi

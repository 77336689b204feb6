#!/usr/bin/env bash
# The kirin accuracy set-up for `octwalk hermite`: equal-mass Plummer spheres (Henon units, seed 1) of
# N = 1024 and 16384, epsilon = 1/256, eta = 0.02, integrated 0.25 time units on each libg6 backend:
# the CPU in double (the reference), the GPU in double-single (OCTWALK_G6_PRECISION=ds) and in double.
# Prints |dE/E0| at the end, its ratio to the CPU's, the wall time of the integration and the fraction
# of it spent inside libg6 (both from run.json). The runs stay in a new directory runs/hermite_accuracy-<time>/.
#
#   bash scripts/hermite_accuracy.sh                 # N = 1024 and 16384, all three backends
#   bash scripts/hermite_accuracy.sh --no-gpu        # the CPU only (a machine without a GPU)
#   N_LIST="1024" T_END=1 bash scripts/hermite_accuracy.sh   # the 1-time-unit figure at N = 1024
#
# Expects a built program (cmake --build build --target octwalk; with -DOCTWALK_WITH_CUDA=ON for the GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${OCTWALK:-build/octwalk}
n_list=${N_LIST:-"1024 16384"}
t_end=${T_END:-0.25}
eta=${ETA:-0.02}
backends="cpu:double gpu:ds gpu:double"
if [[ "${1:-}" == "--no-gpu" ]]; then backends="cpu:double"; fi
[[ -x "$bin" ]] || { echo "hermite_accuracy.sh: no program at $bin (build the octwalk target first)" >&2; exit 2; }
out="runs/hermite_accuracy-$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$out"

json_number() { sed -n "s/^  \"$2\": \([-0-9.eE+]*\),\{0,1\}$/\1/p" "$1"; }

printf "%-6s %-8s %-10s %-12s %-10s %-10s %-10s %s\n" N backend precision "|dE/E0|" "vs cpu" "wall [s]" "in libg6" "body steps"
for n in $n_list; do
  reference=""
  for b in $backends; do
    backend=${b%%:*}
    precision=${b##*:}
    dir="$out/n${n}_${backend}_${precision}"
    OCTWALK_G6_BACKEND=$backend OCTWALK_G6_PRECISION=$precision "$bin" hermite --model plummer --n "$n" --seed 1 \
      --epsilon 0.00390625 --eta "$eta" --t-end "$t_end" --output-dir "$dir" --quiet >"$dir.log" 2>&1 || {
      echo "n = $n, $backend/$precision failed: $(tail -1 "$dir.log")" >&2
      continue
    }
    de=$(tail -1 "$dir/energy.csv" | cut -d, -f6)
    abs=$(awk -v x="$de" 'BEGIN { printf "%.3e", (x < 0 ? -x : x) }')
    [[ -z "$reference" ]] && reference=$abs
    ratio=$(awk -v a="$abs" -v r="$reference" 'BEGIN { printf "%.2f", (r > 0 ? a / r : 0) }')
    wall=$(json_number "$dir/run.json" integration_seconds)
    fraction=$(json_number "$dir/run.json" library_fraction)
    steps=$(json_number "$dir/run.json" body_steps)
    printf "%-6s %-8s %-10s %-12s %-10s %-10.3f %-10.3f %s\n" "$n" "$backend" "$precision" "$abs" "$ratio" "$wall" \
      "$fraction" "$steps"
  done
done
echo "runs in $out (each with run.json, energy.csv, snapshots; the GPU's within 2x of the CPU's |dE/E0| is the target)"

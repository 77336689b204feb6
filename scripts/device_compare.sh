#!/usr/bin/env bash
# One device-machine session comparing this tree with an older one side by side: builds both for
# sm_90, runs this tree's GPU tests (OCTWALK_REQUIRE_GPU=1, so a missing GPU fails), then the GPU
# benchmark and a 2^22 `octwalk forces` of each build, interleaved old/new twice, on the same GPU.
# Results (at most 8 files) go to $OUT. Usage, with the old tree exported into .old/ and .deps from
# scripts/pack_device_deps.sh both carried:
#   git archive REV | tar -x -C .old; git rev-parse --short=12 HEAD >.device-githash; echo REV >.old/.device-githash
#   then, on the device (carry .deps, .old, .device-githash): bash scripts/device_compare.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OCTWALK_DEPS=$PWD/.deps
export LD_LIBRARY_PATH=$OCTWALK_DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
OUT=${OUT:-out}
OLD=${OLD:-.old}
FILTER=${FILTER:-BM_GpuForces/}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

build() { # $1 source dir
  cmake -S "$1" -B "$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/build.log" 2>&1 \
    && cmake --build "$1/build" -j 16 >>"$OUT/build.log" 2>&1
}
log "start $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
build . || { grep -B2 -A8 -m5 'error' "$OUT/build.log"; exit 1; }
build "$OLD" || { grep -B2 -A8 -m5 'error' "$OUT/build.log"; exit 1; }
rm -f "$OUT/build.log" # keeps the results within the eight files that come back
log "built new (.) and old ($OLD)"

OCTWALK_REQUIRE_GPU=1 ctest --test-dir build -L gpu --output-on-failure -j 4 >"$OUT/ctest_gpu.log" 2>&1
log "new: ctest -L gpu (OCTWALK_REQUIRE_GPU=1): exit $? — $(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log")"

for round in 1 2; do
  for side in old new; do
    dir=$([ $side = old ] && echo "$OLD/build" || echo build)
    "$dir/benchmarks/octwalk_bench_gpu" --benchmark_filter="$FILTER" --benchmark_out="$OUT/bench_${side}_$round.json" \
      --benchmark_out_format=json >>"$OUT/bench.txt" 2>&1
    log "bench $side round $round: exit $?"
  done
done
for side in old new; do
  dir=$([ $side = old ] && echo "$OLD/build" || echo build)
  echo "### $side" >>"$OUT/forces.txt"
  "$dir/octwalk" forces --n 4194304 --theta 0.5 --epsilon 0.01 --sample 2000 --backend gpu >>"$OUT/forces.txt" 2>&1
  log "forces 2^22 $side: exit $?"
done
cat "$OUT/summary.txt"

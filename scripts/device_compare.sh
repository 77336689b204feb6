#!/usr/bin/env bash
# One device-machine session comparing this tree with an older one side by side: builds both for
# sm_90, runs this tree's GPU tests (OCTWALK_REQUIRE_GPU=1, so a missing GPU fails), then, old and new
# interleaved twice on the same machine, the GPU benchmark (GPU_FILTER) and the host-pipeline benchmark
# (HOST_FILTER_OLD / HOST_FILTER_NEW: the old binary may name its cases differently), and a 2^22
# `octwalk forces` with each build. Everything lands in $OUT/results.tar.gz plus $OUT/summary.txt
# (the device tool brings back at most eight files). Usage, from the repository root here:
#   git archive REV | tar -x -C .old; echo REV >.old/.device-githash; git rev-parse --short=12 HEAD >.device-githash
#   bash scripts/pack_device_deps.sh
# then on the device, carrying .deps, .old and .device-githash: bash scripts/device_compare.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OCTWALK_DEPS=$PWD/.deps
export LD_LIBRARY_PATH=$OCTWALK_DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
OUT=${OUT:-out}
OLD=${OLD:-.old}
GPU_FILTER=${GPU_FILTER:-BM_GpuForces/}
HOST_FILTER_OLD=${HOST_FILTER_OLD:-}
HOST_FILTER_NEW=${HOST_FILTER_NEW:-}
# Stages, so one session can be split into calls under the device's 10-minute limit (a warm machine
# keeps the builds): build tests gpu host forces run.
STAGES=${STAGES:-build tests gpu host forces}
# Stage run: whole `octwalk run` simulations of RUN_SIZES bodies (16 steps), old and new alternated
# twice; each prints its median step phases (the last lines of its output).
RUN_SIZES=${RUN_SIZES:-1048576 4194304}
has() { [[ " $STAGES " == *" $1 "* ]]; }
RES=$OUT/results
mkdir -p "$RES"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
pack() { tar -czf "$OUT/results.tar.gz" -C "$OUT" results; }

build() { # $1 source dir
  cmake -S "$1" -B "$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$RES/build.log" 2>&1 \
    && cmake --build "$1/build" -j 16 >>"$RES/build.log" 2>&1
}
side_dir() { [ "$1" = old ] && echo "$OLD/build" || echo build; }

log "start $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nproc) host cores"
if has build; then
  build . || { grep -B2 -A8 -m5 'error' "$RES/build.log"; pack; exit 1; }
  build "$OLD" || { grep -B2 -A8 -m5 'error' "$RES/build.log"; pack; exit 1; }
  rm -f "$RES/build.log"
  log "built new (.) and old ($OLD)"
fi
if has tests; then
  OCTWALK_REQUIRE_GPU=1 ctest --test-dir build -L gpu --output-on-failure -j 4 >"$RES/ctest_gpu.log" 2>&1
  log "new: ctest -L gpu (OCTWALK_REQUIRE_GPU=1): exit $? — $(grep -E 'tests passed|tests failed' "$RES/ctest_gpu.log")"
fi

for round in 1 2; do
  for side in old new; do
    if has gpu; then
      "$(side_dir $side)/benchmarks/octwalk_bench_gpu" --benchmark_filter="$GPU_FILTER" \
        --benchmark_out="$RES/bench_gpu_${side}_$round.json" --benchmark_out_format=json >>"$RES/bench.txt" 2>&1
      log "bench_gpu $side round $round: exit $?"
    fi
    filter=$([ $side = old ] && echo "$HOST_FILTER_OLD" || echo "$HOST_FILTER_NEW")
    if has host && [ -n "$filter" ]; then
      "$(side_dir $side)/benchmarks/octwalk_bench_host" --benchmark_filter="$filter" \
        --benchmark_out="$RES/bench_host_${side}_$round.json" --benchmark_out_format=json >>"$RES/bench.txt" 2>&1
      log "bench_host $side round $round: exit $?"
    fi
  done
done
for side in old new; do
  has forces || continue
  echo "### $side" >>"$RES/forces.txt"
  "$(side_dir $side)/octwalk" forces --n 4194304 --theta 0.5 --epsilon 0.01 --sample 2000 --backend gpu \
    >>"$RES/forces.txt" 2>&1
  log "forces 2^22 $side: exit $?"
done
for round in 1 2; do
  for n in $RUN_SIZES; do
    for side in old new; do
      has run || continue
      dir=$RES/run_${side}_${n}_$round
      TIMEFORMAT=%R
      wall=$( { time "$(side_dir $side)/octwalk" run --n "$n" --t-end 0.125 --dt 0.0078125 --checkpoint-every 0 \
        --energy-every 16 --quiet --backend gpu --output-dir "$dir" >"$dir.log" 2>&1; } 2>&1)
      log "run round $round $side n=$n: exit $? wall ${wall} s: $(tail -n 2 "$dir.log" | tr '\n' ' ')"
      rm -f "$dir"/*.tipsy "$dir"/*.ckpt
    done
  done
done
pack
cat "$OUT/summary.txt"

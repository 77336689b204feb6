#!/usr/bin/env bash
# One device-machine session: build for sm_90, run the GPU tests (required to find a GPU), the GPU
# tests under compute-sanitizer (memcheck, racecheck) on a small case, and the benchmarks; results go
# to $OUT. Usage (device tool, carrying .deps from scripts/pack_device_deps.sh):
#   bash scripts/device_run.sh [stage ...]     stages: build tests sanitize bench forces (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
export OCTWALK_DEPS=$PWD/.deps
export LD_LIBRARY_PATH=$OCTWALK_DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
OUT=${OUT:-out}
mkdir -p "$OUT"
stages=${*:-build tests sanitize bench forces}
has() { [[ " $stages " == *" $1 "* ]]; }
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

if has build; then
  log "build $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/cmake.log" 2>&1 \
    || { tail -30 "$OUT/cmake.log"; exit 1; }
  cmake --build build -j 16 >"$OUT/build.log" 2>&1 || { grep -B2 -A8 -m5 'error' "$OUT/build.log"; exit 1; }
  grep -A1 'ptxas info' "$OUT/build.log" | grep -E 'Compiling|registers' | head -40 >"$OUT/ptxas.txt" || true
fi
if has tests; then
  OCTWALK_REQUIRE_GPU=1 ctest --test-dir build -L gpu --output-on-failure -j 1 >"$OUT/ctest_gpu.log" 2>&1
  log "ctest -L gpu (OCTWALK_REQUIRE_GPU=1): exit $? — $(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log")"
fi
if has sanitize; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 build/tests/octwalk_tests_gpu \
      --gtest_filter='*Small*' >"$OUT/sanitizer_$tool.log" 2>&1
    log "compute-sanitizer --tool $tool (small cases): exit $? — $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
  done
fi
if has bench; then
  build/benchmarks/octwalk_bench_gpu --benchmark_out="$OUT/bench_gpu.json" --benchmark_out_format=json \
    >"$OUT/bench_gpu.txt" 2>&1
  log "bench_gpu: exit $?"
  tail -8 "$OUT/bench_gpu.txt"
fi
if has forces; then
  build/octwalk forces --n 4194304 --theta 0.5 --epsilon 0.01 --sample 2000 >"$OUT/forces_4M.txt" 2>&1
  log "octwalk forces 2^22: exit $?"
  cat "$OUT/forces_4M.txt"
fi
cat "$OUT/summary.txt"

#!/usr/bin/env bash
# The H200 checks of the direct-summation and cosmology features: STAGES (any of build tests g6 periodic
# hermite growth cosmo) choose what runs (build: this tree into build/, Release, sm_90; tests: ctest -L gpu
# with OCTWALK_REQUIRE_GPU=1); results land in $OUT/features.tar.gz plus $OUT/features.txt. Run from the
# repository root, carrying .deps (scripts/pack_device_deps.sh):
#   STAGES="build tests g6 periodic hermite" bash scripts/device_features.sh
set -uo pipefail
cd "$(dirname "$0")/.."
export OCTWALK_DEPS=$PWD/.deps
export LD_LIBRARY_PATH=$OCTWALK_DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
OUT=${OUT:-out}
STAGES=${STAGES:-g6 periodic hermite}
has() { [[ " $STAGES " == *" $1 "* ]]; }
RES=$OUT/features
mkdir -p "$RES" runs
log() { echo "== $*" | tee -a "$OUT/features.txt"; }
TIMEFORMAT=%R
log "start $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name --format=csv,noheader), stages: $STAGES"

if has build; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$RES/build.log" 2>&1 &&
    cmake --build build -j 16 >>"$RES/build.log" 2>&1
  status=$?
  log "build: exit $status"
  [ $status = 0 ] || { grep -B2 -A8 -m5 error "$RES/build.log"; tar -czf "$OUT/features.tar.gz" -C "$OUT" features; exit 1; }
fi

if has tests; then
  OCTWALK_REQUIRE_GPU=1 ctest --test-dir build -L gpu --output-on-failure -j 4 >"$RES/ctest_gpu.log" 2>&1
  log "ctest -L gpu (OCTWALK_REQUIRE_GPU=1): exit $? — $(grep -E 'tests passed|tests failed' "$RES/ctest_gpu.log")"
  grep -E '\*\*\*Failed' "$RES/ctest_gpu.log" | tee -a "$OUT/features.txt"
fi

if has g6; then
  build/benchmarks/octwalk_bench_g6 --benchmark_filter=BM_G6Gpu --benchmark_counters_tabular=true \
    --benchmark_out="$RES/bench_g6.json" --benchmark_out_format=json >"$RES/bench_g6.txt" 2>&1
  log "bench_g6: exit $?"
  for precision in ds double; do
    OCTWALK_G6_BACKEND=gpu OCTWALK_G6_PRECISION=$precision build/tests/octwalk_g6_fortran_client \
      >"$RES/fortran_$precision.txt" 2>&1
    log "fortran client on the GPU ($precision): exit $? $(tail -n 1 "$RES/fortran_$precision.txt")"
  done
fi

if has periodic; then
  build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuPeriodic|BM_HostToDevice' \
    --benchmark_out="$RES/bench_periodic.json" --benchmark_out_format=json >"$RES/bench_periodic.txt" 2>&1
  log "bench_gpu periodic: exit $?"
fi

if has hermite; then
  bash scripts/hermite_accuracy.sh >"$RES/hermite_accuracy.txt" 2>&1
  log "hermite_accuracy (kirin set-up, 0.25 time units): exit $?"
  for precision in ds double; do
    dir=runs/h65536_$precision
    rm -rf "$dir"
    wall=$( { time OCTWALK_G6_BACKEND=gpu OCTWALK_G6_PRECISION=$precision build/octwalk hermite --n 65536 --t-end 1 \
      --output-dir "$dir" --quiet >"$RES/h65536_$precision.log" 2>&1; } 2>&1)
    cp "$dir/run.json" "$RES/h65536_${precision}_run.json"; cp "$dir/energy.csv" "$RES/h65536_${precision}_energy.csv"
    log "hermite N=65536 1 time unit ($precision): wall $wall s; $(tail -n 1 "$dir/energy.csv")"
  done
fi

if has growth; then
  WORK=runs/growth32 bash scripts/growth_check.sh 32 500 >"$RES/growth32.txt" 2>&1
  log "growth_check 32^3 500 Mpc/h: exit $? $(tail -n 1 "$RES/growth32.txt")"
fi

if has cosmo; then
  # Issue 13's deliverable: a 256^3 LCDM box of 256 Mpc/h (Planck-like), z = 49 to 0, on the GPU.
  N_GRID=${N_GRID:-256}
  C="--omega0 0.3111 --omega-lambda 0.6889 --hubble-param 0.6766 --units gadget-mpc"
  W=runs/lcdm$N_GRID
  mkdir -p "$W"
  printf '0.25\n0.5\n1.0\n' >"$W/outputs.txt"
  if [ ! -f "$W/ic.gadget" ]; then
    wall=$( { time build/octwalk ic cosmo --n-grid "$N_GRID" --box-size 256 --z-begin 49 --seed 1 $C --omega-baryon 0.049 \
      --ns 0.9665 --sigma8 0.8102 --format gadget2 -o "$W/ic.gadget" >"$RES/ic.log" 2>&1; } 2>&1)
    log "ic cosmo $N_GRID^3: wall $wall s"
  fi
  if [ -f "$W/run/checkpoint.bin" ]; then
    args=(run --restart "$W/run/checkpoint.bin")
  else
    args=(run --comoving --input "$W/ic.gadget" --a-end 1 --output-list "$W/outputs.txt" --box-size 256 $C
          --backend gpu --output-dir "$W/run" --checkpoint-every 10)
  fi
  wall=$( { time timeout "${RUN_LIMIT:-420}" build/octwalk "${args[@]}" >"$RES/run.log" 2>&1; } 2>&1)
  log "run --comoving $N_GRID^3: exit $? wall $wall s: $(tail -n 2 "$RES/run.log" | tr '\n' ' ')"
  cp "$W/run/run.json" "$W/run/energy.csv" "$W/run/timing.csv" "$RES/" 2>/dev/null
  for snap in "$W"/run/snap_*.gadget; do
    name=$(basename "$snap" .gadget)
    build/octwalk power "$snap" --n-mesh 512 --interlace --linear --reference "$W/ic.gadget" --reference-a 0.02 $C \
      -o "$RES/power_$name.csv" >>"$RES/power.log" 2>&1
    log "power $name: exit $?"
  done
fi
tar -czf "$OUT/features.tar.gz" -C "$OUT" features
cat "$OUT/features.txt"

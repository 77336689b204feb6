#!/usr/bin/env bash
# Reproduces the GPU figures of benchmarks/results/ on a machine with an NVIDIA GPU and the build
# dependencies (scripts/setup.sh installs them on Debian 12; a CMake prefix of them can be given as
# OCTWALK_DEPS, e.g. the one dev/pack_deps.sh makes).
#
#   bash benchmarks/reproduce_gpu_figures.sh [OUTDIR] [TOPIC ...]
#
# OUTDIR (default ./gpu_figures) receives one folder per topic, named as in benchmarks/results/, holding the
# raw output beside which each topic's README.md states its figure. TOPICs (default: all of them, in this
# order): gpu_correctness gpu_forces whole_step host_build direct libg6 periodic cosmology accuracy examples.
# The build (Release, CMAKE_CUDA_ARCHITECTURES from the environment, default 90, -j$(nproc)) always runs
# first; gpu_correctness runs `OCTWALK_REQUIRE_GPU=1 ctest -L gpu` (and compute-sanitizer, when installed).
#
# Environment: BUILD_DIR (default build), CMAKE_CUDA_ARCHITECTURES (default 90), OCTWALK_DEPS.
# Times: on an H200 every topic but cosmology takes a few minutes; cosmology (a 256^3 box from z = 49 to 0)
# takes about 5 minutes of run time plus 12 s of initial conditions, and 2 GB of snapshots under OUTDIR.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$(mkdir -p "${1:-gpu_figures}" && cd "${1:-gpu_figures}" && pwd)
shift || true
ALL="gpu_correctness gpu_forces whole_step host_build direct libg6 periodic cosmology accuracy examples"
TOPICS=${*:-$ALL}
BUILD=${BUILD_DIR:-build}
ARCH=${CMAKE_CUDA_ARCHITECTURES:-90}
OCTWALK=$BUILD/octwalk
BENCH_GPU=$BUILD/benchmarks/octwalk_bench_gpu
BENCH_HOST=$BUILD/benchmarks/octwalk_bench_host
BENCH_G6=$BUILD/benchmarks/octwalk_bench_g6
if [ -n "${OCTWALK_DEPS:-}" ]; then
  export OCTWALK_DEPS LD_LIBRARY_PATH=$OCTWALK_DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
fi
# The settings of every timed `octwalk accuracy` row: medians of 5 repeats, 2000 bodies against direct summation.
ACC="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 5"

log() { echo "== $(date -u +%T) $*" | tee -a "$OUT/summary.txt"; }
bench() { # binary, filter, output name (in the current topic's folder), extra options
  local bin=$1 filter=$2 name=$3; shift 3
  "$bin" --benchmark_filter="$filter" --benchmark_out="$T/$name.json" --benchmark_out_format=json "$@" \
    >"$T/$name.txt" 2>&1
  log "$(basename "$bin") $filter: exit $?"
}
acc() { # output name, options of octwalk accuracy
  local name=$1; shift
  # shellcheck disable=SC2086
  "$OCTWALK" accuracy $ACC "$@" --csv "$T/$name.csv" >"$T/$name.txt" 2>&1
  log "octwalk accuracy $*: exit $?"
}

build() {
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCH" \
    >"$OUT/build.log" 2>&1 && cmake --build "$BUILD" -j"$(nproc)" >>"$OUT/build.log" 2>&1
  local status=$?
  log "build (Release, sm_$ARCH): exit $status"
  [ $status = 0 ] || { grep -B2 -A8 -m5 error "$OUT/build.log"; exit 1; }
}

# The whole GPU test suite, required to find a GPU; compute-sanitizer on the small trees and the degenerate inputs.
gpu_correctness() {
  OCTWALK_REQUIRE_GPU=1 ctest --test-dir "$BUILD" -L gpu --output-on-failure -j 4 >"$T/ctest_gpu.log" 2>&1
  log "OCTWALK_REQUIRE_GPU=1 ctest -L gpu: exit $? — $(grep -E 'tests passed|tests failed' "$T/ctest_gpu.log")"
  command -v compute-sanitizer >/dev/null || { log "compute-sanitizer not found: sanitizer runs left out"; return; }
  local small='*Small*/nGroup16_teamWalk_2PerLane:*Small*/nGroup64_teamWalk_2PerLane:*Small*/nGroup64_threadWalk_2PerLane:*Small*/nGroup100_teamWalk_4PerLane:*Small*/nGroup64_teamWalk_2PerLane_noSplit:GpuDirectSplit.FewTargets*:*GpuRefit*Plummer*0*'
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/tests/octwalk_tests_gpu" --gtest_filter="$small" \
      >"$T/sanitizer_${tool}_small.log" 2>&1
    log "compute-sanitizer $tool (small trees): exit $?"
  done
  for tool in memcheck racecheck initcheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/tests/octwalk_tests_gpu" --gtest_filter='*Degenerate*' \
      >"$T/sanitizer_${tool}_degenerate.log" 2>&1
    log "compute-sanitizer $tool (degenerate inputs): exit $?"
  done
}

# Device walk + forces (w+f[s]: both walk passes, scan, both force kernels, download) at Bonsai's accuracies.
gpu_forces() {
  acc accuracy_plummer_2e22_theta0.4875 --model plummer --n 4194304 --theta 0.4875
  acc accuracy_plummer_2e20_theta0.475-0.5 --model plummer --n 1048576 --theta 0.475:0.5:0.0125
  acc accuracy_plummer_2e22_theta0.725 --model plummer --n 4194304 --theta 0.725
  acc accuracy_galaxy_2e22_theta0.4125 --model galaxy --n 4194304 --theta 0.4125
  bench "$BENCH_GPU" 'BM_GpuForces/' bench_gpu_forces
  for r in 0 6; do  # the far field off and on (the upload included in walk[s])
    ACC="${ACC/--repeat 5/--repeat 3}" acc far_field_plummer_2e22_ratio$r --model plummer --n 4194304 \
      --theta 0.4625:0.5:0.0125 --far-field-ratio $r
  done
}

# Whole leapfrog steps: the pipelined step (BM_GpuPipelineStep) and 40-step timelines of the default step.
whole_step() {
  bench "$BENCH_GPU" 'BM_GpuPipelineStep' bench_gpu_pipeline_step --benchmark_counters_tabular=true
  for n in 4194304 16777216; do
    "$OCTWALK" profile --model plummer --n $n --theta 0.5 --epsilon 0.01 --steps 40 --rebuild-every 0 --backend gpu \
      --direct-sample 0 --timeline "$T/timeline_steps40_$n.csv" >"$T/profile_steps40_$n.txt" 2>&1
    log "octwalk profile --steps 40 at $n: exit $?"
    python3 scripts/timeline_steps.py "$T/timeline_steps40_$n.csv" --from 21 --to 40 >"$T/steps21-40_$n.txt" 2>&1
  done
  python3 scripts/plot_timeline.py "$T/timeline_steps40_4194304.csv" --steps 35:38 \
    -o "$T/timeline_pipelined_step_2e22.png" >/dev/null 2>&1 || log "plot_timeline.py failed"
}

# The host tree build at 16 threads (BM_HostStep: the previous step's order) and its scaling over threads.
host_build() {
  bench "$BENCH_HOST" 'BM_Host(Total|Step)/n:(1048576|4194304)/model:(0|1)/threads:16/' bench_host_step_16threads
  bench "$BENCH_HOST" 'BM_Host(Total|Step)/n:(1048576|4194304)/model:0/threads:(1|2|4|8|16)/|BM_HostTotal/n:16777216/model:0/threads:(1|16)/' \
    scaling_threads
  python3 scripts/plot_scaling.py "$T/scaling_threads.json" -o "$T/scaling_threads.png" >"$T/scaling_threads.md" 2>&1
}

# Direct summation: the default kernel and its variants.
direct() {
  bench "$BENCH_GPU" 'BM_GpuDirect/' bench_gpu_direct
  bench "$BENCH_GPU" 'BM_GpuDirectTuning' bench_gpu_direct_variants
  python3 benchmarks/direct_table.py "$T/bench_gpu_direct_variants.json" >"$T/bench_gpu_direct_variants.md" 2>&1
}

# libg6 (the GRAPE-6 API) and octwalk hermite on it.
libg6() {
  bench "$BENCH_G6" 'BM_G6Gpu' bench_g6 --benchmark_counters_tabular=true
  bash scripts/hermite_accuracy.sh >"$T/hermite_accuracy.txt" 2>&1
  log "scripts/hermite_accuracy.sh: exit $?"
  for precision in ds double; do
    rm -rf "$T/hermite_2e16_$precision"
    OCTWALK_G6_BACKEND=gpu OCTWALK_G6_PRECISION=$precision "$OCTWALK" hermite --n 65536 --t-end 1 \
      --output-dir "$T/hermite_2e16_$precision" --quiet >"$T/hermite_2e16_$precision.log" 2>&1
    log "octwalk hermite --n 65536 --t-end 1 ($precision): exit $?"
  done
}

# Periodic against isolated walk + forces on the same bodies, and the Ewald walk's settings.
periodic() {
  bench "$BENCH_GPU" 'BM_GpuPeriodic/' bench_gpu_periodic_2e22
  bench "$BENCH_GPU" 'BM_GpuPeriodicEwald' bench_gpu_ewald_walk_sweep --benchmark_counters_tabular=true
}

# A 256^3 LCDM box of 256 Mpc/h from z = 49 to 0; P(k) at z = 3, 1, 0 against linear theory and the start.
cosmology() {
  local W=$T/lcdm256 box=256
  local C="--omega0 0.31 --omega-lambda 0.69 --hubble-param 0.677 --units gadget-mpc" L="--sigma8 0.81 --ns 0.965"
  mkdir -p "$W"
  printf '0.25\n0.5\n1.0\n' >"$W/outputs.txt"
  # shellcheck disable=SC2086
  "$OCTWALK" ic cosmo --n-grid 256 --box-size $box --z-begin 49 --seed 1 $C $L --format gadget2 -o "$W/ic.gadget" \
    >"$W/ic.log" 2>&1
  log "octwalk ic cosmo 256^3: exit $?"
  local start=$SECONDS
  # shellcheck disable=SC2086
  "$OCTWALK" run --comoving --input "$W/ic.gadget" --a-end 1.0 --output-list "$W/outputs.txt" $C --dlna 0.025 --pm-grid 0 \
    --theta 0.5 --checkpoint-every 20 --output-dir "$W/run" --quiet >"$W/run.log" 2>&1
  log "octwalk run --comoving 256^3: exit $? in $((SECONDS - start)) s"
  cp "$W/run/run.json" "$W/run/timing.csv" "$W/run/energy.csv" "$W/"
  mapfile -t snaps < <(ls -1 "$W"/run/snap_*.gadget | sort | tail -n 3)
  local csvs=() pair index z a
  for pair in "0 3 0.25" "1 1 0.5" "2 0 1.0"; do
    read -r index z a <<<"$pair"
    # shellcheck disable=SC2086
    "$OCTWALK" power "${snaps[$index]}" --a "$a" --n-mesh 512 --interlace --linear --reference "$W/ic.gadget" \
      $C $L -o "$W/power_z$z.csv" >/dev/null
    csvs+=("$W/power_z$z.csv")
    # Same-phase growth below k = 0.05 h/Mpc: P/P_start / [D/D_start]^2 - 1.
    awk -F, -v z="$z" '/^#/ { next } /^k_low/ { for (i = 1; i <= NF; i++) col[$i] = i; next } $3 < 0.05 {
        printf "z = %s: k = %.4f  P/P_start / [D/D_start]^2 - 1 = %+.2f%%  P/P_linear - 1 = %+.2f%%\n", z, $3,
               100 * ($col["ratio"] / $col["growth_ratio2"] - 1), 100 * ($4 / $col["P_linear"] - 1) }' \
      "$W/power_z$z.csv" | tee -a "$OUT/summary.txt"
  done
  python3 scripts/plot_power.py "${csvs[@]}" -o "$W/power.png" || log "plot_power.py failed"
  python3 scripts/plot_snapshot.py "${snaps[2]}" --periodic $box -o "$W/density_z0.png" || log "plot_snapshot.py failed"
  # The linear-growth check: a fixed-amplitude pair of 32^3 bodies in 500 Mpc/h against the lattice's growth.
  WORK=$T/growth RUN_ARGS="--backend gpu --quiet" bash scripts/growth_check.sh 32 500 >"$T/growth_check_32.txt" 2>&1
  log "scripts/growth_check.sh 32 500: exit $?"
}

# Force error against theta at 2^20 (the timed rows' settings) and the wide sweeps of both MACs.
accuracy() {
  acc error_vs_theta_plummer_2e20 --model plummer --n 1048576 --theta 0.475:0.5:0.0125 --n-leaf 16,24
  local model lg
  for model in plummer galaxy; do
    for lg in 15 17 19 22; do
      "$OCTWALK" accuracy --model $model --n $((1 << lg)) --theta 0.2:0.8:0.1 --mac bonsai,octgrav --sample 10000 \
        --csv "$T/accuracy_${model}_2e$lg.csv" >"$T/accuracy_${model}_2e$lg.txt" 2>&1
      log "octwalk accuracy $model 2^$lg, theta 0.2-0.8: exit $?"
    done
  done
}

# The worked examples' figures: the disk galaxy, the accuracy and profile studies.
examples() {
  "$OCTWALK" ic galaxy --n 131072 --seed 3 -o "$T/galaxy.gadget" --format gadget2 >/dev/null 2>&1
  "$OCTWALK" run --input "$T/galaxy.gadget" --format gadget2 --t-end 40 --dt 0.03125 --epsilon 0.02 --energy-every 16 \
    --output-dir "$T/galaxy_run" --quiet >"$T/galaxy_run.txt" 2>&1
  log "octwalk run galaxy 131072, t = 40: exit $?"
  python3 scripts/plot_energy.py "$T/galaxy_run" >/dev/null 2>&1 || log "plot_energy.py failed"
  python3 scripts/plot_snapshot.py "$T/galaxy_run/snap_000000.gadget" "$T/galaxy_run/snap_001280.gadget" --extent 8 \
    --type 2 -o "$T/galaxy_run_disk.png" >/dev/null 2>&1 || log "plot_snapshot.py failed"
  "$OCTWALK" accuracy --model plummer --n 524288 --theta 0.2:0.8:0.1 --mac bonsai,octgrav --csv "$T/accuracy_plummer.csv" \
    --errors-dir "$T/accuracy_plummer_errors" >"$T/accuracy_plummer.txt" 2>&1
  python3 scripts/plot_accuracy.py --errors-dir "$T/accuracy_plummer_errors" --csv "$T/accuracy_plummer.csv" \
    -o "$T/accuracy_plummer.png" >/dev/null 2>&1 || log "plot_accuracy.py failed"
  "$OCTWALK" profile --model plummer --n 2^15:2^22 --theta 0.2:0.8:0.2 --repeat 4 --json "$T/profile_plummer.json" \
    >"$T/profile_plummer.txt" 2>&1
  log "octwalk profile plummer 2^15-2^22: exit $?"
  python3 scripts/plot_profile.py "$T/profile_plummer.json" -o "$T/profile_plummer.png" >/dev/null 2>&1 \
    || log "plot_profile.py failed"
}

commit=$(git rev-parse --short=12 HEAD 2>/dev/null || cat .source-githash 2>/dev/null || echo unknown)
log "start: commit $commit, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1), $(nproc) host cores; topics: $TOPICS"
build
for topic in $TOPICS; do
  case " $ALL " in *" $topic "*) ;; *) log "unknown topic $topic (known: $ALL)"; continue ;; esac
  T=$OUT/$topic
  mkdir -p "$T"
  log "$topic"
  "$topic"
done
log "done: $OUT"

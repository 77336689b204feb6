#!/usr/bin/env bash
# One device-machine batch measuring this tree against an older one (OLD, default .old) side by side,
# stage by stage, so a session's few calls can each take the stages that fit in 10 minutes (a warm
# machine keeps the builds). Results land in $OUT/results (packed into $OUT/results.tar.gz) and a
# one-line-per-step $OUT/summary.txt. Usage, from the repository root here:
#   git archive REV | tar -x -C .old; echo REV >.old/.device-githash; git rev-parse --short=12 HEAD >.device-githash
#   bash scripts/pack_device_deps.sh
# then on the device, carrying .deps, .old and .device-githash:
#   STAGES="build tests sass" bash scripts/device_session.sh
# Stages:
#   build     both trees for sm_90
#   tests     this tree's GPU tests (OCTWALK_REQUIRE_GPU=1) and a sanitizer pass on the small cases
#   sass      instructions per interaction from the SASS (benchmarks/loop_count.py), registers
#   direct    BM_GpuDirect, old and new alternated twice
#   directtuning BM_GpuDirectTuning (this tree's direct-kernel variants), SM clocks logged beside it
#   forces    BM_GpuForces (default settings), old and new alternated twice, with the error counters
#   variants  BM_GpuForcesTuning (this tree's kernel variants x groups) and the table of them
#   periodic  BM_GpuPeriodic, old and new
#   ewald     BM_GpuPeriodicEwald (this tree's Ewald-walk settings at 2^22) and its table
#   refit     BM_GpuRefit and BM_HostRefit
#   newbuild  this tree alone (for the stages that need no old build)
#   host      BM_HostTotal and BM_HostStep, old and new at 16 threads (HOST_FILTER)
#   scaling   this tree's host pipeline at 1-16 threads (SCALING_FILTER) and its table
#   cosmo     the 256^3 LCDM deliverable (scripts/device_cosmo256.sh; resumable across calls)
#   growth    issue 13's linear-growth check (scripts/growth_check.sh) on the GPU: GROWTH_GRID^3 bodies
#             (default 32) in 500 Mpc/h, GROWTH_ARGS added to the run (e.g. --err-tol-force-acc 0)
#   (ROUNDS: how many times the old/new pairs alternate, default 2)
#   run       whole `octwalk run` simulations of RUN_SIZES bodies, old and new alternated twice (NEW_RUN_ARGS:
#             extra options of the new side, e.g. --rebuild-every 0)
#   pipeline  BM_GpuPipelineStep (this tree: whole device-resident steps, --rebuild-every 1, 4, 8, auto;
#             PIPELINE_FILTER) and its table
#   pipelineboth  the same filter, old and new alternated (ROUNDS)
#   timeline  this tree's `octwalk profile --steps 6 --timeline` at 2^22 (TIMELINE_ARGS) and its Gantt chart
#   accuracy  `octwalk accuracy` sweeps at 2^22 (ACCURACY_ARGS) with this tree
set -uo pipefail
cd "$(dirname "$0")/.."
export OCTWALK_DEPS=$PWD/.deps
export LD_LIBRARY_PATH=$OCTWALK_DEPS/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
OUT=${OUT:-out}
OLD=${OLD:-.old}
STAGES=${STAGES:-build tests}
RUN_SIZES=${RUN_SIZES:-1048576 4194304}
HOST_FILTER=${HOST_FILTER:-BM_Host(Total|Step)/n:(1048576|4194304)/model:(0|1)/threads:16/}
SCALING_FILTER=${SCALING_FILTER:-BM_Host(Total|Step)/n:(1048576|4194304)/model:0/threads:(1|2|4|8|16)/|BM_HostTotal/n:16777216/model:0/threads:(1|16)/}
PIPELINE_FILTER=${PIPELINE_FILTER:-BM_GpuPipelineStep}
# The small cases under compute-sanitizer: one walk of each kind and both node-kernel shapes (every Small case
# with every kernel variant takes longer than a call allows).
SANITIZER_FILTER=${SANITIZER_FILTER:-*Small*/nGroup16_teamWalk_2PerLane:*Small*/nGroup64_teamWalk_2PerLane:*Small*/nGroup64_threadWalk_2PerLane:*Small*/nGroup100_teamWalk_4PerLane:*Small*/nGroup64_teamWalk_2PerLane_noSplit:GpuDirectSplit.FewTargets*:*GpuRefit*Plummer*0*}
ACCURACY_ARGS=${ACCURACY_ARGS:---model plummer --n 4194304 --theta 0.4:0.6:0.05 --sample 2000 --backend gpu}
has() { [[ " $STAGES " == *" $1 "* ]]; }
RES=$OUT/results
mkdir -p "$RES"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
pack() { tar -czf "$OUT/results.tar.gz" -C "$OUT" results; }
bin() { [ "$1" = old ] && echo "$OLD/build" || echo build; }

build() { # $1 source dir, $2 log
  cmake -S "$1" -B "$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$2" 2>&1 \
    && cmake --build "$1/build" -j 16 >>"$2" 2>&1
}
bench_both() { # $1 binary name, $2 filter, $3 result tag
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for side in old new; do
      "$(bin $side)/benchmarks/$1" --benchmark_filter="$2" --benchmark_out="$RES/${3}_${side}_$round.json" \
        --benchmark_out_format=json >>"$RES/${3}.txt" 2>&1
      log "$3 $side round $round: exit $?"
    done
  done
}

log "start $(date -u +%FT%TZ) stages [$STAGES] on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nproc) host cores"
if has build; then
  build . "$RES/build_new.log" || { grep -B2 -A8 -m5 'error' "$RES/build_new.log"; pack; exit 1; }
  grep -A1 'ptxas info' "$RES/build_new.log" | grep -E 'Compiling|registers' >"$RES/ptxas.txt" || true
  build "$OLD" "$RES/build_old.log" || { grep -B2 -A8 -m5 'error' "$RES/build_old.log"; pack; exit 1; }
  rm -f "$RES/build_new.log" "$RES/build_old.log"
  log "built new (.) and old ($OLD)"
fi
if has newbuild; then
  build . "$RES/build_new.log" || { grep -B2 -A8 -m5 'error' "$RES/build_new.log"; pack; exit 1; }
  rm -f "$RES/build_new.log"
  log "built new (.)"
fi
if has tests; then
  OCTWALK_REQUIRE_GPU=1 ctest --test-dir build -L gpu --output-on-failure -j 1 >"$RES/ctest_gpu.log" 2>&1
  log "new: ctest -L gpu (OCTWALK_REQUIRE_GPU=1): exit $? — $(grep -E 'tests passed|tests failed' "$RES/ctest_gpu.log")"
  grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' "$RES/ctest_gpu.log" | head -20 | tee -a "$OUT/summary.txt"
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 build/tests/octwalk_tests_gpu \
      --gtest_filter="$SANITIZER_FILTER" >"$RES/sanitizer_$tool.log" 2>&1
    log "compute-sanitizer $tool: exit $? — $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$RES/sanitizer_$tool.log" | tail -1)"
  done
fi
if has sass; then
  for f in forces_gpu direct_gpu walk_gpu ewald_gpu refit_gpu; do
    cuobjdump -sass "build/device/CMakeFiles/octwalk_device.dir/$f.cu.o" >"$RES/$f.sass" 2>/dev/null
    cuobjdump -res-usage "build/device/CMakeFiles/octwalk_device.dir/$f.cu.o" >>"$RES/res_usage.txt" 2>&1
  done
  python3 benchmarks/loop_count.py ILb0ELb0ELi2ELb1 <"$RES/forces_gpu.sass" >"$RES/sass_counts_forces.txt" 2>&1
  for k in directSliceKernelIfLi4ELi64E directSliceKernelIfLi4ELi128E directSliceKernelIfLi8ELi64E \
    directSliceKernelIfLi8ELi128E directSliceKernelIfLi2ELi64E directBalancedKernelIfLi4ELi64E \
    directBalancedKernelIfLi4ELi128E directBalancedKernelIfLi8ELi64E; do
    echo "$k" && python3 scripts/count_loop_instructions.py "$RES/direct_gpu.sass" "$k" --pairs 64
  done >"$RES/sass_counts_direct.txt" 2>&1
  gzip -f "$RES"/*.sass
  log "sass: $(head -c 600 "$RES/sass_counts_forces.txt" | tr '\n' ' ') | direct: $(tail -n 3 "$RES/sass_counts_direct.txt" | tr '\n' ' ')"
fi
has direct && bench_both octwalk_bench_gpu 'BM_GpuDirect' direct
if has directtuning; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 200 >"$RES/direct_clocks.csv" &
  clocks=$!
  build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuDirectTuning' --benchmark_out="$RES/direct_tuning.json" \
    --benchmark_out_format=json >"$RES/direct_tuning.txt" 2>&1
  log "direct tuning: exit $?"
  kill $clocks
  python3 benchmarks/direct_table.py "$RES/direct_tuning.json" >"$RES/direct_tuning.md" 2>&1
  cat "$RES/direct_tuning.md" >>"$OUT/summary.txt"
fi
has forces && bench_both octwalk_bench_gpu 'BM_GpuForces/' forces
if has variants; then
  build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuForcesTuning' --benchmark_out="$RES/variants.json" \
    --benchmark_out_format=json >"$RES/variants.txt" 2>&1
  log "variants: exit $?"
  python3 benchmarks/variant_table.py "$RES/variants.json" >"$RES/variants.md" 2>&1
  cat "$RES/variants.md" >>"$OUT/summary.txt"
fi
has periodic && bench_both octwalk_bench_gpu 'BM_GpuPeriodic/' periodic
if has ewald; then
  build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuPeriodicEwald' --benchmark_out="$RES/ewald_sweep.json" \
    --benchmark_out_format=json --benchmark_counters_tabular=true >"$RES/ewald_sweep.txt" 2>&1
  log "ewald sweep: exit $?"
  grep -E 'BM_GpuPeriodicEwald|periodic_ms' "$RES/ewald_sweep.txt" >>"$OUT/summary.txt"
fi
if has refit; then
  build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuRefit' --benchmark_out="$RES/refit_gpu.json" \
    --benchmark_out_format=json >"$RES/refit.txt" 2>&1
  log "refit gpu: exit $?"
  build/benchmarks/octwalk_bench_host --benchmark_filter='BM_HostRefit' --benchmark_out="$RES/refit_host.json" \
    --benchmark_out_format=json >>"$RES/refit.txt" 2>&1
  log "refit host: exit $?"
fi
has host && bench_both octwalk_bench_host "$HOST_FILTER" host
if has scaling; then
  build/benchmarks/octwalk_bench_host --benchmark_filter="$SCALING_FILTER" --benchmark_out="$RES/scaling.json" \
    --benchmark_out_format=json >"$RES/scaling.txt" 2>&1
  log "scaling: exit $?"
  python3 scripts/plot_scaling.py "$RES/scaling.json" -o "$RES/scaling.png" >"$RES/scaling.md" 2>&1
  cat "$RES/scaling.md" >>"$OUT/summary.txt"
fi
if has cosmo; then
  OUT=$RES/cosmo256 bash scripts/device_cosmo256.sh >"$RES/cosmo256.txt" 2>&1
  log "cosmo256: exit $? — $(tail -n 5 "$RES/cosmo256.txt" | tr '\n' ' ')"
fi
if has growth; then
  # shellcheck disable=SC2086
  WORK=$RES/growth RUN_ARGS="--backend gpu ${GROWTH_ARGS:-}" bash scripts/growth_check.sh "${GROWTH_GRID:-32}" 500 \
    >"$RES/growth.txt" 2>&1
  log "growth ${GROWTH_GRID:-32}^3 [${GROWTH_ARGS:-}]: exit $?"
  grep -E '^(z1|z0|diagnostic|growth_check)' "$RES/growth.txt" >>"$OUT/summary.txt"
  rm -f "$RES"/growth/*.gadget "$RES"/growth/run/*.gadget "$RES"/growth/run/*.ckpt
fi
if has run; then
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for n in $RUN_SIZES; do
      for side in old new; do
        dir=$RES/run_${side}_${n}_$round
        TIMEFORMAT=%R
        wall=$( { time "$(bin $side)/octwalk" run --n "$n" --t-end 0.125 --dt 0.0078125 --checkpoint-every 0 \
          --energy-every 16 --quiet --backend gpu --output-dir "$dir" $([ $side = new ] && echo "${NEW_RUN_ARGS:-}") \
          >"$dir.log" 2>&1; } 2>&1)
        log "run round $round $side n=$n: wall ${wall} s: $(tail -n 2 "$dir.log" | tr '\n' ' ')"
        rm -f "$dir"/*.tipsy "$dir"/*.ckpt "$dir"/checkpoint*
      done
    done
  done
fi
if has pipeline; then
  build/benchmarks/octwalk_bench_gpu --benchmark_filter="$PIPELINE_FILTER" --benchmark_out="$RES/pipeline.json" \
    --benchmark_out_format=json --benchmark_counters_tabular=true >"$RES/pipeline.txt" 2>&1
  log "pipeline: exit $?"
  grep -E 'BM_GpuPipelineStep|ms_per_step' "$RES/pipeline.txt" >>"$OUT/summary.txt"
fi
if has pipelineboth; then
  bench_both octwalk_bench_gpu "$PIPELINE_FILTER" pipelineboth
  grep -E 'BM_GpuPipelineStep' "$RES/pipelineboth.txt" >>"$OUT/summary.txt"
fi
if has timeline; then
  # shellcheck disable=SC2086
  build/octwalk profile --model plummer --n 4194304 --theta 0.5 --steps 6 --backend gpu --direct-sample 0 \
    ${TIMELINE_ARGS:-} --timeline "$RES/timeline_2e22.csv" >"$RES/timeline_2e22.txt" 2>&1
  log "timeline [${TIMELINE_ARGS:-}]: exit $?"
  python3 scripts/plot_timeline.py "$RES/timeline_2e22.csv" --steps last:3 --title "octwalk, Plummer 2^22, H200" \
    -o "$RES/timeline_2e22.png" >"$RES/timeline_2e22.md" 2>&1
  cat "$RES/timeline_2e22.md" >>"$OUT/summary.txt"
fi
if has accuracy; then
  # shellcheck disable=SC2086
  build/octwalk accuracy $ACCURACY_ARGS --csv "$RES/accuracy.csv" >"$RES/accuracy.txt" 2>&1
  log "accuracy [$ACCURACY_ARGS]: exit $?"
  tail -n 20 "$RES/accuracy.txt" >>"$OUT/summary.txt"
fi
pack
cat "$OUT/summary.txt"

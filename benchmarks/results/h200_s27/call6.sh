#!/usr/bin/env bash
# Session 27, call 6: the direct kernel's Dynamic split (persistent warps taking OneWave's units from an integer
# counter, about 8 a resident warp) beside the landed default (Balanced, 2 targets a lane) and OneWave in one
# binary: BM_GpuDirectTuning variants 0 (default), 6 (i2 one wave), 11-13 (i2, i4, i4 t128 dynamic) with the SM
# clock logged; Nsight Compute's scheduler and warp-state sections for the dynamic kernel at 2^18; the direct
# GPU tests (OCTWALK_REQUIRE_GPU=1).
export OUT=${OUT:-out}; T=$OUT/c6; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
B=build/benchmarks/octwalk_bench_gpu
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv -lms 200 >$T/clocks.csv &
clocks=$!
$B --benchmark_filter='BM_GpuDirectTuning/[0-9]+/[0-9]+/(0|6|11|12|13)/' --benchmark_out=$T/direct_tuning.json \
  --benchmark_out_format=json >$T/direct_tuning.txt 2>&1; s "direct tuning exit $?"
kill $clocks
python3 benchmarks/direct_table.py $T/direct_tuning.json >$T/direct_tuning.md 2>&1; cat $T/direct_tuning.md >>$T/summary.txt
tar -czf $OUT/c6.tar.gz -C $OUT c6
OCTWALK_REQUIRE_GPU=1 timeout 120 ctest --test-dir build -L gpu -R "Direct" --output-on-failure -j 4 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu -R Direct exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c6.tar.gz -C $OUT c6
NCU="ncu --clock-control none --section WarpStateStats --section SchedulerStats --section Occupancy"
timeout 60 $NCU -k regex:directDynamic --launch-count 1 $B --benchmark_filter='BM_GpuDirectTuning/262144/262144/11/' \
  >$T/ncu_dynamic.txt 2>&1; s "ncu dynamic: exit $?"
grep -E "One or More Eligible|Issued Warp|Achieved Active Warps|Theoretical Active" $T/ncu_dynamic.txt >>$T/summary.txt
tar -czf $OUT/c6.tar.gz -C $OUT c6
cat $T/summary.txt

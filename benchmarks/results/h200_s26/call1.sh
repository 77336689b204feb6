#!/usr/bin/env bash
# Session 26, call 1: the rebuild lag as a run option (default 2) with lagged topologies predicted for the
# middle of the steps they serve. This tree's build, every GPU test (OCTWALK_REQUIRE_GPU=1), and
# BM_GpuPipelineStep in one binary at 2^20, 2^22, 2^24: classic, automatic lag 1, lag 2 aimed at the adoption
# (the landed code's prediction) and at the middle (the new default), K = 4; then the landed 44aef6f (.old)
# binary's automatic lag 1 and lag 2 rows, alternated with this tree's; then issue 12's unmeasured rows with
# this tree: `octwalk accuracy` at 2^22 for theta 0.6-0.8 (Bonsai's theta-0.75 accuracy) and the galaxy
# model at theta 0.4-0.45 (Bonsai's theta-0.5 accuracy).
export OUT=${OUT:-out}; T=$OUT/c1; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
B=build/benchmarks/octwalk_bench_gpu; O=.old/build/benchmarks/octwalk_bench_gpu
$B --benchmark_filter='BM_GpuPipelineStep' --benchmark_out=$T/pipeline_new.json --benchmark_out_format=json \
  >$T/pipeline_new.txt 2>&1; s "pipeline new exit $?"
grep -E '^BM_' $T/pipeline_new.txt | cut -c1-250 >>$T/summary.txt
F='BM_GpuPipelineStep/(1048576|4194304|16777216)/0/1/(1|2)/0/'
for r in 1 2; do
  $O --benchmark_filter="$F" --benchmark_out=$T/pipeline_old_$r.json --benchmark_out_format=json >$T/pipeline_old_$r.txt 2>&1
  s "old $r exit $?"; grep -E '^BM_' $T/pipeline_old_$r.txt | cut -c1-250 >>$T/summary.txt
  $B --benchmark_filter="$F" --benchmark_out=$T/pipeline_same_$r.json --benchmark_out_format=json >$T/pipeline_same_$r.txt 2>&1
  s "new $r exit $?"; grep -E '^BM_' $T/pipeline_same_$r.txt | cut -c1-250 >>$T/summary.txt
done
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 3"
build/octwalk accuracy --model plummer --n 4194304 $A --theta 0.6:0.8:0.05 --csv $T/acc_p22_wide.csv >$T/acc_p22_wide.txt 2>&1
s "accuracy plummer wide exit $?"; grep -E '^ *0\.[0-9]' $T/acc_p22_wide.txt >>$T/summary.txt
build/octwalk accuracy --model galaxy --n 4194304 $A --theta 0.4:0.45:0.0125 --csv $T/acc_g22.csv >$T/acc_g22.txt 2>&1
s "accuracy galaxy exit $?"; grep -E '^ *0\.[0-9]' $T/acc_g22.txt >>$T/summary.txt
OCTWALK_REQUIRE_GPU=1 timeout 420 ctest --test-dir build -L gpu --output-on-failure -j 1 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c1.tar.gz -C $OUT c1
cat $T/summary.txt

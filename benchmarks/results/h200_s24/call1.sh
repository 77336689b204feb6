#!/usr/bin/env bash
# Session 24, call 1: build old (.old = 0790501, main before the s23-ewald merge) and new (the merge) side
# by side; the Ewald-walk sweep at 2^22 (new); forces and periodic at 2^22, old and new alternated twice.
export OUT=${OUT:-out}; T=$OUT/c1; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
OUT=$T STAGES="build ewald" bash scripts/device_session.sh >$T/session.txt 2>&1
echo "session exit $?" >>$T/summary2.txt
F='BM_GpuForces/N:[0-9]+/theta100:50/split:1/min_blocks:0/merge:1/n_group:64/leaf_split:512/leaf_tail:1/'
P='BM_GpuPeriodic/4194304/./1'
for r in 1 2; do for side in old new; do b=build; [ $side = old ] && b=.old/build
  $b/benchmarks/octwalk_bench_gpu --benchmark_filter="$F|$P" --benchmark_out=$T/fp_${side}_$r.json \
    --benchmark_out_format=json >>$T/fp.txt 2>&1; echo "forces+periodic $side $r exit $?" | tee -a $T/summary2.txt; done; done
grep -E '^BM_' $T/fp.txt >>$T/summary2.txt
tar -czf $OUT/c1.tar.gz -C $OUT c1
cat $T/summary.txt $T/summary2.txt

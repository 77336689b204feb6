#!/usr/bin/env bash
# Session 28, call 1 (99958ca + the group-contrast experiment, read from OCTWALK_GROUP_CONTRAST in makeGroups):
# the direct tests under the Dynamic default and BM_GpuDirect (not run after it became the default in session 27);
# issue 12's 2^20 row with the group rule off (0) and on (256), alternated twice in one binary; BM_GpuForces at
# 2^20 and 2^22 (phases) off and on; 2^22 Plummer and galaxy rows once each way.
export OUT=${OUT:-out}; T=$OUT/c1; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
OCTWALK_REQUIRE_GPU=1 timeout 200 ctest --test-dir build -L gpu -R "Direct|Reference|Accuracy" --output-on-failure -j 4 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu -R Direct|Reference|Accuracy exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
B=build/benchmarks/octwalk_bench_gpu
$B --benchmark_filter='BM_GpuDirect/' --benchmark_out=$T/direct.json --benchmark_out_format=json >$T/direct.txt 2>&1
s "BM_GpuDirect exit $?"; grep -E '^BM_GpuDirect' $T/direct.txt | sed 's/  */ /g' | cut -c1-200 >>$T/summary.txt
tar -czf $OUT/c1.tar.gz -C $OUT c1
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 5"
acc() { # name, contrast, args...
  local name=$1 k=$2; shift 2
  OCTWALK_GROUP_CONTRAST=$k build/octwalk accuracy $A "$@" --csv $T/acc_$name.csv >$T/acc_$name.txt 2>&1
  s "accuracy $name contrast $k [$*]: exit $?"; grep -E '^ *0\.[0-9]' $T/acc_$name.txt >>$T/summary.txt
}
for r in 1 2; do
  acc p20_${r}_k0 0 --model plummer --n 1048576 --theta 0.475:0.5:0.0125 --n-leaf 16,24
  acc p20_${r}_k256 256 --model plummer --n 1048576 --theta 0.475:0.5:0.0125 --n-leaf 16,24
done
tar -czf $OUT/c1.tar.gz -C $OUT c1
for k in 0 256; do
  OCTWALK_GROUP_CONTRAST=$k $B --benchmark_filter='BM_GpuForces/N:(1048576|4194304)/theta100:50/split:1/min_blocks:0/merge:1/n_group:64/leaf_split:512/leaf_tail:1/warps:(1|4)/' \
    --benchmark_out=$T/forces_k$k.json --benchmark_out_format=json >$T/forces_k$k.txt 2>&1; s "BM_GpuForces contrast $k exit $?"
done
tar -czf $OUT/c1.tar.gz -C $OUT c1
acc p22_k0 0 --model plummer --n 4194304 --theta 0.4875
acc p22_k256 256 --model plummer --n 4194304 --theta 0.4875
acc g22_k0 0 --model galaxy --n 4194304 --theta 0.4125
acc g22_k256 256 --model galaxy --n 4194304 --theta 0.4125
tar -czf $OUT/c1.tar.gz -C $OUT c1
cat $T/summary.txt

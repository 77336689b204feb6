#!/usr/bin/env bash
# Session 27, call 2: the body-leaf kernels' softened tiles (91caa68) against the tree before them (0f869c7, .old),
# both built here: SASS counts; `octwalk accuracy` (w+f = issue 12's walk + forces) at 2^20 (n_group 64 and 48)
# and 2^22, old and new alternated twice; BM_GpuForces' merged rows (n_group 48 / 64, one and four warps a
# block), old and new; the force-kernel GPU tests of the new tree (OCTWALK_REQUIRE_GPU=1).
export OUT=${OUT:-out}; T=$OUT/c2; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build sass" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 5"
acc() { # side (old|new), name, args...
  local side=$1 name=$2; shift 2
  local bin=build/octwalk; [ $side = old ] && bin=.old/build/octwalk
  $bin accuracy $A "$@" --csv $T/acc_${name}_$side.csv >$T/acc_${name}_$side.txt 2>&1
  s "accuracy $side $name [$*]: exit $?"; grep -E '^ *0\.[0-9]' $T/acc_${name}_$side.txt >>$T/summary.txt
}
for r in 1 2; do
  for side in old new; do
    acc $side p20_$r --model plummer --n 1048576 --theta 0.4625:0.5:0.0125 --n-group 48,64
    acc $side p22_$r --model plummer --n 4194304 --theta 0.475:0.5:0.0125
  done
done
tar -czf $OUT/c2.tar.gz -C $OUT c2
F='BM_GpuForces/N:[0-9]+/theta100:50/split:1/min_blocks:0/merge:1/n_group:(48|64)/leaf_split:512/leaf_tail:1/'
for side in old new; do
  bin=build/benchmarks/octwalk_bench_gpu; [ $side = old ] && bin=.old/build/benchmarks/octwalk_bench_gpu
  $bin --benchmark_filter="$F" --benchmark_out=$T/forces_$side.json --benchmark_out_format=json >$T/forces_$side.txt 2>&1
  s "BM_GpuForces $side exit $?"; grep -E '^BM_' $T/forces_$side.txt | cut -c1-160 >>$T/summary.txt
done
tar -czf $OUT/c2.tar.gz -C $OUT c2
OCTWALK_REQUIRE_GPU=1 timeout 150 ctest --test-dir build -L gpu -R "Small|FarField|Model" \
  --output-on-failure -j 4 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu (forces) exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c2.tar.gz -C $OUT c2
cat $T/summary.txt

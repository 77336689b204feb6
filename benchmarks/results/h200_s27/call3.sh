#!/usr/bin/env bash
# Session 27, call 3 (this tree, 91caa68's kernels): leaf size against the error now that a body-leaf interaction
# costs 15 instructions and a body-node one 39 — `octwalk accuracy` (w+f) at 2^20 and 2^22 for n_leaf 16-32 —
# then the small-tree, far-field and model twin tests of the GPU suite (OCTWALK_REQUIRE_GPU=1).
export OUT=${OUT:-out}; T=$OUT/c3; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 5"
acc() { # name, args...
  local name=$1; shift
  build/octwalk accuracy $A "$@" --csv $T/acc_$name.csv >$T/acc_$name.txt 2>&1
  s "accuracy $name [$*]: exit $?"; grep -E '^ *0\.[0-9]' $T/acc_$name.txt >>$T/summary.txt
}
acc p20_leaf --model plummer --n 1048576 --theta 0.45:0.525:0.025 --n-leaf 16,20,24,32
acc p22_leaf --model plummer --n 4194304 --theta 0.45:0.525:0.025 --n-leaf 16,24,32
tar -czf $OUT/c3.tar.gz -C $OUT c3
OCTWALK_REQUIRE_GPU=1 timeout 300 ctest --test-dir build -L gpu -R "Small|FarField|Model" \
  --output-on-failure -j 4 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu (forces) exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c3.tar.gz -C $OUT c3
cat $T/summary.txt

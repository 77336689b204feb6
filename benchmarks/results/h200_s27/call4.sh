#!/usr/bin/env bash
# Session 27, call 4 (this tree, the body-leaf kernels' softened tiles): issue 12's other rows with w+f —
# Bonsai's theta-0.75 accuracy at 2^22, the galaxy at Bonsai's theta-0.5 accuracy, 2^20 again — then the GPU
# tests that calls 2-3 did not run (OCTWALK_REQUIRE_GPU=1, every test outside Small|FarField|Model).
export OUT=${OUT:-out}; T=$OUT/c4; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 5"
acc() { # name, args...
  local name=$1; shift
  build/octwalk accuracy $A "$@" --csv $T/acc_$name.csv >$T/acc_$name.txt 2>&1
  s "accuracy $name [$*]: exit $?"; grep -E '^ *0\.[0-9]' $T/acc_$name.txt >>$T/summary.txt
}
acc p22w --model plummer --n 4194304 --theta 0.7:0.75:0.025
acc g22 --model galaxy --n 4194304 --theta 0.4:0.425:0.0125
acc p20 --model plummer --n 1048576 --theta 0.475:0.5:0.0125
tar -czf $OUT/c4.tar.gz -C $OUT c4
OCTWALK_REQUIRE_GPU=1 timeout 400 ctest --test-dir build -L gpu -E "Small|FarField|Model" \
  --output-on-failure -j 4 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu (the rest) exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c4.tar.gz -C $OUT c4
cat $T/summary.txt

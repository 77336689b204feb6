#!/usr/bin/env bash
# Session 25, call 1: the far field (common/far_field.h, --far-field-ratio). Builds old (.old = the landed
# 880dc86) and new side by side; octwalk accuracy at 2^22 (Plummer, seed 1, eps 0.01, 2000 sampled bodies,
# times the median of 3 evaluations) with the old binary and the new one at far-field ratios 0 (the old path),
# 4, 5, 6 and 8 over theta, the old binary again last; n_group 64 against 128 with the far field; then the GPU
# tests (the far-field twin cases among them).
export OUT=${OUT:-out}; T=$OUT/c1; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(tail -1 $T/summary.txt)"
A="--model plummer --n 4194304 --seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 3"
acc() { # $1 tag, $2 binary dir, rest: options
  local tag=$1 b=$2; shift 2
  $b/octwalk accuracy $A "$@" --csv $T/acc_$tag.csv >$T/acc_$tag.txt 2>&1; s "accuracy $tag [$*]: exit $?"
  grep -E '^ +0\.' $T/acc_$tag.txt >>$T/summary.txt
}
acc old1 .old/build --theta 0.45:0.5:0.025
for r in 0 4 5 6 8; do acc far$r build --theta 0.45:0.6:0.025 --far-field-ratio $r; done
acc old2 .old/build --theta 0.45:0.5:0.025
acc far6g build --theta 0.45:0.6:0.025 --far-field-ratio 6 --n-group 64,96,128
acc far4g build --theta 0.45:0.6:0.025 --far-field-ratio 4 --n-group 64,96,128
OCTWALK_REQUIRE_GPU=1 timeout 420 ctest --test-dir build -L gpu --output-on-failure -j 1 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
grep -A1 'farFieldKernel' $T/results/ptxas.txt >>$T/summary.txt 2>/dev/null
tar -czf $OUT/c1.tar.gz -C $OUT c1
cat $T/summary.txt

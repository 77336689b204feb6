#!/usr/bin/env bash
# Session 25, call 5: the far field on by default (ratio 6): this tree's build and every GPU test
# (OCTWALK_REQUIRE_GPU=1; every twin comparison now runs the far-field kernel).
export OUT=${OUT:-out}; T=$OUT/c5; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
OCTWALK_REQUIRE_GPU=1 timeout 450 ctest --test-dir build -L gpu --output-on-failure -j 1 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c5.tar.gz -C $OUT c5
cat $T/summary.txt

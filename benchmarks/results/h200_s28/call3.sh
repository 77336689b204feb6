#!/usr/bin/env bash
# Session 28, call 3 (warm machine, call 2's build of 4521df2): the whole GPU suite under OCTWALK_REQUIRE_GPU=1.
export OUT=${OUT:-out}; T=$OUT/c3; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
cmake --build build -j 16 >$T/build.log 2>&1; s "build (up to date): exit $?"
OCTWALK_REQUIRE_GPU=1 timeout 560 ctest --test-dir build -L gpu --output-on-failure -j 4 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
grep -c "Test *#" $T/ctest_gpu.log >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c3.tar.gz -C $OUT c3
cat $T/summary.txt

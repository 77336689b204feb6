#!/usr/bin/env bash
# Session 25, call 4 (right after call 3, on the same warm machine and its build): every GPU test,
# OCTWALK_REQUIRE_GPU=1, and compute-sanitizer memcheck on the far-field kernel's small cases.
export OUT=${OUT:-out}; T=$OUT/c4; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
[ -x build/tests/octwalk_tests_gpu ] || { OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "built"; }
cmake --build build -j 16 >$T/build.log 2>&1; s "build up to date: exit $?"
OCTWALK_REQUIRE_GPU=1 timeout 480 ctest --test-dir build -L gpu --output-on-failure -j 1 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/octwalk_tests_gpu \
  --gtest_filter='Ratios/GpuFarField.*2p12*' >$T/memcheck.log 2>&1
s "memcheck far field exit $? — $(grep -E 'ERROR SUMMARY' $T/memcheck.log | tail -1)"
tar -czf $OUT/c4.tar.gz -C $OUT c4
cat $T/summary.txt

#!/usr/bin/env bash
# Session 29, call 4 (cold machine, the session's last 3 minutes of device time): only the GPU test binary, and its
# periodic and Ewald tests under OCTWALK_REQUIRE_GPU=1, after kEwaldGroupMaxHalf went from L/8 to 3/32 L
# (common/ewald.h: groups between the two now take the per-interaction correction on both backends).
export OUT=${OUT:-out}; T=$OUT/c4; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >$T/build.log 2>&1 &&
  cmake --build build -j 16 --target octwalk_tests_gpu >>$T/build.log 2>&1; s "build octwalk_tests_gpu: exit $?"
OCTWALK_REQUIRE_GPU=1 timeout 100 build/tests/octwalk_tests_gpu --gtest_filter='*Periodic*:*Ewald*' >$T/gpu_tests.log 2>&1
s "gpu periodic/ewald tests: exit $? — $(grep -E '^\[  (PASSED|FAILED)' $T/gpu_tests.log | tr '\n' ' ')"
grep -E '^\[  FAILED' $T/gpu_tests.log >>$T/summary.txt
grep -E '^\[==========\]' $T/gpu_tests.log >>$T/summary.txt
tar -czf $OUT/c4.tar.gz -C $OUT c4
cat $T/summary.txt

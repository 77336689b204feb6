#!/usr/bin/env bash
# Session 24, call 2 (warp Ewald walk default, c4c08763): build; BM_GpuPeriodic at 2^22 with the new default;
# the accuracy at theta 0.475-0.5 at 2^22 (0.475 first: the first setting carries the warm-up) (walk time beside median/p99); the GPU tests; a sanitizer pass.
export OUT=${OUT:-out}; T=$OUT/c2; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >$T/build.log 2>&1 &&
  cmake --build build -j 16 >>$T/build.log 2>&1; s "build exit $?"; tail -3 $T/build.log >>$T/summary.txt
build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuPeriodic/4194304/./1' --benchmark_out=$T/periodic.json \
  --benchmark_out_format=json >$T/periodic.txt 2>&1; s "periodic exit $?"
build/octwalk accuracy --model plummer --n 4194304 --seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 \
  --theta 0.475:0.5:0.0125 --csv $T/accuracy.csv >$T/accuracy.txt 2>&1; s "accuracy exit $?"; tail -4 $T/accuracy.txt >>$T/summary.txt
OCTWALK_REQUIRE_GPU=1 ctest --test-dir build -L gpu --output-on-failure -j 1 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
F='*Small*/nGroup64_teamWalk_2PerLane:*Small*/nGroup100_teamWalk_4PerLane:Boxes/GpuPeriodic.*/*9_walk*'
compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/octwalk_tests_gpu --gtest_filter="$F" >$T/memcheck.log 2>&1
s "memcheck exit $? — $(grep -E 'ERROR SUMMARY' $T/memcheck.log | tail -1)"

#!/usr/bin/env bash
# Session 27, call 7: the Dynamic split with 4 targets a lane as the direct kernel's default — BM_GpuDirect's
# standard rows (float and double) and the GPU tests of the direct kernel and its users (OCTWALK_REQUIRE_GPU=1).
export OUT=${OUT:-out}; T=$OUT/c7; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
OCTWALK_REQUIRE_GPU=1 timeout 60 ctest --test-dir build -L gpu -R "Direct|Reference|Accuracy" --output-on-failure -j 4 \
  >$T/ctest_gpu.log 2>&1
s "ctest -L gpu -R Direct|Reference|Accuracy exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
gzip -9 $T/ctest_gpu.log
tar -czf $OUT/c7.tar.gz -C $OUT c7
timeout 60 build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuDirect/' --benchmark_out=$T/direct.json \
  --benchmark_out_format=json >$T/direct.txt 2>&1; s "BM_GpuDirect exit $?"
grep -E '^BM_' $T/direct.txt | cut -c1-200 >>$T/summary.txt
tar -czf $OUT/c7.tar.gz -C $OUT c7
cat $T/summary.txt

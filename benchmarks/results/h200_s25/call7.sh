#!/usr/bin/env bash
# Session 25, call 7: whole pipelined steps with the far field on (default ratio 6), one binary: BM_GpuPipelineStep
# at 2^20, 2^22, 2^24: the automatic policy with lags 1 (default) and 2, the build one thread short, and the classic
# per-step build.
export OUT=${OUT:-out}; T=$OUT/c7; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
F='BM_GpuPipelineStep/(1048576|4194304|16777216)/0/1/(1|2)/(0|1)/|BM_GpuPipelineStep/(1048576|4194304)/1/1/1/0/'
build/benchmarks/octwalk_bench_gpu --benchmark_filter="$F" --benchmark_out=$T/pipeline.json \
  --benchmark_out_format=json >$T/pipeline.txt 2>&1; s "pipeline exit $?"
grep -E '^BM_' $T/pipeline.txt | cut -c1-200 >>$T/summary.txt
tar -czf $OUT/c7.tar.gz -C $OUT c7
cat $T/summary.txt

#!/usr/bin/env bash
# Session 26, call 3 (call 2's kernel change reverted: it gained nothing): BM_GpuPipelineStep with a longer warm-up,
# the default lag-2 step with its background build on all 16 threads and on one and two fewer (call 2's
# timeline: in adopting steps the stepping thread woke 7 ms after the device finished, the build's 16 threads
# on the 16 cores); `octwalk profile --steps 24 --timeline` at 2^22 with OMP_NUM_THREADS 16 and 15; then
# the GPU tests of the pipeline and timeline and those call 1 did not reach.
export OUT=${OUT:-out}; T=$OUT/c3; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuPipelineStep/.*/0/' --benchmark_out=$T/pipeline.json \
  --benchmark_out_format=json >$T/pipeline.txt 2>&1; s "pipeline exit $?"
python3 - $T/pipeline.json >>$T/summary.txt <<'P'
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    print('%-42s median %6.2f mean %6.2f max %6.1f walk %6.2f ratio %.3f mean ratio %.3f inter %5.0f build %5.1f wait %4.1f'
          % (b['name'].split('/iter')[0], b['ms_per_step'], b['mean_ms_per_step'], b['max_ms_per_step'], b['walk_forces_ms'],
             b['step_over_walk_forces'], b['mean_step_over_walk_forces'], b['interactions_per_body'], b['host_build_ms'],
             b['build_wait_ms']))
P
for t in 16 15; do
  OMP_NUM_THREADS=$t build/octwalk profile --model plummer --n 4194304 --theta 0.5 --epsilon 0.01 --steps 24 \
    --rebuild-every 0 --backend gpu --direct-sample 0 --timeline $T/timeline22_t$t.csv >$T/profile22_t$t.txt 2>&1
  s "profile threads $t exit $?"
done
tar -czf $OUT/c3.tar.gz -C $OUT c3
OCTWALK_REQUIRE_GPU=1 timeout 300 ctest --test-dir build -L gpu -R 'Pipeline|Timeline|Resident|Degenerate|Hermite|G6|Direct' \
  --output-on-failure -j 1 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
tar -czf $OUT/c3.tar.gz -C $OUT c3
cat $T/summary.txt

#!/usr/bin/env bash
# Session 26, call 4: the pipelined step's defaults as landed (lag 2 aimed at the middle, build one thread short):
# BM_GpuPipelineStep at 2^20, 2^22, 2^24 (classic, lag 1, lag 2 at the adoption, lag 2 default on all 16 threads
# and on 15 (the default) and 14, K = 4); issue 11's energy proof: Plummer 2^16 and the galaxy model 2^16,
# 1000 steps of 1/128 (theta 0.5, eps 0.01), --rebuild-every 1 against the default pipeline (0, lag 2);
# the pipeline's GPU tests.
export OUT=${OUT:-out}; T=$OUT/c4; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
for model in plummer galaxy; do
  for k in 1 0; do
    d=$T/energy_${model}_k$k
    /usr/bin/time -f "%e s" build/octwalk run --model $model --n 65536 --seed 3 --t-end 7.8125 --dt 0.0078125 \
      --rebuild-every $k --backend gpu --energy-every 8 --checkpoint-every 1000 --output-dir $d --quiet >$d.txt 2>&1
    s "energy $model K=$k exit $? $(tail -1 $d.txt)"
    python3 - $d/energy.csv >>$T/summary.txt <<'P'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
h = rows[0]; i = h.index('dE_over_E0')
v = [abs(float(r[i])) for r in rows[1:]]
print('  %s: %d rows, max |dE/E0| %.3e, last %.3e (column %s)' % (sys.argv[1], len(v), max(v), v[-1], h[i]))
P
    rm -f $d/*.tipsy $d/checkpoint.bin*
  done
done
tar -czf $OUT/c4.tar.gz -C $OUT c4
build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuPipelineStep' --benchmark_out=$T/pipeline.json \
  --benchmark_out_format=json >$T/pipeline.txt 2>&1; s "pipeline exit $?"
python3 - $T/pipeline.json >>$T/summary.txt <<'P'
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    print('%-42s median %6.2f mean %6.2f max %6.1f walk %6.2f ratio %.3f mean ratio %.3f inter %5.0f build %5.1f wait %4.1f'
          % (b['name'].split('/iter')[0], b['ms_per_step'], b['mean_ms_per_step'], b['max_ms_per_step'], b['walk_forces_ms'],
             b['step_over_walk_forces'], b['mean_step_over_walk_forces'], b['interactions_per_body'], b['host_build_ms'],
             b['build_wait_ms']))
P
tar -czf $OUT/c4.tar.gz -C $OUT c4
OCTWALK_REQUIRE_GPU=1 timeout 200 ctest --test-dir build -L gpu -R 'Pipeline|Timeline' --output-on-failure -j 1 >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
tar -czf $OUT/c4.tar.gz -C $OUT c4
cat $T/summary.txt

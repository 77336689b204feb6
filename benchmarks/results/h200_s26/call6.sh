#!/usr/bin/env bash
# Session 26, call 6: the far field in periodic boxes (the groups that expand their Ewald correction take it, each
# node as its image nearest the group's centre). BM_GpuPeriodic at 2^22 (uniform and clustered, group forces from
# the previous step; periodic_speed = isolated / periodic walk + forces on the same bodies, issue 13's >= 0.6),
# the landed c5e8d63 (.old: far field in isolated boxes only) and this tree alternated twice; then the GPU tests
# of periodic boxes, Ewald walks, kernel variants and the far field.
export OUT=${OUT:-out}; T=$OUT/c6; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
F='BM_GpuPeriodic/4194304/[01]/1/'
for r in 1 2; do
  for side in old new; do
    X=build/benchmarks/octwalk_bench_gpu; [ $side = old ] && X=.old/build/benchmarks/octwalk_bench_gpu
    $X --benchmark_filter="$F" --benchmark_out=$T/periodic_${side}_$r.json --benchmark_out_format=json \
      >$T/periodic_${side}_$r.txt 2>&1; s "periodic $side $r exit $?"
    python3 - $T/periodic_${side}_$r.json >>$T/summary.txt <<'P'
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    print('  %-40s periodic %6.2f ms isolated %6.2f ms speed %.3f node %5.0f leaf %5.0f ewald %.2f ms' % (
        b['name'].split('/iter')[0], b['periodic_ms'], b['isolated_ms'], b['periodic_speed'], b['node_per_body'],
        b['leaf_per_body'], b['ewald_ms']))
P
  done
done
tar -czf $OUT/c6.tar.gz -C $OUT c6
OCTWALK_REQUIRE_GPU=1 timeout 330 ctest --test-dir build -L gpu -R 'Periodic|FarField|Variant|Ewald' --output-on-failure -j 1 \
  >$T/ctest_gpu.log 2>&1
s "ctest -L gpu exit $? — $(grep -E 'tests passed|tests failed' $T/ctest_gpu.log)"
grep -E '^\s+[0-9]+ - .*(Failed|Timeout|Exception)' $T/ctest_gpu.log | head -20 >>$T/summary.txt
grep -E 'far-field share' $T/ctest_gpu.log | sort | uniq -c >>$T/summary.txt
tar -czf $OUT/c6.tar.gz -C $OUT c6
cat $T/summary.txt

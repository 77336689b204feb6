#!/usr/bin/env bash
# Session 25, call 2: the far-field twin test at 2^20 with the worst potential named; BM_GpuFarField (2^20, 2^22:
# off and ratios 5, 6, 8 at theta 0.475 and 0.5, each with its median and p99 error) and the landed BM_GpuForces
# default rows of the old build beside it.
export OUT=${OUT:-out}; T=$OUT/c2; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
OCTWALK_REQUIRE_GPU=1 build/tests/octwalk_tests_gpu --gtest_filter='Ratios/GpuFarField.*2p20*' >$T/far_tests.txt 2>&1
s "far tests exit $?"; grep -E 'Failure|actual|largest|OK|FAILED' $T/far_tests.txt | head -30 >>$T/summary.txt
F='BM_GpuForces/N:4194304/theta100:50/split:1/min_blocks:0/merge:1/n_group:64/leaf_split:512/leaf_tail:1/warps:4'
for r in 1 2; do
  .old/build/benchmarks/octwalk_bench_gpu --benchmark_filter="$F" --benchmark_out=$T/old_$r.json \
    --benchmark_out_format=json >>$T/bench.txt 2>&1; s "old forces $r exit $?"
  build/benchmarks/octwalk_bench_gpu --benchmark_filter="$F|BM_GpuFarField" --benchmark_out=$T/new_$r.json \
    --benchmark_out_format=json >>$T/bench.txt 2>&1; s "new forces+far $r exit $?"
done
python3 - $T/old_1.json $T/new_1.json $T/old_2.json $T/new_2.json >>$T/summary.txt <<'PY'
import json, sys
for f in sys.argv[1:]:
    for b in json.load(open(f))['benchmarks']:
        g = lambda k: b.get(k, 0)
        print(f"{f.split('/')[-1]:10s} {b['name'][:80]:80s} {b['real_time']:7.2f} ms node {1e3*g('body_node_s'):6.2f} "
              f"leaf {1e3*g('body_leaf_s'):5.2f} walk {1e3*(g('walk_count_s')+g('walk_write_s')):5.2f} "
              f"med {g('median_error'):.3e} p99 {g('p99_error'):.3e} node/body {g('node_per_body'):.0f}")
PY
tar -czf $OUT/c2.tar.gz -C $OUT c2
cat $T/summary.txt

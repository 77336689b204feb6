#!/usr/bin/env bash
# Session 25, call 3: old (.old = 880dc86) and new built side by side. The far-field twin tests at 2^20 (ratio 0
# among them: is a probe's difference older than the far field?); BM_GpuForces' default row, old and new
# alternated twice (the far field off: the body-node kernel's tile staging as before); octwalk accuracy at
# 2^22 and 2^20 (Plummer) and 2^22 (galaxy) with the far field off, at ratio 6 and at ratio 8.
export OUT=${OUT:-out}; T=$OUT/c3; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
OCTWALK_REQUIRE_GPU=1 build/tests/octwalk_tests_gpu --gtest_filter='Ratios/GpuFarField.*2p20*' >$T/far_tests.txt 2>&1
s "far tests 2^20 exit $?"; grep -E 'Failure|actual|largest|OK \]|FAILED \]' $T/far_tests.txt | head -30 >>$T/summary.txt
F='BM_GpuForces/N:(1048576|4194304)/theta100:50/split:1/min_blocks:0/merge:1/n_group:64/leaf_split:512/leaf_tail:1/warps:4'
for r in 1 2; do for side in old new; do b=build; [ $side = old ] && b=.old/build
  $b/benchmarks/octwalk_bench_gpu --benchmark_filter="$F" --benchmark_out=$T/forces_${side}_$r.json \
    --benchmark_out_format=json >>$T/bench.txt 2>&1; s "forces $side $r exit $?"; done; done
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 3"
acc() { # $1 tag, rest: options
  local tag=$1; shift
  build/octwalk accuracy $A "$@" --csv $T/acc_$tag.csv >$T/acc_$tag.txt 2>&1; s "accuracy $tag [$*]: exit $?"
  grep -E '^ +0\.' $T/acc_$tag.txt >>$T/summary.txt
}
for r in 0 6 8; do acc p22_far$r --model plummer --n 4194304 --theta 0.4625:0.5:0.0125 --far-field-ratio $r; done
for r in 0 6 8; do acc p20_far$r --model plummer --n 1048576 --theta 0.45:0.5:0.0125 --far-field-ratio $r; done
for r in 0 6; do acc g22_far$r --model galaxy --n 4194304 --theta 0.45:0.5:0.025 --far-field-ratio $r; done
python3 - $T/forces_old_1.json $T/forces_new_1.json $T/forces_old_2.json $T/forces_new_2.json >>$T/summary.txt <<'PY'
import json, sys
for f in sys.argv[1:]:
    for b in json.load(open(f))['benchmarks']:
        g = lambda k: b.get(k, 0)
        print(f"{f.split('/')[-1]:16s} N {b['name'].split('/')[1]:9s} {b['real_time']:7.2f} ms node {1e3*g('body_node_s'):6.2f} "
              f"leaf {1e3*g('body_leaf_s'):5.2f} med {g('median_error'):.3e} p99 {g('p99_error'):.3e}")
PY
tar -czf $OUT/c3.tar.gz -C $OUT c3
cat $T/summary.txt

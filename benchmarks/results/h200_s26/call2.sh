#!/usr/bin/env bash
# Session 26, call 2: (a) the far field's kernels with full tiles: the body-node kernel gathers the near entries of
# several tiles into one before summing, the far-field kernel queues the far entries so every lane adds one
# (lane l: far entries l, l + 32, .. in list order; the CPU twin the same). `octwalk accuracy` with the landed
# b696a09 (.old) and this tree alternated twice at 2^22 (theta 0.475-0.5) and 2^20 (theta 0.4875).
# (b) BM_GpuPipelineStep with the warm-up through the first adoptions and the mean step beside the median, this
# tree; (c) `octwalk profile --steps 16 --timeline` of the default pipelined step at 2^22.
export OUT=${OUT:-out}; T=$OUT/c2; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 3 --model plummer"
for r in 1 2; do
  for side in old new; do
    X=build/octwalk; [ $side = old ] && X=.old/build/octwalk
    $X accuracy $A --n 4194304 --theta 0.475:0.5:0.0125 >$T/acc22_${side}_$r.txt 2>&1
    s "acc22 $side $r exit $?"; grep -E '^ *0\.[0-9]' $T/acc22_${side}_$r.txt >>$T/summary.txt
    $X accuracy $A --n 1048576 --theta 0.4875 >$T/acc20_${side}_$r.txt 2>&1
    s "acc20 $side $r exit $?"; grep -E '^ *0\.[0-9]' $T/acc20_${side}_$r.txt >>$T/summary.txt
  done
done
F='BM_GpuPipelineStep/(1048576|4194304|16777216)/0/(1/2|2/1|2/2)/0/'
build/benchmarks/octwalk_bench_gpu --benchmark_filter="$F" --benchmark_out=$T/pipeline.json --benchmark_out_format=json \
  >$T/pipeline.txt 2>&1; s "pipeline exit $?"
python3 - $T/pipeline.json >>$T/summary.txt <<'P'
import json, sys
for b in json.load(open(sys.argv[1]))['benchmarks']:
    print('%-42s median %6.2f mean %6.2f max %6.1f walk %6.2f ratio %.3f mean ratio %.3f inter %5.0f build %5.1f wait %4.1f'
          % (b['name'].split('/iter')[0], b['ms_per_step'], b['mean_ms_per_step'], b['max_ms_per_step'], b['walk_forces_ms'],
             b['step_over_walk_forces'], b['mean_step_over_walk_forces'], b['interactions_per_body'], b['host_build_ms'],
             b['build_wait_ms']))
P
build/octwalk profile --model plummer --n 4194304 --theta 0.5 --epsilon 0.01 --steps 16 --rebuild-every 0 --backend gpu \
  --direct-sample 0 --timeline $T/timeline22.csv >$T/profile22.txt 2>&1; s "profile exit $?"
python3 scripts/timeline_overlaps.py $T/timeline22.csv >$T/overlaps22.txt 2>&1
tail -30 $T/profile22.txt >>$T/summary.txt
tar -czf $OUT/c2.tar.gz -C $OUT c2
cat $T/summary.txt

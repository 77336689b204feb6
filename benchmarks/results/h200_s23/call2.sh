#!/usr/bin/env bash
# Final call 2: old vs new forces, periodic, pipeline; accuracy sweep at 2^22.
export OUT=${OUT:-out}; T=$OUT/final; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
F='BM_GpuForces/N:[0-9]+/theta100:50/split:1/min_blocks:0/merge:1/n_group:(64|48)/'
P='BM_GpuPeriodic/4194304/./1'
L='BM_GpuPipelineStep/(1048576|4194304|16777216)/(0|1)/1/1/'
for r in 1 2; do for side in old new; do b=build; [ $side = old ] && b=.old/build
  $b/benchmarks/octwalk_bench_gpu --benchmark_filter="$F|$P" --benchmark_out=$T/fp_${side}_$r.json \
    --benchmark_out_format=json >>$T/fp.txt 2>&1; echo "forces+periodic $side $r exit $?" | tee -a $T/summary.txt; done; done
for side in new old; do b=build; [ $side = old ] && b=.old/build
  $b/benchmarks/octwalk_bench_gpu --benchmark_filter="$L" --benchmark_out=$T/pipeline_${side}.json \
    --benchmark_out_format=json >>$T/pipeline.txt 2>&1; echo "pipeline $side exit $?" | tee -a $T/summary.txt; done
build/octwalk accuracy --model plummer --n 4194304 --seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 \
  --theta 0.45:0.5:0.0125 --csv $T/accuracy.csv >$T/accuracy.txt 2>&1; echo "accuracy exit $?" | tee -a $T/summary.txt
tail -8 $T/accuracy.txt >> $T/summary.txt
tar -czf $OUT/f2.tar.gz -C $OUT final; rm -rf $T

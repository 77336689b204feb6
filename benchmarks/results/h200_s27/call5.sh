#!/usr/bin/env bash
# Session 27, call 5 (this tree): where the 2^20 time goes for issue 12's unmet row — `octwalk forces` per phase
# at theta 0.4875 (seed 1, as `octwalk accuracy`), default groups and n_group 48 — and Nsight Compute's warp-state
# and scheduler sections for the direct kernel (2^18 x 2^18) and the two force kernels at 2^20 (one launch each),
# for the next session's direct-summation and 2^20 work.
export OUT=${OUT:-out}; T=$OUT/c5; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
F="--model plummer --n 1048576 --seed 1 --epsilon 0.01 --mac bonsai --theta 0.4875 --backend gpu --sample 1000"
for g in 64 48; do
  build/octwalk forces $F --n-group $g >$T/forces_p20_g$g.txt 2>&1; s "forces n_group $g: exit $?"
  cat $T/forces_p20_g$g.txt >>$T/summary.txt
done
tar -czf $OUT/c5.tar.gz -C $OUT c5
NCU="ncu --clock-control none --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
timeout 150 $NCU -k regex:direct --launch-count 1 build/benchmarks/octwalk_bench_gpu \
  --benchmark_filter='BM_GpuDirect/262144/262144/0' >$T/ncu_direct.txt 2>&1; s "ncu direct: exit $?"
tar -czf $OUT/c5.tar.gz -C $OUT c5
timeout 150 $NCU -k regex:'bodyNode|bodyLeaf|teamWalk|farField' --launch-skip 0 --launch-count 6 \
  build/octwalk forces $F --sample 0 >$T/ncu_forces.txt 2>&1; s "ncu forces: exit $?"
tar -czf $OUT/c5.tar.gz -C $OUT c5
cat $T/summary.txt

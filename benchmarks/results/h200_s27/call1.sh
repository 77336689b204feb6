#!/usr/bin/env bash
# Session 27, call 1: issue 12's rows timed as the issue counts them (`w+f[s]`: both walk passes, scan,
# both force kernels and download, the upload of the host's tree left out; `walk[s]` keeps it), with this
# tree's build: `octwalk accuracy` at 2^22 (Bonsai's theta-0.5 and theta-0.75 accuracies, far-field ratios 6
# and 5; ratio 4 too at the looser accuracy), at 2^20 (n_group 48 / 64, n_leaf 12 / 16, ratios 5 / 6), and
# the galaxy model at 2^22; then BM_GpuForces' default rows (every phase, walk_forces_s).
export OUT=${OUT:-out}; T=$OUT/c1; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 5"
acc() { # name, args...
  local name=$1; shift
  build/octwalk accuracy $A "$@" --csv $T/acc_$name.csv >$T/acc_$name.txt 2>&1
  s "accuracy $name [$*]: exit $?"; grep -E '^ *0\.[0-9]' $T/acc_$name.txt >>$T/summary.txt
}
acc p22_r6 --model plummer --n 4194304 --theta 0.45:0.5:0.0125
acc p22_r5 --model plummer --n 4194304 --theta 0.45:0.5:0.0125 --far-field-ratio 5
acc p22w_r6 --model plummer --n 4194304 --theta 0.65:0.75:0.025
acc p22w_r5 --model plummer --n 4194304 --theta 0.65:0.75:0.025 --far-field-ratio 5
acc p22w_r4 --model plummer --n 4194304 --theta 0.65:0.75:0.025 --far-field-ratio 4
acc p20_r6 --model plummer --n 1048576 --theta 0.45:0.5:0.0125 --n-group 48,64 --n-leaf 12,16
acc p20_r5 --model plummer --n 1048576 --theta 0.45:0.5:0.0125 --n-group 48,64 --n-leaf 12,16 --far-field-ratio 5
acc g22_r6 --model galaxy --n 4194304 --theta 0.4:0.425:0.0125
tar -czf $OUT/c1.tar.gz -C $OUT c1
B=build/benchmarks/octwalk_bench_gpu
$B --benchmark_filter='BM_GpuForces/' --benchmark_out=$T/forces.json --benchmark_out_format=json >$T/forces.txt 2>&1
s "BM_GpuForces exit $?"; grep -E '^BM_' $T/forces.txt | cut -c1-200 >>$T/summary.txt
tar -czf $OUT/c1.tar.gz -C $OUT c1
cat $T/summary.txt

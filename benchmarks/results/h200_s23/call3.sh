#!/usr/bin/env bash
# Call C: interactions vs steps since rebuild (issue 11), growth 32^3 with --plt on the GPU (issue 13),
# the periodic clustered benchmark's kernels under nsys (issue 13's 0.6 target).
export OUT=${OUT:-out}; T=$OUT/c; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
[ -x build/octwalk ] || { cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >$T/cmake.log 2>&1 && cmake --build build -j 16 >$T/build.log 2>&1; echo "rebuilt $?" >>$T/summary.txt; }
for n in 1048576 4194304; do for k in 1 0 8; do
  s=$(date +%s.%N)
  build/octwalk run --model plummer --n $n --theta 0.5 --epsilon 0.01 --dt 0.0078125 --t-end 0.25 --backend gpu \
    --rebuild-every $k --energy-every 1000 --checkpoint-every 0 --quiet --output-dir /tmp/int_${n}_$k >$T/int_${n}_$k.log 2>&1
  echo "run n=$n k=$k exit $? wall $(echo "$(date +%s.%N) - $s" | bc)" >>$T/summary.txt
  cp /tmp/int_${n}_$k/timing.csv $T/timing_${n}_k$k.csv; rm -rf /tmp/int_${n}_$k
done
python3 scripts/plot_interactions.py $T/timing_${n}_k1.csv $T/timing_${n}_k0.csv $T/timing_${n}_k8.csv \
  --labels "rebuild every step" "continuous (auto)" "every 8 steps" -o $T/interactions_$n.png >$T/interactions_$n.md 2>&1
echo "plot $n exit $?" >>$T/summary.txt; done
IC_ARGS="--plt" LATTICE=0 WORK=$T/growth RUN_ARGS="--backend gpu --quiet" bash scripts/growth_check.sh 32 500 >$T/growth_plt32.txt 2>&1
echo "growth plt32 exit $?" >>$T/summary.txt; grep -E '^(z1|z0|diagnostic|growth_check)' $T/growth_plt32.txt >>$T/summary.txt
find $T/growth -name '*.gadget' -o -name '*.ckpt' | xargs rm -f
if command -v nsys >/dev/null; then
  nsys profile -o $T/periodic --force-overwrite true build/benchmarks/octwalk_bench_gpu --benchmark_filter='BM_GpuPeriodic/4194304/1/1' >$T/nsys_run.txt 2>&1
  nsys stats --report cuda_gpu_kern_sum $T/periodic.nsys-rep >$T/periodic_kernels.txt 2>&1
  echo "nsys exit $?" >>$T/summary.txt; rm -f $T/periodic.nsys-rep $T/periodic.sqlite
else echo "no nsys: $(ls /usr/local/cuda*/bin 2>/dev/null | grep -i nsys)" >>$T/summary.txt; fi
tar -czf $OUT/c.tar.gz -C $OUT c; rm -rf $T

#!/usr/bin/env bash
# Session 28, call 2: this tree (the contrast rule of makeGroups, kGroupContrast = 256, and the unrolled Ewald
# derivatives) against the landed 99958ca (.old), both built here: issue 12's rows by `octwalk accuracy`, old and new
# alternated twice at 2^20 and once at 2^22 and for the galaxy; BM_GpuForces and BM_GpuPeriodic old and new
# alternated twice (device_session.sh stages forces, periodic).
export OUT=${OUT:-out}; T=$OUT/c2; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="build" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
A="--seed 1 --epsilon 0.01 --mac bonsai --backend gpu --sample 2000 --repeat 5"
acc() { # name, side (old|new), args...
  local name=$1 side=$2 bin=build/octwalk; shift 2
  [ $side = old ] && bin=.old/build/octwalk
  $bin accuracy $A "$@" --csv $T/acc_${name}_$side.csv >$T/acc_${name}_$side.txt 2>&1
  s "accuracy $name $side [$*]: exit $?"; grep -E '^ *0\.[0-9]' $T/acc_${name}_$side.txt >>$T/summary.txt
}
for r in 1 2; do for side in old new; do acc p20_$r $side --model plummer --n 1048576 --theta 0.475:0.5:0.0125; done; done
for side in old new; do
  acc p22 $side --model plummer --n 4194304 --theta 0.4875
  acc p22w $side --model plummer --n 4194304 --theta 0.725
  acc g22 $side --model galaxy --n 4194304 --theta 0.4125
done
tar -czf $OUT/c2.tar.gz -C $OUT c2
OUT=$T STAGES="forces periodic" bash scripts/device_session.sh >>$T/session.txt 2>&1; s "forces, periodic: $(grep -c exit $T/summary.txt)"
tar -czf $OUT/c2.tar.gz -C $OUT c2
cat $T/summary.txt

#!/usr/bin/env bash
# Session 25, call 6 (right after call 5, same warm machine and build): whole leapfrog steps with the far field
# off and on (ratio 6) alternated, one binary: octwalk profile --steps 16 (Plummer, eps 0.01, theta 0.5, dt 1/128)
# at 2^22 and 2^20, the classic per-step build (--rebuild-every 1) and the pipelined automatic policy (0).
export OUT=${OUT:-out}; T=$OUT/c6; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
[ -x build/octwalk ] || { OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "built"; }
for n in 4194304 1048576; do for k in 0 1; do for round in 1 2; do for r in 0 6; do
  tag=n${n}_k${k}_far${r}_$round
  build/octwalk profile --model plummer --n $n --theta 0.5 --epsilon 0.01 --steps 16 --rebuild-every $k \
    --backend gpu --far-field-ratio $r --csv $T/$tag.csv >$T/$tag.txt 2>&1
  s "$tag exit $?: $(tail -n 2 $T/$tag.txt | tr -s ' ' | tr '\n' ' ')"
done; done; done; done
tar -czf $OUT/c6.tar.gz -C $OUT c6
cat $T/summary.txt

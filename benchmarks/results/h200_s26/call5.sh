#!/usr/bin/env bash
# Session 26, call 5: the default pipelined step's timeline (octwalk profile --steps 40 --rebuild-every 0 --timeline)
# at 2^22 and 2^24, to see which steps make the 2^24 mean (call 4: 146 ms) exceed its median (121 ms).
export OUT=${OUT:-out}; T=$OUT/c5; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
for n in 4194304 16777216; do
  build/octwalk profile --model plummer --n $n --theta 0.5 --epsilon 0.01 --steps 40 --rebuild-every 0 --backend gpu \
    --direct-sample 0 --timeline $T/timeline_$n.csv >$T/profile_$n.txt 2>&1
  s "profile $n exit $?"
  gzip -9 $T/timeline_$n.csv
done
free -g >>$T/summary.txt; cat /sys/kernel/mm/transparent_hugepage/enabled >>$T/summary.txt 2>&1; nproc >>$T/summary.txt
tar -czf $OUT/c5.tar.gz -C $OUT c5
cat $T/summary.txt

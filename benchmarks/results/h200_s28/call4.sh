#!/usr/bin/env bash
# Session 28, call 4 (warm machine, call 2's builds: this tree 4521df2 and the landed 99958ca in .old):
# BM_GpuForces old and new alternated twice, then BM_GpuPeriodic old and new once each (device_session.sh stages).
export OUT=${OUT:-out}; T=$OUT/c4; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="forces" bash scripts/device_session.sh >$T/session.txt 2>&1; s "forces: $(grep -c exit $T/summary.txt)"
tar -czf $OUT/c4.tar.gz -C $OUT c4
OUT=$T ROUNDS=1 STAGES="periodic" timeout 300 bash scripts/device_session.sh >>$T/session.txt 2>&1; s "periodic: exit $?"
tar -czf $OUT/c4.tar.gz -C $OUT c4
cat $T/summary.txt

#!/usr/bin/env bash
# Session 29, call 1 (cold machine): this tree alone (newbuild), then issue 13's 256^3 LCDM deliverable
# (scripts/device_cosmo256.sh, the session_device `cosmo` stage) with the current defaults: the periodic error
# control (err_tol_force_acc 0.002), the far field, the pipelined step (rebuild lag 2). The run stops itself with a
# checkpoint after RUN_SECONDS; call 2 (same warm machine, build/cosmo256 kept) continues it and runs the analysis.
export OUT=${OUT:-out}; T=$OUT/c1; mkdir -p $T
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/newbuild.txt 2>&1; s "newbuild: exit $?"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >>$T/summary.txt
export RUN_SECONDS=${RUN_SECONDS:-330}
OUT=$T STAGES="cosmo" bash scripts/device_session.sh >$T/cosmo.txt 2>&1; s "cosmo: exit $?"
tail -n 8 $T/results/cosmo256.txt >>$T/summary.txt 2>/dev/null
ls -la build/cosmo256/run | tail -n 12 >>$T/summary.txt 2>/dev/null
tar -czf $OUT/c1.tar.gz -C $OUT c1
cat $T/summary.txt

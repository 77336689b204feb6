#!/usr/bin/env bash
# Session 25, call 8 (final commit's device code: the shared expansion evaluation, evalScaledLocal): this tree's
# build and the GPU tests of the far field, the periodic boxes (the Ewald correction's evaluation) and the
# 2^15 model twins (OCTWALK_REQUIRE_GPU=1).
export OUT=${OUT:-out}; T=$OUT/c8; mkdir -p $T
export OCTWALK_DEPS=$PWD/.deps LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/session.txt 2>&1; s "build: $(grep -c built $T/summary.txt)"
OCTWALK_REQUIRE_GPU=1 timeout 200 build/tests/octwalk_tests_gpu \
  --gtest_filter='Ratios/GpuFarField.*:Boxes/GpuPeriodic.*:Models/GpuTwin.*2p15*' >$T/gpu_tests.txt 2>&1
s "gpu tests exit $?: $(grep -E '^\[  (PASSED|FAILED)  \]' $T/gpu_tests.txt | tr '\n' ' ')"
cat $T/summary.txt

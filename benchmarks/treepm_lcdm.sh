#!/usr/bin/env bash
# An n^3 LCDM box (n Mpc/h, z = 49 to 0, 157 steps of dlna 0.025, theta 0.5; n = 128 unless N_GRID says otherwise)
# run several ways by one binary: the default periodic force (TreePM on the automatic mesh, 2n cells per side, interlaced,
# asmth 1.75, rcut 6, the pipelined step) and tree + Ewald (--pm-grid 0); GADGET=1 adds TreePM on an n^3 mesh with GADGET-2's
# split (asmth 1.25, rcut 4.5); each run's timing.csv, run.json and its P(k) at z = 0 (with the starting snapshot's
# ratio; POWER=0 leaves them out).
#
#   [N_GRID=n] [GADGET=1] [POWER=0] bash benchmarks/treepm_lcdm.sh OCTWALK OUTDIR [OLD_OCTWALK]
#
# OLD_OCTWALK, when given, also runs another build side by side with its own defaults and the options in OLD_ARGS
# (e.g. OLD_ARGS="--asmth 2" for a build whose default split was wider). HOST_MESH=1 also runs the GADGET case with
# the mesh on the host's cores (--pm-backend cpu) beside its default, the device's mesh with the GPU backend. CLASSIC=1 also runs the default with the classic step
# (--rebuild-every 1) beside the pipelined step. SINGLE_MESH=1 also runs the default with one mesh (--no-pm-interlace),
# ASMTH=a the default with the split at a cells (--asmth a). EWALD=0 leaves out the tree + Ewald run. DLNA=0 takes the steps of
# the err_tol_int_accuracy criterion (a run's default) instead of the fixed dlna 0.025; A_END=a stops at a (1: z = 0).
set -uo pipefail
OCTWALK=$1 OUT=$2 OLD=${3:-}
N=${N_GRID:-128} SINGLE_MESH=${SINGLE_MESH:-0} ASMTH=${ASMTH:-} GADGET=${GADGET:-0} HOST_MESH=${HOST_MESH:-0} CLASSIC=${CLASSIC:-0} POWER=${POWER:-1} EWALD=${EWALD:-1} DLNA=${DLNA:-0.025} A_END=${A_END:-1.0}
mkdir -p "$OUT" && cd "$OUT" || exit 1
"$OCTWALK" ic cosmo --n-grid "$N" --box-size "$N" --z-begin 49 --seed 1 --omega0 0.31 --omega-lambda 0.69 \
  --hubble-param 0.677 --units gadget-mpc --sigma8 0.81 --ns 0.965 -o ic.gadget > ic.log 2>&1 || exit 1
run_box() {
  local name=$1 binary=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  "$binary" run --comoving --input ic.gadget --a-end "$A_END" --dlna "$DLNA" --theta 0.5 --output-dir "$name" "$@" > "$name.log" 2>&1
  echo "$name exit $? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a done.txt
  if [ "$POWER" = 1 ]; then
    "$OCTWALK" power "$name/$(ls "$name" | grep snap_ | tail -1)" --n-mesh $((2 * N)) --interlace --linear \
      --reference ic.gadget -o "$name.power_z0.csv" > /dev/null 2>&1
  fi
  cp "$name/run.json" "$name.run.json"
  cp "$name/timing.csv" "$name.timing.csv"
}
GADGET_SPLIT="--pm-grid $N --asmth 1.25 --rcut 4.5"
run_box default "$OCTWALK"
if [ "$EWALD" = 1 ]; then run_box ewald "$OCTWALK" --pm-grid 0; fi
# shellcheck disable=SC2086 # OLD_ARGS: several options
if [ -n "$OLD" ]; then run_box default_old "$OLD" ${OLD_ARGS:-}; fi
if [ "$SINGLE_MESH" = 1 ]; then run_box default_single_mesh "$OCTWALK" --no-pm-interlace; fi
if [ -n "$ASMTH" ]; then run_box "default_asmth$ASMTH" "$OCTWALK" --asmth "$ASMTH"; fi
if [ "$CLASSIC" = 1 ]; then run_box default_classic "$OCTWALK" --rebuild-every 1; fi
if [ "$GADGET" = 1 ]; then run_box "pm${N}_gadget" "$OCTWALK" $GADGET_SPLIT; fi
if [ "$HOST_MESH" = 1 ]; then run_box "pm${N}_gadget_host_mesh" "$OCTWALK" $GADGET_SPLIT --pm-backend cpu; fi

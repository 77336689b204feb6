#!/usr/bin/env bash
# An n^3 LCDM box (n Mpc/h, z = 49 to 0, 157 steps of dlna 0.025, theta 0.5; n = 128 unless N_GRID says otherwise)
# run three ways by one binary: tree + Ewald (the default), TreePM on an n^3 mesh with GADGET-2's split (asmth 1.25,
# rcut 4.5), and TreePM on (2n)^3 with asmth 2, rcut 6 (WIDE=0 leaves it out); each run's timing.csv, run.json and
# its P(k) at z = 0 (with the starting snapshot's ratio).
#
#   [N_GRID=n] [WIDE=0] bash benchmarks/treepm_lcdm.sh OCTWALK OUTDIR [OLD_OCTWALK]
#
# OLD_OCTWALK, when given, also runs the n^3 TreePM case with another build, side by side. HOST_MESH=1 also runs
# the n^3 TreePM case with the mesh on the host's cores (--pm-backend cpu) beside its default, the device's mesh
# with the GPU backend. CLASSIC=1 also runs it with the classic step (--rebuild-every 1) beside its default, the
# pipelined step.
set -uo pipefail
OCTWALK=$1 OUT=$2 OLD=${3:-}
N=${N_GRID:-128} WIDE=${WIDE:-1} HOST_MESH=${HOST_MESH:-0} CLASSIC=${CLASSIC:-0}
mkdir -p "$OUT" && cd "$OUT" || exit 1
"$OCTWALK" ic cosmo --n-grid "$N" --box-size "$N" --z-begin 49 --seed 1 --omega0 0.31 --omega-lambda 0.69 \
  --hubble-param 0.677 --units gadget-mpc --sigma8 0.81 --ns 0.965 -o ic.gadget > ic.log 2>&1 || exit 1
run_box() {
  local name=$1 binary=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  "$binary" run --comoving --input ic.gadget --a-end 1.0 --dlna 0.025 --theta 0.5 --output-dir "$name" "$@" > "$name.log" 2>&1
  echo "$name exit $? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a done.txt
  "$OCTWALK" power "$name/$(ls "$name" | grep snap_ | tail -1)" --n-mesh $((2 * N)) --interlace --linear --reference ic.gadget \
    -o "$name.power_z0.csv" > /dev/null 2>&1
  cp "$name/run.json" "$name.run.json"
  cp "$name/timing.csv" "$name.timing.csv"
}
run_box ewald "$OCTWALK"
if [ -n "$OLD" ]; then run_box "pm${N}_gadget_old" "$OLD" --pm-grid "$N"; fi
run_box "pm${N}_gadget_new" "$OCTWALK" --pm-grid "$N"
if [ "$CLASSIC" = 1 ]; then run_box "pm${N}_gadget_classic" "$OCTWALK" --pm-grid "$N" --rebuild-every 1; fi
if [ "$HOST_MESH" = 1 ]; then run_box "pm${N}_gadget_host_mesh" "$OCTWALK" --pm-grid "$N" --pm-backend cpu; fi
if [ "$WIDE" = 1 ]; then run_box "pm$((2 * N))_a2_r6_new" "$OCTWALK" --pm-grid $((2 * N)) --asmth 2 --rcut 6; fi

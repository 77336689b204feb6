#!/usr/bin/env bash
# A 128^3 LCDM box (128 Mpc/h, z = 49 to 0, 157 steps of dlna 0.025, theta 0.5) run three ways by one binary:
# tree + Ewald (the default), TreePM on a 128^3 mesh with GADGET-2's split (asmth 1.25, rcut 4.5), and TreePM on 256^3
# with asmth 2, rcut 6; each run's timing.csv, run.json and its P(k) at z = 0 (with the starting snapshot's ratio).
#
#   bash benchmarks/treepm_lcdm.sh OCTWALK OUTDIR [OLD_OCTWALK]
#
# OLD_OCTWALK, when given, also runs the 128^3 TreePM case with another build, side by side.
set -uo pipefail
OCTWALK=$1 OUT=$2 OLD=${3:-}
mkdir -p "$OUT" && cd "$OUT" || exit 1
"$OCTWALK" ic cosmo --n-grid 128 --box-size 128 --z-begin 49 --seed 1 --omega0 0.31 --omega-lambda 0.69 \
  --hubble-param 0.677 --units gadget-mpc --sigma8 0.81 --ns 0.965 -o ic.gadget > ic.log 2>&1 || exit 1
run_box() {
  local name=$1 binary=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  "$binary" run --comoving --input ic.gadget --a-end 1.0 --dlna 0.025 --theta 0.5 --output-dir "$name" "$@" > "$name.log" 2>&1
  echo "$name exit $? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a done.txt
  "$OCTWALK" power "$name/$(ls "$name" | grep snap_ | tail -1)" --n-mesh 256 --interlace --linear --reference ic.gadget \
    -o "$name.power_z0.csv" > /dev/null 2>&1
  cp "$name/run.json" "$name.run.json"
  cp "$name/timing.csv" "$name.timing.csv"
}
run_box ewald "$OCTWALK"
if [ -n "$OLD" ]; then run_box pm128_gadget_old "$OLD" --pm-grid 128; fi
run_box pm128_gadget_new "$OCTWALK" --pm-grid 128
run_box pm256_a2_r6_new "$OCTWALK" --pm-grid 256 --asmth 2 --rcut 6

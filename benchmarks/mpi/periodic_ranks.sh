#!/usr/bin/env bash
# Periodic TreePM boxes on one GPU and on two GPU ranks (rank r on GPU r mod the node's GPUs; the host's cores
# shared out among the ranks): a 128^3 LCDM box from z = 49 to 0
# (`--comoving`, dlna 0.025, theta 0.5, --pm-grid 128) with P(k) at z = 0, and Newtonian steps of a 256^3 box of
# cosmological ICs (dt 1e-4 from a = 0.02, energy.csv every step). With OLD (another build's octwalk), the
# two-rank runs also with it, in the same invocation. PARTS picks the boxes (both by default).
# Usage: [PARTS="lcdm128 steps256"] bash benchmarks/mpi/periodic_ranks.sh OCTWALK OUT [OLD]
set -uo pipefail
X=$(realpath "$1") OUT=$2 OLD=${3:+$(realpath "$3")}
PARTS=${PARTS:-"lcdm128 steps256"}
mkdir -p "$OUT" && cd "$OUT" || exit 1
run_box() {
  local name=$1 np=$2 binary=$3 t0 rc
  shift 3
  t0=$(date +%s.%N)
  local args=(run --backend gpu --checkpoint-every 0 --quiet --output-dir "$name" "$@")
  local threads=$(( $(nproc) / np > 0 ? $(nproc) / np : 1 ))
  if [ "$np" = 1 ]; then OMP_NUM_THREADS=$threads timeout 3600 "$binary" "${args[@]}" > "$name.log" 2>&1
  else timeout 3600 mpirun -q -np "$np" -x OMP_NUM_THREADS=$threads --bind-to none "$binary" "${args[@]}" > "$name.log" 2>&1; fi
  rc=$?
  echo "$name np=$np exit $rc wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a done.txt
}
lcdm128() {
  "$X" ic cosmo --n-grid 128 --box-size 128 --z-begin 49 --seed 1 --omega0 0.31 --omega-lambda 0.69 \
    --hubble-param 0.677 --units gadget-mpc --sigma8 0.81 --ns 0.965 -o ic128.gadget > ic128.log 2>&1 || exit 1
  lcdm=(--comoving --input ic128.gadget --a-end 1.0 --dlna 0.025 --theta 0.5 --pm-grid 128)
  run_box lcdm128_g2_new 2 "$X" "${lcdm[@]}"
  if [ -n "$OLD" ]; then run_box lcdm128_g2_old 2 "$OLD" "${lcdm[@]}"; fi
  run_box lcdm128_g1 1 "$X" "${lcdm[@]}"
  for r in lcdm128_g1 lcdm128_g2_new lcdm128_g2_old; do
    [ -d "$r" ] || continue
    "$X" power "$r/$(ls "$r" | grep snap_ | tail -1)" --n-mesh 256 --interlace --linear --reference ic128.gadget \
      -o "$r.power_z0.csv" > /dev/null 2>&1
  done
}
steps256() {
  "$X" ic cosmo --n-grid 256 --z-begin 49 --box-size 200 -o ic256.gadget > ic256.log 2>&1 || exit 1
  steps=(--input ic256.gadget --pm-grid 256 --dt 1e-4 --t-end 0.0206 --energy-every 1 --snapshot-every 0)
  run_box g2_256_new 2 "$X" "${steps[@]}"
  if [ -n "$OLD" ]; then run_box g2_256_old 2 "$OLD" "${steps[@]}"; fi
  rm -f ic256.gadget
}
for part in $PARTS; do "$part"; done

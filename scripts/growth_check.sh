#!/usr/bin/env bash
# The linear-growth proof of issue 13: an LCDM box from z = 49 run to z = 1 and z = 0; for every
# k-bin below K_MAX (0.05 h/Mpc) the ratio P(k, a) / P(k, a_start) of the same phases must equal
# [D(a) / D(a_start)]^2 within 2% at z = 1 and 3% at z = 0 (`octwalk power --reference` gives both
# columns; cosmic variance cancels because the phases are the same).
#
# usage: bash scripts/growth_check.sh [N_GRID] [BOX]       (defaults 32 and 500 [Mpc/h]; the H200: 256)
# env:   OCTWALK (the program, default build/octwalk), WORK (a new directory, default growth_check.<pid>),
#        RUN_ARGS (extra options of `octwalk run`), K_MAX.
# It needs `octwalk run --comoving` (branch comoving) and periodic forces (branch periodic): the run line
# below uses the option names issue 13 gives (--comoving, --output-list with scale factors, --output-dir);
# check them against `octwalk run --help` once those branches are merged.
# The comparison itself was checked with 2LPT standing in for the run (ic cosmo at z = 1 and z = 0,
# the same seed): LPT alone does NOT pass (bins at k = 0.016, 0.028, 0.039 h/Mpc sit -0.5%, -2.7%, -5.7%
# low at z = 1 and -1.1%, -5.0%, -10.9% at z = 0 at 32^3 in 500 Mpc/h), as LPT's density loses power
# on these scales where gravity does not; the run must do better than its ICs' own approximation.
set -euo pipefail
cd "$(dirname "$0")/.."
N_GRID=${1:-32}
BOX=${2:-500}
OCTWALK=${OCTWALK:-build/octwalk}
WORK=${WORK:-growth_check.$$}
K_MAX=${K_MAX:-0.05}
COSMO="--omega0 0.3 --omega-lambda 0.7 --hubble-param 0.7 --units gadget-mpc"
mkdir -p "$WORK"
printf '0.5\n1.0\n' > "$WORK/outputs.txt"

"$OCTWALK" ic cosmo --n-grid "$N_GRID" --box-size "$BOX" --z-begin 49 --seed 1 $COSMO --format gadget2 \
  -o "$WORK/ic.gadget"
"$OCTWALK" run --comoving --input "$WORK/ic.gadget" --a-end 1.0 --output-list "$WORK/outputs.txt" \
  --box-size "$BOX" $COSMO --output-dir "$WORK/run" ${RUN_ARGS:-}

# The snapshots of the run, in the order written (a = 0.5 then a = 1).
mapfile -t snaps < <(ls -1 "$WORK"/run/snapshot_* 2>/dev/null | sort)
if [ "${#snaps[@]}" -lt 2 ]; then
  echo "growth_check: expected 2 snapshots in $WORK/run (a = 0.5, 1), found ${#snaps[@]}" >&2
  exit 1
fi
status=0
check() { # snapshot, a, tolerance, label
  "$OCTWALK" power "$1" --box-size "$BOX" --a "$2" --n-mesh $((2 * N_GRID)) --reference "$WORK/ic.gadget" \
    --reference-a 0.02 $COSMO -o "$WORK/power_$4.csv"
  awk -F, -v kmax="$K_MAX" -v tol="$3" -v label="$4" '
    /^#/ || /^k_low/ { next }
    $3 < kmax { n++; d = $8 / $9 - 1; if (d < 0) d = -d; if (d > worst) worst = d
                printf "%s: k = %.4f  P/P_start = %.5g  [D/D_start]^2 = %.5g  (%+.2f%%)\n", label, $3, $8, $9, 100 * ($8 / $9 - 1) }
    END { if (n == 0) { print label ": no bin below k = " kmax; exit 1 }
          printf "%s: %d bins, worst deviation %.2f%% (limit %.0f%%)\n", label, n, 100 * worst, 100 * tol
          exit worst > tol }' "$WORK/power_$4.csv" || status=1
}
check "${snaps[0]}" 0.5 0.02 z1
check "${snaps[1]}" 1.0 0.03 z0

[ "$status" = 0 ] && echo "growth_check: PASS" || echo "growth_check: FAIL"
exit "$status"

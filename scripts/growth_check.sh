#!/usr/bin/env bash
# The linear-growth proof of issue 13: an LCDM box from z = 49 run to z = 1 and z = 0; for every
# k-bin below K_MAX (0.05 h/Mpc) the ratio P(k, a) / P(k, a_start) of the same phases must equal
# [D(a) / D(a_start)]^2 within 2% at z = 1 and 3% at z = 0 (`octwalk power --reference` gives both
# columns; cosmic variance cancels because the phases are the same).
#
# usage: bash scripts/growth_check.sh [N_GRID] [BOX]       (defaults 32 and 500 [Mpc/h]; the H200: 256)
# env:   OCTWALK (the program, default build/octwalk), WORK (a new directory, default growth_check.<pid>),
#        RUN_ARGS (extra options of `octwalk run`), K_MAX, SEED.
# It needs `octwalk run --comoving` (branch comoving) and periodic forces (branch periodic): the run line
# below uses the option names issue 13 gives (--comoving, --output-list with scale factors, --output-dir);
# check them against `octwalk run --help` once those branches are merged.
# The comparison was checked with 2LPT standing in for the run (ic cosmo at z = 1 and 0, same seed;
# 32^3, 500 Mpc/h, n-mesh 128 interlaced). Same phases do not cancel everything: the realisation's
# second-order term 2 D Re(delta1 delta2*) / |delta1|^2, summed over a bin's few modes, stays and grows
# with D. 2LPT alone at z = 1, the bins at k = 0.016, 0.028, 0.039 h/Mpc, seeds 1-6 (measured):
#   seed 1: -0.3% -2.4% -7.6%   seed 2: -0.9% +1.5% -0.4%   seed 3: -0.6% -0.6% -3.6%
#   seed 4: -0.3% +0.8% -2.5%   seed 5: -0.1% +0.3% +2.3%   seed 6: -1.0% +1.1% -0.4%
# so a run can miss the 2% at z = 1 through its seed alone. The diagnostic at the end compares the run
# with 2LPT generated at the output's redshift from the same seed, which holds that term exactly
# (2LPT is exact to second order): its ratio is free of it. SEED picks the realisation (default 1).
#
# Why it fails today (measured, session 18; 16^3 in 500 Mpc/h from z = 49 to z = 1, seed 1, dlna 0.05,
# P_run / P_2LPT(z = 1) - 1 in the bins k = 0.016, 0.028, 0.039 h/Mpc):
#   tree theta 0.5: +16.6% -0.0% -2.4%   theta 0.25: -3.5% -8.5% -10.0%   exact Ewald (--direct): -3.8% -8.7% -10.3%
#   (the ErrTolIntAccuracy criterion instead of dlna 0.05 changes theta 0.5 by < 0.2%).
# (a) The tree's force error in a near-uniform box is the large term: theta 0.5 departs from exact forces by
#     +21% of P at k = 0.016 and +9% at 0.028-0.039, theta 0.25 agrees with them to 0.4%. A single plane wave
#     (2LPT ICs) grows 10% too fast under the tree at theta 0.5 and as D(a) to 0.2% under exact Ewald forces
#     (tests/app/test_comoving.cpp, LinearGrowth). Session 20: the error-controlled opening
#     (--err-tol-force-acc, default 0.002) cures this term at theta 0.5: 16^3, seed 1, the default time step,
#     P_run / P_2LPT(z = 1) - 1 = -4.0% -8.6% -9.5% (every group at theta / 2.25: -4.4% -8.5% -9.7%;
#     --err-tol-force-acc 0.02: +4.9% -6.3% -9.6%). RUN_ARGS="--err-tol-force-acc 0" gives theta everywhere.
# (b) Integration and the ICs' velocities: the plane wave in LCDM (exact forces, planar sheets) grows as D(a)
#     to -0.21% at z = 1, the same at dlna 0.0125-0.1; the ICs' velocities equal a H f psi to 1e-6.
# (c) The ICs: 2LPT's own second-order term is the seed scatter above; a plane wave has none.
# (d) The measurement: the same mesh for run and reference; not separated further.
# What remains with exact forces at 16^3 (-4% to -10%) is the run against 2LPT at z = 1: 16^3 in 500 Mpc/h is
# coarse (a wave along an axis of an 8^3 lattice grows 2.5% faster than D(a) under exact forces: lattice
# discreteness), so it is not yet known how much of it survives at 32^3.
set -euo pipefail
cd "$(dirname "$0")/.."
N_GRID=${1:-32}
BOX=${2:-500}
OCTWALK=${OCTWALK:-build/octwalk}
WORK=${WORK:-growth_check.$$}
K_MAX=${K_MAX:-0.05}
SEED=${SEED:-1}
COSMO="--omega0 0.3 --omega-lambda 0.7 --hubble-param 0.7 --units gadget-mpc"
mkdir -p "$WORK"
printf '0.5\n1.0\n' > "$WORK/outputs.txt"

"$OCTWALK" ic cosmo --n-grid "$N_GRID" --box-size "$BOX" --z-begin 49 --seed "$SEED" $COSMO --format gadget2 \
  -o "$WORK/ic.gadget"
"$OCTWALK" run --comoving --input "$WORK/ic.gadget" --a-end 1.0 --output-list "$WORK/outputs.txt" \
  --box-size "$BOX" $COSMO --output-dir "$WORK/run" ${RUN_ARGS:-}

# The run's last two snapshots, in the order written: a = 0.5 and a = 1 (a snapshot of the start, if
# the run writes one, comes before them).
# The run writes snap_NNNNNN.gadget at a_begin and at each output-list entry (a = 0.5, 1).
mapfile -t snaps < <(ls -1 "$WORK"/run/snap_*.gadget 2>/dev/null | sort | tail -n 2)
if [ "${#snaps[@]}" -lt 2 ]; then
  echo "growth_check: expected 2 snapshots in $WORK/run (a = 0.5, 1), found ${#snaps[@]}" >&2
  exit 1
fi
status=0
# The start is a perturbed lattice: a mesh 4 times finer (at most 512) keeps the window deconvolution's
# over-correction of a lattice below 1% (power_spectrum.h).
N_MESH=$((4 * N_GRID > 512 ? 512 : 4 * N_GRID))
check() { # snapshot, a, tolerance, label
  "$OCTWALK" power "$1" --box-size "$BOX" --a "$2" --n-mesh "$N_MESH" --interlace --reference "$WORK/ic.gadget" \
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

# Diagnostic (not part of pass/fail): the run against 2LPT at the same redshift and seed.
for pair in "0 1 0.5" "1 0 1.0"; do
  read -r index z a <<< "$pair"
  "$OCTWALK" ic cosmo --n-grid "$N_GRID" --box-size "$BOX" --z-begin "$z" --seed "$SEED" $COSMO --format gadget2 \
    -o "$WORK/lpt_z$z.gadget" > /dev/null
  "$OCTWALK" power "${snaps[$index]}" --box-size "$BOX" --a "$a" --n-mesh "$N_MESH" --interlace \
    --reference "$WORK/lpt_z$z.gadget" --reference-a "$a" $COSMO -o "$WORK/power_vs_2lpt_z$z.csv" > /dev/null
  awk -F, -v kmax="$K_MAX" -v z="$z" '/^#/ || /^k_low/ { next }
    $3 < kmax { printf "diagnostic z = %s: k = %.4f  P_run / P_2LPT(z) = %.4f\n", z, $3, $8 }' \
    "$WORK/power_vs_2lpt_z$z.csv"
done
[ "$status" = 0 ] && echo "growth_check: PASS" || echo "growth_check: FAIL"
exit "$status"

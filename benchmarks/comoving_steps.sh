#!/usr/bin/env bash
# The first steps of an n^3 LCDM box (n Mpc/h from z = 49, dlna 0.025 to a = 0.027: 12 steps; n = 256 unless
# N_GRID says otherwise) by two builds one after the other, tree + Ewald and TreePM on an n^3 mesh, with the
# step's phases in each run's timing.csv: the median of the steps between the first (the estimate walk) and the
# last (the snapshot). The two builds' energy.csv rows are compared: the same bytes mean the same forces. The new
# build also runs TreePM with the mesh on the host's cores (--pm-backend cpu) and with the classic step
# (--rebuild-every 1), whose rows are compared with the old build's too, and the largest relative difference of any
# energy.csv value from its default (the mesh on the device, the pipelined step).
#
#   [N_GRID=n] [BACKEND=cpu] bash benchmarks/comoving_steps.sh NEW_OCTWALK OLD_OCTWALK OUTDIR
set -uo pipefail
NEW=$1 OLD=$2 OUT=$3
N=${N_GRID:-256} BACKEND=${BACKEND:-gpu}
mkdir -p "$OUT" && cd "$OUT" || exit 1
"$NEW" ic cosmo --n-grid "$N" --box-size "$N" --z-begin 49 --seed 1 --omega0 0.31 --omega-lambda 0.69 \
  --hubble-param 0.677 --units gadget-mpc --sigma8 0.81 --ns 0.965 -o ic.gadget > ic.log 2>&1 || exit 1
run_box() {
  local name=$1 binary=$2 t0
  shift 2
  t0=$(date +%s.%N)
  "$binary" run --comoving --input ic.gadget --a-end 0.027 --dlna 0.025 --theta 0.5 --backend "$BACKEND" --quiet \
    --output-dir "$name" "$@" > "$name.log" 2>&1
  echo "$name exit $? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a done.txt
  rm -f "$name"/*.gadget "$name"/checkpoint*
}
run_box ewald_old "$OLD"
run_box ewald_new "$NEW"
run_box "pm${N}_old" "$OLD" --pm-grid "$N"
run_box "pm${N}_new" "$NEW" --pm-grid "$N"
run_box "pm${N}_new_host_mesh" "$NEW" --pm-grid "$N" --pm-backend cpu
run_box "pm${N}_new_classic" "$NEW" --pm-grid "$N" --rebuild-every 1
for pair in "ewald_old ewald_new" "pm${N}_old pm${N}_new" "pm${N}_old pm${N}_new_host_mesh" \
  "pm${N}_old pm${N}_new_classic"; do
  set -- $pair
  if [ -s "$1/energy.csv" ] && cmp -s <(grep -v '^#' "$1/energy.csv") <(grep -v '^#' "$2/energy.csv"); then
    echo "$1 / $2: energy.csv rows the same bytes"
  else echo "$1 / $2: energy.csv rows differ"; fi
done | tee -a done.txt
for other in "pm${N}_new_host_mesh" "pm${N}_new_classic"; do
python3 - "pm${N}_new" "$other" <<'PY' | tee -a done.txt
import csv, sys
def rows(name):
    return list(csv.reader(l for l in open(f"{name}/energy.csv") if not l.startswith("#")))[1:]
worst = 0.0
for a, b in zip(rows(sys.argv[1]), rows(sys.argv[2])):
    for x, y in zip(a, b):
        x, y = float(x), float(y)
        if y != 0: worst = max(worst, abs(x - y) / abs(y))
print(f"{sys.argv[1]} / {sys.argv[2]}: largest relative difference of an energy.csv value {worst:.3g}")
PY
done
for r in ewald_old ewald_new "pm${N}_old" "pm${N}_new" "pm${N}_new_host_mesh" "pm${N}_new_classic"; do
  python3 - "$r" <<'PY'
import csv, statistics, sys
name = sys.argv[1]
rows = list(csv.DictReader(l for l in open(f"{name}/timing.csv") if not l.startswith("#")))[1:-1]
cols = ("force_wall", "reorder", "integration", "diagnostics", "step_wall")
print(name, len(rows), "steps:", {k: round(statistics.median(float(x[k]) for x in rows), 4) for k in cols})
PY
done | tee medians.txt

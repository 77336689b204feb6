#!/usr/bin/env bash
# The TreePM mesh on several ranks: Newtonian steps of an N^3 box of cosmological ICs with the default periodic
# force (TreePM, the automatic mesh of 2 N^(1/3) cells a side) on NP ranks, each rank's peak resident memory
# sampled every 0.2 s, and the mesh's part of each step from timing.csv (mesh_sum: the bodies' masses on the mesh
# before the trees; mesh_solve: the transforms and the interpolation). With OLD (another build's octwalk), the same
# run with it in the same invocation, then the two runs' last snapshots compared body by body.
# Usage: [N_GRID=64] [NP=2] [STEPS=6] [BACKEND=cpu] [PM_GRID=auto] bash benchmarks/mpi/slab_mesh.sh OCTWALK OUT [OLD]
set -uo pipefail
X=$(realpath "$1") OUT=$2 OLD=${3:+$(realpath "$3")}
N_GRID=${N_GRID:-64} NP=${NP:-2} STEPS=${STEPS:-6} BACKEND=${BACKEND:-cpu} PM_GRID=${PM_GRID:-auto}
mkdir -p "$OUT" && cd "$OUT" || exit 1

# Peak VmRSS (MiB) of each octwalk process (not mpirun) whose command line names the run's directory, until the
# run ends.
sample_memory() {
  local name=$1 stop=$2
  declare -A peak=()
  while [ ! -e "$stop" ]; do
    for pid in $(pgrep -f -- "--output-dir $name( |$)"); do
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = octwalk ] || continue
      local kb
      kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null) || continue
      [ -n "$kb" ] && [ "$kb" -gt "${peak[$pid]:-0}" ] && peak[$pid]=$kb
    done
    sleep 0.2
  done
  for pid in "${!peak[@]}"; do echo "$pid $((peak[$pid] / 1024))"; done | sort -n > "$name.memory.txt"
}

run_box() {
  local name=$1 binary=$2 t0 rc
  local args=(run --backend "$BACKEND" --pm-grid "$PM_GRID" --checkpoint-every 0 --quiet --output-dir "$name" --input ic.gadget
              --dt 1e-4 --t-end "$(python3 -c "print(0.02 + $STEPS * 1e-4 - 5e-5)")" --energy-every 1
              --snapshot-every 0)
  local threads=$(( $(nproc) / NP > 0 ? $(nproc) / NP : 1 ))
  rm -f "$name.stop"
  sample_memory "$name" "$name.stop" &
  local sampler=$!
  t0=$(date +%s.%N)
  if [ "$NP" = 1 ]; then OMP_NUM_THREADS=$threads "$binary" "${args[@]}" > "$name.log" 2>&1
  else mpirun -q -np "$NP" --oversubscribe -x OMP_NUM_THREADS=$threads --bind-to none "$binary" "${args[@]}" \
         > "$name.log" 2>&1; fi
  rc=$?
  touch "$name.stop"
  wait "$sampler"
  echo "$name np=$NP exit $rc wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" \
       "peak MiB per rank: $(awk '{printf "%s ", $2}' "$name.memory.txt")" | tee -a done.txt
}

# Median of a timing.csv column over the steps after the first.
column_median() {
  python3 - "$1" "$2" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))[1:]
print(f"{statistics.median(float(r[sys.argv[2]]) for r in rows):.4f}" if rows else "-")
EOF
}

"$X" ic cosmo --n-grid "$N_GRID" --z-begin 49 --box-size "$((N_GRID * 200 / 256))" -o ic.gadget > ic.log 2>&1 || exit 1
run_box new "$X"
[ -n "$OLD" ] && run_box old "$OLD"
for r in new old; do
  [ -f "$r/timing.csv" ] || continue
  echo "$r: median over steps 2-$STEPS: step_wall $(column_median "$r/timing.csv" step_wall) s," \
       "force_wall $(column_median "$r/timing.csv" force_wall) s, mesh_sum $(column_median "$r/timing.csv" mesh_sum) s," \
       "mesh_solve $(column_median "$r/timing.csv" mesh_solve) s" \
       "$(head -3 "$r/timing.csv" | grep -q mesh_transposes && echo "(transforms $(column_median "$r/timing.csv" \
         mesh_transforms) s, transposes $(column_median "$r/timing.csv" mesh_transposes) s)")" | tee -a done.txt
done
# The two builds' energies step by step: the meshes' sums differ in order only, so the rows agree to rounding.
if [ -n "$OLD" ] && [ -f new/energy.csv ] && [ -f old/energy.csv ]; then
  python3 - new/energy.csv old/energy.csv <<'EOF' | tee -a done.txt
import csv, sys
rows = [list(csv.DictReader(l for l in open(f) if not l.startswith("#"))) for f in sys.argv[1:]]
worst = max(abs(float(a[c]) - float(b[c])) / abs(float(b[c])) for a, b in zip(*rows) for c in ("kinetic", "potential"))
print(f"energy.csv, new against old: {len(rows[0])} rows, largest relative difference of kinetic or potential {worst:.2e}")
EOF
fi
rm -f ic.gadget

#!/usr/bin/env bash
# Steps of `octwalk run` on 1, 2 and 4 ranks of one machine: whole step, force evaluation and its distributed
# phases, and the essential trees' volume, from each run's timing.csv (medians over the steps after the
# first; benchmarks/mpi/ranks_table.py). On a machine with one GPU the GPU ranks share it: the phases and the
# volumes are what a model of more GPUs starts from, the step times are not scaling figures.
# Usage: bash benchmarks/mpi/ranks.sh BUILD OUT "BACKENDS" "MODELS" "SIZES" "RANKS"
#   e.g. bash benchmarks/mpi/ranks.sh build out "cpu gpu" "plummer merger" "1048576 4194304" "1 2 4"
set -uo pipefail
BUILD=$(cd "$1" && pwd); OUT=$(mkdir -p "$2" && cd "$2" && pwd)
backends=${3:-cpu}; models=${4:-plummer}; sizes=${5:-65536}; ranks=${6:-"1 2"}
cores=$(nproc)
for b in $backends; do for m in $models; do for n in $sizes; do for p in $ranks; do
  dir=$OUT/${b}_${m}_n${n}_p${p}; rm -rf "$dir"
  threads=$(( cores / p > 0 ? cores / p : 1 ))
  args=(run --model "$m" --n "$n" --seed 5 --t-end 0.140625 --dt 0.015625 --backend "$b" --energy-every 1000
        --checkpoint-every 0 --quiet --output-dir "$dir")
  if [ "$p" = 1 ]; then
    OMP_NUM_THREADS=$threads timeout 900 "$BUILD/octwalk" "${args[@]}" > "$dir.log" 2>&1
  else
    timeout 900 mpirun -q --oversubscribe -np "$p" -x OMP_NUM_THREADS=$threads --bind-to none \
      "$BUILD/octwalk" "${args[@]}" > "$dir.log" 2>&1
  fi
  echo "$b $m n=$n P=$p threads/rank=$threads: exit $?"
done; done; done; done
python3 "$(dirname "$0")/ranks_table.py" "$OUT"/*/timing.csv | tee "$OUT/table.md"

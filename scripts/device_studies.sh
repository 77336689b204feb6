#!/usr/bin/env bash
# The accuracy and profile studies and a galaxy run on the device machine (after
# `bash scripts/device_run.sh build`); everything lands in $OUT as studies.tgz plus two snapshots.
# Commands are exactly those of benchmarks/results/studies/README.md.
set -uo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
OUT=${OUT:-out}
R=$OUT/studies
mkdir -p "$R"
B=build/octwalk
for model in plummer galaxy; do
  for lg in 15 17 19 22; do
    extra=""
    [ "$lg" = 19 ] && extra="--errors-dir $R/errors_${model}_2p$lg"
    $B accuracy --model "$model" --n $((1 << lg)) --theta 0.2:0.8:0.1 --mac bonsai,octgrav --sample 10000 \
      --csv "$R/accuracy_${model}_2p$lg.csv" --json "$R/accuracy_${model}_2p$lg.json" $extra \
      >"$R/accuracy_${model}_2p$lg.txt" 2>&1
    echo "accuracy $model 2^$lg: exit $?"
  done
  $B profile --model "$model" --n 2^15:2^22 --theta 0.2:0.8:0.2 --repeat 4 \
    --json "$R/profile_$model.json" --csv "$R/profile_$model.csv" >"$R/profile_$model.txt" 2>&1
  echo "profile $model: exit $?"
done
$B run --model galaxy --n 131072 --t-end 40 --dt 0.03125 --epsilon 0.02 --energy-every 16 --checkpoint-every 0 \
  --output-dir "$R/galaxy_run" --quiet >"$R/galaxy_run.txt" 2>&1
echo "galaxy run: exit $?"
mv "$R"/galaxy_run/snap_000000.tipsy "$R"/galaxy_run/snap_001280.tipsy "$OUT/" 2>/dev/null
rm -f "$R"/galaxy_run/checkpoint.bin*
tar czf "$OUT/studies.tgz" -C "$OUT" studies
ls -la "$OUT"
tail -3 "$R"/accuracy_plummer_2p22.txt "$R"/profile_plummer.txt "$R"/galaxy_run.txt

#!/usr/bin/env bash
# Energy over a long, violent run: a 1:3 galaxy merger of 240,000 bodies (the Bonsai thesis's Table 4.2 test:
# epsilon 0.1, dt 1/64 to T = 1000, 64,000 steps) with `octwalk run`'s default step, energy.csv every 64 steps.
#
#   bash benchmarks/merger_energy.sh OCTWALK OUTDIR THETA [SECONDS]
#
# SECONDS (default: no limit) stops the run there (SIGTERM: a checkpoint is written and `octwalk run --restart
# OUTDIR` continues it to the same bits). benchmarks/merger_energy_table.py summarises energy.csv (dE_max, dE at
# the end, drift).
set -uo pipefail
OCTWALK=$1 OUT=$2 THETA=$3 LIMIT=${4:-0}
mkdir -p "$(dirname "$OUT")"
cmd=("$OCTWALK" run --model merger --n 240000 --mass-ratio 0.3333333333333333 --seed 1 --epsilon 0.1 --dt 0.015625
  --t-end 1000 --theta "$THETA" --backend gpu --energy-every 64 --checkpoint-every 6400 --output-dir "$OUT" --quiet)
if [ "$LIMIT" -gt 0 ]; then timeout "$LIMIT" "${cmd[@]}"; else "${cmd[@]}"; fi
echo "merger theta $THETA: exit $? at $(date -u +%T); last row: $(tail -1 "$OUT/energy.csv")"

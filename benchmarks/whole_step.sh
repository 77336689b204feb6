#!/usr/bin/env bash
# Whole leapfrog steps on one GPU, each step option side by side in one run: Plummer spheres of 2^16 to 2^24
# bodies (seed 1, theta 0.5, epsilon 0.01), 64 steps of dt 1/64 from the initial conditions (`octwalk profile
# --steps`: medians over the steps), and each option's force error measured on its own last step against double
# direct summation (2048 sampled bodies). Options: the default of `octwalk run` (--rebuild-every auto, at theta 0.5,
# 0.4875, 0.475 and 0.45: Bonsai's error at theta 0.5 lies between 0.4875 and 0.475 at 2^22), the classic step (--rebuild-every 1), the pipelined step with lags 1 and 2, and, when an older octwalk
# binary is given, its pipelined step (timed only: older binaries do not measure the step's error).
#
#   bash benchmarks/whole_step.sh OCTWALK OUTDIR [OLD_OCTWALK] [EXPONENTS] [OPTIONS]
#
# OUTDIR receives one CSV and one report per option and N, and table.md (benchmarks/whole_step_table.py).
# EXPONENTS (default "16 18 20 22 24") are the log2 of the body counts; OPTIONS (default "default classic lag1
# lag2 default45") the step options to run, default4875, default475 and default45 being the default at theta 0.4875,
# 0.475 and 0.45.
# About 4 minutes on an H200 for the default options.
set -uo pipefail
OCTWALK=$1
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
OLD=${3:-}
EXPONENTS=${4:-16 18 20 22 24}
OPTIONS=${5:-default classic lag1 lag2 default45}
COMMON=(--model plummer --seed 1 --epsilon 0.01 --steps 64 --dt 0.015625 --backend gpu --direct-sample 0)

profile() { # binary, name, N, options
  local bin=$1 name=$2 n=$3; shift 3
  case " $OPTIONS " in *" $name "*) ;; *) [ "$name" = old_pipelined ] || return 0 ;; esac
  "$bin" profile "${COMMON[@]}" --n "$n" "$@" --csv "$OUT/${name}_$n.csv" >"$OUT/${name}_$n.txt" 2>&1
  echo "$(date -u +%T) $name N=$n: exit $?" | tee -a "$OUT/summary.txt"
}

for e in $EXPONENTS; do
  n=$((1 << e))
  profile "$OCTWALK" default "$n" --theta 0.5
  profile "$OCTWALK" classic "$n" --theta 0.5 --rebuild-every 1
  profile "$OCTWALK" lag1 "$n" --theta 0.5 --rebuild-every 0 --rebuild-lag 1
  profile "$OCTWALK" lag2 "$n" --theta 0.5 --rebuild-every 0 --rebuild-lag 2
  profile "$OCTWALK" default4875 "$n" --theta 0.4875
  profile "$OCTWALK" default475 "$n" --theta 0.475
  profile "$OCTWALK" default45 "$n" --theta 0.45
  if [ -n "$OLD" ]; then
    profile "$OLD" old_pipelined "$n" --theta 0.5 --rebuild-every 0
  fi
done
python3 "$(dirname "$0")/whole_step_table.py" "$OUT" >"$OUT/table.md"
cat "$OUT/table.md"

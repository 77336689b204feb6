#!/usr/bin/env bash
# The MAC / group study: one `octwalk accuracy` theta sweep per option into OUTDIR
# (a new directory), then the theta and interactions per body each option needs for median <= 1.23e-4
# and p99 <= 4.25e-4 (Bonsai at theta 0.5 on the same 2^22 Plummer sphere). The quadrupole is the softened
# expansion (the default) except in bonsai_merged_traceless, the earlier traceless expansion.
#   scripts/mac_study.sh OUTDIR [N] [BACKEND] [THETAS]
# CPU twin (2 cores, a few minutes): scripts/mac_study.sh /tmp/mac_study 131072 cpu
# H200: scripts/mac_study.sh /tmp/mac_study 4194304 gpu 0.3:0.6:0.025
set -euo pipefail
out=${1:?usage: mac_study.sh OUTDIR [N] [BACKEND] [THETAS]}
n=${2:-131072}
backend=${3:-cpu}
thetas=${4:-0.3:0.6:0.05}
bin=${OCTWALK:-build/octwalk}
mkdir "$out"
run() { # name, extra options
    local name=$1
    shift
    "$bin" accuracy --model plummer --n "$n" --seed 1 --epsilon 0.01 --theta "$thetas" --backend "$backend" \
        --sample 2000 --csv "$out/$name.csv" "$@"
}
run bonsai --mac bonsai --no-merge-groups
run bonsai_merged --mac bonsai
run bonsai_merged_traceless --mac bonsai --traceless-quadrupole
run relative --mac relative --no-merge-groups
run relative_merged --mac relative
python3 "$(dirname "$0")/mac_study.py" "$out"/*.csv

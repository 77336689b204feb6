#!/usr/bin/env bash
# Session 29, call 3 (a cold machine again: the warm one was released between calls): call 2 again up to its z = 0
# snapshot, then its periodic accuracy runs with room for the Ewald reference (float64, CPU: its structure factors
# over 2^24 bodies take minutes): the default error control first, theta everywhere if the call's time allows.
export OUT=${OUT:-out}; T=$OUT/c3; mkdir -p $T
START=$(date +%s); left() { echo $((575 - ($(date +%s) - START))); }
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/newbuild.txt 2>&1; s "newbuild: exit $?"
export LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
W=build/c2; mkdir -p $W; printf '1.0\n' >$W/outputs.txt
COSMO="--omega0 0.31 --omega-lambda 0.69 --hubble-param 0.677 --units gadget-mpc"
build/octwalk ic cosmo --n-grid 256 --box-size 256 --z-begin 49 --seed 1 $COSMO --sigma8 0.81 --ns 0.965 \
  --format gadget2 -o $W/ic.gadget >$T/ic.txt 2>&1; s "ic: exit $?"
timeout 280 build/octwalk run --comoving --input $W/ic.gadget --a-end 1.0 --output-list $W/outputs.txt $COSMO \
  --dlna 0.025 --theta 0.5 --checkpoint-every 0 --output-dir $W/run --quiet >$T/run.txt 2>&1; s "run: exit $?"
Z0=$(ls -1 $W/run/snap_*.gadget | sort | tail -n 1); s "z = 0 snapshot: $Z0"
ACC="--input $Z0 --epsilon 0.033333333 --mac bonsai --theta 0.5 --sample 200 --repeat 3 --backend gpu --box-size 256"
timeout $(left) build/octwalk accuracy $ACC -o $T/acc_periodic.json >$T/acc_periodic.txt 2>&1
s "accuracy periodic (err_tol_force_acc 0.002): exit $?"
timeout $(left) build/octwalk accuracy $ACC --err-tol-force-acc 0 -o $T/acc_periodic_theta.json \
  >$T/acc_periodic_theta.txt 2>&1; s "accuracy periodic theta everywhere: exit $?"
for f in acc_periodic acc_periodic_theta; do tail -n 4 $T/$f.txt >>$T/summary.txt; done
tar -czf $OUT/c3.tar.gz -C $OUT c3
cat $T/summary.txt

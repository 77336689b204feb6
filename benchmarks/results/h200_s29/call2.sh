#!/usr/bin/env bash
# Session 29, call 2 (cold machine): the 256^3 box of call 1 again (same ICs and run options, only the z = 0
# snapshot kept), then on that z = 0 box, with this tree's GPU walk: the force error against the Ewald sum in
# float64 (host/reference, 200 random targets) and the walk + forces time, periodic with the default error control,
# periodic with theta everywhere, and the same bodies isolated (box size 0, GPU float64 direct reference): the
# periodic walk's speed against the isolated one at equal N (issue 13's deliverable) on the box it asks about.
export OUT=${OUT:-out}; T=$OUT/c2; mkdir -p $T
s() { echo "$(date -u +%T) $*" | tee -a $T/summary.txt; }
OUT=$T STAGES="newbuild" bash scripts/device_session.sh >$T/newbuild.txt 2>&1; s "newbuild: exit $?"
export LD_LIBRARY_PATH=$PWD/.deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
W=build/c2; mkdir -p $W; printf '1.0\n' >$W/outputs.txt
COSMO="--omega0 0.31 --omega-lambda 0.69 --hubble-param 0.677 --units gadget-mpc"
build/octwalk ic cosmo --n-grid 256 --box-size 256 --z-begin 49 --seed 1 $COSMO --sigma8 0.81 --ns 0.965 \
  --format gadget2 -o $W/ic.gadget >$T/ic.txt 2>&1; s "ic: exit $?"
timeout 280 build/octwalk run --comoving --input $W/ic.gadget --a-end 1.0 --output-list $W/outputs.txt $COSMO \
  --dlna 0.025 --theta 0.5 --checkpoint-every 0 --output-dir $W/run --quiet >$T/run.txt 2>&1; s "run: exit $?"
cp $W/run/run.json $T/ 2>/dev/null
Z0=$(ls -1 $W/run/snap_*.gadget | sort | tail -n 1); s "z = 0 snapshot: $Z0"
ACC="--input $Z0 --epsilon 0.033333333 --mac bonsai --theta 0.5 --sample 200 --repeat 3 --backend gpu"
timeout 100 build/octwalk accuracy $ACC --box-size 256 -o $T/acc_periodic.json >$T/acc_periodic.txt 2>&1
s "accuracy periodic (err_tol_force_acc 0.002): exit $?"
timeout 100 build/octwalk accuracy $ACC --box-size 256 --err-tol-force-acc 0 -o $T/acc_periodic_theta.json \
  >$T/acc_periodic_theta.txt 2>&1; s "accuracy periodic theta everywhere: exit $?"
timeout 60 build/octwalk accuracy $ACC -o $T/acc_isolated.json >$T/acc_isolated.txt 2>&1
s "accuracy isolated: exit $?"
for f in acc_periodic acc_periodic_theta acc_isolated; do tail -n 6 $T/$f.txt >>$T/summary.txt; done
tar -czf $OUT/c2.tar.gz -C $OUT c2
cat $T/summary.txt

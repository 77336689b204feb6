#!/usr/bin/env bash
# Restart of a pipelined 64^3 comoving run from its step-2 checkpoint, the previous build (d87758e) and this one
# alternately, twice each: wall time and peak memory; each restart's outputs against the uninterrupted run's.
cd "${1:-.}"
prep() { rm -rf $1 && mkdir $1 && cp base/checkpoint.bin.prev $1/checkpoint.bin && cp base/run.json base/energy.csv base/lagrange.csv base/timing.csv base/snap_000000.gadget $1/; }
for i in 1 2; do for b in old new; do
  d=$([ $b = old ] && echo ${OLD:-old} || echo ${NEW:-build})
  prep r_${b}_$i
  /usr/bin/time -f '%M KB peak, %e s wall' $d/octwalk run --restart r_${b}_$i --quiet > r_${b}_$i.log 2>&1
  echo "$b $i $(tail -1 r_${b}_$i.log)"
  cmp -s r_${b}_$i/snap_000003.gadget base/snap_000003.gadget && cmp -s <(tail -n +2 r_${b}_$i/energy.csv) <(tail -n +2 base/energy.csv) && echo "$b $i: last snapshot and energy rows as the uninterrupted run's"
done; done

#!/usr/bin/env python3
"""Per step of a timeline CSV (octwalk run/profile --timeline; .gz read as well): the step's wall time (the stepping
thread's first start to last end), its wait for a background build and the device's walk and forces (walk_count,
scan, walk_write, body_node, body_leaf), then their means over a range of steps and the ratio of the means: the
steady-state figures of a pipelined run, whose first steps wait for its first, slow builds.

    python3 scripts/timeline_steps.py TIMELINE.csv[.gz] [--from 21] [--to 40]
"""
import argparse
import collections
import csv
import gzip

WALK = ("walk_count", "scan", "walk_write", "body_node", "body_leaf")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("timeline")
    ap.add_argument("--from", dest="first", type=int, default=1, help="first step of the means")
    ap.add_argument("--to", dest="last", type=int, default=None, help="last step of the means (default: the last)")
    a = ap.parse_args()
    opener = gzip.open if a.timeline.endswith(".gz") else open
    with opener(a.timeline, "rt") as f:
        rows = list(csv.reader(line for line in f if not line.startswith("#")))[1:]
    steps = collections.defaultdict(list)
    for r in rows:
        if r:
            steps[int(r[0])].append((r[1], r[2], float(r[3]) * 1e3, float(r[4]) * 1e3))
    print("step  wall_ms  wait_ms  walk_forces_ms")
    chosen = []
    for s in sorted(steps):
        host = [x for x in steps[s] if x[0] == "host"]
        if s < 1 or not host:
            continue
        wall = max(x[3] for x in host) - min(x[2] for x in host)
        wait = sum(x[3] - x[2] for x in host if x[1] == "wait_build")
        walk = sum(x[3] - x[2] for x in steps[s] if x[0] in ("device", "host-walk") and x[1] in WALK)
        print(f"{s:4d} {wall:8.2f} {wait:8.2f} {walk:15.2f}")
        if s >= a.first and (a.last is None or s <= a.last):
            chosen.append((wall, walk))
    if chosen:
        wall = sum(c[0] for c in chosen) / len(chosen)
        walk = sum(c[1] for c in chosen) / len(chosen)
        print(f"steps {a.first}-{a.last or max(steps)}: mean step {wall:.2f} ms, mean walk + forces {walk:.2f} ms, "
              f"ratio {wall / walk:.3f}, longest step {max(c[0] for c in chosen):.1f} ms")


if __name__ == "__main__":
    main()

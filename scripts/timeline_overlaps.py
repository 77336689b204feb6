#!/usr/bin/env python3
"""Per step of a timeline CSV (octwalk run/profile --timeline): the duration of each host phase beside the
device's own interval of the same name, and the background build's phases that overlapped it, so a host
phase stretched by the build's threads shows.

    python3 scripts/timeline_overlaps.py TIMELINE.csv [--phases kick,adopt,kick_drift,wait_build,evaluate]
"""
import argparse
import csv


def read_spans(path):
    with open(path) as f:
        rows = list(csv.reader(line for line in f if not line.startswith("#")))
    return [(int(r[0]), r[1], r[2], float(r[3]) * 1e3, float(r[4]) * 1e3) for r in rows[1:] if r]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("timeline")
    ap.add_argument("--phases", default="kick_drift,wait_build,adopt,evaluate,kick")
    args = ap.parse_args()
    phases = args.phases.split(",")
    spans = read_spans(args.timeline)
    print("step  phase        host_ms  device_ms  build phases beside it")
    for step in sorted({s[0] for s in spans}):
        for _, lane, phase, begin, end in (s for s in spans if s[0] == step and s[1] == "host"):
            if phase not in phases:
                continue
            device = [e - b for st, ln, ph, b, e in spans if st == step and ln == "device" and ph == phase]
            beside = [ph for _, ln, ph, b, e in spans if ln == "host-build" and b < end and e > begin]
            dev = f"{device[0]:9.3f}" if device else "        -"
            print(f"{step:4d}  {phase:11s} {end - begin:8.3f} {dev}  {' '.join(beside)}")


if __name__ == "__main__":
    main()

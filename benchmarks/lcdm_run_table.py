#!/usr/bin/env python3
"""One line per comoving run from its timing.csv: the sum of the steps (step_wall less io), the median step, the
median of the last 19 steps (z = 0 in a run of dlna 0.025 from z = 49), the body-node and body-leaf seconds over
the run and at z = 0, and the last step's node + leaf interactions a body.

Usage: python3 benchmarks/lcdm_run_table.py RUN.timing.csv [...]
"""
import csv
import statistics
import sys

LAST = 19


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def line(path):
    r = rows(path)
    step = [float(x["step_wall"]) - float(x["io"]) for x in r]
    total = lambda k: sum(float(x[k]) for x in r)
    last = lambda k: statistics.median(float(x[k]) for x in r[-LAST:])
    return (f"{path:28s} steps {len(r)}: {sum(step):.2f} s, median {statistics.median(step):.4f} s, "
            f"z = 0 {statistics.median(step[-LAST:]):.4f} s; body-node {total('body_node'):.2f} s "
            f"(z = 0 {last('body_node'):.4f}), body-leaf {total('body_leaf'):.2f} s (z = 0 {last('body_leaf'):.4f}); "
            f"last step {float(r[-1]['node_interactions_per_body']):.0f} + "
            f"{float(r[-1]['leaf_interactions_per_body']):.0f} a body")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print(line(p))

#!/usr/bin/env python3
"""Interactions per body each MAC / group option needs for a target accuracy.

Reads `octwalk accuracy --csv` files (one per option, each a sweep over theta), and for every file
finds by linear interpolation in theta the largest theta at which median <= --median and
p99 <= --p99, and the node and leaf (body-body) interactions per body there. The cost column
weights a leaf interaction by --leaf-weight of a node one (38 vs 70 flops in the Octgrav paper).

  python3 scripts/mac_study.py benchmarks/results/accuracy/mac_study/*.csv
"""
import argparse
import csv
import sys


def read_rows(path):
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    return sorted(rows, key=lambda r: float(r["theta"]))


def crossing(rows, median, p99):
    """Largest theta meeting both bounds, interpolated between the last passing and first failing row."""
    def ok(r):
        return float(r["median"]) <= median and float(r["p99"]) <= p99

    last = None
    for k, r in enumerate(rows):
        if ok(r):
            last = k
        else:
            break
    if last is None:
        return None, "fails at the smallest theta"
    if last == len(rows) - 1:
        return None, "passes at the largest theta"
    a, b = rows[last], rows[last + 1]
    # The fraction of the step at which the first bound is crossed (each error assumed linear in theta).
    t = 1.0
    for key, bound in (("median", median), ("p99", p99)):
        ea, eb = float(a[key]), float(b[key])
        if eb > bound and eb != ea:
            t = min(t, (bound - ea) / (eb - ea))

    def lerp(key):
        return float(a[key]) + t * (float(b[key]) - float(a[key]))

    return {k: lerp(k) for k in ("theta", "node_per_body", "leaf_per_body", "median", "p99")}, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--median", type=float, default=1.23e-4, help="median relative error bound (Bonsai, theta 0.5)")
    ap.add_argument("--p99", type=float, default=4.25e-4, help="p99 relative error bound (Bonsai, theta 0.5)")
    ap.add_argument("--leaf-weight", type=float, default=0.6, help="cost of a body-body over a body-node interaction")
    a = ap.parse_args()
    print("| option | theta | median | p99 | node/body | leaf/body | node + %.1f leaf |" % a.leaf_weight)
    print("|---|---|---|---|---|---|---|")
    for path in a.csv:
        rows = read_rows(path)
        name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        at, why = crossing(rows, a.median, a.p99)
        if at is None:
            print("| %s | %s |  |  |  |  |  |" % (name, why))
            continue
        cost = at["node_per_body"] + a.leaf_weight * at["leaf_per_body"]
        print("| %s | %.3f | %.3g | %.3g | %.0f | %.0f | %.0f |" % (name, at["theta"], at["median"], at["p99"],
                                                                at["node_per_body"], at["leaf_per_body"], cost))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""One row per run directory (BACKEND_MODEL_nN_pP/timing.csv): medians over the steps after the first of the
whole step, the force evaluation and, on several ranks, its distributed phases and the essential trees' volume."""
import csv
import os
import statistics
import sys

PHASES = ["local_tree", "essential_build", "exchange", "exchange_wait", "remote_walk"]


def rows(path):
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(lines))[1:]  # the first step also cuts the domains and warms the device


def median(rs, key):
    return statistics.median(float(r[key]) for r in rs) if rs and key in rs[0] else float("nan")


def main(paths):
    print("| run | P | step [s] | force [s] | " + " | ".join(PHASES) + " | essential nodes | essential MB | imbalance |")
    print("|---|---|" + "---|" * (len(PHASES) + 5))
    for path in sorted(paths):
        name = os.path.basename(os.path.dirname(path))
        rs = rows(path)
        if not rs:
            continue
        ranks = name.rsplit("_p", 1)[1]
        distributed = "local_tree" in rs[0]
        cells = [f"{median(rs, k):.4g}" if distributed else "" for k in PHASES]
        nodes = f"{median(rs, 'essential_nodes'):.0f}" if distributed else ""
        mb = f"{median(rs, 'essential_bytes') / 1e6:.2f}" if distributed else ""
        imbalance = f"{max(float(r['imbalance']) for r in rs):.3f}" if distributed else ""
        print(f"| {name.rsplit('_p', 1)[0]} | {ranks} | {median(rs, 'step_wall'):.4g} | "
              f"{median(rs, 'force_wall'):.4g} | " + " | ".join(cells) + f" | {nodes} | {mb} | {imbalance} |")


if __name__ == "__main__":
    main(sys.argv[1:])

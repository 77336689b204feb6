#!/usr/bin/env python3
"""Energy conservation of benchmarks/merger_energy.sh's runs: from each energy.csv, the largest |dE/E0|, dE/E0 at
the end, the least-squares slope of dE/E0 over time (a secular drift) and the mean and scatter of dE/E0 over the
second half of the run.

    python3 benchmarks/merger_energy_table.py ENERGY_CSV [ENERGY_CSV ...]
"""

import csv
import statistics
import sys


def summary(path):
    with open(path) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    t = [float(r["time"]) for r in rows]
    de = [float(r["dE_over_E0"]) for r in rows]
    mt, md = statistics.mean(t), statistics.mean(de)
    slope = sum((a - mt) * (b - md) for a, b in zip(t, de)) / sum((a - mt) ** 2 for a in t)
    late = [d for d, tt in zip(de, t) if tt >= t[-1] / 2]
    worst = max(range(len(de)), key=lambda k: abs(de[k]))
    return (f"| {path} | {len(rows)} | {abs(de[worst]):.3g} (t = {t[worst]:.0f}) | {de[-1]:.3g} | "
            f"{slope * (t[-1] - t[0]):.3g} | {statistics.mean(late):.3g} / {statistics.pstdev(late):.3g} |")


def main():
    print("| energy.csv | rows | max abs(dE/E0) | dE/E0 at the end | fitted drift over the run | second half: "
          "mean / scatter |")
    print("|---|---|---|---|---|---|")
    for path in sys.argv[1:]:
        print(summary(path))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Markdown table of benchmarks/whole_step.sh's CSVs: per N and step option, the median whole step, the walk and
forces inside it, the interactions per body of the last step, that step's force error against direct summation,
and the step time relative to the classic step's.

    python3 benchmarks/whole_step_table.py OUTDIR
"""

import csv
import glob
import os
import re
import sys

OPTIONS = [("default", "`run` default (auto), theta 0.5"), ("default4875", "`run` default (auto), theta 0.4875"),
           ("default475", "`run` default (auto), theta 0.475"),
           ("default45", "`run` default (auto), theta 0.45"),
           ("classic", "classic (`--rebuild-every 1`), theta 0.5"), ("lag1", "pipelined, lag 1, theta 0.5"),
           ("lag2", "pipelined, lag 2, theta 0.5"), ("old_pipelined", "older binary, pipelined, theta 0.5")]


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def main():
    out = sys.argv[1]
    found = {}
    for path in glob.glob(os.path.join(out, "*.csv")):
        m = re.match(r"(.+)_(\d+)\.csv$", os.path.basename(path))
        if m and rows(path):
            found[(m.group(1), int(m.group(2)))] = rows(path)[0]
    print("| N | step option | whole step [ms] | walk + forces [ms] | node / leaf per body | error median / p99 "
          "| step / classic |")
    print("|---|---|---|---|---|---|---|")
    for n in sorted({n for _, n in found}):
        classic = found.get(("classic", n))
        for key, name in OPTIONS:
            r = found.get((key, n))
            if not r:
                continue
            step = 1e3 * float(r["step_wall"])
            walk = 1e3 * float(r["walk_seconds"])
            error = (f"{float(r['step_error_median']):.3g} / {float(r['step_error_p99']):.3g}"
                     if r.get("step_error_sample", "0") not in ("", "0") else "not measured")
            ratio = f"{step / (1e3 * float(classic['step_wall'])):.3f}" if classic else ""
            print(f"| 2^{n.bit_length() - 1} | {name} | {step:.2f} | {walk:.2f} | "
                  f"{float(r['node_per_body']):.0f} / {float(r['leaf_per_body']):.0f} | {error} | {ratio} |")


if __name__ == "__main__":
    main()

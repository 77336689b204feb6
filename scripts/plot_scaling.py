#!/usr/bin/env python3
"""Thread scaling of the host tree pipeline from Google Benchmark JSON of octwalk_bench_host.

Reads BM_HostTotal and BM_HostStep cases (arguments n, model, threads; threads 0 = the OpenMP default is
left out) from one or more --benchmark_out files (several rounds are combined: the median time per case),
prints a table per benchmark, model and N (threads, median time, bodies/s, speed-up over 1 thread,
parallel efficiency = speed-up / threads, and the median of each host phase), and with -o draws speed-up
and efficiency against threads (one line per benchmark, model and N, an ideal line, and the 60% efficiency
target).

  build/benchmarks/octwalk_bench_host --benchmark_filter='BM_Host(Total|Step)/n:(1048576|4194304|16777216)/model:0/threads:(1|2|4|8|16)/' \\
      --benchmark_repetitions=3 --benchmark_out=scaling.json --benchmark_out_format=json
  python3 scripts/plot_scaling.py scaling.json -o scaling.png

The table needs only the standard library; the plot needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import json
import re
import statistics
import sys

CASE = re.compile(r"^(BM_Host(?:Total|Step))/n:(\d+)/model:(\d+)/threads:(\d+)")
PHASES = ("sort_s", "cells_s", "multipoles_s", "groups_s", "packing_s")
MODELS = {0: "plummer", 1: "galaxy"}


class InputError(Exception):
    """A file that is missing or is not Google Benchmark JSON (the message names it)."""


def read_cases(paths):
    """{(benchmark, model, n, threads): {"time": [s, ...], phase: [s, ...]}} over all files."""
    cases = {}
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
            runs = doc["benchmarks"]
        except (OSError, ValueError, KeyError) as e:
            raise InputError(f"{path}: not Google Benchmark JSON ({e})")
        for r in runs:
            m = CASE.match(r.get("name", ""))
            if not m or r.get("run_type", "iteration") != "iteration" or int(m.group(4)) == 0:
                continue
            key = (m.group(1), MODELS.get(int(m.group(3)), m.group(3)), int(m.group(2)), int(m.group(4)))
            scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[r.get("time_unit", "ns")]
            entry = cases.setdefault(key, {"time": []})
            entry["time"].append(r["real_time"] * scale)
            for p in PHASES:
                if p in r:
                    entry.setdefault(p, []).append(r[p])
    if not cases:
        raise InputError(f"{', '.join(paths)}: no BM_HostTotal or BM_HostStep cases with threads >= 1")
    return cases


def scaling_rows(cases):
    """{(benchmark, model, n): [(threads, time, phases, speed-up, efficiency), ...]} sorted by threads."""
    series = {}
    for (bench, model, n, threads), entry in cases.items():
        phases = {p: statistics.median(entry[p]) for p in PHASES if p in entry}
        series.setdefault((bench, model, n), []).append((threads, statistics.median(entry["time"]), phases))
    rows = {}
    for key, points in series.items():
        points.sort()
        one = next((t for th, t, _ in points if th == 1), None)
        rows[key] = [(th, t, ph, one / t if one else float("nan"), one / t / th if one else float("nan"))
                     for th, t, ph in points]
    return rows


def print_table(rows):
    for (bench, model, n), points in sorted(rows.items()):
        print(f"\n{bench} {model} N = {n} (2^{n.bit_length() - 1})")
        print("threads  time_ms  Mbodies/s  speedup  efficiency  " + "  ".join(p[:-2] + "_ms" for p in PHASES))
        for th, t, ph, speedup, eff in points:
            phases = "  ".join(f"{1e3 * ph[p]:>{len(p) + 1}.2f}" if p in ph else " " * (len(p) + 1) for p in PHASES)
            print(f"{th:>7}  {1e3 * t:>7.2f}  {n / t / 1e6:>9.1f}  {speedup:>7.2f}  {eff:>10.2f}  {phases}")


def plot(rows, out):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as missing:
        sys.exit(f"plot_scaling.py: {missing}; the table above is complete, install python3-matplotlib for -o")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    most = max(th for points in rows.values() for th, *_ in points)
    for (bench, model, n), points in sorted(rows.items()):
        threads = [p[0] for p in points]
        label = f"{bench[3:]} {model} 2^{n.bit_length() - 1}"
        left.plot(threads, [p[3] for p in points], marker="o", label=label)
        right.plot(threads, [p[4] for p in points], marker="o", label=label)
    left.plot([1, most], [1, most], "k--", lw=0.8, label="ideal")
    right.axhline(0.6, color="k", ls=":", lw=0.8, label="target 0.6")
    for ax, name in ((left, "speed-up over 1 thread"), (right, "parallel efficiency")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("threads")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    left.set_yscale("log", base=2)
    right.set_ylim(0, 1.1)
    right.legend(fontsize=7)
    fig.suptitle("octwalk host tree pipeline (keys, sort, cells, multipoles, groups, packing)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"\nwrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="octwalk_bench_host --benchmark_out JSON files")
    parser.add_argument("-o", "--output", help="PNG of speed-up and efficiency against threads")
    args = parser.parse_args()
    try:
        rows = scaling_rows(read_cases(args.files))
    except InputError as e:
        sys.exit(f"plot_scaling.py: {e}")
    print_table(rows)
    if args.output:
        plot(rows, args.output)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The GPU force benchmarks as one table: variant x phase times x accuracy.

Reads the JSON of octwalk_bench_gpu (--benchmark_out=... --benchmark_out_format=json) and prints a
Markdown table of BM_GpuForces and BM_GpuForcesTuning: the medians of each device phase in ms,
"walk + forces" = the device time without the upload (pass 1 + scan + pass 2 + body-node +
body-leaf + download, as in benchmarks/results/gpu_forces/README.md), interactions per body and the median and
p99 relative acceleration error of 2000 sampled bodies against direct summation.

Usage: python3 dev/variant_table.py bench_gpu.json
"""
import json
import sys

PHASES = ["walk_count", "scan", "walk_write", "body_node", "body_leaf", "download"]
# Counter names of older result files.
OLD_NAMES = {"walk_count": "pass1", "walk_write": "pass2"}


def variant(name):
    """'BM_GpuForcesTuning/N:4194304/theta100:50/...' -> 'N 2^22 theta100 50 ...'."""
    parts = name.split("/")[1:]
    out = []
    for p in parts:
        if p.startswith(("iterations", "manual_time")):
            continue
        key, _, value = p.partition(":")
        if key == "N" and value.isdigit() and int(value) & (int(value) - 1) == 0:
            value = "2^%d" % (int(value).bit_length() - 1)
        out.append(f"{key}={value}" if value else key)
    return " ".join(out)


def main():
    with open(sys.argv[1]) as f:
        runs = json.load(f)["benchmarks"]
    header = ["benchmark", "variant", "pass 1", "scan", "pass 2", "body-node", "body-leaf", "download",
              "walk + forces [ms]", "node/body", "leaf/body", "median", "p99"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in runs:
        name = r["name"]
        if not name.startswith(("BM_GpuForces/", "BM_GpuForcesTuning/")) or "error_message" in r:
            continue
        ms = [1e3 * r.get(p + "_s", r.get(OLD_NAMES.get(p, p) + "_s", float("nan"))) for p in PHASES]
        row = [name.split("/")[0], variant(name)] + [f"{t:.2f}" for t in ms] + [
            f"{sum(ms):.1f}",
            f"{r.get('node_per_body', 0):.0f}",
            f"{r.get('leaf_per_body', 0):.0f}",
            f"{r.get('median_error', 0):.3g}",
            f"{r['p99_error']:.3g}" if "p99_error" in r else "-",
        ]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()

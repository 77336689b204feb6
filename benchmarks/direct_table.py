#!/usr/bin/env python3
"""BM_GpuDirect / BM_GpuDirectTuning as one Markdown table: interactions per second by size and variant.

Usage: python3 benchmarks/direct_table.py bench_gpu.json
"""
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        runs = [r for r in json.load(f)["benchmarks"] if r.get("run_type", "iteration") == "iteration"]
    rows = {}
    variants = []
    for r in runs:
        if "interactions_per_s" not in r:
            continue
        size = "%d x %d" % (r["targets"], r["sources"])
        label = r.get("label", "default")
        if label not in variants:
            variants.append(label)
        rows.setdefault(size, {})[label] = r["interactions_per_s"] / 1e12
    print("| targets x sources | " + " | ".join(variants) + " |")
    print("|---|" + "---|" * len(variants))
    for size, by in rows.items():
        print("| " + size + " | " + " | ".join("%.3f" % by[v] if v in by else "" for v in variants) + " |")
    print("\n(1e12 interactions per second, acc + pot)")


if __name__ == "__main__":
    main()

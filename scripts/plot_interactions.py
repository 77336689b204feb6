#!/usr/bin/env python3
"""Interactions per body against step, from the timing.csv of octwalk run, so users see what a tree that is
refitted instead of rebuilt costs.

Reads the columns node_interactions_per_body and leaf_interactions_per_body (body-node and body-body
interactions per body of each step's tree walk), and steps_since_rebuild when the run has one (a run whose
device refits the tree between host rebuilds; without it every step's tree is freshly built). Prints a
table of the interactions per body against steps since the last rebuild (median over the steps with that
age, and the growth over the fresh tree's), or against step when the column is absent, and with -o draws
them: against step, and against steps since the last rebuild when known.

  octwalk run --model plummer --n 65536 --t-end 1 --output-dir run16
  python3 scripts/plot_interactions.py run16/timing.csv -o interactions.png

The table needs only the standard library; the plot needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import csv
import statistics
import sys

NODE, LEAF, AGE = "node_interactions_per_body", "leaf_interactions_per_body", "steps_since_rebuild"


class InputError(Exception):
    """A file that is missing or lacks the columns (the message names it)."""


def read_timing(path):
    """{"step": [...], NODE: [...], LEAF: [...], AGE: [...] or absent}."""
    try:
        with open(path, newline="") as f:
            lines = [line for line in f if not line.startswith("#")]
    except OSError as e:
        raise InputError(f"{path}: {e}")
    rows = list(csv.DictReader(lines))
    if not rows:
        raise InputError(f"{path}: no rows")
    missing = [c for c in ("step", NODE, LEAF) if c not in rows[0]]
    if missing:
        raise InputError(f"{path}: no column {', '.join(missing)} (a timing.csv of an octwalk older than these "
                         "columns?)")
    columns = ["step", NODE, LEAF] + ([AGE] if AGE in rows[0] else [])
    data = {c: [] for c in columns}
    for number, r in enumerate(rows, start=2):
        try:
            for c in columns:
                data[c].append(int(r[c]) if c in ("step", AGE) else float(r[c]))
        except (ValueError, TypeError):
            raise InputError(f"{path}: data row {number}: {c} = {r.get(c)!r} is not a number")
    return data


def by_age(data):
    """[(age, steps, median node, median leaf), ...] sorted by age."""
    groups = {}
    for age, node, leaf in zip(data[AGE], data[NODE], data[LEAF]):
        groups.setdefault(age, []).append((node, leaf))
    return [(age, len(v), statistics.median(n for n, _ in v), statistics.median(l for _, l in v))
            for age, v in sorted(groups.items())]


def print_table(data):
    if AGE in data:
        rows = by_age(data)
        fresh = next(((n, l) for age, _, n, l in rows if age == 0), None)
        print("steps_since_rebuild  steps  node_per_body  leaf_per_body  growth_over_fresh")
        for age, count, node, leaf in rows:
            growth = f"{(node + leaf) / sum(fresh):.3f}" if fresh and sum(fresh) > 0 else "-"
            print(f"{age:>19}  {count:>5}  {node:>13.1f}  {leaf:>13.1f}  {growth:>17}")
        return
    print("no steps_since_rebuild column: every step's tree was built afresh")
    print(" step  node_per_body  leaf_per_body")
    for step, node, leaf in zip(data["step"], data[NODE], data[LEAF]):
        print(f"{step:>5}  {node:>13.1f}  {leaf:>13.1f}")


def plot(data, out, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as missing:
        sys.exit(f"plot_interactions.py: {missing}; the table above is complete, install python3-matplotlib for -o")
    with_age = AGE in data
    fig, axes = plt.subplots(1, 2 if with_age else 1, figsize=(12 if with_age else 7, 4.5), squeeze=False)
    left = axes[0][0]
    left.plot(data["step"], data[NODE], lw=1, label="body-node")
    left.plot(data["step"], data[LEAF], lw=1, label="body-body")
    left.set_xlabel("step")
    left.set_ylabel("interactions per body")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    if with_age:
        right = axes[0][1]
        right.scatter(data[AGE], data[NODE], s=6, alpha=0.4, label="body-node (steps)")
        right.scatter(data[AGE], data[LEAF], s=6, alpha=0.4, label="body-body (steps)")
        rows = by_age(data)
        right.plot([r[0] for r in rows], [r[2] for r in rows], "k-", lw=1, label="median")
        right.plot([r[0] for r in rows], [r[3] for r in rows], "k-", lw=1)
        right.set_xlabel("steps since the last rebuild (0: a freshly built tree)")
        right.set_ylabel("interactions per body")
        right.grid(alpha=0.3)
        right.legend(fontsize=8)
    fig.suptitle(title or "octwalk: tree walk interactions per body")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"\nwrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="timing.csv of octwalk run")
    parser.add_argument("-o", "--output", help="PNG of the interactions per body")
    parser.add_argument("--title", help="title of the figure")
    args = parser.parse_args()
    try:
        data = read_timing(args.file)
    except InputError as e:
        sys.exit(f"plot_interactions.py: {e}")
    print_table(data)
    if args.output:
        plot(data, args.output, args.title)


if __name__ == "__main__":
    main()

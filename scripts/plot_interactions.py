#!/usr/bin/env python3
"""Interactions per body against step, from the timing.csv of one or more runs of octwalk run, so users see
what a tree that is refitted instead of rebuilt costs.

Reads the columns node_interactions_per_body and leaf_interactions_per_body (body-node and body-body
interactions per body of each step's own tree walk) and steps_since_rebuild (0 for a tree built for the step:
every step of the classic --rebuild-every 1, and the steps that adopt a new tree in a pipelined run; older
files lack the column, and then every step's tree was built afresh). Prints per run a table of the
interactions per body against steps since the last rebuild (median over the steps of that age, and the
growth of node + leaf over the first run's median at age 0: give the classic run first to compare with a
fresh tree), and with -o draws node + leaf per body against step and against steps since the last rebuild.

  for k in 1 0 16; do
    octwalk run --model plummer --n 1048576 --t-end 0.375 --dt 0.0078125 --rebuild-every $k --energy-every 1000 \
        --quiet --output-dir k$k
  done
  python3 scripts/plot_interactions.py k1/timing.csv k0/timing.csv k16/timing.csv \
      --labels "every step (1)" "automatic (0)" "every 16 steps" -o interactions.png

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
    """{"step": [...], NODE: [...], LEAF: [...], AGE: [...]} (AGE all 0 for a file without the column)."""
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
    data.setdefault(AGE, [0] * len(rows))
    return data


def by_age(data):
    """[(age, steps, median node, median leaf), ...] sorted by age."""
    groups = {}
    for age, node, leaf in zip(data[AGE], data[NODE], data[LEAF]):
        groups.setdefault(age, []).append((node, leaf))
    return [(age, len(v), statistics.median(n for n, _ in v), statistics.median(l for _, l in v))
            for age, v in sorted(groups.items())]


def print_table(label, data, fresh):
    """The run's medians by age; growth: node + leaf over fresh (None: not shown)."""
    print(f"{label}: {len(data['step'])} steps")
    print("steps_since_rebuild  steps  node_per_body  leaf_per_body  growth_over_fresh")
    for age, count, node, leaf in by_age(data):
        growth = f"{(node + leaf) / fresh:.3f}" if fresh else "-"
        print(f"{age:>19}  {count:>5}  {node:>13.1f}  {leaf:>13.1f}  {growth:>17}")


def fresh_total(data):
    """Median node + leaf per body over the steps of age 0, or None without any."""
    rows = by_age(data)
    return rows[0][2] + rows[0][3] if rows and rows[0][0] == 0 and rows[0][2] + rows[0][3] > 0 else None


def plot(runs, out, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as missing:
        sys.exit(f"plot_interactions.py: {missing}; the table above is complete, install python3-matplotlib for -o")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for k, (label, data) in enumerate(runs):
        colour = f"C{k}"
        total = [n + l for n, l in zip(data[NODE], data[LEAF])]
        left.plot(data["step"], total, lw=1, color=colour, label=label)
        right.scatter(data[AGE], total, s=6, alpha=0.4, color=colour)
        rows = by_age(data)
        right.plot([r[0] for r in rows], [r[2] + r[3] for r in rows], "-o", ms=3, lw=1, color=colour, label=label)
    left.set_xlabel("step")
    right.set_xlabel("steps since the last rebuild (0: the step that adopted the tree)")
    for ax in (left, right):
        ax.set_ylabel("interactions per body (body-node + body-body)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    right.set_title("dots: steps; line: median per age", fontsize=9)
    fig.suptitle(title or "octwalk: tree walk interactions per body")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"\nwrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="timing.csv of octwalk run, one per run")
    parser.add_argument("--labels", nargs="+", help="one name per file for the tables and the legend (default: the files)")
    parser.add_argument("-o", "--output", help="PNG of the interactions per body")
    parser.add_argument("--title", help="title of the figure")
    args = parser.parse_args()
    labels = args.labels or args.files
    if len(labels) != len(args.files):
        sys.exit(f"plot_interactions.py: {len(args.files)} files but {len(labels)} labels")
    try:
        runs = [(label, read_timing(path)) for label, path in zip(labels, args.files)]
    except InputError as e:
        sys.exit(f"plot_interactions.py: {e}")
    fresh = fresh_total(runs[0][1])
    for k, (label, data) in enumerate(runs):
        print_table(label, data, fresh)
        if k + 1 < len(runs):
            print()
    if args.output:
        plot(runs, args.output, args.title)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plots of `octwalk profile` outputs (JSON or CSV; several files are combined, e.g. two sweeps).

One PNG (-o) with six panels:
  time per evaluation against N (host, walk/device and total, one colour per theta, with an
  N log N guide line through the largest total), the device fraction against N, the speed-up over
  direct summation against N (the direct time is extrapolated from a sample of targets, as octwalk
  records), bodies per second against N, the body-node and body-leaf kernel GFLOP/s against theta
  and the walk bandwidth (bytes requested by the walk per second, formula in the JSON) against
  theta (one colour per N).
With a JSON of `octwalk profile --steps K`, a seventh panel shows where a whole simulation step's time
goes against N: stacked bars of each phase's share of the median step wall time (the force
evaluation's phases, integration, diagnostics, I/O, and the rest of the step), one bar per N and theta.

  octwalk profile --n 2^15:2^24 --theta 0.3:0.9:0.1 --json profile.json
  /usr/bin/python3 scripts/plot_profile.py profile.json -o profile.png
  octwalk profile --n 2^15:2^22 --steps 5 --json steps.json
  /usr/bin/python3 scripts/plot_profile.py steps.json -o steps.png

Needs numpy and matplotlib (Debian: apt-get install python3-matplotlib python3-numpy).
"""

import argparse
import csv
import json
import sys

try:
    import numpy as np
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt
except ImportError as missing:
    sys.exit(f"plot_profile.py: {missing}; install python3-numpy and python3-matplotlib "
             "(or run with /usr/bin/python3)")


class InputError(Exception):
    """A file that is missing or is not an octwalk profile output (the message names it)."""


FIELDS = ("n", "theta", "host", "walk", "total", "device_fraction", "speedup", "node_gflops", "leaf_gflops",
          "walk_bytes_per_second", "bodies_per_second")


def from_json(path, text):
    try:
        doc = json.loads(text)
        rows = []
        for r in doc["results"]:
            rows.append({"n": r["n"], "theta": r["theta"], "host": r["host_seconds"]["total"],
                         "walk": r["walk_seconds"]["total"], "total": r["total_seconds"],
                         "device_fraction": r["device_fraction"], "speedup": r["speedup"],
                         "node_gflops": r["node_gflops"], "leaf_gflops": r["leaf_gflops"],
                         "walk_bytes_per_second": r["walk"]["bytes_per_second"],
                         "bodies_per_second": r["bodies_per_second"], "backend": r["backend"]})
            if "step_seconds" in r:
                # the force phases by name (host and walk), then the step's own phases
                phases = {k: v for k, v in r["host_seconds"].items() if k != "total"}
                phases.update({k: v for k, v in r["walk_seconds"].items() if k != "total"})
                rows[-1]["step_phases"] = phases
                rows[-1]["step_seconds"] = r["step_seconds"]
        return doc, rows
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise InputError(f"'{path}' is not an octwalk profile JSON ({type(e).__name__}: {e})")


def from_csv(path, text):
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# {"):
        raise InputError(f"'{path}': first line is not an octwalk header ('# {{...}}')")
    try:
        doc = json.loads(lines[0][2:])
    except json.JSONDecodeError as e:
        raise InputError(f"'{path}': header is not valid JSON ({e})")
    rename = {"host_seconds": "host", "walk_seconds": "walk", "total_seconds": "total"}
    rows = []
    for raw in csv.DictReader(lines[1:]):
        row = {"backend": raw.get("backend", "?")}
        for key in FIELDS:
            column = next((c for c, k in rename.items() if k == key), key)
            try:
                row[key] = float(raw[column]) if raw[column] != "" else np.nan
            except (KeyError, TypeError, ValueError):
                raise InputError(f"'{path}': column '{column}' is missing or not a number")
        rows.append(row)
    return doc, rows


def read_profile(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror}")
    doc, rows = from_json(path, text) if text.lstrip().startswith("{") else from_csv(path, text)
    if doc.get("command") != "profile":
        raise InputError(f"'{path}' is not an octwalk profile output (command: {doc.get('command')})")
    if not rows:
        raise InputError(f"'{path}' has no results")
    return doc, rows


def by(rows, key):
    """Rows grouped by one key, each group sorted by the other sweep variable."""
    other = "theta" if key == "n" else "n"
    groups = {}
    for r in rows:
        groups.setdefault((r[key], r["backend"]), []).append(r)
    return {k: sorted(v, key=lambda r: r[other]) for k, v in sorted(groups.items())}


def colours(count, cmap=plt.cm.viridis):
    return cmap(np.linspace(0, 0.85, max(count, 1)))


def label_theta(key, backends):
    theta, backend = key
    return f"θ = {theta:g}" + (f" ({backend})" if len(backends) > 1 else "")


def label_n(key, backends):
    n, backend = key
    power = np.log2(n)
    name = f"$N = 2^{{{int(power)}}}$" if power == int(power) else f"N = {int(n)}"
    return name + (f" ({backend})" if len(backends) > 1 else "")


def style_legend(ax, styles, loc):
    """A second legend that explains the line styles (the first one explains the colours)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color="black", linestyle=ls, marker=m, markerfacecolor=face, label=label)
               for ls, m, face, label in styles]
    first = ax.get_legend()
    ax.legend(handles=handles, fontsize=7, loc=loc)
    if first is not None:
        ax.add_artist(first)


def readable_log_ticks(ax, axis="y"):
    """Plain numbers on a log axis that spans less than two decades (else only 10^k would be labelled)."""
    from matplotlib.ticker import FuncFormatter

    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    if lo > 0 and hi / lo < 100:
        target = ax.yaxis if axis == "y" else ax.xaxis
        target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        target.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def plot_times(ax, rows, backends):
    groups = by(rows, "theta")
    for (key, group), c in zip(groups.items(), colours(len(groups))):
        n = [r["n"] for r in group]
        ax.plot(n, [r["total"] for r in group], "o-", color=c, label=label_theta(key, backends))
        ax.plot(n, [r["walk"] for r in group], "s--", color=c, markerfacecolor="none")
        ax.plot(n, [r["host"] for r in group], "^:", color=c, markerfacecolor="none")
    # The guide passes through the largest total so the slopes compare at a glance.
    top = max(rows, key=lambda r: (r["n"], r["total"]))
    n = np.geomspace(min(r["n"] for r in rows), top["n"], 50)
    ax.plot(n, top["total"] * n * np.log2(n) / (top["n"] * np.log2(top["n"])), color="grey", linewidth=3,
            alpha=0.4, label=r"$\propto N \log N$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (bodies)")
    ax.set_ylabel("time per force evaluation [s] (median)")
    ax.set_title("time per evaluation: host, walk/device, total")
    ax.legend(fontsize=7, loc="upper left")
    style_legend(ax, [("-", "o", "black", "total"), ("--", "s", "none", "walk/device"),
                      (":", "^", "none", "host (tree build)")], "lower right")


def plot_against_n(ax, rows, backends, field, ylabel, title, logy=True, scale=1.0):
    groups = by(rows, "theta")
    for (key, group), c in zip(groups.items(), colours(len(groups))):
        ax.plot([r["n"] for r in group], [scale * r[field] for r in group], "o-", color=c,
                label=label_theta(key, backends))
    ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel("N (bodies)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7)


def plot_kernels(ax, rows, backends):
    groups = by(rows, "n")
    for (key, group), c in zip(groups.items(), colours(len(groups), plt.cm.plasma)):
        theta = [r["theta"] for r in group]
        ax.plot(theta, [r["node_gflops"] for r in group], "o-", color=c, label=label_n(key, backends))
        ax.plot(theta, [r["leaf_gflops"] for r in group], "s--", color=c, markerfacecolor="none")
    ax.set_xlabel(r"opening angle $\theta$")
    ax.set_ylabel("GFLOP/s (70 per body-node, 38 per body-body)")
    ax.set_title("force kernel rates")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="lower left")
    style_legend(ax, [("-", "o", "black", "body-node kernel"), ("--", "s", "none", "body-leaf kernel")],
                 "lower right")


def plot_bandwidth(ax, rows, backends):
    groups = by(rows, "n")
    for (key, group), c in zip(groups.items(), colours(len(groups), plt.cm.plasma)):
        ax.plot([r["theta"] for r in group], [r["walk_bytes_per_second"] / 1e9 for r in group], "o-", color=c,
                label=label_n(key, backends))
    ax.set_xlabel(r"opening angle $\theta$")
    ax.set_ylabel("walk bandwidth [GB/s] (bytes requested / pass 1+2 time)")
    ax.set_title("walk bandwidth")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)


STEP_OWN = ("integration", "diagnostics", "io")


def plot_steps(ax, rows, backends):
    """Stacked shares of the median step wall time by phase, one bar per N and theta."""
    rows = sorted(rows, key=lambda r: (r["backend"], r["theta"], r["n"]))
    force_names = list(rows[0]["step_phases"].keys())
    names = force_names + list(STEP_OWN) + ["rest of the step"]
    shares = []
    for r in rows:
        wall = r["step_seconds"]["step_wall"]
        parts = [r["step_phases"].get(k, 0.0) for k in force_names] + [r["step_seconds"].get(k, 0.0) for k in STEP_OWN]
        rest = max(wall - sum(parts), 0.0)
        shares.append([100 * v / wall if wall > 0 else 0.0 for v in parts + [rest]])
    shares = np.array(shares)
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    palette = list(plt.cm.tab20(np.linspace(0, 1, 20)))
    for k, name in enumerate(names):
        if not shares[:, k].any():
            continue  # a phase that took no time anywhere (e.g. upload on the CPU) gets no legend entry
        ax.bar(x, shares[:, k], bottom=bottom, color=palette[k % len(palette)], label=name, width=0.8)
        bottom += shares[:, k]
    labels = []
    for r in rows:
        power = np.log2(r["n"])
        n = f"$2^{{{int(power)}}}$" if power == int(power) else f"{int(r['n'])}"
        labels.append(f"{n}\nθ={r['theta']:g}" + (f"\n{r['backend']}" if len(backends) > 1 else "") +
                      f"\n{1e3 * r['step_seconds']['step_wall']:.3g} ms")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_xlabel("N, θ and the median step wall time")
    ax.set_ylabel("share of the step wall time [%] (medians per phase)")
    ax.set_title("where a simulation step's time goes")
    ax.legend(fontsize=7, ncol=2, loc="center left", bbox_to_anchor=(1.0, 0.5))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", metavar="FILE", help="octwalk profile --json or --csv outputs")
    parser.add_argument("-o", "--output", required=True, metavar="PNG", help="the figure to write (.png)")
    parser.add_argument("--dpi", type=int, default=110, help="resolution of the PNG (default 110)")
    args = parser.parse_args(argv)
    if not args.output.lower().endswith(".png"):
        parser.error(f"--output '{args.output}' must end in .png")
    rows, docs = [], []
    try:
        for path in args.inputs:
            doc, found = read_profile(path)
            docs.append(doc)
            rows += found
    except InputError as e:
        parser.exit(2, f"plot_profile.py: error: {e}\n")
    backends = sorted({r["backend"] for r in rows})

    stepped = [r for r in rows if "step_seconds" in r]
    if stepped:
        fig = plt.figure(figsize=(17, 15))
        grid = fig.add_gridspec(3, 3)
        axes = [[fig.add_subplot(grid[i, j]) for j in range(3)] for i in range(2)]
        plot_steps(fig.add_subplot(grid[2, :2]), stepped, backends)
    else:
        fig, axes = plt.subplots(2, 3, figsize=(17, 10))
    plot_times(axes[0][0], rows, backends)
    plot_against_n(axes[0][1], rows, backends, "device_fraction", "walk/device phases over total [%]",
                   "device fraction (walk/device share of the total)", logy=False, scale=100)
    axes[0][1].set_ylim(0, 100)
    measured = [r for r in rows if r["speedup"] > 0]
    if measured:
        plot_against_n(axes[0][2], measured, backends, "speedup", "direct time / tree time",
                       "speed-up over direct summation\n(direct extrapolated from a sample of targets)")
        readable_log_ticks(axes[0][2])
    else:
        axes[0][2].text(0.5, 0.5, "no direct timing in the inputs\n(--direct-sample 0)", ha="center",
                        transform=axes[0][2].transAxes)
    plot_against_n(axes[1][0], rows, backends, "bodies_per_second", "bodies per second (N / total time)",
                   "throughput")
    readable_log_ticks(axes[1][0])
    plot_kernels(axes[1][1], rows, backends)
    plot_bandwidth(axes[1][2], rows, backends)
    first = docs[0]
    fig.suptitle(f"octwalk {first.get('octwalk', '?')} (git {first.get('git', '?')}) profile: "
                 f"{first.get('model', '?')}, {', '.join(backends)}; medians of "
                 + (f"{first['steps']} simulation steps" if "steps" in first
                    else f"{first.get('repeat', 1) - 1} evaluations") + " after a warm-up")
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=args.dpi)
    except OSError as e:
        parser.exit(1, f"plot_profile.py: error: cannot write '{args.output}': {e.strerror}\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

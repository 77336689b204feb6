#!/usr/bin/env python3
"""Plots of `octwalk accuracy` outputs.

  (1) from --errors-dir directories: the cumulative error distribution of every setting, i.e. the
      fraction of bodies whose |a_tree - a_direct| / |a_direct| exceeds x, on log-log axes, with
      guide lines at 50%, 10% and 1% (where a curve crosses them: median, 90th, 99th percentile);
  (2) from --csv files: the median and the 99th percentile against theta, one pair of curves per
      file and setting, labelled with N read from the file (runs at several N side by side).

One PNG (-o) with a panel per errors directory and one panel for all CSV files.

  octwalk accuracy --n 100000 --errors-dir err --csv n1e5.csv
  octwalk accuracy --n 1000000 --csv n1e6.csv
  /usr/bin/python3 scripts/plot_accuracy.py --errors-dir err --csv n1e5.csv n1e6.csv -o accuracy.png

Needs numpy and matplotlib (Debian: apt-get install python3-matplotlib python3-numpy).
"""

import argparse
import csv
import json
import os
import sys

try:
    import numpy as np
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt
except ImportError as missing:
    sys.exit(f"plot_accuracy.py: {missing}; install python3-numpy and python3-matplotlib "
             "(or run with /usr/bin/python3)")


class InputError(Exception):
    """A file that is missing or is not an octwalk accuracy output (the message names it)."""


def read_header(path, first_line):
    """The JSON object octwalk writes after '# ' on the first line of its CSV files."""
    if not first_line.startswith("# {"):
        raise InputError(f"'{path}': first line is not an octwalk header ('# {{...}}')")
    try:
        return json.loads(first_line[2:])
    except json.JSONDecodeError as e:
        raise InputError(f"'{path}': header is not valid JSON ({e})")


def read_error_file(path):
    """(settings, errors) of one per-setting file of an --errors-dir."""
    try:
        with open(path) as f:
            header = read_header(path, f.readline())
            columns = f.readline().strip()
            if columns != "index,id,error":
                raise InputError(f"'{path}': expected the columns 'index,id,error', found '{columns}'")
            # Empty fields are non-finite errors (a zero reference force); they lie above every curve.
            values = [float(row.split(",")[2]) if row.split(",")[2].strip() else np.inf
                      for row in f if row.strip()]
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror}")
    except (IndexError, ValueError):
        raise InputError(f"'{path}': a row is not 'index,id,error' with a number as error")
    if not values:
        raise InputError(f"'{path}': no error values")
    return header, np.asarray(values)


def read_errors_dir(path):
    if not os.path.isdir(path):
        raise InputError(f"errors directory '{path}' does not exist or is not a directory")
    names = sorted(n for n in os.listdir(path) if n.startswith("errors_") and n.endswith(".csv"))
    if not names:
        raise InputError(f"'{path}' holds no errors_*.csv files (write them with octwalk accuracy --errors-dir)")
    return [read_error_file(os.path.join(path, n)) for n in names]


NUMERIC = ("theta", "n", "sample", "median", "p90", "p99", "p999", "max")


def read_csv(path):
    """Rows of an accuracy --csv file, with the numeric columns converted."""
    try:
        with open(path) as f:
            header = read_header(path, f.readline())
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror}")
    if header.get("command") != "accuracy":
        raise InputError(f"'{path}' is not an octwalk accuracy CSV (command: {header.get('command')})")
    if not rows:
        raise InputError(f"'{path}' has no rows")
    for row in rows:
        for key in NUMERIC:
            try:
                row[key] = float(row[key]) if row[key] != "" else np.nan
            except (KeyError, TypeError, ValueError):
                raise InputError(f"'{path}': column '{key}' is missing or not a number")
    return header, rows


def setting_label(h, varying):
    """The settings that differ between curves of one panel, e.g. 'bonsai' or 'octgrav leaf 8'."""
    parts = []
    for key, fmt in (("mac", "{}"), ("multipole", "{}"), ("n_leaf", "leaf {}"), ("n_group", "group {}")):
        if key in varying:
            parts.append(fmt.format(h[key]))
    return " ".join(parts)


def varying_keys(dicts):
    keys = ("mac", "multipole", "n_leaf", "n_group")
    return [k for k in keys if len({str(d.get(k)) for d in dicts}) > 1]


def plot_cdf(ax, path, files):
    """Fraction of bodies with an error above x, one curve per setting: colour = theta, style = the rest."""
    headers = [h for h, _ in files]
    varying = varying_keys(headers)
    thetas = sorted({h["theta"] for h in headers})
    colours = plt.cm.viridis(np.linspace(0, 0.9, max(len(thetas), 1)))
    styles = ["-", "--", ":", "-."]
    others = sorted({setting_label(h, varying) for h in headers})
    for h, errors in files:
        e = np.sort(errors[errors > 0])  # a log axis cannot show an exact zero
        if e.size == 0:
            continue
        above = (e.size - np.arange(e.size)) / errors.size
        colour = colours[thetas.index(h["theta"])]
        style = styles[others.index(setting_label(h, varying)) % len(styles)]
        label = f"θ = {h['theta']:g}" + (f" {setting_label(h, varying)}" if varying else "")
        ax.step(e, above, where="post", color=colour, linestyle=style, linewidth=1.2, label=label)
    for level in (0.5, 0.1, 0.01):
        ax.axhline(level, color="grey", linewidth=0.7, linestyle=":")
        ax.annotate(f"{level:.0%}", xy=(1.0, level), xycoords=("axes fraction", "data"), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=8, color="grey")
    ax.set_xscale("log")
    ax.set_yscale("log")
    h = headers[0]
    ax.set_ylim(0.5 / max(len(e) for _, e in files), 1.05)
    ax.set_xlabel(r"relative acceleration error $|a_{tree} - a_{direct}| / |a_{direct}|$")
    ax.set_ylabel("fraction of bodies with a larger error")
    source = h.get("source", {})
    name = source.get("model") or os.path.basename(str(source.get("input", "?")))
    sampled = f", {h['sample']} sampled" if h.get("sampled") else ""
    fixed = "" if varying else f", {h['mac']}, {h['multipole']}"
    ax.set_title(f"{name}, N = {h['n']}{sampled}{fixed}\n({os.path.basename(os.path.normpath(path))})",
                 fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, ncol=2 if len(files) > 8 else 1, loc="lower left")


def plot_vs_theta(ax, tables):
    """Median (solid) and 99th percentile (dashed) against theta; one colour per file and setting."""
    curves = []
    all_rows = [r for _, rows in tables for r in rows]
    varying = varying_keys(all_rows)
    for path, rows in tables:
        groups = {}
        for r in rows:
            groups.setdefault(setting_label(r, varying), []).append(r)
        for label, group in groups.items():
            curves.append((path, int(group[0]["n"]), label, sorted(group, key=lambda r: r["theta"])))
    colours = plt.cm.tab10(np.arange(len(curves)) % 10)
    for (path, n, label, group), colour in zip(curves, colours):
        theta = [r["theta"] for r in group]
        name = f"N = {n}" + (f" {label}" if label else "")
        ax.plot(theta, [r["median"] for r in group], "o-", color=colour, label=f"{name}: median")
        ax.plot(theta, [r["p99"] for r in group], "s--", color=colour, markerfacecolor="none",
                label=f"{name}: 99th percentile")
    ax.set_yscale("log")
    ax.set_xlabel(r"opening angle $\theta$")
    ax.set_ylabel("relative acceleration error")
    ax.set_title("error percentiles against the opening angle", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors-dir", nargs="+", default=[], metavar="DIR",
                        help="directories written by octwalk accuracy --errors-dir (one CDF panel each)")
    parser.add_argument("--csv", nargs="+", default=[], metavar="FILE",
                        help="files written by octwalk accuracy --csv (median and p99 against theta)")
    parser.add_argument("-o", "--output", required=True, metavar="PNG", help="the figure to write (.png)")
    parser.add_argument("--dpi", type=int, default=130, help="resolution of the PNG (default 130)")
    args = parser.parse_args(argv)
    if not args.errors_dir and not args.csv:
        parser.error("give --errors-dir and/or --csv")
    if not args.output.lower().endswith(".png"):
        parser.error(f"--output '{args.output}' must end in .png")
    try:
        dirs = [(d, read_errors_dir(d)) for d in args.errors_dir]
        tables = [(f, read_csv(f)[1]) for f in args.csv]
    except InputError as e:
        parser.exit(2, f"plot_accuracy.py: error: {e}\n")

    panels = len(dirs) + (1 if tables else 0)
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 5.2), squeeze=False)
    for ax, (path, files) in zip(axes[0], dirs):
        plot_cdf(ax, path, files)
    if tables:
        plot_vs_theta(axes[0][-1], tables)
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=args.dpi)
    except OSError as e:
        parser.exit(1, f"plot_accuracy.py: error: cannot write '{args.output}': {e.strerror}\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

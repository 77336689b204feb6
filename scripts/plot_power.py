#!/usr/bin/env python3
"""P(k) of each `octwalk power --linear` CSV (one per output) against linear theory scaled by D(a)^2,
with the ratio to it below.

usage: python3 scripts/plot_power.py power_z3.csv power_z1.csv power_z0.csv [-o power.png]
"""
import argparse
import csv
import sys


def die(message):
    print(f"plot_power.py: {message}", file=sys.stderr)
    sys.exit(1)


def read_power(path):
    """(a, header lines, {column: [values]}) of one CSV written by octwalk power."""
    a, header, rows, names, nyquist = None, [], [], None, None
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    header.append(line[1:].strip())
                    if line.startswith("# a = "):
                        fields = dict(f.strip().split(" = ", 1) for f in line[2:].split(",")[:3])
                        a = float(fields["a"])
                        # the particles' Nyquist wavenumber pi N^(1/3) / L: beyond it a lattice start shows
                        nyquist = 3.141592653589793 * round(float(fields["N"]) ** (1 / 3)) / float(fields["box"])
                elif names is None:
                    names = line.strip().split(",")
                elif line.strip():
                    rows.append([float(x) for x in next(csv.reader([line]))])
    except (OSError, ValueError) as err:
        die(f"{path}: {err}")
    if names is None or not rows:
        die(f"{path}: no P(k) rows (is it a CSV of octwalk power?)")
    return a, nyquist, {n: [r[i] for r in rows] for i, n in enumerate(names)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="CSVs of octwalk power --linear, one per output")
    ap.add_argument("--subtract-shot-noise", action="store_true", help="plot P - shot_noise")
    ap.add_argument("-o", "--output", default="power.png")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is not installed (Debian: apt-get install python3-matplotlib; or pip install matplotlib)")

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.5, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    for path in args.csv:
        a, nyquist, c = read_power(path)
        p = [x - (s if args.subtract_shot_noise else 0) for x, s in zip(c["P"], c["shot_noise"])]
        label = f"z = {1 / a - 1:.2f}" if a else path
        line, = top.loglog(c["k_mean"], p, ".-", label=label)
        if "P_linear" in c:
            top.loglog(c["k_mean"], c["P_linear"], "--", color=line.get_color(), lw=1)
            bottom.semilogx(c["k_mean"], [x / y if y > 0 else float("nan") for x, y in zip(p, c["P_linear"])],
                            ".-", color=line.get_color())
        top.axhline(c["shot_noise"][0], color=line.get_color(), ls=":", lw=0.8)
        if nyquist:
            for axis in (top, bottom):
                axis.axvline(nyquist, color="grey", ls="-.", lw=0.8)
    top.set_ylabel(r"$P(k)$ [length$^3$]")
    top.set_title("measured (points), linear theory $\\times D(a)^2$ (dashed), shot noise (dotted),\n"
                  "particle Nyquist wavenumber (dash-dot)", fontsize=9)
    top.legend()
    bottom.axhline(1.0, color="grey", lw=0.8)
    bottom.set_ylim(0.5, 2.0)
    bottom.set_ylabel(r"$P / P_{\rm linear}$")
    bottom.set_xlabel(r"$k$ [1/length]")
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

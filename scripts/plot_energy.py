#!/usr/bin/env python3
"""Plots an octwalk run's diagnostics: relative energy error, virial ratio and Lagrangian radii.

usage: /usr/bin/python3 scripts/plot_energy.py RUN_DIR [-o energy.png] [--abs-energy] [--title TITLE]
(needs matplotlib and numpy: apt-get install python3-matplotlib python3-numpy)
"""
import argparse
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from snapshot_io import die


def load_csv(path):
    if not os.path.exists(path):
        die(f"{path} not found (is this an octwalk run directory?)")
    with open(path) as f:
        lines = [line for line in f if not line.startswith("#")]
    data = np.genfromtxt(lines, delimiter=",", names=True)
    if data.size < 2:
        die(f"{path} has fewer than two rows")
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("-o", "--output", default=None, help="PNG file (default RUN_DIR/energy.png)")
    ap.add_argument("--abs-energy", action="store_true",
                    help="plot |E - E0| / |E0| on a log axis (long runs whose error spans decades)")
    ap.add_argument("--title", default=None, help="figure title (default: the run directory's name)")
    args = ap.parse_args()
    e = load_csv(os.path.join(args.run_dir, "energy.csv"))
    lag = load_csv(os.path.join(args.run_dir, "lagrange.csv"))

    fig, ax = plt.subplots(3, 1, figsize=(7, 9), sharex=True)
    if args.abs_energy:
        t, de = e["time"], np.abs(e["dE_over_E0"])
        ax[0].plot(t[de > 0], de[de > 0], lw=1)
        ax[0].set_yscale("log")
        ax[0].set_ylabel(r"$|E - E_0| / |E_0|$")
    else:
        ax[0].plot(e["time"], e["dE_over_E0"], lw=1)
        ax[0].axhline(0, color="grey", lw=0.5)
        ax[0].set_ylabel(r"$(E - E_0) / |E_0|$")
    ax[1].plot(e["time"], e["virial_2K_over_W"], lw=1)
    ax[1].axhline(1, color="grey", lw=0.5, ls="--")
    ax[1].set_ylabel(r"$2K / |W|$")
    with open(os.path.join(args.run_dir, "lagrange.csv")) as f:
        header = next(line for line in f if not line.startswith("#")).strip().split(",")
    for name, label in zip(lag.dtype.names[2:], header[2:]):
        ax[2].plot(lag["time"], lag[name], lw=1, label=label.replace("r_", ""))
    ax[2].set_yscale("log")
    ax[2].set_ylabel("Lagrangian radius")
    ax[2].set_xlabel("time [N-body units]")
    ax[2].legend(title="mass fraction", fontsize=7, ncol=4)
    fig.suptitle(args.title or os.path.basename(os.path.normpath(args.run_dir)))
    fig.tight_layout()
    out = args.output or os.path.join(args.run_dir, "energy.png")
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

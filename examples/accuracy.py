#!/usr/bin/env python3
"""Relative force error of the tree against exact direct summation on a Plummer sphere, against the opening
angle theta: the median and the 99th percentile of |a_tree - a_direct| / |a_direct| over the bodies.

usage: python3 examples/accuracy.py [--n 8192] [--mac bonsai] [--out accuracy.png]
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

try:
    import octwalk
except ImportError as e:
    sys.exit(f"accuracy.py: cannot import octwalk ({e}); build it and see docs/python.md (PYTHONPATH=build/python)")

THETAS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8192, help="bodies (default 8192; direct summation costs N^2)")
    ap.add_argument("--epsilon", type=float, default=0.01, help="softening length (default 0.01)")
    ap.add_argument("--mac", nargs="+", default=["bonsai", "octgrav"],
                    help="acceptance criteria to compare (default: bonsai octgrav; also relative)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="accuracy.png", help="PNG file (default accuracy.png)")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    m = octwalk.ic.plummer(args.n, seed=args.seed)
    exact = octwalk.direct(m["pos"], m["mass"], epsilon=args.epsilon, potential=False)
    norm = np.linalg.norm(exact, axis=1)

    fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
    for mac, colour in zip(args.mac, plt.rcParams["axes.prop_cycle"].by_key()["color"]):
        g = octwalk.Gravity(m["pos"], m["mass"], epsilon=args.epsilon, mac=mac)
        median, p99 = [], []
        for theta in THETAS:
            g.set_parameters(opening_angle=theta)
            err = np.linalg.norm(g.accelerations() - exact, axis=1) / norm
            median.append(np.median(err))
            p99.append(np.percentile(err, 99))
            print(f"{mac:8s} theta {theta:.1f}: median {median[-1]:.2e}, 99th percentile {p99[-1]:.2e}")
        ax.plot(THETAS, median, "o-", color=colour, label=f"{mac}: median")
        ax.plot(THETAS, p99, "s--", color=colour, label=f"{mac}: 99th percentile")
    ax.set_yscale("log")
    ax.set_xlabel(r"opening angle $\theta$")
    ax.set_ylabel(r"$|a_{tree} - a_{direct}| / |a_{direct}|$")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"force error, Plummer N = {args.n}, eps = {args.epsilon:g}")
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

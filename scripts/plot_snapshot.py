#!/usr/bin/env python3
"""Projected density maps (face-on x-y and edge-on x-z) and the spherical density profile of one
or more octwalk snapshots (TIPSY, GADGET-2 or HDF5), side by side, e.g. the first and last of a run.

usage: /usr/bin/python3 scripts/plot_snapshot.py SNAP [SNAP ...] [--extent 15] [-o density.png]
"""
import argparse

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm

from snapshot_io import die, read_snapshot_typed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshots", nargs="+")
    ap.add_argument("--extent", type=float, default=15.0, help="half-width of the maps [length]")
    ap.add_argument("--bins", type=int, default=300)
    ap.add_argument("--type", default=None,
                    help="keep only these GADGET particle types, comma-separated (octwalk's galaxy model: "
                         "halo 1, disk 2, bulge 3)")
    ap.add_argument("--index-range", default=None,
                    help="A:B keeps bodies A..B-1 in file order (after --type)")
    ap.add_argument("-o", "--output", default="density.png")
    args = ap.parse_args()
    if args.extent <= 0 or args.bins < 2:
        die("--extent must be > 0 and --bins >= 2")

    types = None
    if args.type:
        try:
            types = [int(x) for x in args.type.split(",")]
        except ValueError:
            die(f"--type '{args.type}' is not a comma-separated list of types 0..5")
        if any(t < 0 or t > 5 for t in types):
            die(f"--type '{args.type}' is not a comma-separated list of types 0..5")
    keep = slice(None)
    if args.index_range:
        try:
            a, b = (int(x) for x in args.index_range.split(":"))
        except ValueError:
            die(f"--index-range '{args.index_range}' is not A:B")
        keep = slice(a, b)
    snaps = []
    for path in args.snapshots:
        try:
            t, pos, vel, mass, kind = read_snapshot_typed(path)
        except (OSError, ValueError) as err:
            die(str(err))
        if types is not None:
            chosen = np.isin(kind, types)
            pos, vel, mass = pos[chosen], vel[chosen], mass[chosen]
        if len(pos[keep]) == 0:
            die(f"--type and --index-range select no body of {path}")
        snaps.append((path, t, pos[keep], vel[keep], mass[keep]))

    n = len(snaps)
    fig, ax = plt.subplots(3, n, figsize=(4.2 * n, 11), squeeze=False)
    edges = np.linspace(-args.extent, args.extent, args.bins + 1)
    radii = np.logspace(-2, np.log10(5 * args.extent), 40)
    for col, (path, t, pos, vel, mass) in enumerate(snaps):
        centre = np.average(pos, axis=0, weights=mass) if mass.sum() > 0 else pos.mean(axis=0)
        p = pos - centre
        for row, (i, j, label) in enumerate(((0, 1, "y"), (0, 2, "z"))):
            h, _, _ = np.histogram2d(p[:, i], p[:, j], bins=[edges, edges], weights=mass)
            area = (edges[1] - edges[0]) ** 2
            im = ax[row, col].imshow((h / area).T + 1e-12, origin="lower", norm=LogNorm(vmin=1e-6),
                                     extent=[-args.extent, args.extent, -args.extent, args.extent], cmap="magma")
            ax[row, col].set_xlabel("x")
            ax[row, col].set_ylabel(label)
            fig.colorbar(im, ax=ax[row, col], label="surface density")
        ax[0, col].set_title(f"t = {t:.3g}")
        r = np.linalg.norm(p, axis=1)
        m, _ = np.histogram(r, bins=radii, weights=mass)
        shell = 4 / 3 * np.pi * (radii[1:] ** 3 - radii[:-1] ** 3)
        mid = np.sqrt(radii[1:] * radii[:-1])
        ax[2, col].loglog(mid, m / shell, drawstyle="steps-mid")
        ax[2, col].set_xlabel("r")
        ax[2, col].set_ylabel(r"$\rho(r)$")
    if n > 1:
        # The first snapshot's profile on every later panel, so changes stand out.
        r0 = np.linalg.norm(snaps[0][2] - np.average(snaps[0][2], axis=0, weights=snaps[0][4]), axis=1)
        m0, _ = np.histogram(r0, bins=radii, weights=snaps[0][4])
        shell = 4 / 3 * np.pi * (radii[1:] ** 3 - radii[:-1] ** 3)
        for col in range(1, n):
            ax[2, col].loglog(np.sqrt(radii[1:] * radii[:-1]), m0 / shell, color="grey", ls="--", label="first")
            ax[2, col].legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()

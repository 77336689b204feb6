#!/usr/bin/env python3
"""Projected density maps (face-on x-y and edge-on x-z) and the spherical density profile of one
or more octwalk snapshots (TIPSY, GADGET-2 or HDF5), side by side, e.g. the first and last of a run.

usage: /usr/bin/python3 scripts/plot_snapshot.py SNAP [SNAP ...] [--extent 15] [-o density.png]
       /usr/bin/python3 scripts/plot_snapshot.py SNAP [SNAP ...] --periodic BOX [--slab-depth D] [-o slab.png]
(--periodic: a periodic box, e.g. of octwalk ic cosmo: the projected density contrast of a slab, by CIC
onto a periodic 2-D grid.)
"""
import argparse

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm

from snapshot_io import die, read_snapshot_typed


def cic_2d_periodic(x, y, weights, box, bins):
    """Cloud-in-cell assignment of (x, y) onto a bins x bins grid of a periodic square of side box."""
    grid = np.zeros((bins, bins))
    u, v = (np.mod(x, box) / box * bins - 0.5), (np.mod(y, box) / box * bins - 0.5)
    i, j = np.floor(u).astype(int), np.floor(v).astype(int)
    du, dv = u - i, v - j
    for di, wi in ((0, 1 - du), (1, du)):
        for dj, wj in ((0, 1 - dv), (1, dv)):
            np.add.at(grid, ((i + di) % bins, (j + dj) % bins), weights * wi * wj)
    return grid


def plot_periodic_slabs(snaps, box, axis, depth, centre, bins, output):
    """Projected density contrast 1 + delta of the slab |coordinate(axis) - centre| < depth / 2 (periodic)."""
    others = [a for a in range(3) if a != axis]
    n = len(snaps)
    fig, ax = plt.subplots(1, n, figsize=(5 * n, 4.6), squeeze=False)
    for col, (path, t, pos, vel, mass) in enumerate(snaps):
        offset = np.mod(pos[:, axis] - centre + box / 2, box) - box / 2
        keep = np.abs(offset) < depth / 2
        if not keep.any():
            die(f"the slab selects no body of {path}")
        grid = cic_2d_periodic(pos[keep, others[0]], pos[keep, others[1]], mass[keep], box, bins)
        mean = grid.mean()
        im = ax[0, col].imshow((grid / mean).T + 1e-3, origin="lower", extent=[0, box, 0, box], cmap="magma",
                               norm=LogNorm(vmin=max(1e-2, (grid / mean).min() + 1e-3)))
        ax[0, col].set_xlabel("xyz"[others[0]])
        ax[0, col].set_ylabel("xyz"[others[1]])
        ax[0, col].set_title(f"{path.split('/')[-1]}: time/a = {t:.3g}, slab {depth:.3g} thick", fontsize=9)
        fig.colorbar(im, ax=ax[0, col], label=r"$1 + \delta$ (projected)")
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    print(f"wrote {output}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshots", nargs="+")
    ap.add_argument("--extent", type=float, default=15.0, help="half-width of the maps [length]")
    ap.add_argument("--bins", type=int, default=None,
                    help="map pixels per side (default 300; --periodic: the particles per side, N^(1/3))")
    ap.add_argument("--type", default=None,
                    help="keep only these GADGET particle types, comma-separated (octwalk's galaxy model: "
                         "halo 1, disk 2, bulge 3)")
    ap.add_argument("--index-range", default=None,
                    help="A:B keeps bodies A..B-1 in file order (after --type)")
    ap.add_argument("--periodic", type=float, default=None, metavar="BOX",
                    help="a periodic box of side BOX: draw a slab's projected density contrast instead")
    ap.add_argument("--axis", default="z", choices=["x", "y", "z"], help="--periodic: the slab's normal")
    ap.add_argument("--slab-depth", type=float, default=None, help="--periodic: slab thickness (default BOX / 10)")
    ap.add_argument("--slab-centre", type=float, default=None, help="--periodic: slab centre (default BOX / 2)")
    ap.add_argument("-o", "--output", default="density.png")
    args = ap.parse_args()
    if args.periodic is not None and not args.periodic > 0:
        die("--periodic BOX must be > 0")
    if args.extent <= 0 or (args.bins is not None and args.bins < 2):
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

    if args.periodic is not None:
        box = args.periodic
        depth = args.slab_depth if args.slab_depth is not None else box / 10
        centre = args.slab_centre if args.slab_centre is not None else box / 2
        if not depth > 0:
            die("--slab-depth must be > 0")
        # Finer pixels than the mean particle spacing would draw the starting lattice, not the density.
        bins = args.bins or max(2, round(len(snaps[0][2]) ** (1 / 3)))
        plot_periodic_slabs(snaps, box, "xyz".index(args.axis), depth, centre, bins, args.output)
        return
    args.bins = args.bins or 300
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

#!/usr/bin/env python3
"""Two disk galaxies on a parabolic orbit (pericentre 2, starting 30 apart) evolved with the tree: surface
density of the stars at the start and the end, and the distance between the two galaxies' centres against time.

usage: python3 examples/merger.py [--n 4096] [--t-end 100] [--dt 0.125] [--out merger.png]
Units: G = 1, each galaxy's mass 1, disk scale length 1. The first pericentre passage is near t = 62.
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
    sys.exit(f"merger.py: cannot import octwalk ({e}); build it and see docs/python.md (PYTHONPATH=build/python)")

HALO_TYPE = 1  # the galaxy model's GADGET types: halo 1, disk 2, bulge 3
BULGE_TYPE = 3


def second_galaxy_count(n, mass_ratio=1.0):
    """Bodies of the second galaxy: host/models/galaxy.cpp's makeMerger puts the first galaxy's n1 bodies first,
    then n2 = llround(n q / (1 + q)) of the second (half away from zero, unlike Python's round)."""
    return int(np.floor(n * mass_ratio / (1 + mass_ratio) + 0.5))


def surface_density(ax, x, y, mass, half_width, bins, title):
    """log10 of mass per unit area on a bins x bins grid of [-half_width, half_width]^2."""
    edges = np.linspace(-half_width, half_width, bins + 1)
    sigma, _, _ = np.histogram2d(x, y, bins=(edges, edges), weights=mass)
    sigma /= (edges[1] - edges[0]) ** 2
    # Three decades below the peak: empty cells (log10 0 = -inf) and lone bodies do not set the colour scale.
    floor = sigma.max() * 1e-3 if sigma.max() > 0 else 1.0
    image = ax.imshow(np.log10(np.maximum(sigma, floor)).T, origin="lower", cmap="inferno",
                      extent=(-half_width, half_width, -half_width, half_width))
    ax.set_title(title)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    return image


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096, help="bodies of both galaxies (default 4096)")
    ap.add_argument("--t-end", type=float, default=100.0, help="end time (default 100)")
    ap.add_argument("--dt", type=float, default=1 / 8, help="leapfrog step (default 1/8)")
    ap.add_argument("--epsilon", type=float, default=0.05, help="softening length (default 0.05)")
    ap.add_argument("--theta", type=float, default=0.5, help="opening angle (default 0.5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="merger.png", help="PNG file (default merger.png)")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    model = octwalk.ic.merger(args.n, seed=args.seed)
    sim = octwalk.Simulation.from_arrays(model["pos"], model["vel"], model["mass"], ids=model["id"],
                                         timestep=args.dt, epsilon=args.epsilon, theta=args.theta)
    first = np.arange(args.n) < args.n - second_galaxy_count(args.n)
    # Each galaxy's centre: the mean of its bulge, which stays bound while the halos are stripped and mixed.
    bulge = model["type"] == BULGE_TYPE
    centres = (bulge & first, bulge & ~first)
    stars = model["type"] != HALO_TYPE

    def separation():
        pos = sim.particles.pos
        return np.linalg.norm(pos[centres[0]].mean(axis=0) - pos[centres[1]].mean(axis=0))

    steps = max(1, round(args.t_end / args.dt))
    every = max(1, steps // 100)
    times, distances = [0.0], [separation()]
    for k in range(every, steps + every, every):
        sim.evolve(min(k, steps) * args.dt)  # whole steps: the outputs continue one leapfrog run
        times.append(sim.time)
        distances.append(separation())
    p = sim.particles
    error = sim.diagnostics()["relative_energy_error"]

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.8), layout="constrained")
    surface_density(ax[0], model["pos"][stars, 0], model["pos"][stars, 1], model["mass"][stars], 20, 100, "t = 0")
    image = surface_density(ax[1], p.pos[stars, 0], p.pos[stars, 1], p.mass[stars], 20, 100, f"t = {sim.time:g}")
    fig.colorbar(image, ax=ax[1], label=r"$\log_{10} \Sigma_\star$ (disks and bulges)")
    ax[2].plot(times, distances)
    ax[2].set_xlabel("time")
    ax[2].set_ylabel("distance between the bulges' centres")
    ax[2].set_title("separation")
    fig.suptitle(f"merger, N = {args.n}, dt = {args.dt:g}, eps = {args.epsilon:g}, theta = {args.theta:g}: "
                 f"energy error at the end {error:.1e}")
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out} (N = {args.n}, t = {sim.time:g}, {sim.steps} steps, dE/E = {error:.2e})")


if __name__ == "__main__":
    main()

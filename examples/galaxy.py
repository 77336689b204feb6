#!/usr/bin/env python3
"""A disk galaxy (bulge, exponential disk, dark halo) evolved with the tree: face-on and edge-on surface
density of the stars (disk and bulge) at the end, and the relative energy error against time.

usage: python3 examples/galaxy.py [--n 8192] [--t-end 10] [--dt 0.0625] [--out galaxy.png]
Units: G = 1, galaxy mass 1, disk scale length 1 (the disk's circular period at R = 2 is about 30).
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
    sys.exit(f"galaxy.py: cannot import octwalk ({e}); build it and see docs/python.md (PYTHONPATH=build/python)")

DISK_TYPE, BULGE_TYPE = 2, 3  # the galaxy model's GADGET types (halo 1)


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
    return image


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8192, help="bodies (default 8192)")
    ap.add_argument("--t-end", type=float, default=10.0, help="end time (default 10)")
    ap.add_argument("--dt", type=float, default=1 / 16, help="leapfrog step (default 1/16)")
    ap.add_argument("--epsilon", type=float, default=0.02, help="softening length (default 0.02)")
    ap.add_argument("--theta", type=float, default=0.5, help="opening angle (default 0.5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="galaxy.png", help="PNG file (default galaxy.png)")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    model = octwalk.ic.galaxy(args.n, seed=args.seed)
    sim = octwalk.Simulation.from_arrays(model["pos"], model["vel"], model["mass"], ids=model["id"],
                                         timestep=args.dt, epsilon=args.epsilon, theta=args.theta)
    # Diagnostics at whole steps, so that the outputs continue one leapfrog run (Simulation.evolve).
    steps = max(1, round(args.t_end / args.dt))
    every = max(1, steps // 50)
    times, errors = [0.0], [0.0]
    for k in range(every, steps + every, every):
        sim.evolve(min(k, steps) * args.dt)
        d = sim.diagnostics()
        times.append(d["time"])
        errors.append(d["relative_energy_error"])

    p = sim.particles
    stars = np.isin(model["type"], (DISK_TYPE, BULGE_TYPE))  # particles keep the model's order
    pos = p.pos[stars] - np.average(p.pos[stars], axis=0, weights=p.mass[stars])
    mass = p.mass[stars]

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.8), layout="constrained")
    surface_density(ax[0], pos[:, 0], pos[:, 1], mass, 4, 80, f"face-on, t = {sim.time:g}")
    image = surface_density(ax[1], pos[:, 0], pos[:, 2], mass, 4, 80, "edge-on")
    fig.colorbar(image, ax=ax[1], label=r"$\log_{10} \Sigma_\star$")
    for a, ylabel in zip(ax[:2], ("y", "z")):
        a.set_xlabel("x")
        a.set_ylabel(ylabel)
    ax[2].plot(times, errors)
    ax[2].axhline(0, color="grey", lw=0.5)
    ax[2].set_xlabel("time")
    ax[2].set_ylabel(r"$(E - E_0) / |E_0|$")
    ax[2].set_title("energy error")
    fig.suptitle(f"galaxy, N = {args.n} ({stars.sum()} disk and bulge bodies shown), dt = {args.dt:g}, "
                 f"eps = {args.epsilon:g}, theta = {args.theta:g}")
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out} (N = {args.n}, t = {sim.time:g}, {sim.steps} steps, dE/E = {errors[-1]:.2e})")


if __name__ == "__main__":
    main()

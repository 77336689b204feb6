#!/usr/bin/env python3
"""A star cluster (Plummer sphere, equal masses, Henon units) evolved with the tree's leapfrog: its Lagrangian
radii (radii holding 1% ... 90% of the mass, about the centre of mass) and the relative energy error against time.

usage: python3 examples/cluster.py [--n 4096] [--t-end 10] [--dt 0.03125] [--out cluster.png]
Units: G = 1, mass 1, E = -1/4 (crossing time 2 sqrt(2) = 2.8). A tree code with softening is collisionless:
core collapse (about 15 half-mass relaxation times) needs a collisional (Hermite) code.
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
    sys.exit(f"cluster.py: cannot import octwalk ({e}); build it and see docs/python.md (PYTHONPATH=build/python)")

FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9)


def lagrangian_radii(pos, mass):
    """Radii about the centre of mass that hold each of FRACTIONS of the total mass."""
    r = np.linalg.norm(pos - np.average(pos, axis=0, weights=mass), axis=1)
    order = np.argsort(r)
    enclosed = np.cumsum(mass[order]) / mass.sum()
    return r[order][np.minimum(np.searchsorted(enclosed, FRACTIONS), len(r) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096, help="bodies (default 4096)")
    ap.add_argument("--t-end", type=float, default=10.0, help="end time (default 10)")
    ap.add_argument("--dt", type=float, default=1 / 32, help="leapfrog step (default 1/32)")
    ap.add_argument("--epsilon", type=float, default=0.05, help="softening length (default 0.05)")
    ap.add_argument("--theta", type=float, default=0.5, help="opening angle (default 0.5)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="cluster.png", help="PNG file (default cluster.png)")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    sim = octwalk.Simulation.from_model("plummer", n=args.n, seed=args.seed, timestep=args.dt,
                                        epsilon=args.epsilon, theta=args.theta)
    steps = max(1, round(args.t_end / args.dt))
    every = max(1, steps // 100)
    p = sim.particles
    times, radii, errors = [0.0], [lagrangian_radii(p.pos, p.mass)], [0.0]
    for k in range(every, steps + every, every):
        sim.evolve(min(k, steps) * args.dt)  # whole steps: the outputs continue one leapfrog run
        p = sim.particles
        times.append(sim.time)
        radii.append(lagrangian_radii(p.pos, p.mass))
        errors.append(sim.diagnostics()["relative_energy_error"])
    radii = np.array(radii)

    fig, ax = plt.subplots(2, 1, figsize=(7, 8), sharex=True, height_ratios=(3, 1), layout="constrained")
    for j, f in enumerate(FRACTIONS):
        ax[0].plot(times, radii[:, j], label=f"{f:g}")
    ax[0].set_yscale("log")
    ax[0].set_ylabel("Lagrangian radius")
    ax[0].set_ylim(top=4 * radii.max())  # room for the legend above the outermost radius
    ax[0].legend(title="mass fraction", fontsize=8, ncol=len(FRACTIONS), loc="upper center")
    ax[0].set_title(f"Plummer cluster, N = {args.n}, dt = {args.dt:g}, eps = {args.epsilon:g}, "
                    f"theta = {args.theta:g}")
    ax[1].plot(times, errors)
    ax[1].axhline(0, color="grey", lw=0.5)
    ax[1].set_ylabel(r"$(E - E_0) / |E_0|$")
    ax[1].set_xlabel("time [N-body units]")
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out} (N = {args.n}, t = {sim.time:g}, {sim.steps} steps, dE/E = {errors[-1]:.2e})")


if __name__ == "__main__":
    main()

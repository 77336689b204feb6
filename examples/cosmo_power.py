#!/usr/bin/env python3
"""A small LCDM box: 2LPT initial conditions, a comoving run, and the power spectrum at the start and the end
against linear theory (the start's P(k) grown by (D(a_end) / D(a_begin))^2) up to the particles' Nyquist
frequency, with a slice of the final box. The default (32^3 to a = 0.1) takes about a minute on 2 cores.

usage: python3 examples/cosmo_power.py [--n-grid 32] [--a-end 0.1] [--out cosmo_power.png]
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
    sys.exit(f"cosmo_power.py: cannot import octwalk ({e}); build it and see docs/python.md (PYTHONPATH=build/python)")


def growth_factor(a, cosmology):
    """The library's linear growth factor D(a) (D(1) = 1), as the initial conditions it would make at a report it."""
    return octwalk.ic.cosmo(2, z_begin=1 / a - 1, omega0=cosmology["omega0"], omega_lambda=cosmology["omega_lambda"],
                            hubble_param=cosmology["hubble_param"])["growth_factor"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-grid", type=int, default=32, help="particles per side (default 32)")
    ap.add_argument("--box-size", type=float, default=100.0, help="box side in Mpc/h (default 100)")
    ap.add_argument("--z-begin", type=float, default=49.0, help="starting redshift (default 49)")
    ap.add_argument("--a-end", type=float, default=0.1, help="final scale factor (default 0.1)")
    ap.add_argument("--dlna", type=float, default=0.05, help="step in ln a (default 0.05)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="cosmo_power.png", help="PNG file (default cosmo_power.png)")
    args = ap.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    ics = octwalk.ic.cosmo(args.n_grid, box_size=args.box_size, z_begin=args.z_begin, seed=args.seed)
    box, n_mesh = ics["box_size"], 2 * args.n_grid
    k0, p0 = octwalk.power_spectrum(ics["pos"], ics["mass"], box, n_mesh=n_mesh)

    sim = octwalk.Simulation.from_cosmo(ics, a_end=args.a_end, dlna=args.dlna)
    sim.evolve(args.a_end)
    pos = sim.particles.pos
    k1, p1 = octwalk.power_spectrum(pos, ics["mass"], box, n_mesh=n_mesh)
    grown = (growth_factor(sim.time, ics["cosmology"]) / ics["growth_factor"]) ** 2

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.5), layout="constrained")
    # Above the particles' Nyquist frequency the lattice of the initial conditions dominates P(k): not shown.
    k_nyquist = np.pi * args.n_grid / box
    ok0, ok1 = (p0 > 0) & (k0 <= k_nyquist), (p1 > 0) & (k1 <= k_nyquist)
    left.loglog(k0[ok0], p0[ok0], "o-", ms=3, label=f"a = {ics['a_begin']:.3g} (initial conditions)")
    left.loglog(k1[ok1], p1[ok1], "o-", ms=3, label=f"a = {sim.time:.3g} (comoving run)")
    left.loglog(k0[ok0], grown * p0[ok0], "k--", label="linear theory: initial P(k) x (D(a) / D(a_begin))^2")
    left.set_xlabel("k [h/Mpc]")
    left.set_ylabel("P(k) [(Mpc/h)^3]")
    left.set_title(f"{args.n_grid}^3 particles, {box:g} Mpc/h box")
    left.legend(fontsize=8)

    slab = pos[:, 2] < box / 10
    right.scatter(pos[slab, 0], pos[slab, 1], s=1, c="k", alpha=0.5, lw=0)
    right.set_aspect("equal")
    right.set_xlim(0, box)
    right.set_ylim(0, box)
    right.set_xlabel("x [Mpc/h]")
    right.set_ylabel("y [Mpc/h]")
    right.set_title(f"slice 0 < z < {box / 10:g} Mpc/h at a = {sim.time:.3g}")
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}: P(k) at a = {ics['a_begin']:.3g} and {sim.time:.3g} (linear growth x{grown:.3g})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The force of a periodic snapshot on its largest scales, by force setting, against a converged tree + Ewald.

For each setting, the longitudinal Fourier components sum_i (a_i . k/|k|) exp(-i k . x_i) of the accelerations at the
smallest wave vectors (|n| = 1, sqrt 2, sqrt 3 and 2 fundamental modes), as ratios to those of tree + Ewald at theta
0.07, averaged over the vectors of each length. With SHIFT the bodies are first translated by SHIFT mean spacings
(N^(-1/3) L) along every axis: a starting lattice of `ic cosmo` (at the cells' centres) sits on the octree's cell
boundaries at SHIFT 0.5 and back at the centres at 0 or 1; one on the cells' faces the other way round.

    PYTHONPATH=build/python python3 benchmarks/lattice_force_modes.py SNAPSHOT [SHIFT ...]
"""
import sys

import numpy as np

import octwalk

SETTINGS = [
    ("tree + Ewald, theta 0.15", dict(opening_angle=0.15)),
    ("tree + Ewald, theta 0.3", dict(opening_angle=0.3)),
    ("tree + Ewald, theta 0.5 (default)", dict(opening_angle=0.5)),
    ("tree + Ewald, theta 0.6", dict(opening_angle=0.6)),
    ("TreePM N^(1/3) mesh, asmth 1.25, rcut 4.5", dict(opening_angle=0.3, mesh=1)),
    ("TreePM N^(1/3) mesh, asmth 2, rcut 6", dict(opening_angle=0.3, mesh=1, asmth=2, rcut=6)),
    ("TreePM 2 N^(1/3) mesh, asmth 1.25, rcut 4.5", dict(opening_angle=0.3, mesh=2)),
    ("TreePM 2 N^(1/3) mesh, asmth 2, rcut 6", dict(opening_angle=0.3, mesh=2, asmth=2, rcut=6)),
]
VECTORS = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1), (1, 1, 1), (2, 0, 0), (0, 2, 0), (0, 0, 2)]
GROUPS = [("|n| = 1", slice(0, 3)), ("sqrt 2", slice(3, 6)), ("sqrt 3", slice(6, 7)), ("2", slice(7, 10))]


def main():
    snap = octwalk.read_snapshot(sys.argv[1])
    shifts = [float(s) for s in sys.argv[2:]] or [0.0]
    box = float(snap["box_size"])
    mass = np.ascontiguousarray(snap["mass"], dtype=np.float64)
    grid = round(len(mass) ** (1 / 3))
    spacing = box / grid
    for shift in shifts:
        pos = np.mod(np.asarray(snap["pos"], dtype=np.float64) + shift * spacing, box)
        pos[pos >= box] = 0.0
        pos = np.ascontiguousarray(pos)

        def accelerations(mesh=0, **kw):
            if mesh:
                kw["pm_grid"] = mesh * grid
            a = octwalk.accelerations(pos, mass, box_size=box, epsilon=spacing / 30, backend="cpu", **kw)
            return a[0] if isinstance(a, tuple) else a

        def modes(a):
            out = []
            for n in VECTORS:
                k = 2 * np.pi / box * np.array(n, dtype=float)
                out.append(np.sum((a @ (k / np.linalg.norm(k))) * np.exp(-1j * pos @ k)))
            return np.array(out)

        reference = modes(accelerations(opening_angle=0.07))
        print(f"shift {shift} spacings ({len(mass)} bodies, box {box}): ratio to tree + Ewald at theta 0.07")
        print(f"  {'setting':44s}" + "".join(f"{g:>9s}" for g, _ in GROUPS))
        for label, kw in SETTINGS:
            ratio = np.real(modes(accelerations(**kw)) / reference)
            print(f"  {label:44s}" + "".join(f"{np.mean(ratio[s]):9.4f}" for _, s in GROUPS))


if __name__ == "__main__":
    main()

import numpy as np
import pytest

import octwalk


@pytest.fixture(scope="module")
def plummer():
    """A small Plummer sphere: (pos, mass) float64 C-contiguous."""
    m = octwalk.ic.plummer(1000, seed=7)
    return m["pos"], m["mass"]


def direct_numpy(pos, mass, eps, G=1.0):
    """Float64 direct summation in NumPy (the reference of the reference)."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d * d).sum(axis=2) + eps * eps
    inv = 1.0 / np.sqrt(r2)
    np.fill_diagonal(inv, 0.0)
    acc = G * (d * (mass[None, :] * inv**3)[:, :, None]).sum(axis=1)
    pot = -G * (mass[None, :] * inv).sum(axis=1)
    return acc, pot

import numpy as np
import pytest

import octwalk


def _bodies(n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n) / n


def test_forces_equal_a_numpy_direct_sum():
    xj, vj, mj = _bodies(7, 1)
    rng = np.random.default_rng(2)
    a2, j6, k18 = (rng.normal(size=(7, 3)) * 0.1 for _ in range(3))
    tj, ti, eps2 = 0.5, 0.625, 1e-4
    with octwalk.G6(backend="cpu") as g:
        assert g.npipes >= 4
        for k in range(7):
            g.set_j_particle(k, 100 + k, tj, 0.125, k18[k], j6[k], a2[k], vj[k], xj[k], mj[k])
        g.set_ti(ti)
        # i-particles: j-particles 100 and 101 (each skips itself) and two probes with other indices
        xi = np.vstack([xj[:2] + 0.0, rng.normal(size=(2, 3))])
        vi = np.vstack([vj[:2] + 0.0, rng.normal(size=(2, 3))])
        index = np.array([100, 101, 7, 8])
        acc, jerk, pot = g.calc(index, xi, vi, eps2)
    dt = ti - tj
    xp = xj + dt * (vj + dt * (a2 + dt * (j6 + dt * 0.75 * k18)))
    vp = vj + dt * (2 * a2 + dt * (3 * j6 + dt * 3 * k18))
    d = xp[None, :, :] - xi[:, None, :]
    dv = vp[None, :, :] - vi[:, None, :]
    r2 = (d * d).sum(axis=2) + eps2
    inv = 1 / np.sqrt(r2)
    inv[0, 0] = inv[1, 1] = 0.0
    rv = (d * dv).sum(axis=2)
    m3 = mj[None, :] * inv**3
    want_acc = (m3[:, :, None] * d).sum(axis=1)
    want_jerk = (m3[:, :, None] * (dv - 3 * (rv * inv**2)[:, :, None] * d)).sum(axis=1)
    want_pot = -(mj[None, :] * inv).sum(axis=1)
    assert np.allclose(acc, want_acc, rtol=1e-12, atol=0)
    assert np.allclose(jerk, want_jerk, rtol=1e-12, atol=1e-13 * np.abs(want_jerk).max())
    assert np.allclose(pot, want_pot, rtol=1e-12, atol=0)


def test_errors_are_runtime_errors_with_libg6s_line():
    g = octwalk.G6(backend="cpu")
    x = np.zeros(3)
    g.set_j_particle(0, 0, 0.0, 0.0, x, x, x, x, x, 1.0)
    with pytest.raises(RuntimeError, match="libg6: .*nj"):
        g.calc([0], np.ones((1, 3)), np.zeros((1, 3)), 0.01, nj=5)
    nan = np.array([np.nan, 0.0, 0.0])
    with pytest.raises(RuntimeError, match="libg6: g6_set_j_particle"):
        g.set_j_particle(1, 1, 0.0, 0.0, x, x, x, x, nan, 1.0)
    g.close()
    assert g.closed
    with pytest.raises(RuntimeError, match="closed"):
        g.set_ti(1.0)
    with pytest.raises(ValueError, match="backend"):
        octwalk.G6(backend="fpga")

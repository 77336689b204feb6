import numpy as np
import pytest

import octwalk
from conftest import direct_numpy


def relative_error(acc, ref):
    return np.linalg.norm(acc - ref, axis=1) / np.linalg.norm(ref, axis=1)


def test_tree_matches_direct_within_the_tree_error(plummer):
    pos, mass = plummer
    acc, pot = octwalk.accelerations(pos, mass, theta=0.5, epsilon=0.01)
    dacc, dpot = octwalk.direct(pos, mass, epsilon=0.01)
    assert acc.shape == (len(mass), 3) and acc.dtype == np.float64 and pot.shape == (len(mass),)
    err = relative_error(acc, dacc)
    assert np.percentile(err, 99) < 1e-2
    assert np.median(err) < 1e-3
    assert np.abs(pot - dpot).max() < 1e-2 * np.abs(dpot).max()


def test_direct_is_float64_direct_summation(plummer):
    pos, mass = plummer
    pos, mass = pos[:200].copy(), mass[:200].copy()
    acc, pot = octwalk.direct(pos, mass, epsilon=0.05, G=2.5)
    ref_acc, ref_pot = direct_numpy(pos, mass, 0.05, G=2.5)
    assert np.abs(acc - ref_acc).max() < 1e-12 * np.abs(ref_acc).max()
    assert np.abs(pot - ref_pot).max() < 1e-12 * np.abs(ref_pot).max()


def test_gravity_object_and_function_give_the_same_bits(plummer):
    pos, mass = plummer
    acc, pot = octwalk.accelerations(pos, mass, theta=0.6, epsilon=0.02, n_leaf=8)
    g = octwalk.Gravity(pos, mass, theta=0.6, epsilon=0.02, n_leaf=8)
    assert np.array_equal(g.accelerations(), acc)
    assert np.array_equal(g.potential(), pot)
    assert octwalk.accelerations(pos, mass, theta=0.6, epsilon=0.02, n_leaf=8, potential=False).shape == acc.shape


def test_converted_copy_gives_the_same_bits_as_the_array_read_in_place(plummer):
    pos, mass = plummer
    fortran = np.asfortranarray(pos)
    strided = np.repeat(mass, 2)[::2]
    as_list = pos.tolist()
    g_in_place = octwalk.Gravity(pos, mass)
    g_copy = octwalk.Gravity(fortran, strided)
    assert g_in_place.positions_address == pos.ctypes.data
    assert g_in_place.masses_address == mass.ctypes.data
    assert g_copy.positions_address != fortran.ctypes.data
    assert g_copy.masses_address != strided.ctypes.data
    assert np.array_equal(g_copy.accelerations(), g_in_place.accelerations())
    assert np.array_equal(octwalk.accelerations(as_list, mass)[0], g_in_place.accelerations())


def test_gravity_reads_the_callers_array_in_place(plummer):
    pos0, mass = plummer
    pos = pos0.copy()
    g = octwalk.Gravity(pos, mass)
    before = g.accelerations()
    pos[:] *= 2.0  # changed in place, not passed again
    assert np.array_equal(g.accelerations(), before)  # the last results stay until update()
    g.update()
    after = g.accelerations()
    assert g.positions_address == pos.ctypes.data
    assert np.array_equal(after, octwalk.accelerations(pos, mass)[0])
    assert not np.array_equal(after, before)


def test_update_with_new_arrays(plummer):
    pos, mass = plummer
    g = octwalk.Gravity(pos, mass)
    moved = pos + 1.0
    g.update(moved)
    assert g.positions_address == moved.ctypes.data
    assert np.array_equal(g.accelerations(), octwalk.accelerations(moved, mass)[0])
    small = pos[:100].copy()
    g.update(small, mass[:100].copy())
    assert g.n == 100 and g.accelerations().shape == (100, 3)
    with pytest.raises(ValueError, match="rows"):
        g.update(pos)  # 1000 positions for 100 masses


def test_probe_points_feel_the_bodies(plummer):
    pos, mass = plummer
    g = octwalk.Gravity(pos, mass, epsilon=0.01)
    far = np.array([[100.0, 0, 0], [0, -200.0, 0]])
    acc = g.gravity_at_point(0.01, far)
    pot = g.potential_at_point(None, far)
    r = np.linalg.norm(far, axis=1)
    expected = -mass.sum() * far / r[:, None] ** 3
    assert np.allclose(acc, expected, rtol=1e-3)
    assert np.allclose(pot, -mass.sum() / r, rtol=1e-3)
    targets_acc, _ = octwalk.accelerations(pos, mass, epsilon=0.01, targets=far)
    assert np.array_equal(targets_acc, acc)
    # AMUSE passes one softening per point; they must agree.
    assert np.array_equal(g.gravity_at_point(np.full(2, 0.01), far), acc)
    with pytest.raises(ValueError, match="one softening"):
        g.gravity_at_point(np.array([0.01, 0.02]), far)
    # Another softening than the solver's is used for that call only.
    near = pos[:3] + 1e-3
    assert not np.array_equal(g.gravity_at_point(0.5, near), g.gravity_at_point(0.01, near))
    assert g.epsilon_squared == pytest.approx(1e-4)


def test_g_scales_the_results_exactly(plummer):
    pos, mass = plummer
    a1, p1 = octwalk.accelerations(pos, mass)
    a2, p2 = octwalk.accelerations(pos, mass, G=2.0)
    assert np.array_equal(a2, 2.0 * a1) and np.array_equal(p2, 2.0 * p1)


def test_amuse_attributes_change_the_solver(plummer):
    pos, mass = plummer
    g = octwalk.Gravity(pos, mass)
    a_half = g.accelerations()
    g.opening_angle = 0.8
    assert g.opening_angle == 0.8
    a_coarse = g.accelerations()
    assert np.array_equal(a_coarse, octwalk.accelerations(pos, mass, theta=0.8)[0])
    assert not np.array_equal(a_coarse, a_half)
    g.epsilon_squared = 0.0025
    assert np.array_equal(g.accelerations(), octwalk.accelerations(pos, mass, theta=0.8, epsilon_squared=0.0025)[0])
    g.set_parameters(monopole=True)
    assert g.parameters["use_quadrupole"] is False

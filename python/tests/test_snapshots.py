import os
import subprocess

import numpy as np
import pytest

import octwalk


@pytest.fixture
def bodies():
    m = octwalk.ic.hernquist(300, seed=4)
    return m


@pytest.mark.parametrize("fmt", ["hdf5", "gadget2", "gadget2-format2", "tipsy-bonsai"])
def test_round_trip_keeps_ids_types_and_header(fmt, bodies, tmp_path):
    n = len(bodies["mass"])
    ids = np.arange(n, dtype=np.uint64)[::-1] + 1000
    types = np.where(np.arange(n) % 3 == 0, 4, 1).astype(np.uint8)
    path = tmp_path / f"snap.{fmt}"
    octwalk.write_snapshot(path, bodies["pos"], bodies["vel"], bodies["mass"], format=fmt, id=ids, type=types,
                           time=0.75)
    r = octwalk.read_snapshot(path)
    assert r["format"] == fmt and r["time"] == pytest.approx(0.75) and r["box_size"] == 0
    order = np.argsort(r["id"])
    want = np.argsort(ids)
    assert np.array_equal(r["id"][order], ids[want])
    assert np.array_equal(r["type"][order], types[want])
    exact = fmt == "hdf5"
    tol = 0 if exact else 1e-6
    for field in ("pos", "vel", "mass"):
        np.testing.assert_allclose(r[field][order], bodies[field][want], rtol=tol, atol=tol)
        assert r[field].dtype == np.float64


def test_tipsy_round_trip_in_float32(bodies, tmp_path):
    path = tmp_path / "snap.tipsy"
    octwalk.write_snapshot(path, bodies["pos"], bodies["vel"], bodies["mass"])
    r = octwalk.read_snapshot(path, "tipsy")
    assert np.array_equal(r["pos"], bodies["pos"].astype(np.float32).astype(np.float64))
    assert np.array_equal(r["mass"], bodies["mass"].astype(np.float32).astype(np.float64))


def test_cosmological_header_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 50.0, (64, 3))
    vel = rng.normal(size=(64, 3))
    mass = np.full(64, 1.0)
    cosmo = {"omega0": 0.3, "omega_lambda": 0.7, "hubble_param": 0.7}
    path = tmp_path / "box.hdf5"
    octwalk.write_snapshot(path, pos, vel, mass, format="hdf5", time=0.5, box_size=50.0, cosmology=cosmo)
    r = octwalk.read_snapshot(path)
    assert r["box_size"] == 50.0 and r["time"] == 0.5 and r["cosmology"] == cosmo
    np.testing.assert_allclose(r["vel"], vel, rtol=1e-12)


def test_models_are_the_command_lines(tmp_path):
    binary = os.environ.get("OCTWALK_BINARY")
    if not binary or not os.path.exists(binary):
        pytest.skip("OCTWALK_BINARY (the octwalk program) not given")
    path = tmp_path / "plummer.hdf5"
    subprocess.run([binary, "ic", "plummer", "--n", "200", "--seed", "9", "-o", str(path), "--format", "hdf5"],
                   check=True, capture_output=True)
    cli = octwalk.read_snapshot(path)
    py = octwalk.ic.plummer(200, seed=9)
    for field in ("pos", "vel", "mass", "id"):
        assert np.array_equal(cli[field], py[field]), field


@pytest.mark.parametrize("name", ["plummer", "hernquist", "uniform", "galaxy", "merger"])
def test_models_have_unit_mass_and_are_deterministic(name):
    a = getattr(octwalk.ic, name)(256, seed=2)
    b = octwalk.ic.model(name, 256, seed=2)
    assert a["pos"].shape[1] == 3 and len(a["mass"]) == len(a["pos"])
    assert a["mass"].sum() == pytest.approx(2.0 if name == "merger" else 1.0)
    assert np.array_equal(a["pos"], b["pos"])
    assert not np.array_equal(a["pos"], octwalk.ic.model(name, 256, seed=3)["pos"])

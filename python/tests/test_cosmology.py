import os
import shutil
import subprocess

import numpy as np
import pytest

import octwalk


def _octwalk_binary():
    path = os.environ.get("OCTWALK_BINARY") or shutil.which("octwalk")
    return path if path and os.access(path, os.X_OK) else None


@pytest.mark.skipif(_octwalk_binary() is None, reason="the octwalk program (OCTWALK_BINARY) is not built")
def test_cosmo_is_octwalk_ic_cosmo(tmp_path):
    args = dict(n_grid=8, box_size=64.0, z_begin=30.0, seed=5, lpt=2, sigma8=0.9, omega0=0.31, omega_lambda=0.69)
    ours = octwalk.ic.cosmo(**args)
    cli = [_octwalk_binary(), "ic", "cosmo", "-o", str(tmp_path / "ics"), "--format", "gadget2"]
    for name, value in args.items():
        cli += ["--" + name.replace("_", "-"), str(value)]
    subprocess.run(cli, check=True, capture_output=True)
    theirs = octwalk.read_snapshot(tmp_path / "ics")
    assert np.array_equal(ours["id"], theirs["id"])
    # GADGET-2 stores float32: positions and masses as they are, velocities over sqrt(a).
    assert np.array_equal(ours["pos"].astype(np.float32), theirs["pos"].astype(np.float32))
    assert np.array_equal(ours["mass"].astype(np.float32), theirs["mass"].astype(np.float32))
    np.testing.assert_allclose(ours["vel"], theirs["vel"], rtol=1e-6, atol=1e-6 * np.abs(ours["vel"]).max())
    assert ours["time"] == pytest.approx(theirs["time"], rel=1e-12) and ours["time"] == pytest.approx(1 / 31)
    assert ours["box_size"] == theirs["box_size"] == 64.0
    assert ours["cosmology"] == pytest.approx(theirs["cosmology"])


def test_cosmo_fields_and_errors():
    ics = octwalk.ic.cosmo(n_grid=4, box_size=50.0, seed=2)
    assert ics["pos"].shape == (64, 3) and ics["box_size"] == 50.0
    assert ((ics["pos"] >= 0) & (ics["pos"] < 50.0)).all()
    assert ics["cosmology"] == {"omega0": 0.3, "omega_lambda": 0.7, "hubble_param": 0.7}
    assert ics["a_begin"] == ics["time"] == pytest.approx(0.02) and ics["G"] == 1.0
    # The mean density is Omega0 rho_crit: 3 H0^2 / (8 pi G) Omega0 L^3 in N-body units.
    assert ics["mass"].sum() == pytest.approx(0.3 * 3 / (8 * np.pi) * 50.0**3, rel=1e-12)
    with pytest.raises(ValueError, match="box-size"):
        octwalk.ic.cosmo(n_grid=4, box_size=-1.0)
    with pytest.raises(ValueError, match="seed"):
        octwalk.ic.cosmo(n_grid=4, seed=-1)


def test_cosmo_defaults_are_the_librarys():
    ours = octwalk.ic.cosmo(n_grid=4)
    library = octwalk._core.cosmo_ics(n_grid=4)  # CosmoIcParams{} and SpectrumParams{}
    for field in ("pos", "vel", "mass", "id"):
        assert np.array_equal(ours[field], library[field])
    assert ours["time"] == library["time"] and ours["linear_power"] == library["linear_power"]


def test_power_spectrum_of_cosmo_ics():
    ics = octwalk.ic.cosmo(n_grid=16, box_size=100.0, seed=3, z_begin=9.0)
    k, p = octwalk.power_spectrum(ics["pos"], ics["mass"], ics["box_size"], n_mesh=32)
    assert k.shape == p.shape == (16,)  # n_mesh / 2 bins, one per fundamental mode
    assert np.isfinite(p).all() and (p > 0).all()
    assert (np.diff(k) > 0).all() and k[0] == pytest.approx(2 * np.pi / 100.0, rel=0.3)
    k, p, modes, shot = octwalk.power_spectrum(ics["pos"], ics["mass"], 100.0, n_mesh=32, n_bins=8, log_bins=True,
                                               details=True)
    assert k.shape == (8,) and modes.dtype == np.int64 and shot == pytest.approx(100.0**3 / 16**3)
    with pytest.raises(ValueError, match="box_size"):
        octwalk.power_spectrum(ics["pos"], ics["mass"], 0.0)
    with pytest.raises(ValueError, match="n-mesh"):
        octwalk.power_spectrum(ics["pos"], ics["mass"], 100.0, n_mesh=2)

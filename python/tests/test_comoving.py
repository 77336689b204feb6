"""Comoving runs through Simulation: the same integrator and the same bits as octwalk run --comoving."""

import glob
import os
import shutil
import subprocess

import numpy as np
import pytest

import octwalk


def _octwalk_binary():
    path = os.environ.get("OCTWALK_BINARY") or shutil.which("octwalk")
    return path if path and os.access(path, os.X_OK) else None


needs_binary = pytest.mark.skipif(_octwalk_binary() is None, reason="the octwalk program (OCTWALK_BINARY) is not built")

# Two steps of dlna = 0.25 from a_begin to 1.5 a_begin (ln 1.5 = 0.405): a short run that still continues a step.
DLNA = 0.25


def _cosmo_ics():
    return octwalk.ic.cosmo(n_grid=16, seed=3)


@needs_binary
def test_comoving_run_is_octwalk_run_comoving(tmp_path):
    ics = _cosmo_ics()
    a_end = 1.5 * ics["time"]
    snapshot = tmp_path / "ics.hdf5"
    octwalk.write_snapshot(snapshot, ics["pos"], ics["vel"], ics["mass"], id=ics["id"], format="hdf5",
                           time=ics["time"], box_size=ics["box_size"], cosmology=ics["cosmology"])
    subprocess.run([_octwalk_binary(), "run", "--comoving", "--input", str(snapshot), "--a-end", repr(a_end), "--dlna",
                    repr(DLNA), "--format", "hdf5", "--quiet", "--output-dir", str(tmp_path / "run")], check=True,
                   capture_output=True)
    final = octwalk.read_snapshot(sorted(glob.glob(str(tmp_path / "run" / "snap_*.hdf5")))[-1])
    order = np.argsort(final["id"])

    sim = octwalk.Simulation.from_snapshot(snapshot, comoving=True, a_end=a_end, dlna=DLNA)
    sim.evolve(a_end)
    assert sim.comoving and sim.time == a_end == final["time"] and sim.steps == 2
    assert np.array_equal(sim.particles.pos, final["pos"][order])
    # The HDF5 writer stores velocities through GADGET's sqrt(a) convention: the last bit may differ.
    np.testing.assert_allclose(sim.particles.vel, final["vel"][order], rtol=1e-13, atol=1e-13)

    # The same run from ic.cosmo's dict: only the file's rounding of the initial velocities differs.
    direct = octwalk.Simulation.from_cosmo(ics, a_end=a_end, dlna=DLNA)
    direct.evolve(a_end)
    np.testing.assert_allclose(direct.particles.pos, sim.particles.pos, rtol=0, atol=1e-10)


def test_comoving_from_an_isolated_snapshot_is_refused(tmp_path):
    m = octwalk.ic.plummer(64, seed=1)
    path = tmp_path / "plummer.tipsy"
    octwalk.write_snapshot(path, m["pos"], m["vel"], m["mass"])
    with pytest.raises(ValueError, match="no BoxSize.*comoving run needs a periodic box"):
        octwalk.Simulation.from_snapshot(path, comoving=True)


def test_comoving_ics_without_cosmology_are_refused():
    ics = dict(_cosmo_ics(), cosmology=None)
    with pytest.raises(ValueError, match="no cosmological header"):
        octwalk.Simulation.from_cosmo(ics)


def test_comoving_run_only_goes_forward():
    sim = octwalk.Simulation.from_cosmo(octwalk.ic.cosmo(n_grid=4, seed=1), dlna=0.5)
    with pytest.raises(ValueError, match="a_end = 0.01.*only goes forward"):
        sim.evolve(0.01)

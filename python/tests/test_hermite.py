import os
import shutil
import subprocess

import numpy as np
import pytest

import octwalk


def _octwalk_binary():
    path = os.environ.get("OCTWALK_BINARY") or shutil.which("octwalk")
    return path if path and os.access(path, os.X_OK) else None


def test_a_plummer_cluster_conserves_energy():
    h = octwalk.Hermite.from_model("plummer", n=128, seed=5, eta=0.02, epsilon=1 / 64)
    e0 = h.energy()
    h.evolve(1.0)
    assert h.time == 1.0
    assert abs(h.energy() - e0) <= 1e-4 * abs(e0)
    assert h.counts["body_steps"] > 128 * 16 and h.counts["block_steps"] > 16
    p = h.particles
    assert p.pos.shape == (128, 3) and p.vel.shape == (128, 3) and np.array_equal(p.mass, np.full(128, 1 / 128))
    assert h.settings == {"eta": 0.02, "eta_start": 0.01, "dt_max": 1 / 16}


def test_times_between_intervals_start_a_new_run_there():
    m = octwalk.ic.plummer(64, seed=2)
    h = octwalk.Hermite.from_arrays(m["pos"], m["vel"], m["mass"], dt_max=1 / 8)
    e0 = h.energy()
    h.evolve(0.3)
    assert h.time == 0.3
    h.evolve(0.5)
    assert h.time == 0.5 and abs(h.energy() - e0) <= 1e-5 * abs(e0)
    with pytest.raises(ValueError, match="only goes forward"):
        h.evolve(0.25)


def test_tree_keywords_and_bad_settings_are_refused():
    m = octwalk.ic.plummer(16, seed=1)
    with pytest.raises(TypeError, match="theta"):
        octwalk.Hermite.from_arrays(m["pos"], m["vel"], m["mass"], theta=0.4)
    with pytest.raises(ValueError, match="eta"):
        octwalk.Hermite.from_arrays(m["pos"], m["vel"], m["mass"], eta=2.0)
    bad = m["mass"].copy()
    bad[3] = -1.0
    with pytest.raises(ValueError, match="3"):
        octwalk.Hermite.from_arrays(m["pos"], m["vel"], bad)


@pytest.mark.skipif(_octwalk_binary() is None, reason="the octwalk program (OCTWALK_BINARY) is not built")
def test_the_same_bits_as_octwalk_hermite(tmp_path):
    subprocess.run([_octwalk_binary(), "hermite", "--model", "plummer", "--n", "128", "--seed", "3", "--t-end", "0.5",
                    "--dt-max", "0.0625", "--eta", "0.02", "--epsilon", "0.015625", "--format", "hdf5", "--quiet",
                    "--output-dir", str(tmp_path / "run")], check=True, capture_output=True)
    last = sorted((tmp_path / "run").glob("snap_*"))[-1]
    cli = octwalk.read_snapshot(last)
    assert cli["time"] == 0.5
    h = octwalk.Hermite.from_model("plummer", n=128, seed=3, eta=0.02, epsilon=1 / 64, dt_max=1 / 16)
    h.evolve(0.25)  # whole intervals: one run, as the program's
    h.evolve(0.5)
    order = np.argsort(cli["id"])
    assert np.array_equal(cli["pos"][order], h.particles.pos)
    assert np.array_equal(cli["vel"][order], h.particles.vel)

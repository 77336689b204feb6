import numpy as np
import pytest

import octwalk


def two_bodies():
    return np.array([[0.0, 0, 0], [1.0, 0, 0]]), np.ones(2)


def test_nan_position_is_a_value_error_naming_the_body():
    pos, mass = two_bodies()
    pos = np.vstack([pos, [[0.5, np.nan, 0]]])
    with pytest.raises(ValueError, match="body 2: y = nan") as e:
        octwalk.accelerations(pos, np.ones(3))
    assert isinstance(e.value, octwalk.InputError)


def test_negative_mass_and_bad_shapes_are_value_errors():
    pos, mass = two_bodies()
    with pytest.raises(ValueError, match="body 1"):
        octwalk.accelerations(pos, np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"shape \(N, 3\)"):
        octwalk.accelerations(pos[:, :2], mass)
    with pytest.raises(ValueError, match="rows"):
        octwalk.accelerations(pos, np.ones(3))
    with pytest.raises(TypeError, match="real numbers"):
        octwalk.accelerations(pos.astype(complex), mass)


def test_an_update_that_is_refused_leaves_no_stale_bodies():
    pos, mass = two_bodies()
    g = octwalk.Gravity(pos, mass)
    g.accelerations()
    pos[1, 0] = np.inf
    with pytest.raises(ValueError, match="body 1"):
        g.update()
    with pytest.raises(ValueError, match="refused"):
        g.accelerations()
    pos[1, 0] = 2.0
    g.update()
    assert g.accelerations()[0, 0] == pytest.approx(0.25, rel=1e-3)


def test_missing_and_damaged_files_are_os_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        octwalk.read_snapshot(tmp_path / "none.tipsy")
    bad = tmp_path / "bad.tipsy"
    bad.write_bytes(b"not a snapshot at all, just text")
    with pytest.raises(OSError, match="bad.tipsy") as e:
        octwalk.read_snapshot(bad)
    assert isinstance(e.value, octwalk.FormatError)


def test_an_existing_file_is_not_overwritten_unless_asked(tmp_path):
    pos, mass = two_bodies()
    path = tmp_path / "two.tipsy"
    octwalk.write_snapshot(path, pos, np.zeros_like(pos), mass)
    with pytest.raises(OSError):
        octwalk.write_snapshot(path, pos, np.zeros_like(pos), mass)
    octwalk.write_snapshot(path, pos + 1, np.zeros_like(pos), mass, overwrite=True)
    assert octwalk.read_snapshot(path)["pos"][0, 0] == 1.0


def test_unknown_model_and_format_are_value_errors():
    with pytest.raises(ValueError, match="kuzmin"):
        octwalk.ic.model("kuzmin", 100)
    with pytest.raises(ValueError, match="seed"):
        octwalk.ic.plummer(100, seed=-1)
    pos, mass = two_bodies()
    with pytest.raises(ValueError, match="fits"):
        octwalk.write_snapshot("/tmp/never-written.fits", pos, pos, mass, format="fits")


def test_gpu_backend_without_a_device_is_a_runtime_error():
    pos, mass = two_bodies()
    if octwalk.Gravity(pos, mass).backend == "gpu":
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="no CUDA device") as e:
        octwalk.accelerations(pos, mass, backend="gpu")
    assert isinstance(e.value, octwalk.BackendError)

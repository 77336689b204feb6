"""Checkpoints of comoving runs: saved and restored from Python, and those of octwalk run --comoving continued."""

import os
import shutil
import signal
import subprocess
import sys
import threading
import types

import numpy as np
import pytest

import octwalk


def _octwalk_binary():
    path = os.environ.get("OCTWALK_BINARY") or shutil.which("octwalk")
    return path if path and os.access(path, os.X_OK) else None


needs_binary = pytest.mark.skipif(_octwalk_binary() is None, reason="the octwalk program (OCTWALK_BINARY) is not built")


@pytest.fixture(scope="module")
def ics():
    """An 8^3 LCDM box from a = 0.02: the step criterion takes about 20 steps to A_END."""
    return octwalk.ic.cosmo(n_grid=8, seed=3)


A_END = 0.03


def _same_bodies(a, b):
    assert np.array_equal(a.particles.pos, b.particles.pos)
    assert np.array_equal(a.particles.vel, b.particles.vel)


class _BarThatStops:
    """tqdm's bar as evolve uses it, raising KeyboardInterrupt at the end of step `after` as a Ctrl-C there would."""

    after = 0

    def __init__(self, total, **kw):
        self.updates = 0

    def update(self, n):
        self.updates += 1
        if self.updates == _BarThatStops.after:
            raise KeyboardInterrupt

    def set_postfix_str(self, text, refresh=True):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def _stop_after(monkeypatch, steps):
    fake = types.ModuleType("tqdm.auto")
    fake.tqdm = _BarThatStops
    _BarThatStops.after = steps
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake)


def test_an_interrupted_comoving_run_continues_bit_for_bit(tmp_path, ics, monkeypatch):
    straight = octwalk.Simulation.from_cosmo(ics, a_end=A_END)
    straight.evolve(A_END)
    stopped = octwalk.Simulation.from_cosmo(ics, a_end=A_END)
    _stop_after(monkeypatch, 7)
    with pytest.raises(KeyboardInterrupt):
        stopped.evolve(A_END, progress=True, checkpoint=tmp_path / "stop.ckpt")
    assert stopped.steps == 7 and ics["time"] < stopped.time < A_END

    restored = octwalk.Simulation.from_checkpoint(tmp_path / "stop.ckpt")
    assert restored.comoving and restored.time == stopped.time and restored.steps == 7
    assert restored.timestep == stopped.timestep > 0
    for name in ("box_size", "epsilon_squared", "gravitational_constant", "opening_angle"):
        assert restored.parameters[name] == stopped.parameters[name]
    _same_bodies(restored, stopped)
    restored.evolve(A_END)
    assert restored.time == A_END and restored.steps == straight.steps > 7
    _same_bodies(restored, straight)
    assert restored.diagnostics() == straight.diagnostics()


def test_a_comoving_run_saved_between_evolves_keeps_its_steps(tmp_path, ics):
    a_mid = 0.025
    straight = octwalk.Simulation.from_cosmo(ics, a_end=A_END, dlna=0.05)
    straight.evolve(a_mid)
    straight.save_checkpoint(tmp_path / "mid.ckpt")
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "mid.ckpt")
    assert restored.time == a_mid and restored.steps == straight.steps == 5
    straight.evolve(A_END)
    restored.evolve(A_END)  # a new run from a_mid in both
    assert restored.steps == straight.steps == 5 + 4
    _same_bodies(restored, straight)
    restored.save_checkpoint(tmp_path / "end.ckpt")  # the steps of the run to a_mid are kept beside it
    assert octwalk.Simulation.from_checkpoint(tmp_path / "end.ckpt").steps == 9


def test_a_comoving_run_saved_before_its_first_step_can_end_elsewhere(tmp_path, ics):
    octwalk.Simulation.from_cosmo(ics, a_end=A_END, dlna=0.05).save_checkpoint(tmp_path / "start.ckpt")
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "start.ckpt")
    assert restored.comoving and restored.time == ics["time"] and restored.steps == 0 and restored.timestep == 0
    restored.evolve(0.025)  # planned afresh from the saved bodies to this a_end
    fresh = octwalk.Simulation.from_cosmo(ics, a_end=0.025, dlna=0.05)
    fresh.evolve(0.025)
    assert restored.steps == fresh.steps == 5
    # The checkpoint holds the momenta a v: their peculiar velocities may differ from the dict's in the last bit.
    np.testing.assert_allclose(restored.particles.pos, fresh.particles.pos, rtol=0, atol=1e-12)


def test_ctrl_c_in_a_comoving_run_writes_the_checkpoint(tmp_path, ics):
    sim = octwalk.Simulation.from_cosmo(ics, a_end=1.0, dlna=0.001)  # thousands of steps: the interrupt comes first
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sim.evolve(1.0, checkpoint=tmp_path / "stop.ckpt")
    finally:
        timer.cancel()  # a run that failed at once must not leave a pending SIGINT to stop later tests
        timer.join()
    assert sim.steps > 0 and ics["time"] < sim.time < 1.0
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "stop.ckpt")
    assert restored.time == sim.time and restored.steps == sim.steps
    _same_bodies(restored, sim)
    a_next = sim.time * np.exp(0.003)  # a new run of three steps from the interrupted state in both
    restored.evolve(a_next)
    sim.evolve(a_next)
    assert restored.steps == sim.steps
    _same_bodies(restored, sim)


@needs_binary
def test_a_checkpoint_of_octwalk_run_comoving_continues_as_its_restart(tmp_path, ics):
    binary = _octwalk_binary()
    snapshot = tmp_path / "ics.hdf5"
    octwalk.write_snapshot(snapshot, ics["pos"], ics["vel"], ics["mass"], id=ics["id"], format="hdf5",
                           time=ics["time"], box_size=ics["box_size"], cosmology=ics["cosmology"])
    run = tmp_path / "run"
    subprocess.run([binary, "run", "--comoving", "--input", str(snapshot), "--a-end", repr(A_END),
                    "--checkpoint-every", "10", "--quiet", "--output-dir", str(run)], check=True, capture_output=True)
    # checkpoint.bin is the run's end; checkpoint.bin.prev its step 10, which octwalk run --restart continues.
    again = tmp_path / "again"
    again.mkdir()
    shutil.copy(run / "checkpoint.bin.prev", again / "checkpoint.bin")
    subprocess.run([binary, "run", "--restart", str(again), "--quiet"], check=True, capture_output=True)

    restored = octwalk.Simulation.from_checkpoint(run / "checkpoint.bin.prev")
    assert restored.comoving and restored.steps == 10 and restored.time < A_END
    restored.evolve(A_END)
    for path in (again / "checkpoint.bin", run / "checkpoint.bin"):
        cli = octwalk.Simulation.from_checkpoint(path)
        assert cli.time == restored.time == A_END and cli.steps == restored.steps
        _same_bodies(restored, cli)


def test_bad_paths_are_os_errors_of_one_line(tmp_path, ics):
    sim = octwalk.Simulation.from_cosmo(ics, a_end=A_END)
    missing = tmp_path / "no such folder" / "c.ckpt"
    with pytest.raises(OSError) as e:
        sim.save_checkpoint(missing)
    assert isinstance(e.value, octwalk.FormatError) and "no such folder" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(FileNotFoundError):
        octwalk.Simulation.from_checkpoint(missing)
    with pytest.raises(OSError) as e:
        octwalk.Simulation.from_checkpoint(tmp_path)  # a folder
    assert "\n" not in str(e.value)
    sim.save_checkpoint(tmp_path / "c.ckpt")
    data = bytearray((tmp_path / "c.ckpt").read_bytes())
    data[-100] ^= 0xFF  # the comoving field near the end
    (tmp_path / "c.ckpt").write_bytes(bytes(data))
    with pytest.raises(octwalk.FormatError) as e:
        octwalk.Simulation.from_checkpoint(tmp_path / "c.ckpt")
    assert "c.ckpt" in str(e.value) and "\n" not in str(e.value)


def test_a_checkpoint_of_a_run_in_time_is_still_one(tmp_path):
    m = octwalk.ic.plummer(128, seed=5)
    sim = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=1 / 32)
    sim.evolve(0.125)
    sim.save_checkpoint(tmp_path / "c.ckpt")
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "c.ckpt")
    assert not restored.comoving and restored.timestep == 1 / 32 and restored.steps == 4
    restored.evolve(0.25)
    sim.evolve(0.25)
    _same_bodies(restored, sim)

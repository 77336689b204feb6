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


def test_save_load_evolve_is_evolving_straight_on(tmp_path):
    m = octwalk.ic.plummer(256, seed=3)
    straight = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=1 / 64)
    straight.evolve(0.25)
    first = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=1 / 64)
    first.evolve(0.125)
    first.save_checkpoint(tmp_path / "run.ckpt")
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "run.ckpt")
    assert restored.time == 0.125 and restored.steps == 8 and restored.timestep == 1 / 64
    assert restored.parameters["opening_angle"] == first.parameters["opening_angle"]
    restored.evolve(0.25)
    assert restored.steps == straight.steps == 16
    assert np.array_equal(restored.particles.pos, straight.particles.pos)
    assert np.array_equal(restored.particles.vel, straight.particles.vel)
    assert restored.energy() == straight.energy()


def test_a_run_restarted_between_steps_keeps_its_timestep_and_count(tmp_path):
    m = octwalk.ic.hernquist(128, seed=2)
    straight = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=0.01)
    straight.evolve(0.037)
    straight.evolve(0.06)
    first = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=0.01)
    first.evolve(0.037)
    first.save_checkpoint(tmp_path / "c")
    first.save_checkpoint(tmp_path / "c")  # the earlier one becomes c.prev
    assert (tmp_path / "c.prev").exists()
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "c")
    assert restored.timestep == 0.01 and restored.steps == 4
    restored.evolve(0.06)
    assert restored.steps == straight.steps == 7
    assert np.array_equal(restored.particles.pos, straight.particles.pos)
    restored.save_checkpoint(tmp_path / "d")  # after two runs: the steps of the first are kept beside it
    again = octwalk.Simulation.from_checkpoint(tmp_path / "d")
    assert again.steps == 7 and again.time == 0.06
    again.evolve(0.1)
    straight.evolve(0.1)
    assert again.steps == straight.steps and np.array_equal(again.particles.pos, straight.particles.pos)


def test_damaged_or_missing_checkpoint_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError):
        octwalk.Simulation.from_checkpoint(tmp_path / "none")
    sim = octwalk.Simulation.from_model("plummer", n=64, seed=1)
    sim.save_checkpoint(tmp_path / "c")
    data = bytearray((tmp_path / "c").read_bytes())
    data[200] ^= 0xFF
    (tmp_path / "c").write_bytes(bytes(data))
    with pytest.raises(octwalk.FormatError):
        octwalk.Simulation.from_checkpoint(tmp_path / "c")


def test_from_snapshot_starts_from_the_file(tmp_path):
    m = octwalk.ic.plummer(200, seed=4)
    octwalk.write_snapshot(tmp_path / "s.gadget", m["pos"], m["vel"], m["mass"], format="gadget2", time=0.5)
    sim = octwalk.Simulation.from_snapshot(tmp_path / "s.gadget", timestep=1 / 32, theta=0.6)
    assert sim.time == 0.5 and sim.parameters["opening_angle"] == 0.6
    read = octwalk.read_snapshot(tmp_path / "s.gadget")
    arrays = octwalk.Simulation.from_arrays(read["pos"], read["vel"], read["mass"], ids=read["id"], time=0.5,
                                            timestep=1 / 32, theta=0.6)
    sim.evolve(0.625)
    arrays.evolve(0.625)
    assert np.array_equal(sim.particles.pos, arrays.particles.pos)
    with pytest.raises(FileNotFoundError):
        octwalk.Simulation.from_snapshot(tmp_path / "none")


def test_from_snapshot_runs_a_periodic_file_in_its_box(tmp_path):
    rng = np.random.default_rng(1)
    pos = rng.uniform(0, 10, (64, 3))
    vel = np.zeros((64, 3))
    mass = np.full(64, 1 / 64)
    octwalk.write_snapshot(tmp_path / "box", pos, vel, mass, format="gadget2", box_size=10.0)
    assert octwalk.Simulation.from_snapshot(tmp_path / "box").parameters["box_size"] == 10.0
    assert octwalk.Simulation.from_snapshot(tmp_path / "box", box_size=0).parameters["box_size"] == 0.0
    with pytest.raises(ValueError, match="does not match the snapshot's BoxSize"):
        octwalk.Simulation.from_snapshot(tmp_path / "box", box_size=12.0)


@needs_binary
def test_a_checkpoint_of_octwalk_run_continues_bit_for_bit(tmp_path):
    subprocess.run([_octwalk_binary(), "run", "--model", "plummer", "--n", "128", "--seed", "3", "--t-end", "0.125",
                    "--timestep", "0.015625", "--epsilon", "0.01", "--output-dir", str(tmp_path / "run")],
                   check=True, capture_output=True)
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "run" / "checkpoint.bin")
    assert restored.time == 0.125 and restored.steps == 8 and restored.timestep == 1 / 64
    restored.evolve(0.25)
    straight = octwalk.Simulation.from_model("plummer", n=128, seed=3, timestep=1 / 64)
    straight.evolve(0.25)
    assert np.array_equal(restored.particles.pos, straight.particles.pos)


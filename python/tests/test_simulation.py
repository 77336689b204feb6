import numpy as np
import pytest

import octwalk


def test_plummer_conserves_energy():
    sim = octwalk.Simulation.from_model("plummer", n=256, seed=1, timestep=1 / 128, epsilon=0.05)
    e0 = sim.energy()
    assert -0.3 < e0 < -0.2  # Henon units' -1/4, less the softening's share
    sim.evolve(0.25)
    assert sim.time == 0.25 and sim.steps == 32
    assert abs(sim.energy() - e0) < 1e-3 * abs(e0)
    p = sim.particles
    assert p.pos.shape == (256, 3) and p.vel.shape == (256, 3) and len(p) == 256


def test_whole_steps_continue_one_run_bit_for_bit():
    m = octwalk.ic.plummer(128, seed=5)
    one = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=1 / 64)
    one.evolve(0.25)
    parts = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=1 / 64)
    for t in (0.0625, 0.125, 0.25):
        parts.evolve(t)
    assert np.array_equal(one.particles.pos, parts.particles.pos)
    assert np.array_equal(one.particles.vel, parts.particles.vel)


def test_a_time_between_steps_is_reached_exactly():
    sim = octwalk.Simulation.from_model("hernquist", n=128, seed=2, timestep=0.01)
    sim.evolve(0.037)
    assert sim.time == 0.037 and sim.steps == 4
    sim.evolve(0.05)
    assert sim.time == 0.05
    with pytest.raises(ValueError, match="only goes forward"):
        sim.evolve(0.01)


def test_two_bodies_orbit():
    pos = np.array([[0.5, 0, 0], [-0.5, 0, 0]])
    vel = np.array([[0, 0.5, 0], [0, -0.5, 0]])  # circular: v^2 = G m / (4 r) with r = 0.5, m = 1 ... each
    mass = np.array([0.5, 0.5])
    sim = octwalk.Simulation.from_arrays(pos, vel, mass, timestep=1e-3, epsilon=0.0)
    sim.evolve(0.5)
    r = np.linalg.norm(sim.particles.pos[0] - sim.particles.pos[1])
    assert r == pytest.approx(1.0, rel=1e-4)
    assert sim.diagnostics()["relative_energy_error"] < 1e-6

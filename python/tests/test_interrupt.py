import os
import signal
import sys
import threading
import types

import numpy as np
import pytest

import octwalk


def _interrupt_after(seconds):
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_ctrl_c_stops_at_a_whole_step_and_the_checkpoint_continues_bit_for_bit(tmp_path):
    m = octwalk.ic.plummer(256, seed=4)
    sim = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=1 / 128)
    timer = _interrupt_after(0.1)
    with pytest.raises(KeyboardInterrupt):
        sim.evolve(64.0, checkpoint=tmp_path / "stop.ckpt")  # minutes: the interrupt comes first
    timer.join()
    assert 0 < sim.time < 64.0 and sim.steps == round(sim.time * 128)
    assert (tmp_path / "stop.ckpt").exists()
    restored = octwalk.Simulation.from_checkpoint(tmp_path / "stop.ckpt")
    assert restored.time == sim.time and restored.steps == sim.steps
    t_end = sim.time + 1 / 16
    restored.evolve(t_end)
    straight = octwalk.Simulation.from_arrays(m["pos"], m["vel"], m["mass"], timestep=1 / 128)
    straight.evolve(t_end)
    assert restored.steps == straight.steps == sim.steps + 8
    assert np.array_equal(restored.particles.pos, straight.particles.pos)
    assert np.array_equal(restored.particles.vel, straight.particles.vel)
    sim.evolve(t_end)  # the interrupted object goes on as well
    assert np.array_equal(sim.particles.pos, straight.particles.pos)


def test_hermite_stops_at_a_sync_time_on_ctrl_c():
    h = octwalk.Hermite.from_model("plummer", n=128, seed=1, dt_max=1 / 64)
    timer = _interrupt_after(0.1)
    with pytest.raises(KeyboardInterrupt):
        h.evolve(64.0)
    timer.join()
    assert 0 < h.time < 64.0 and (h.time * 64).is_integer()


class _FakeBar:
    """What evolve uses of tqdm's bar, recording the updates."""

    bars = []

    def __init__(self, total, **kw):
        self.total, self.done, self.closed = total, 0.0, False
        _FakeBar.bars.append(self)

    def update(self, n):
        self.done += n

    def set_postfix_str(self, text, refresh=True):
        self.postfix = text

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.closed = True


def test_progress_bar_follows_the_steps(monkeypatch):
    fake = types.ModuleType("tqdm.auto")
    fake.tqdm = _FakeBar
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake)
    sim = octwalk.Simulation.from_model("plummer", n=64, seed=1, timestep=1 / 16)
    sim.evolve(0.5, progress=True)
    bar = _FakeBar.bars[-1]
    assert bar.total == 0.5 and bar.done == pytest.approx(0.5) and bar.closed and bar.postfix == "0.5"
    count = len(_FakeBar.bars)
    sim.evolve(1.0)  # not a terminal: no bar
    sim.evolve(1.5, progress=False)
    assert len(_FakeBar.bars) == count


def test_progress_without_tqdm_is_skipped(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    sim = octwalk.Simulation.from_model("plummer", n=64, seed=1, timestep=1 / 16)
    sim.evolve(0.25, progress=True)
    assert sim.time == 0.25

"""Built-in initial conditions (host/models/models.h): total mass 1 (the merger's two galaxies: 2), G = 1,
deterministic by seed.

Each returns a dict as octwalk.read_snapshot does (pos, vel, mass, id, type, time, box_size, cosmology), the same
bodies as ``octwalk ic --model NAME --n N --seed SEED`` writes.
"""

from . import _core


def model(name, n, *, seed=1):
    """The model called name: plummer, hernquist, uniform, galaxy or merger (ValueError for another name)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed = {seed!r} is invalid: must be an int >= 0")
    return _core.make_model(name, n, seed)


def plummer(n, *, seed=1):
    """Plummer sphere in Henon units (E = -1/4)."""
    return model("plummer", n, seed=seed)


def hernquist(n, *, seed=1):
    """Hernquist sphere, scale length 1."""
    return model("hernquist", n, seed=seed)


def uniform(n, *, seed=1):
    """Cold uniform sphere of radius 1."""
    return model("uniform", n, seed=seed)


def galaxy(n, *, seed=1):
    """Disk galaxy with bulge and halo (default settings)."""
    return model("galaxy", n, seed=seed)


def merger(n, *, seed=1):
    """Two galaxies on a merging orbit (default settings)."""
    return model("merger", n, seed=seed)

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


def cosmo(n_grid=64, *, box_size=100.0, z_begin=49.0, seed=1, lpt=2, fix_amplitudes=False, invert_phases=False,
          plt=False, plt_a_target=1.0, omega0=0.3, omega_lambda=0.7, hubble_param=0.7, omega_baryon=0.049, ns=0.965,
          sigma8=0.81, tcmb=2.7255, transfer="eh98", power_spectrum=None, units="nbody"):
    """Cosmological initial conditions (host/models/cosmo_ics.h): n_grid^3 equal masses in a periodic box of
    box_size, displaced from the linear P(k) (EH98 normalised to sigma8, or the CAMB/CLASS table file
    power_spectrum) by 2LPT (lpt=2) or Zel'dovich (lpt=1) at z_begin; the same bodies as ``octwalk ic cosmo``
    with the same options (--n-grid, --box-size, ... with _ for -).

    Returns the dict of the other models, with time = a_begin, box_size and cosmology set, comoving positions in
    [0, box_size) and peculiar velocities; and a_begin, G and H0 of `units` (nbody, gadget-mpc or gadget-kpc),
    units, linear_power (its description) and growth_factor (D(a_begin), D(1) = 1).
    ValueError naming the value for a bad option."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed = {seed!r} is invalid: must be an int >= 0")
    return _core.cosmo_ics(n_grid=n_grid, box_size=box_size, z_begin=z_begin, seed=seed, lpt=lpt,
                           fix_amplitudes=fix_amplitudes, invert_phases=invert_phases, plt=plt,
                           plt_a_target=plt_a_target, omega0=omega0, omega_lambda=omega_lambda,
                           hubble_param=hubble_param, omega_baryon=omega_baryon, ns=ns, sigma8=sigma8, tcmb=tcmb,
                           transfer=transfer, power_spectrum="" if power_spectrum is None else str(power_spectrum),
                           units=units)

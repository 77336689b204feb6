"""octwalk from Python: tree gravity on NumPy arrays, snapshots, models and the leapfrog.

The names follow pytreegrav (``accelerations``/``direct`` on arrays), AMUSE (``Gravity`` with
``opening_angle``, ``epsilon_squared``, ``gravity_at_point``, ``potential_at_point``) and REBOUND
(``Simulation.evolve``, ``.particles``, ``.energy()``), the star-cluster integrator ``Hermite`` and libg6's
GRAPE-6 calls (``G6``); docs/python.md describes them.

Every solver parameter of the table (``parameters()``, docs/parameters.md) is a keyword of every entry point,
by its name (``n_leaf=32``), its command-line option with ``_`` for ``-`` (``epsilon=0.01`` is a length,
``monopole=True`` a switch) or its alias (``theta``). The one default that differs from the table's: a softening
epsilon = 0.01 (epsilon_squared = 1e-4), as in pytreegrav's and AMUSE's tree codes.

Positions (N, 3) and masses (N,) that are float64 and C-contiguous are read in place by ``Gravity`` (no copy);
other arrays (float32, Fortran order, slices with strides, lists) are converted to float64 once.
"""

import contextlib as _contextlib
import errno as _errno
import os as _os
import sys as _sys

import numpy as _np

from . import _core
from ._core import BackendError, FormatError, InputError, ParameterError, Parameters

__all__ = [
    "accelerations",
    "direct",
    "Gravity",
    "Parameters",
    "parameters",
    "make_parameters",
    "read_snapshot",
    "write_snapshot",
    "Simulation",
    "Hermite",
    "G6",
    "power_spectrum",
    "ic",
    "ParameterError",
    "InputError",
    "FormatError",
    "BackendError",
]
__version__ = _core.__version__


class _Default:
    """A keyword's default that shows as its value in help() and is told apart from the same value given."""

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return repr(self.value)


def _keywords(named, params):
    """The keywords given explicitly: those of the signature that are not _Default, and the rest (**params)."""
    given = {k: v for k, v in named.items() if not isinstance(v, _Default)}
    given.update(params)
    return given


def parameters():
    """Every solver parameter: a list of dicts in table order with name, keywords (its spellings as keyword
    arguments), type, default (the table's, as the command line has it), python_default (this module's),
    unit, range, choices and help."""
    return _core.parameter_table()


def make_parameters(**params):
    """A Parameters object from keywords over this module's defaults (ValueError for a value out of range)."""
    return _core.make_parameters("make_parameters", params)


def accelerations(pos, mass, *, theta=_Default(0.5), epsilon=_Default(0.01), G=_Default(1.0), mac=_Default("bonsai"),
                  backend=_Default("auto"), targets=None, potential=True, **params):
    """Tree accelerations (and potentials) of the bodies, or at `targets`.

    pos (N, 3) and mass (N,): the bodies; float64 C-contiguous arrays are read in place.
    targets: None (the bodies themselves), or (M, 3) massless probe points that feel the bodies (pytreegrav's
    AccelTarget); the result then has M rows.
    Returns acc (N, 3) float64, and with potential=True the tuple (acc, pot) with pot (N,).
    Any table parameter is a keyword (see the module's docstring)."""
    kw = _keywords(dict(theta=theta, epsilon=epsilon, G=G, mac=mac, backend=backend), params)
    solver = _core.Gravity(pos, mass, None, _core.make_parameters("accelerations", kw))
    acc, pot = solver.forces() if targets is None else solver.at_points(None, targets)
    return (acc, pot) if potential else acc


def direct(pos, mass, *, epsilon=_Default(0.01), G=_Default(1.0), backend=_Default("cpu"), potential=True, **params):
    """Exact direct summation (float64 on the CPU backend, the default here), same shapes as accelerations()."""
    kw = _keywords(dict(epsilon=epsilon, G=G, backend=backend), params)
    acc, pot = _core.Gravity(pos, mass, None, _core.make_parameters("direct", kw)).direct()
    return (acc, pot) if potential else acc


class Gravity(_core.Gravity):
    """A solver kept between calls (AMUSE's gravity-code shape).

    g = Gravity(pos, mass, theta=0.5, epsilon=0.01)
    acc = g.accelerations(); pot = g.potential()      # one evaluation for both
    pos[:] += dx; g.update()                          # the arrays changed in place are read again
    g.update(new_pos)                                 # or new arrays (float64 C-contiguous: no copy)
    g.gravity_at_point(eps, points); g.potential_at_point(eps, points)

    Float64 C-contiguous pos and mass are read in place: ``positions_address == pos.ctypes.data``. After changing
    them in place call update() (it checks them again: NaN or a negative mass is refused naming the body); until
    then the last results stay. ids (N,) unsigned: how ties are broken (default 0..N-1)."""

    def __init__(self, pos, mass, *, ids=None, theta=_Default(0.5), epsilon=_Default(0.01), G=_Default(1.0),
                 mac=_Default("bonsai"), backend=_Default("auto"), **params):
        kw = _keywords(dict(theta=theta, epsilon=epsilon, G=G, mac=mac, backend=backend), params)
        super().__init__(pos, mass, ids, _core.make_parameters("Gravity", kw))

    def accelerations(self):
        """(N, 3) accelerations of the bodies (G applied), in the order given."""
        return self.forces()[0]

    def potential(self):
        """(N,) potentials of the bodies (G applied, the softened self term excluded)."""
        return self.forces()[1]

    def gravity_at_point(self, eps, points):
        """(M, 3) accelerations at massless probe points (M, 3); eps: the softening length (one number, or one
        equal value per point as AMUSE passes it; None: the solver's)."""
        return self.at_points(eps, points)[0]

    def potential_at_point(self, eps, points):
        """(M,) potentials at probe points, as gravity_at_point."""
        return self.at_points(eps, points)[1]

    def set_parameters(self, **params):
        """Changes parameters by keyword (the next evaluation uses them)."""
        self.parameters = self.parameters.replace(**params)

    @property
    def opening_angle(self):
        return self.parameters["opening_angle"]

    @opening_angle.setter
    def opening_angle(self, value):
        self.set_parameters(opening_angle=value)

    @property
    def epsilon_squared(self):
        return self.parameters["epsilon_squared"]

    @epsilon_squared.setter
    def epsilon_squared(self, value):
        self.set_parameters(epsilon_squared=value)


def read_snapshot(path, format=None, *, cosmology="auto"):
    """Reads a TIPSY, GADGET-2 or HDF5 snapshot (format detected by content unless given).

    Returns a dict: pos, vel (N, 3) float64, mass (N,), id (N,) uint64, type (N,) uint8 (GADGET's 0..5), time
    (the scale factor a for a cosmological file), box_size (0: isolated), cosmology (dict omega0, omega_lambda,
    hubble_param, or None), format, notes (what the reader converted or ignored).
    FileNotFoundError for a missing file, octwalk.FormatError (an OSError) for a damaged one."""
    path = _os.fspath(path)
    if not _os.path.exists(path):
        raise FileNotFoundError(_errno.ENOENT, "snapshot not found", path)
    return _core.read_snapshot(path, format, cosmology)


def write_snapshot(path, pos, vel, mass, *, format="tipsy", id=None, type=None, time=0.0, box_size=0.0,
                   cosmology=None, G=1.0, overwrite=False):
    """Writes a snapshot through the library's atomic writer (a complete file or none).

    format: tipsy, tipsy-native, tipsy-bonsai, gadget2, gadget2-format2 or hdf5. id (default 0..N-1), type (GADGET
    0..5, default 1), time, box_size, cosmology (dict as read_snapshot returns), G (HDF5 records it). An existing
    file is an octwalk.FormatError unless overwrite=True."""
    _core.write_snapshot(_os.fspath(path), pos, vel, mass, format=format, id=id, type=type, time=time,
                         box_size=box_size, cosmology=cosmology, G=G, overwrite=overwrite)


def _spellings(name):
    """The spellings of a table parameter as a keyword (its name, option and aliases)."""
    return next(row["keywords"] for row in _core.parameter_table() if row["name"] == name)


def _comoving_given(params):
    """Whether the keywords give the softening and G (a comoving run otherwise takes octwalk run's defaults)."""
    return (any(k in params for k in _spellings("epsilon_squared")),
            any(k in params for k in _spellings("gravitational_constant")))


def _box_size_keywords():
    """The spellings of box_size as a keyword (its name, option and aliases)."""
    return next(row["keywords"] for row in _core.parameter_table() if row["name"] == "box_size")


def power_spectrum(pos, mass, box_size, *, n_mesh=128, n_bins=0, assignment="cic", interlace=False,
                   log_bins=False, details=False):
    """The matter power spectrum of bodies in the periodic box [0, box_size)^3 (positions outside are wrapped),
    as ``octwalk power`` measures it: mass assignment (cic or tsc) on an n_mesh^3 mesh, optional interlacing,
    window deconvolution, n_bins spherical bins from kF/2 to k_Nyquist + kF/2 (kF = 2 pi / box_size; 0: n_mesh/2
    bins, one per kF; log_bins: equal in ln k).

    Returns (k, P): each bin's mean |k| [1/length] and power [length^3] (0 for a bin without modes); shot noise
    is not subtracted. With details=True also the modes per bin and the shot noise: (k, P, modes, shot_noise).
    For a perturbed lattice (initial conditions) take n_mesh 2-4 times the bodies per side
    (host/study/power_spectrum.h says why)."""
    k, p, modes, shot = _core.power_spectrum(pos, mass, box_size, n_mesh=n_mesh, n_bins=n_bins,
                                             assignment=assignment, interlace=interlace, log_bins=log_bins)
    return (k, p, modes, shot) if details else (k, p)


class Particles:
    """The bodies of a Simulation at its current time (copies): pos, vel (N, 3), mass, id."""

    def __init__(self, fields):
        self.pos = fields["pos"]
        self.vel = fields["vel"]
        self.mass = fields["mass"]
        self.id = fields["id"]

    def __len__(self):
        return len(self.mass)


class Simulation:
    """A shared-timestep leapfrog (octwalk run's integrator) in REBOUND's shape.

    sim = Simulation.from_model("plummer", n=1000, seed=1, timestep=1/64)
    sim.evolve(1.0); sim.particles.pos; sim.energy(); sim.time

    evolve(t) takes equal steps no longer than `timestep` to exactly t. Times that are whole steps from the
    start continue one run (bit for bit as one evolve to the last of them); another time ends its run there and
    the next evolve starts a new one from that state."""

    def __init__(self, pos, vel, mass, *, ids=None, time=0.0, timestep=_Default(1.0 / 64), theta=_Default(0.5),
                 epsilon=_Default(0.01), G=_Default(1.0), mac=_Default("bonsai"), backend=_Default("auto"), **params):
        kw = _keywords(dict(theta=theta, epsilon=epsilon, G=G, mac=mac, backend=backend), params)
        dt = timestep.value if isinstance(timestep, _Default) else timestep
        self._sim = _core.Simulation(pos, vel, mass, ids, time, dt, _core.make_parameters("Simulation", kw))

    @classmethod
    def _wrap(cls, core):
        sim = cls.__new__(cls)
        sim._sim = core
        return sim

    @classmethod
    def from_arrays(cls, pos, vel, mass, **kw):
        return cls(pos, vel, mass, **kw)

    @classmethod
    def from_model(cls, name, *, n, seed=1, **kw):
        """A built-in model (octwalk.ic): plummer, hernquist, uniform, galaxy or merger."""
        m = ic.model(name, n, seed=seed)
        return cls(m["pos"], m["vel"], m["mass"], ids=m["id"], **kw)

    @classmethod
    def from_snapshot(cls, path, *, format=None, timestep=1.0 / 64, comoving=False, a_end=1.0, dlna=None,
                      units="nbody", err_tol_int_accuracy=None, max_dlna=None, softening_max_phys=0.0, **params):
        """The bodies of a snapshot (TIPSY, GADGET-2 or HDF5; format detected unless given) from its time, as
        ``octwalk run --input`` starts them: a periodic file (box_size > 0) runs in its box unless box_size is
        given (0: isolated forces; another value must match the file's). Solver keywords as Simulation's.

        comoving=True: a comoving run as ``octwalk run --comoving --input path`` makes it, from the file's scale
        factor to a_end in its box, cosmology from its header (see from_cosmo for the keywords; timestep does not
        apply). ValueError when the file has no BoxSize or no cosmological header.
        FileNotFoundError for a missing file, octwalk.FormatError for a damaged one."""
        path = _os.fspath(path)
        if not _os.path.exists(path):
            raise FileNotFoundError(_errno.ENOENT, "snapshot not found", path)
        box_given = any(k in params for k in _box_size_keywords())
        parameters = _core.make_parameters("from_snapshot", params)
        if comoving:
            core = _core.Simulation.comoving_from_snapshot(
                path, format, parameters, a_end, dlna, units, err_tol_int_accuracy, max_dlna, softening_max_phys,
                box_given, *_comoving_given(params))
        else:
            core = _core.Simulation.from_snapshot(path, format, timestep, parameters, box_given)
        return cls._wrap(core)

    @classmethod
    def from_cosmo(cls, ics, *, a_end=1.0, dlna=None, units=None, err_tol_int_accuracy=None, max_dlna=None,
                   softening_max_phys=0.0, **params):
        """A comoving run (``octwalk run --comoving``) of cosmological initial conditions: the dict of
        octwalk.ic.cosmo (or read_snapshot of a cosmological file) from its time a_begin to a_end.

        Time is the scale factor: evolve(a) advances in a, .time is a, .particles holds comoving positions in
        [0, box_size) and peculiar velocities a dx/dt, as the library integrates them (host/sim/comoving.h).
        dlna: a fixed step in ln a; None: the library's default, GADGET-2's ErrTolIntAccuracy criterion
        (err_tol_int_accuracy, capped at max_dlna; None: the library's values). softening_max_phys: GADGET's
        SofteningHaloMaxPhys (0: the comoving epsilon throughout). units: nbody, gadget-kpc or gadget-mpc (None:
        the dict's "units", else nbody); G is that of the units and epsilon 1/30 of the mean spacing
        box_size / N^(1/3) unless given, as octwalk run --comoving. Solver keywords as Simulation's.
        ValueError naming the value for bad settings, no box_size or no cosmology."""
        if units is None:
            units = ics.get("units", "nbody")
        box_given = any(k in params for k in _box_size_keywords())
        parameters = _core.make_parameters("from_cosmo", params)
        core = _core.Simulation.comoving_from_arrays(
            ics["pos"], ics["vel"], ics["mass"], ics.get("id"), ics["time"], ics.get("box_size", 0.0),
            ics.get("cosmology"), parameters, a_end, dlna, units, err_tol_int_accuracy, max_dlna, softening_max_phys,
            box_given, *_comoving_given(params))
        return cls._wrap(core)

    @classmethod
    def from_checkpoint(cls, path):
        """The run saved by save_checkpoint (or a checkpoint.bin of ``octwalk run``, also ``--comoving``), ready to
        evolve on: its bodies, time, timestep, parameters and step count, with forces bit-identical to the run that
        wrote it, so that save, load and evolve give the same bits as evolving straight on. A comoving run comes
        back comoving (time is the scale factor) with its cosmology, units, step settings and a_end: evolve(a_end)
        continues it as ``octwalk run --restart`` does.
        FileNotFoundError for a missing file, octwalk.FormatError for a damaged one (checksummed)."""
        path = _os.fspath(path)
        if not _os.path.exists(path):
            raise FileNotFoundError(_errno.ENOENT, "checkpoint not found", path)
        return cls._wrap(_core.Simulation.from_checkpoint(path))

    def save_checkpoint(self, path):
        """Writes the run's checkpoint (octwalk run's format, a complete file or none; an existing file at path
        is kept as path + ".prev" once the new one is complete). A comoving run's holds what ``octwalk run
        --comoving`` writes: the scale factor, the momenta, the cosmology and the step settings.
        octwalk.FormatError (an OSError) naming the path when it cannot be written."""
        self._sim.save_checkpoint(_os.fspath(path))

    def evolve(self, t_end, progress=None, *, checkpoint=None):
        """Advances to t_end (see the class); for a comoving run (from_cosmo, from_snapshot(comoving=True)) t_end
        is a scale factor: the run's a_end continues it (the same bits as octwalk run --comoving --a-end a_end);
        another a before the first step plans the run afresh to that a (the same bits as --a-end a), and after
        steps starts a new run from the current state whose steps end exactly there.

        progress: a tqdm bar over the simulated time; None shows one only when stderr is a terminal or in a
        notebook, True always, False never (nothing when tqdm, Debian's python3-tqdm, is not installed).
        Ctrl-C (KeyboardInterrupt) stops the run after the step under way: the simulation stays at that whole
        step, ready to evolve on; with checkpoint=path it is first saved there (save_checkpoint), so that
        Simulation.from_checkpoint(path).evolve(t_end) ends with the same bits as an uninterrupted run (comoving
        runs too)."""
        _evolve_interruptibly(self, self._sim, t_end, progress, checkpoint)

    @property
    def time(self):
        return self._sim.time

    @property
    def steps(self):
        """Leapfrog steps taken so far."""
        return self._sim.steps

    @property
    def timestep(self):
        """The leapfrog's step; for a comoving run the last step in ln a (0 before the first)."""
        return self._sim.timestep

    @property
    def comoving(self):
        """Whether time is the scale factor (from_cosmo, from_snapshot(comoving=True))."""
        return self._sim.comoving

    @property
    def parameters(self):
        return self._sim.parameters

    @property
    def particles(self):
        return Particles(self._sim.particles())

    def energy(self):
        """Total energy, kinetic + potential (G applied)."""
        return self._sim.diagnostics()["total"]

    def diagnostics(self):
        """time, kinetic, potential, total, relative_energy_error, virial_ratio, momentum, angular_momentum."""
        return self._sim.diagnostics()


def _in_notebook():
    shell = _sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _progress_bar(progress, start, end):
    """A tqdm bar from start to end in simulated time, or None (progress False; None and not on a terminal or
    in a notebook; tqdm not installed)."""
    if progress is False or (progress is None and not (_sys.stderr.isatty() or _in_notebook())):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=end - start, unit="t", bar_format="{l_bar}{bar}| t = {postfix} [{elapsed}<{remaining}]",
                postfix=f"{start:.6g}")


def _evolve_interruptibly(owner, core, t_end, progress, checkpoint):
    """core.evolve(t_end) with a progress bar, a checkpoint written on KeyboardInterrupt (the core stops at a
    whole step: it runs Python's signal handlers between steps) and the interrupt raised again."""
    start = core.time
    bar = _progress_bar(progress, start, t_end) if t_end > start else None
    done = [start]

    def advance(t):
        bar.update(t - done[0])
        bar.set_postfix_str(f"{t:.6g}", refresh=False)
        done[0] = t

    with bar if bar is not None else _contextlib.nullcontext():
        try:
            core.evolve(t_end, advance if bar is not None else None)
        except KeyboardInterrupt:
            if checkpoint is not None:
                owner.save_checkpoint(checkpoint)
            raise


class Hermite:
    """The 4th-order Hermite integrator with block time steps (``octwalk hermite``, docs/hermite_libg6.md) for star
    clusters: exact forces through libg6, every body synchronised each dt_max.

    h = Hermite.from_model("plummer", n=256, seed=1, eta=0.02, epsilon=1/256)
    h.evolve(1.0); h.particles.pos; h.energy(); h.time

    eta, eta_start (the first step's) and dt_max (the longest step and sync interval) as octwalk hermite's
    options; the softening epsilon (a length; default 1/256 as octwalk hermite), G and max_energy_error are the
    solver keywords it takes (the tree's are refused). Times that are whole dt_max from the start continue one
    run, the same bits as ``octwalk hermite --t-end`` the last of them; another time ends its run there and the
    next evolve starts a new one from that synchronised state (start derivatives afresh)."""

    def __init__(self, pos, vel, mass, *, time=0.0, eta=0.02, eta_start=0.01, dt_max=1.0 / 16,
                 epsilon=_Default(1.0 / 256), G=_Default(1.0), **params):
        kw = _keywords(dict(epsilon=epsilon, G=G), params)
        _check_direct_keywords("Hermite", kw)
        self._h = _core.Hermite(pos, vel, mass, time, _core.make_parameters("Hermite", kw), eta, eta_start, dt_max)

    @classmethod
    def from_arrays(cls, pos, vel, mass, **kw):
        return cls(pos, vel, mass, **kw)

    @classmethod
    def from_model(cls, name, *, n, seed=1, **kw):
        """A built-in model (octwalk.ic), the bodies ``octwalk hermite --model NAME --n N --seed SEED`` takes."""
        m = ic.model(name, n, seed=seed)
        return cls(m["pos"], m["vel"], m["mass"], **kw)

    def evolve(self, t_end, progress=None):
        """Advances to t_end with block steps. progress and Ctrl-C as Simulation.evolve's (a KeyboardInterrupt
        stops at the end of a sync interval, the bodies synchronised)."""
        _evolve_interruptibly(self, self._h, t_end, progress, None)

    @property
    def time(self):
        return self._h.time

    @property
    def particles(self):
        """The bodies at the current (synchronised) time, copies: pos, vel (N, 3), mass, id (the order given)."""
        return Particles(self._h.particles())

    @property
    def parameters(self):
        return self._h.parameters

    @property
    def settings(self):
        """eta, eta_start, dt_max."""
        return self._h.settings

    @property
    def counts(self):
        """block_steps and body_steps taken so far."""
        return self._h.counts

    def energy(self):
        """Total energy, kinetic + potential (G applied; the potential through libg6)."""
        return self._h.diagnostics()["total"]

    def diagnostics(self):
        """time, kinetic, potential, total, relative_energy_error (of this run's start), virial_ratio, momentum,
        angular_momentum."""
        return self._h.diagnostics()


_DIRECT_PARAMETERS = ("epsilon_squared", "gravitational_constant", "max_energy_error")


def _check_direct_keywords(function, kw):
    """TypeError for a solver keyword that direct summation has no use for (octwalk hermite refuses them too)."""
    allowed = {k for row in _core.parameter_table() if row["name"] in _DIRECT_PARAMETERS for k in row["keywords"]}
    for key in kw:
        if key not in allowed:
            raise TypeError(f"{function}() got an unexpected keyword argument {key!r} (it takes epsilon, G and "
                            "max_energy_error of the solver's)")


class G6(_core.G6):
    """libg6's GRAPE-6 calls (host/g6/g6lib.h, docs/hermite_libg6.md) on one cluster id, for codes written
    against GRAPE-6 (phiGRAPE, NBODY4/6's g6 drivers).

    with octwalk.G6(backend="cpu") as g:
        g.set_j_particle(address, index, tj, dtj, a2by18, a1by6, aby2, v, x, m)
        g.set_ti(ti)
        acc, jerk, pot = g.calc(index, x, v, eps2)

    backend: auto (the GPU when present), gpu or cpu (double). A call that libg6 refuses (non-zero return)
    raises RuntimeError with the line libg6 wrote."""

    def __init__(self, backend="auto"):
        super().__init__(backend)

    def calc(self, index, x, v, eps2, h2=None, *, nj=None):
        """Forces on the i-particles index (ni,), x, v (ni, 3) (already predicted to ti) from j-memory [0, nj)
        (default: the highest address set + 1), ni <= npipes: g6calc_firsthalf and g6calc_lasthalf.
        Returns (acc (ni, 3), jerk (ni, 3), pot (ni,)); an i-particle skips the j-particle of its own index."""
        return super().calc(-1 if nj is None else nj, index, x, v, eps2, h2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


from . import ic  # noqa: E402  (ic uses nothing above; imported last so that octwalk.ic is the submodule)

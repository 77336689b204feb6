// octwalk._core.Simulation: the library's leapfrog (host/sim/simulation.h) driven to requested times, in time or,
// for a comoving run, in the scale factor.
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "common/errors.h"
#include "host/core/cosmology.h"
#include "host/io/snapshot.h"
#include "host/sim/simulation.h"
#include "python/src/bindings.h"

namespace octwalk::python {

namespace {

ParticleSet particlesFromArrays(py::handle pos, py::handle vel, py::handle mass, py::handle ids)
{
    auto m       = scalarsArray(mass, "mass");
    const auto n = int64_t(m.shape(0));
    ParticleSet p;
    p.pos  = toVectors(vectorsArray(pos, "pos", n));
    p.vel  = toVectors(vectorsArray(vel, "vel", n));
    p.mass = std::vector<double>(m.data(), m.data() + n);
    p.id.resize(size_t(n));
    p.type.assign(size_t(n), uint8_t(1));
    if (ids.is_none())
    {
        for (int64_t i = 0; i < n; ++i) p.id[i] = uint64_t(i);
    }
    else
    {
        auto id = idsArray(ids, "id", n);
        std::copy(id.data(), id.data() + n, p.id.begin());
    }
    return p;
}

/// A leapfrog run that evolve() carries from one requested time to the next with steps no longer than
/// `timestep`. While every requested time is t0 + k timestep the run goes on (Simulation::extendTo, the same
/// bits as one long run); another time starts a new run from the current state, whose equal steps end exactly
/// there (planSteps), at the cost of one more force evaluation.
class PySimulation
{
public:
    PySimulation(ParticleSet initial, const Parameters& p, double timestep) : params_(p), timestep_(timestep)
    {
        start(std::move(initial));
    }

    /// A comoving run (Simulation's comoving constructor) from a = settings.aBegin to settings.aEnd.
    PySimulation(ParticleSet initial, const Parameters& p, const ComovingSettings& settings)
        : params_(p), timestep_(0), legStart_(std::move(initial))
    {
        sim_ = std::make_unique<Simulation>(ParticleSet(legStart_), p, settings);
    }

    /// A run restored from a checkpoint: its timestep and the steps of its earlier runs from the text
    /// saveCheckpoint stored with it, or for a checkpoint of `octwalk run` its step and none before. A comoving
    /// run goes on in the scale factor with the clock, momenta and settings the checkpoint holds.
    static std::unique_ptr<PySimulation> fromCheckpoint(const std::string& path)
    {
        std::string extra;
        auto sim             = std::make_unique<Simulation>(Simulation::fromCheckpoint(path, &extra));
        const bool comoving  = bool(sim->comoving());
        double timestep      = comoving ? 0.0 : sim->plan().h;
        int64_t earlierSteps = 0;
        if (extra.rfind(kExtraPrefix, 0) == 0 && !readExtra(extra, comoving, timestep, earlierSteps))
        {
            throw FormatError("checkpoint '" + path + "': its Simulation settings '" + oneLine(extra) +
                              "' are damaged");
        }
        const Parameters p = sim->parameters();
        std::unique_ptr<PySimulation> restored(new PySimulation(std::move(sim), p, timestep, earlierSteps));
        // Saved before its first step: evolveComoving plans another a_end afresh from these bodies.
        if (comoving && restored->sim_->stepIndex() == 0) restored->legStart_ = restored->sim_->state();
        return restored;
    }

    /// Writes the run's checkpoint (Simulation::writeCheckpoint: atomic, an existing file kept as path.prev)
    /// with the timestep (not for a comoving run: its steps are the library's) and the steps of earlier runs
    /// beside it, which fromCheckpoint needs to go on as this object would.
    void saveCheckpoint(const std::string& path) const
    {
        const std::string text = extraText();
        py::gil_scoped_release free;
        sim_->writeCheckpoint(path, text);
    }

    /// Advances to tEnd; after every step runs Python's signal handlers (a Ctrl-C stops the run there, at a
    /// whole step, as KeyboardInterrupt) and calls progress(time) when it is not None.
    void evolve(double tEnd, const py::object& progress)
    {
        if (sim_->comoving())
        {
            evolveComoving(tEnd, progress);
            return;
        }
        if (tEnd == time()) return;
        if (!(tEnd > time()))
        {
            throw ParameterError("parameter t_end = " + std::to_string(tEnd) +
                                 " is invalid: the run is at t = " + std::to_string(time()) + " and only goes forward");
        }
        py::gil_scoped_release free;
        if (!continues(tEnd))
        {
            ParticleSet now = sim_->state();
            now.time        = time();
            start(std::move(now), tEnd);
        }
        stepToEnd(progress);
    }

    /// Advances a comoving run to the scale factor aEnd. The run's own a_end continues it; another aEnd
    /// before its first step plans it afresh from its start to aEnd (the same bits as octwalk run --comoving
    /// --a-end aEnd), and after steps starts a new run from the current state that ends exactly there (its
    /// steps are planned to that stop: not the bits of one run through it).
    void evolveComoving(double aEnd, const py::object& progress)
    {
        if (aEnd == time()) return;
        if (!(aEnd > time()))
        {
            throw ParameterError("parameter a_end = " + std::to_string(aEnd) +
                                 " is invalid: the comoving run is at a = " + std::to_string(time()) +
                                 " and only goes forward");
        }
        py::gil_scoped_release free;
        ComovingSettings s = sim_->comoving()->settings;
        if (aEnd != s.aEnd)
        {
            if (sim_->stepIndex() > 0)
            {
                steps_ += sim_->stepIndex();
                legStart_ = sim_->state();
                s.aBegin  = time();
            }
            s.aEnd = aEnd;
            s.outputList.clear();
            // A restored run keeps its force options (direct, zero_net_force) in its next runs.
            sim_ = std::make_unique<Simulation>(ParticleSet(legStart_), params_, s, sim_->forceOptions());
        }
        stepToEnd(progress);
        // Only a run that has not stepped is planned afresh from its start.
        if (sim_->stepIndex() > 0) legStart_ = ParticleSet{};
    }

    double time() const { return sim_->time(); }
    int64_t steps() const { return steps_ + sim_->stepIndex(); }
    /// The leapfrog's timestep; for a comoving run the last step in ln a (0 before the first).
    double timestep() const { return sim_->comoving() ? sim_->comoving()->lastDlna : timestep_; }
    bool comoving() const { return bool(sim_->comoving()); }
    const Parameters& parameters() const { return sim_->parameters(); }
    py::dict particles() const { return particlesToDict(sim_->state()); }
    py::dict diagnostics() const
    {
        Diagnostics d = sim_->diagnostics();
        py::dict r;
        r["time"]                  = d.time;
        r["kinetic"]               = d.kinetic;
        r["potential"]             = d.potential;
        r["total"]                 = d.total;
        r["relative_energy_error"] = d.relativeEnergyError;
        r["virial_ratio"]          = d.virialRatio;
        r["momentum"]              = std::vector<double>{d.momentum.x, d.momentum.y, d.momentum.z};
        r["angular_momentum"]      = std::vector<double>{d.angularMomentum.x, d.angularMomentum.y, d.angularMomentum.z};
        return r;
    }

private:
    /// The start of the text saveCheckpoint stores beside the run (a checkpoint of octwalk run has its run
    /// settings there instead).
    static constexpr const char* kExtraPrefix = "python_simulation ";

    /// Steps until the run is done; after every step runs Python's signal handlers (a Ctrl-C stops there, at
    /// a whole step, as KeyboardInterrupt) and calls progress(time) when it is not None. Called without the GIL.
    void stepToEnd(const py::object& progress)
    {
        while (!sim_->done())
        {
            sim_->step();
            py::gil_scoped_acquire hold;
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (!progress.is_none()) progress(time());
        }
    }

    PySimulation(std::unique_ptr<Simulation> sim, const Parameters& p, double timestep, int64_t earlierSteps)
        : params_(p), timestep_(timestep), steps_(earlierSteps), sim_(std::move(sim))
    {}

    /// saveCheckpoint's text: "timestep=" the timestep, or "comoving", then the steps of earlier runs.
    std::string extraText() const
    {
        char text[96];
        if (comoving())
        {
            std::snprintf(text, sizeof text, "%scomoving\nearlier_steps=%lld\n", kExtraPrefix,
                          static_cast<long long>(steps_));
        }
        else
        {
            std::snprintf(text, sizeof text, "%stimestep=%.17g\nearlier_steps=%lld\n", kExtraPrefix, timestep_,
                          static_cast<long long>(steps_));
        }
        return text;
    }

    /// Parses saveCheckpoint's text of a run that is comoving or not; false when it is not that.
    static bool readExtra(const std::string& extra, bool comoving, double& timestep, int64_t& earlierSteps)
    {
        std::istringstream in(extra.substr(std::string(kExtraPrefix).size()));
        std::string key;
        if (comoving)
        {
            if (!std::getline(in, key) || key != "comoving") return false;
        }
        else if (!std::getline(in, key, '=') || key != "timestep" || !(in >> timestep) || !std::isfinite(timestep) ||
                 !(timestep > 0))
        {
            return false;
        }
        long long steps = -1;
        if (!std::getline(in >> std::ws, key, '=') || key != "earlier_steps" || !(in >> steps)) return false;
        earlierSteps = steps;
        return steps >= 0;
    }

    /// text with its line breaks shown as \n, for a one-line message.
    static std::string oneLine(const std::string& text)
    {
        std::string line;
        for (char c : text) line += c == '\n' ? std::string("\\n") : std::string(1, c);
        return line;
    }

    /// A run from initial (at initial.time) planned to tEnd, by default one step ahead.
    void start(ParticleSet initial, std::optional<double> tEnd = std::nullopt)
    {
        const double t0 = initial.time;
        if (sim_) steps_ += sim_->stepIndex();
        Parameters p = sim_ ? sim_->parameters() : params_;
        // A restored run keeps its force options (direct, zero_net_force, rebuild_every) in its next runs.
        ForceOptions forces = sim_ ? sim_->forceOptions() : ForceOptions{};
        sim_                = std::make_unique<Simulation>(std::move(initial), p,
                                            planSteps(t0, tEnd.value_or(t0 + timestep_), timestep_), forces);
    }

    /// Whether tEnd is whole steps of the current run from its start (then the run is extended to it).
    bool continues(double tEnd)
    {
        if (sim_->plan().h != timestep_) return false;
        try
        {
            sim_->extendTo(tEnd);
            return true;
        }
        catch (const ParameterError&)
        {
            // Not t0 + k h: extendTo is the judge of that, and a new run ends there instead.
            return false;
        }
    }

    Parameters params_;
    double timestep_;
    int64_t steps_ = 0;
    std::unique_ptr<Simulation> sim_;
    /// A comoving run's bodies at its start, kept until its first step (evolveComoving plans it afresh).
    ParticleSet legStart_;
};

/// The snapshot's bodies (any format readSnapshot reads) at its time, as `octwalk run --input` starts them: a
/// periodic file runs in its box unless box_size was given (0: isolated; another value must agree with it).
std::unique_ptr<PySimulation> simulationFromSnapshot(const std::string& path, py::handle format, double timestep,
                                                     Parameters p, bool boxGiven)
{
    ParticleSet bodies =
        format.is_none() ? readSnapshot(path) : readSnapshot(path, parseSnapshotFormat(format.cast<std::string>()));
    if (bodies.boxSize > 0 && boxGiven && p.box_size > 0 &&
        !(std::fabs(p.box_size - bodies.boxSize) <= 1e-6 * bodies.boxSize))
    {
        std::ostringstream m;
        m.precision(15);
        m << "parameter box_size = " << p.box_size << " does not match the snapshot's BoxSize " << bodies.boxSize
          << " ('" << path << "'; box_size=0 runs it isolated)";
        throw ParameterError(m.str());
    }
    if (bodies.boxSize > 0 && !boxGiven) p.box_size = bodies.boxSize;
    validate(p);
    py::gil_scoped_release free;
    return std::make_unique<PySimulation>(std::move(bodies), p, timestep);
}

/// A comoving run's settings beyond the bodies' header, as octwalk run --comoving's options give them.
struct ComovingKeywords
{
    double aEnd       = ComovingSettings{}.aEnd;
    std::string units = "nbody";
    ComovingSettings steps; ///< dlna, errTolIntAccuracy, maxDlna, softeningMaxPhys
    bool boxGiven = false, epsilonGiven = false, gGiven = false;
};

/// The settings of a comoving run of bodies (from `source`, named in errors) completed as octwalk run --comoving
/// completes them from its input's header: cosmology and a_begin from the header, the box from BoxSize (a
/// box_size given must agree), G of the unit system unless given, and a softening of 1/30 of the mean spacing
/// L / N^(1/3) unless given (defaultComovingSoftening, host/sim/comoving.h).
ComovingSettings completeComoving(const ParticleSet& bodies, const std::string& source, const ComovingKeywords& k,
                                  Parameters& p)
{
    if (!(bodies.boxSize > 0) && !(k.boxGiven && p.box_size > 0))
    {
        throw ParameterError(source + " has no BoxSize (an isolated system): a comoving run needs a periodic box; "
                                      "give box_size, or start from a snapshot of a periodic box");
    }
    if (!bodies.cosmology)
    {
        throw ParameterError(source + " has no cosmological header (Omega0, OmegaLambda, HubbleParam, the scale "
                                      "factor as its time): a comoving run starts from a GADGET-2 or HDF5 "
                                      "snapshot of a cosmological box, or from octwalk.ic.cosmo");
    }
    if (bodies.boxSize > 0)
    {
        if (k.boxGiven && !(std::fabs(p.box_size - bodies.boxSize) <= 1e-6 * bodies.boxSize))
        {
            std::ostringstream m;
            m.precision(15);
            m << "parameter box_size = " << p.box_size << " does not match the BoxSize " << bodies.boxSize << " of "
              << source;
            throw ParameterError(m.str());
        }
        p.box_size = bodies.boxSize;
    }
    ComovingSettings s      = k.steps;
    s.units                 = parseCosmoUnits(k.units);
    s.cosmology             = *bodies.cosmology;
    s.aBegin                = bodies.time;
    s.aEnd                  = k.aEnd;
    const UnitSystem& units = unitSystem(s.units);
    if (units.gravitationalConstant > 0 && !k.gGiven) p.gravitational_constant = units.gravitationalConstant;
    if (!k.epsilonGiven)
    {
        const double eps  = defaultComovingSoftening(p.box_size, bodies.size());
        p.epsilon_squared = eps * eps;
    }
    validate(s);
    validate(p);
    return s;
}

std::unique_ptr<PySimulation> comovingSimulation(ParticleSet bodies, const std::string& source, Parameters p,
                                                 const ComovingKeywords& k)
{
    const ComovingSettings s = completeComoving(bodies, source, k, p);
    py::gil_scoped_release free;
    return std::make_unique<PySimulation>(std::move(bodies), p, s);
}

ComovingKeywords comovingKeywords(double aEnd, py::handle dlna, const std::string& units, py::handle errTol,
                                  py::handle maxDlna, double softeningMaxPhys, bool boxGiven, bool epsilonGiven,
                                  bool gGiven)
{
    ComovingKeywords k;
    k.aEnd  = aEnd;
    k.units = units;
    if (!dlna.is_none()) k.steps.dlna = dlna.cast<double>();
    if (!errTol.is_none()) k.steps.errTolIntAccuracy = errTol.cast<double>();
    if (!maxDlna.is_none()) k.steps.maxDlna = maxDlna.cast<double>();
    k.steps.softeningMaxPhys = softeningMaxPhys;
    k.boxGiven               = boxGiven;
    k.epsilonGiven           = epsilonGiven;
    k.gGiven                 = gGiven;
    return k;
}

} // namespace

void bindSimulation(py::module_& m)
{
    py::class_<PySimulation>(m, "Simulation")
        .def(py::init([](py::handle pos, py::handle vel, py::handle mass, py::handle ids, double time, double timestep,
                         const Parameters& p) {
                 ParticleSet set = particlesFromArrays(pos, vel, mass, ids);
                 set.time        = time;
                 return std::make_unique<PySimulation>(std::move(set), p, timestep);
             }),
             py::arg("pos"), py::arg("vel"), py::arg("mass"), py::arg("ids"), py::arg("time"), py::arg("timestep"),
             py::arg("parameters"))
        .def_static("from_snapshot", &simulationFromSnapshot, py::arg("path"), py::arg("format"), py::arg("timestep"),
                    py::arg("parameters"), py::arg("box_given"))
        .def_static(
            "comoving_from_snapshot",
            [](const std::string& path, py::handle format, const Parameters& p, double aEnd, py::handle dlna,
               const std::string& units, py::handle errTol, py::handle maxDlna, double softeningMaxPhys, bool boxGiven,
               bool epsilonGiven, bool gGiven) {
                ParticleSet bodies = format.is_none()
                                         ? readSnapshot(path)
                                         : readSnapshot(path, parseSnapshotFormat(format.cast<std::string>()));
                return comovingSimulation(std::move(bodies), "snapshot '" + path + "'", p,
                                          comovingKeywords(aEnd, dlna, units, errTol, maxDlna, softeningMaxPhys,
                                                           boxGiven, epsilonGiven, gGiven));
            },
            py::arg("path"), py::arg("format"), py::arg("parameters"), py::arg("a_end"), py::arg("dlna"),
            py::arg("units"), py::arg("err_tol_int_accuracy"), py::arg("max_dlna"), py::arg("softening_max_phys"),
            py::arg("box_given"), py::arg("epsilon_given"), py::arg("G_given"))
        .def_static(
            "comoving_from_arrays",
            [](py::handle pos, py::handle vel, py::handle mass, py::handle ids, double aBegin, double boxSize,
               py::handle cosmology, const Parameters& p, double aEnd, py::handle dlna, const std::string& units,
               py::handle errTol, py::handle maxDlna, double softeningMaxPhys, bool boxGiven, bool epsilonGiven,
               bool gGiven) {
                ParticleSet bodies = particlesFromArrays(pos, vel, mass, ids);
                bodies.time        = aBegin;
                bodies.boxSize     = boxSize;
                if (!cosmology.is_none())
                {
                    py::dict c       = py::reinterpret_borrow<py::dict>(cosmology);
                    bodies.cosmology = Cosmology{c["omega0"].cast<double>(), c["omega_lambda"].cast<double>(),
                                                 c["hubble_param"].cast<double>()};
                }
                return comovingSimulation(std::move(bodies), "the initial conditions", p,
                                          comovingKeywords(aEnd, dlna, units, errTol, maxDlna, softeningMaxPhys,
                                                           boxGiven, epsilonGiven, gGiven));
            },
            py::arg("pos"), py::arg("vel"), py::arg("mass"), py::arg("ids"), py::arg("a_begin"), py::arg("box_size"),
            py::arg("cosmology"), py::arg("parameters"), py::arg("a_end"), py::arg("dlna"), py::arg("units"),
            py::arg("err_tol_int_accuracy"), py::arg("max_dlna"), py::arg("softening_max_phys"), py::arg("box_given"),
            py::arg("epsilon_given"), py::arg("G_given"))
        .def_static("from_checkpoint", &PySimulation::fromCheckpoint, py::arg("path"))
        .def("save_checkpoint", &PySimulation::saveCheckpoint, py::arg("path"))
        .def("evolve", &PySimulation::evolve, py::arg("t_end"), py::arg("progress") = py::none())
        .def_property_readonly("time", &PySimulation::time)
        .def_property_readonly("steps", &PySimulation::steps)
        .def_property_readonly("timestep", &PySimulation::timestep)
        .def_property_readonly("comoving", &PySimulation::comoving)
        .def_property_readonly("parameters", &PySimulation::parameters)
        .def("particles", &PySimulation::particles)
        .def("diagnostics", &PySimulation::diagnostics);
}

} // namespace octwalk::python

// octwalk._core.Simulation: the library's leapfrog (host/sim/simulation.h) driven to requested times.
#include <memory>

#include "common/errors.h"
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

    void evolve(double tEnd)
    {
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
        while (!sim_->done()) sim_->step();
    }

    double time() const { return sim_->time(); }
    int64_t steps() const { return steps_ + sim_->stepIndex(); }
    double timestep() const { return timestep_; }
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
    /// A run from initial (at initial.time) planned to tEnd, by default one step ahead.
    void start(ParticleSet initial, std::optional<double> tEnd = std::nullopt)
    {
        const double t0 = initial.time;
        if (sim_) steps_ += sim_->stepIndex();
        Parameters p = sim_ ? sim_->parameters() : params_;
        sim_         = std::make_unique<Simulation>(std::move(initial), p,
                                            planSteps(t0, tEnd.value_or(t0 + timestep_), timestep_));
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
};

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
        .def("evolve", &PySimulation::evolve, py::arg("t_end"))
        .def_property_readonly("time", &PySimulation::time)
        .def_property_readonly("steps", &PySimulation::steps)
        .def_property_readonly("timestep", &PySimulation::timestep)
        .def_property_readonly("parameters", &PySimulation::parameters)
        .def("particles", &PySimulation::particles)
        .def("diagnostics", &PySimulation::diagnostics);
}

} // namespace octwalk::python

#include "host/sim/simulation.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "host/io/checkpoint.h"
#include "host/sim/gather.h"

namespace octwalk {

std::string comovingCheckpointText(const Simulation::Comoving& c)
{
    std::ostringstream s;
    s.precision(17);
    s << "a=" << c.a << "\nhubble0=" << c.hubble0 << "\nlast_dlna=" << c.lastDlna
      << "\nlayzer_irvine_start=" << c.layzerIrvineStart << "\nlayzer_irvine_integral=" << c.layzerIrvineIntegral
      << "\n"
      << toText(c.settings);
    return s.str();
}

Simulation::Comoving comovingFromCheckpointText(const std::string& text)
{
    Simulation::Comoving c;
    std::istringstream in(text);
    std::string settings, line;
    double* clock[5]     = {&c.a, &c.hubble0, &c.lastDlna, &c.layzerIrvineStart, &c.layzerIrvineIntegral};
    const char* names[5] = {"a=", "hubble0=", "last_dlna=", "layzer_irvine_start=", "layzer_irvine_integral="};
    for (int k = 0; k < 5; ++k)
    {
        std::getline(in, line);
        if (line.rfind(names[k], 0) != 0)
            throw FormatError("checkpoint: comoving field '" + line + "' is not " + names[k]);
        std::istringstream value(line.substr(std::strlen(names[k])));
        if (!(value >> *clock[k]) || !std::isfinite(*clock[k]))
        {
            throw FormatError("checkpoint: comoving field '" + line + "' cannot be read");
        }
    }
    std::getline(in, settings, '\0');
    c.settings = comovingSettingsFromText(settings);
    if (!(c.a > 0 && c.hubble0 > 0)) throw FormatError("checkpoint: comoving a or hubble0 is not > 0");
    return c;
}

void Simulation::writeCheckpoint(const std::string& path, const std::string& extra) const
{
    CheckpointImage c;
    c.state         = state();
    c.step          = step_;
    c.numSteps      = plan_.numSteps;
    c.t0            = plan_.t0;
    c.h             = plan_.h;
    c.initialEnergy = initialEnergy_;
    c.parameters    = params_;
    c.direct        = forces_.direct;
    c.zeroNetForce  = forces_.zeroNetForce;
    c.extra         = extra;
    if (pipeline_) c.pipeline = pipeline_->checkpoint();
    if (pipeline_ && pipeline_->checkpointsResults()) c.results = pipeline_->resultsByCaller();
    else if (passesPreviousAccelerations() && lastResults_)
    {
        // The next step's previous accelerations: a restart takes these forces instead of evaluating them again.
        const std::vector<int32_t>& slot = slots();
        c.results.resize(slot.size());
        for (size_t i = 0; i < slot.size(); ++i) c.results[i] = lastResults_[slot[i]];
    }
    if (comoving_)
    {
        // The integrated state is p, not p / a: a restart continues from the same bits.
        if (pipeline_) pipeline_->copyMomenta(c.state.vel.data());
        else gather(momentum_, slots(), c.state.vel);
        c.comoving = comovingCheckpointText(*comoving_);
    }
    octwalk::writeCheckpoint(path, c);
}

Simulation Simulation::fromCheckpoint(const std::string& path, std::string* extra)
{
    return fromCheckpoint(readCheckpoint(path), path, extra);
}

Simulation Simulation::fromCheckpoint(CheckpointImage c, const std::string& path, std::string* extra)
{
    // The format holds any number of bodies (a rank of a distributed run may hold none); a run needs two.
    if (c.state.size() < 2)
    {
        throw InputError("'" + path + "' holds " + std::to_string(c.state.size()) +
                         " bodies, a run needs at least 2 (one rank's checkpoint of a distributed run restarts under "
                         "mpirun at its rank count)");
    }
    // The stored parameters pass the same checks as a fresh run's (ParameterError naming the parameter).
    validate(c.parameters);
    StepPlan plan;
    plan.t0       = c.t0;
    plan.h        = c.h;
    plan.numSteps = c.numSteps;
    c.state.time  = plan.t0 + double(c.step) * plan.h;
    std::optional<Comoving> comoving;
    std::vector<Vec3d> momentum;
    if (!c.comoving.empty())
    {
        comoving = comovingFromCheckpointText(c.comoving);
        momentum = c.state.vel;
        for (Vec3d& v : c.state.vel) v = (1 / comoving->a) * v;
    }
    ForceOptions forces{c.direct, c.zeroNetForce};
    forces.rebuildEvery = c.pipeline.rebuildEvery;
    if (forces.rebuildEvery != 1) forces.rebuildLag = c.pipeline.rebuildLag;
    // A pipelined run's results go to the pipeline's restore (Pipeline::restore), which also makes its trees.
    const bool pipelined            = forces.rebuildEvery != 1;
    std::vector<F4> pipelineResults = pipelined ? std::move(c.results) : std::vector<F4>{};
    Simulation sim(std::move(c.state), c.parameters, plan, forces, std::move(comoving),
                   pipelined ? std::vector<F4>{} : std::move(c.results), pipelined);
    if (sim.comoving_)
    {
        for (size_t k = 0; k < momentum.size(); ++k) sim.momentum_[k] = momentum[sim.callerIndex_[k]];
    }
    sim.step_          = c.step;
    sim.initialEnergy_ = c.initialEnergy;
    if (sim.pipeline_)
    {
        // The topologies of the interrupted run, not a fresh one: the same forces, the same rebuilds.
        const ParticleSet& s = sim.state_;
        const Vec3d* vel     = sim.comoving_ ? sim.momentum_.data() : s.vel.data();
        if (sim.comoving_) sim.pipeline_->setScales(sim.comovingEpsilonSquared(), 1 / sim.comoving_->a);
        sim.pipeline_->restore(s.pos.data(), vel, s.mass.data(), s.id.data(), sim.callerIndex_.data(), s.size(), c.step,
                               c.pipeline, pipelineResults);
    }
    if (sim.pipeline_)
    {
        // What the constructor derived from its own first evaluation now comes from the restored state.
        sim.diagnosticsStep_  = -1;
        sim.callerStateValid_ = false;
    }
    if (sim.comoving_)
    {
        // The step limit and the Layzer-Irvine rate of the restored forces (a pipeline's, restored just above).
        sim.updateComovingPlan(sim.comovingStepLimit());
        const Diagnostics d   = sim.diagnostics();
        sim.layzerIrvineRate_ = 2 * d.kinetic + d.potential;
    }
    if (extra) *extra = std::move(c.extra);
    return sim;
}

} // namespace octwalk

#include "host/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "common/errors.h"
#include "common/integrate.h"
#include "host/core/mass_weighted.h"
#include "host/core/parallel.h"
#include "host/core/prefetch.h"
#include "host/core/timer.h"
#include "host/sim/gather.h"

namespace octwalk {

Simulation::Simulation(ParticleSet initial, const Parameters& p, StepPlan plan, ForceOptions forces)
    : Simulation(std::move(initial), p, plan, forces, std::nullopt)
{}

namespace {

/// The pipelined step for forces.rebuildEvery != 1 on the solver's backend; ParameterError for what it
/// does not support (host/sim/pipeline.h).
std::unique_ptr<Pipeline> makePipeline(const Parameters& p, const ForceOptions& forces, bool comoving)
{
    const std::string option = "option --rebuild-every = " + std::to_string(forces.rebuildEvery);
    if (comoving && !pipelineMeshBesideState(p))
    {
        throw ParameterError(option + ": a comoving run under tree + Ewald keeps the classic per-step build "
                                      "(--rebuild-every 1); TreePM (pm_grid > 0) takes the pipelined step");
    }
    if (forces.direct) throw ParameterError(option + " does not apply to direct summation (--rebuild-every 1)");
    if (forces.zeroNetForce) throw ParameterError(option + " does not support zero_net_force (--rebuild-every 1)");
    const PipelineDevice device = resolveBackend(p.backend) == Backend::Gpu ? PipelineDevice::Gpu : PipelineDevice::Cpu;
    return std::make_unique<Pipeline>(p, forces.rebuildEvery, device, Prediction::MidServed, forces.rebuildLag);
}

} // namespace

bool pipelineSupports(const Parameters& p, const ForceOptions& forces, bool comoving)
{
    // A comoving run is always periodic: under TreePM it is pipelined as any TreePM box, under tree + Ewald not.
    const bool box = p.box_size > 0 || comoving;
    return !forces.direct && !forces.zeroNetForce && (!box || pipelineMeshBesideState(p)) && p.mac != Mac::Relative;
}

int64_t resolvedRebuildEvery(const Parameters& p, const ForceOptions& forces, bool comoving)
{
    if (forces.rebuildEvery != kRebuildAutomatic) return forces.rebuildEvery;
    return pipelineSupports(p, forces, comoving) ? 0 : 1;
}

int64_t resolvedRebuildLag(const ForceOptions& forces, int64_t n)
{
    if (forces.rebuildLag != kRebuildLagAutomatic) return forces.rebuildLag;
    return n >= kLagOneBodies ? 1 : kRebuildLag;
}

// initial is a reference here so that comovingStart (comoving_step.cpp) reads it before anything moves it.
Simulation::Simulation(ParticleSet&& initial, const Parameters& p, StepPlan plan, ForceOptions forces,
                       std::optional<Comoving> comoving, std::vector<F4> results, bool restoringPipeline)
    : state_(std::move(initial)), params_(withPmGridFor(p, state_.size())), plan_(plan), forces_(forces),
      solver_(params_), comoving_(std::move(comoving))
{
    if (int64_t(state_.vel.size()) != state_.size())
    {
        throw InputError("simulation: " + std::to_string(state_.size()) + " positions but " +
                         std::to_string(state_.vel.size()) + " velocities");
    }
    for (int64_t i = 0; i < state_.size(); ++i)
    {
        const Vec3d& v = state_.vel[i];
        if (!std::isfinite(v.x) || !std::isfinite(v.y) || !std::isfinite(v.z))
        {
            throw InputError("body " + std::to_string(i) + ": velocity is not finite");
        }
        for (double c : {v.x, v.y, v.z})
        {
            if (std::fabs(c) > kMaxVelocity)
            {
                std::ostringstream s;
                s << "body " << i << ": velocity component " << c << " exceeds |v| <= " << kMaxVelocity
                  << " (a step would carry it past the coordinate limit)";
                throw InputError(s.str());
            }
        }
    }
    callerIndex_.resize(size_t(state_.size()));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < state_.size(); ++i) callerIndex_[i] = int32_t(i);
    if (comoving_)
    {
        validate(comoving_->settings);
        checkInsideBox(state_, params_.box_size);
        const double a   = comoving_->a;
        state_.time      = a;
        state_.boxSize   = params_.box_size;
        state_.cosmology = comoving_->settings.cosmology;
        momentum_.resize(size_t(state_.size()));
        for (int64_t i = 0; i < state_.size(); ++i) momentum_[i] = a * state_.vel[i];
    }
    else
    {
        // A periodic run in time starts with its bodies in the box (a clear error before any work); the
        // snapshots record the run's box, none for isolated forces (whatever box the input named).
        if (params_.box_size > 0) checkInsideBox(state_, params_.box_size);
        state_.boxSize = params_.box_size;
    }
    forces_.rebuildEvery = resolvedRebuildEvery(params_, forces_, comoving_.has_value());
    forces_.rebuildLag   = resolvedRebuildLag(forces_, state_.size());
    if (forces_.rebuildEvery != 1) pipeline_ = makePipeline(params_, forces_, comoving_.has_value());
    idsByCaller_ = !pipeline_ && std::is_sorted(state_.id.begin(), state_.id.end());
    // The pipeline evaluates the forces itself when it starts: the classic solver only checks the bodies, so that
    // its tree and arrays (on the device too) are never allocated beside the pipeline's.
    const bool fresh = results.empty(); // no stored forces: they are evaluated here
    if (pipeline_ && restoringPipeline)
    {
        // A restart's topologies and forces come with the pipeline's restore: a start here would build a tree and
        // evaluate forces only to drop them.
        solver_.attachBodies(bodySpan(), false);
        return;
    }
    if (!fresh) adoptResults(std::move(results));
    else if (pipeline_) solver_.attachBodies(bodySpan(), false);
    else computeForces();
    if (pipeline_)
    {
        // A comoving run's pipeline integrates the momenta, as the classic comoving step does.
        const Vec3d* vel = state_.vel.data();
        if (comoving_)
        {
            pipeline_->setScales(comovingEpsilonSquared(), 1 / comoving_->a);
            vel = momentum_.data();
        }
        pipeline_->start(state_.pos.data(), vel, state_.mass.data(), state_.id.data(), callerIndex_.data(),
                         state_.size(), step_);
        // The checks the classic evaluation makes of its results; the state is still in the caller's order.
        if (fresh) solver_.checkAttachedOrderResults(pipeline_->resultsByCaller().data());
    }
    initialEnergy_ = diagnostics().total;
    if (comoving_)
    {
        updateComovingPlan(comovingStepLimit());
        const Diagnostics d = diagnostics();
        layzerIrvineRate_   = 2 * d.kinetic + d.potential;
        if (step_ == 0 && comoving_->a == comoving_->settings.aBegin && comoving_->layzerIrvineIntegral == 0)
            comoving_->layzerIrvineStart = d.total;
    }
}

Simulation::ForceOutcome Simulation::computeForces(const double* halfKick)
{
    if (comoving_ && comoving_->settings.softeningMaxPhys > 0)
    {
        Parameters q      = params_;
        q.epsilon_squared = octwalk::comovingEpsilonSquared(comoving_->settings, params_.epsilon_squared, comoving_->a);
        solver_.setParameters(q);
    }
    // In place: the state is not touched until the forces are back, and copying it each step would
    // cost as much as a tree phase.
    solver_.attachBodies(bodySpan(), positionsChecked_);
    positionsChecked_ = false;
    if (passesPreviousAccelerations()) solver_.setPreviousAccelerations(lastResults_);
    ForceOutcome outcome;
    results_     = nullptr;
    lastResults_ = nullptr;
    if (forces_.direct) solver_.computeDirect({}, acc_, pot_);
    else
    {
        const F4* out = solver_.evaluateInTreeOrder();
        // The net force is removed from all accelerations before any kick.
        outcome.kicked = halfKick && !forces_.zeroNetForce;
        Stopwatch clock;
        outcome.kickedNotFinite            = reorder(out, outcome.kicked ? halfKick : nullptr);
        lastStepTimes_[StepPhase::Reorder] = clock.lap();
    }
    if (forces_.zeroNetForce) removeNetForce();
    restoredResults_ = {};
    return outcome;
}

bool Simulation::passesPreviousAccelerations() const
{
    return params_.box_size > 0 && params_.err_tol_force_acc > 0 && !forces_.direct;
}

void Simulation::adoptResults(std::vector<F4>&& results)
{
    const int64_t n = state_.size();
    if (int64_t(results.size()) != n)
    {
        throw InputError("simulation: " + std::to_string(results.size()) + " stored forces for " + std::to_string(n) +
                         " bodies");
    }
    // The checks an evaluation would make of the bodies.
    solver_.attachBodies(bodySpan(), false);
    restoredResults_ = std::move(results);
    lastResults_     = restoredResults_.data();
    const double G   = params_.gravitational_constant;
    if (forces_.zeroNetForce || comoving_)
    {
        // What treeOrderPass stores (and removeNetForce takes away) after an evaluation.
        acc_.resize(size_t(n));
        pot_.resize(size_t(n));
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n; ++k)
        {
            acc_[k] = accelerationOf(restoredResults_[k], G);
            pot_[k] = potentialOf(restoredResults_[k], G);
        }
        if (forces_.zeroNetForce) removeNetForce();
    }
    else results_ = lastResults_;
}

BodySpan Simulation::bodySpan() const
{
    return {state_.pos.data(), state_.mass.data(), idsByCaller_ ? nullptr : state_.id.data(), state_.size(),
            callerIndex_.data()};
}

Vec3d Simulation::velocityAt(int64_t k) const
{
    if (!ahead_) return state_.vel[k];
    Vec3d v = scratchVec_[solver_.treeOrder()[k]];
    kickVelocity(v, accelerationOf(results_[k], solver_.parameters().gravitational_constant), 0.5 * plan_.h);
    return v;
}

const std::vector<int32_t>& Simulation::slots() const
{
    if (slotsValid_) return slotOf_;
    const int64_t n = state_.size();
    slotOf_.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) slotOf_[callerIndex_[k]] = int32_t(k);
    slotsValid_ = true;
    return slotOf_;
}

const ParticleSet& Simulation::state() const
{
    if (callerStateValid_) return callerState_;
    if (pipeline_) return pipelineState();
    const std::vector<int32_t>& slot = slots();
    const int64_t n                  = int64_t(slot.size());
    gather(state_.pos, slot, callerState_.pos);
    callerState_.vel.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) callerState_.vel[i] = velocityAt(slot[i]);
    gather(state_.mass, slot, callerState_.mass);
    if (idsByCaller_) callerState_.id = state_.id;
    else gather(state_.id, slot, callerState_.id);
    callerState_.type      = state_.type;
    callerState_.time      = state_.time;
    callerState_.boxSize   = state_.boxSize;
    callerState_.cosmology = state_.cosmology;
    callerStateValid_      = true;
    return callerState_;
}

const ParticleSet& Simulation::pipelineState() const
{
    const int64_t n = state_.size();
    if (!callerConstantsValid_)
    {
        const std::vector<int32_t>& slot = slots();
        gather(state_.mass, slot, callerState_.mass);
        gather(state_.id, slot, callerState_.id);
        callerState_.type     = state_.type;
        callerConstantsValid_ = true;
    }
    callerState_.pos.resize(size_t(n));
    callerState_.vel.resize(size_t(n));
    callerState_.time      = state_.time;
    callerState_.boxSize   = state_.boxSize;
    callerState_.cosmology = state_.cosmology;
    pipeline_->copyState(callerState_.pos.data(), callerState_.vel.data());
    callerStateValid_ = true;
    return callerState_;
}

void Simulation::removeNetForce()
{
    // Summed in the caller's order, as massWeighted does: the same bits whatever order the state is in.
    const std::vector<int32_t>& slot = slots();
    MassWeighted force;
    for (int32_t k : slot)
    {
        force.mass += state_.mass[k];
        force.sum += state_.mass[k] * acc_[k];
    }
    if (!(force.mass > 0)) return;
    Vec3d mean = force.mean();
    for (auto& a : acc_) a = a - mean;
}

void Simulation::pipelineStep()
{
    lastStepTimes_    = StepTimes{};
    callerStateValid_ = false;
    diagnosticsStep_  = -1;
    Stopwatch clock;
    pipeline_->step(plan_.h);
    lastStepTimes_.forces                = pipeline_->lastStep().times;
    lastStepTimes_[StepPhase::ForceWall] = clock.lap();
    ++step_;
    state_.time = time();
}

void Simulation::recordForceTimes(double wall)
{
    StepTimes& t            = lastStepTimes_;
    t.forces                = solver_.timings();
    t[StepPhase::ForceWall] = wall;
    // Whatever of the wall time no phase names (clock noise aside, never negative).
    t[StepPhase::ForceOther] = std::max(0.0, wall - t.forces.total() - t[StepPhase::Reorder]);
}

void Simulation::checkFinite(bool bad) const
{
    if (!bad) return;
    const int64_t n = state_.size();
    int64_t i = n, k = 0;
    for (int64_t j = 0; j < n; ++j)
    {
        if (callerIndex_[j] < i && !finiteBody(state_.pos[j], velocityAt(j))) i = callerIndex_[k = j];
    }
    if (i < n)
    {
        throw InputError("body " + std::to_string(i) + " (id " + std::to_string(idAt(k)) +
                         ") has a non-finite position or velocity after step " + std::to_string(step_) +
                         ": the timestep is too large for the softening");
    }
}

std::vector<Vec3d> Simulation::accelerations() const
{
    std::vector<Vec3d> acc(size_t(state_.size()));
    if (pipeline_)
    {
        pipeline_->copyAccelerations(acc.data());
        return acc;
    }
    const std::vector<int32_t>& slot = slots();
    const double G                   = solver_.parameters().gravitational_constant;
    for (size_t c = 0; c < acc.size(); ++c) acc[c] = results_ ? accelerationOf(results_[slot[c]], G) : acc_[slot[c]];
    return acc;
}

void Simulation::prefetchSlot(int32_t k) const
{
    __builtin_prefetch(&state_.mass[k]);
    prefetchVec(state_.pos[k]);
    if (ahead_)
    {
        prefetchVec(scratchVec_[solver_.treeOrder()[k]]);
        __builtin_prefetch(&results_[k]);
        return;
    }
    prefetchVec(state_.vel[k]);
    if (results_) __builtin_prefetch(&results_[k]);
    else __builtin_prefetch(&pot_[k]);
}

const DiagnosticSums& Simulation::diagnosticSums() const
{
    if (diagnosticsStep_ == step_) return diagnosticSums_;
    if (pipeline_) diagnosticSums_ = pipeline_->diagnosticSums();
    else
    {
        // Summed in the caller's order: the same bits whatever order the state is in.
        const std::vector<int32_t>& slot = slots();
        const F4* out                    = results_;
        const double G                   = solver_.parameters().gravitational_constant;
        const int64_t n                  = state_.size();
        diagnosticSums_                  = interleavedSum<kDiagnosticLanes, DiagnosticSums>(n, [&](int64_t c) {
            if (c + kGatherPrefetch < n) prefetchSlot(slot[c + kGatherPrefetch]);
            const int32_t i = slot[c];
            return diagnosticTerms(state_.mass[i], state_.pos[i], velocityAt(i),
                                   out ? potentialOf(out[i], G) : pot_[i]);
        });
    }
    diagnosticsStep_ = step_;
    return diagnosticSums_;
}

Diagnostics Simulation::diagnostics() const
{
    Diagnostics d;
    d.time                  = time();
    const DiagnosticSums& s = diagnosticSums();
    const double m          = s.mass;
    d.kinetic               = s.kinetic;
    d.potential             = s.potential;
    d.comPos                = s.comPos;
    d.momentum              = s.momentum;
    d.angularMomentum       = s.angularMomentum;
    if (m > 0)
    {
        d.comPos = (1 / m) * d.comPos;
        d.comVel = (1 / m) * d.momentum;
    }
    // The peculiar potential is phi_c / a; the energy of an expanding box is not conserved.
    if (comoving_) d.potential /= comoving_->a;
    d.total = d.kinetic + d.potential;
    d.relativeEnergyError =
        initialEnergy_ != 0 && !comoving_ ? (d.total - initialEnergy_) / std::fabs(initialEnergy_) : 0.0;
    d.virialRatio = d.potential != 0 ? 2 * d.kinetic / std::fabs(d.potential) : 0.0;
    return d;
}

std::vector<double> Simulation::lagrangianRadii() const
{
    const DiagnosticSums& s      = diagnosticSums();
    const MassWeighted centre    = {s.mass, s.comPos};
    const std::vector<double>& f = lagrangeFractions();
    if (ordersRadiiOnPipeline())
    {
        // The pipeline orders one set of radii at a time: a begun one is collected first.
        settleBegunRadii();
        std::vector<double> radii;
        if (pipeline_->radiusOrderStatistics(centre.mean(), lagrangeRanks_, radii)) return radii;
    }
    return octwalk::lagrangianRadii(state(), f, centre);
}

void Simulation::settleBegunRadii() const
{
    if (begunRadii_ != BegunRadii::OnPipeline) return;
    foundRadii_ = finishedOnPipeline();
    begunRadii_ = BegunRadii::Found;
}

std::vector<double> Simulation::finishedOnPipeline() const
{
    std::vector<double> radii;
    if (pipeline_->finishRadiusOrderStatistics(radii)) return radii;
    return std::vector<double>(lagrangeFractions().size(), std::numeric_limits<double>::quiet_NaN());
}

bool Simulation::ordersRadiiOnPipeline() const
{
    if (!pipeline_ || state_.size() == 0) return false;
    if (!equalMasses_) equalMasses_ = equalMasses(state_.mass);
    if (!*equalMasses_) return false;
    if (lagrangeRanks_.empty())
    {
        lagrangeRanks_ = equalMassRanks(state_.size(), state_.mass[0], diagnosticSums().mass, lagrangeFractions());
    }
    return true;
}

void Simulation::beginLagrangianRadii() const
{
    settleBegunRadii();
    if (ordersRadiiOnPipeline())
    {
        const DiagnosticSums& s = diagnosticSums();
        pipeline_->beginRadiusOrderStatistics(MassWeighted{s.mass, s.comPos}.mean(), lagrangeRanks_);
        begunRadii_ = BegunRadii::OnPipeline;
        return;
    }
    foundRadii_ = lagrangianRadii();
    begunRadii_ = BegunRadii::Found;
}

std::vector<double> Simulation::finishLagrangianRadii() const
{
    const BegunRadii begun = begunRadii_;
    begunRadii_            = BegunRadii::None;
    if (begun == BegunRadii::None) throw std::logic_error("finishLagrangianRadii without a begin");
    if (begun == BegunRadii::Found) return std::move(foundRadii_);
    return finishedOnPipeline();
}

} // namespace octwalk

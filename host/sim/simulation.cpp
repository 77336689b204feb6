#include "host/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

#include "common/errors.h"
#include "common/integrate.h"
#include "host/core/mass_weighted.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/io/checkpoint.h"

namespace octwalk {

namespace {

/// Sorts v ascending: chunks sorted by the threads, then merged pairwise. Equal pairs are identical, so
/// the result is std::sort's for any thread count.
void parallelSort(std::vector<std::pair<double, double>>& v)
{
    const int64_t n = int64_t(v.size());
    const int parts = maxThreads();
    if (parts < 2 || n < int64_t(parts) * 1024)
    {
        std::sort(v.begin(), v.end());
        return;
    }
    std::vector<int64_t> bound(size_t(parts) + 1);
    for (int k = 0; k <= parts; ++k) bound[k] = n * k / parts;
#pragma omp parallel for schedule(static, 1)
    for (int k = 0; k < parts; ++k) std::sort(v.begin() + bound[k], v.begin() + bound[k + 1]);
    for (int width = 1; width < parts; width *= 2)
    {
#pragma omp parallel for schedule(dynamic, 1)
        for (int k = 0; k < parts; k += 2 * width)
        {
            if (k + width >= parts) continue;
            std::inplace_merge(v.begin() + bound[k], v.begin() + bound[k + width],
                               v.begin() + bound[std::min(k + 2 * width, parts)]);
        }
    }
}

} // namespace

std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions)
{
    const MassWeighted centre = massWeighted(p.mass, p.pos);
    const double m            = centre.mass;
    const Vec3d c             = centre.mean();
    std::vector<std::pair<double, double>> rm(p.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < p.size(); ++i)
    {
        Vec3d d = p.pos[i] - c;
        rm[i]   = {std::sqrt(dot(d, d)), p.mass[i]};
    }
    parallelSort(rm);
    std::vector<double> radii(fractions.size(), rm.empty() ? 0.0 : rm.back().first);
    double cumulative = 0;
    size_t next       = 0;
    for (const auto& [r, mi] : rm)
    {
        cumulative += mi;
        while (next < fractions.size() && cumulative >= fractions[next] * m) radii[next++] = r;
    }
    return radii;
}

namespace {

/// The same limits for a fresh run and a restart that extends one.
void checkEndTime(double t0, double tEnd)
{
    if (!(tEnd > t0) || !std::isfinite(tEnd))
    {
        throw ParameterError("parameter t_end = " + std::to_string(tEnd) +
                             " is invalid: must be finite and after the start time " + std::to_string(t0));
    }
}

constexpr double kMaxSteps = 1e12;

void checkStepCount(double steps)
{
    if (steps > kMaxSteps) throw ParameterError("t_end / timestep needs more than 1e12 steps");
}

/// The first half of a step on every body: half-kick with acc(i), drift, and the wrap into a periodic box
/// (box > 0). Returns whether a position fails positionInRange (what validateBodies would check of it).
template<class Acceleration>
bool kickAndDrift(Vec3d* pos, Vec3d* vel, int64_t n, Acceleration acc, double h, double box)
{
    int outOfRange = 0;
#pragma omp parallel for schedule(static) reduction(max : outOfRange)
    for (int64_t i = 0; i < n; ++i)
    {
        kickVelocity(vel[i], acc(i), 0.5 * h);
        driftPosition(pos[i], vel[i], h, box);
        outOfRange = std::max(outOfRange, int(!positionInRange(pos[i])));
    }
    return outOfRange != 0;
}

} // namespace

bool kickAndDriftPass(Vec3d* pos, Vec3d* vel, const F4* out, double G, int64_t n, double h, double box)
{
    return kickAndDrift(
        pos, vel, n, [out, G](int64_t i) { return accelerationOf(out[i], G); }, h, box);
}

namespace {

/// How many bodies ahead treeOrderPass prefetches what it gathers. A step reorders more than it seems: after a
/// step of 1/64 of a Plummer sphere of 2^22 bodies only 16% of neighbours in the new order were neighbours
/// before and 38% jump by more than 64 slots. Measured with BM_StepPasses (fused, 2^22, one thread, CPU time on
/// the busy 2-core development machine): no prefetch 96 ms, 8 ahead 59, 16 ahead 51, 32 ahead 40, 64 ahead
/// 37, 128 ahead 45; also prefetching the line a velocity's end may lie on: 32 ahead 34, 64 ahead 31, 128 ahead
/// 33 ms. (Non-temporal stores of what the pass writes did not pay there: 36 instead of 32 ms.)
constexpr int64_t kGatherPrefetch = 64;

/// Prefetches both cache lines the 24 bytes of a Vec3d may straddle.
inline void prefetchVec(const Vec3d& v)
{
    __builtin_prefetch(&v.x);
    __builtin_prefetch(&v.z);
}

} // namespace

TreeOrderFlags treeOrderPass(const TreeOrderPass& p)
{
    // One pass, everything a body carries at once: the permutation reads order once and the gathers share it.
    int resultNotFinite = 0, bodyNotFinite = 0, outOfRange = 0;
#pragma omp parallel for schedule(static) reduction(max : resultNotFinite, bodyNotFinite, outOfRange)
    for (int64_t k = 0; k < p.n; ++k)
    {
        if (k + kGatherPrefetch < p.n)
        {
            const int32_t f = p.order[k + kGatherPrefetch];
            prefetchVec(p.vel[f]);
            __builtin_prefetch(&p.callerIndex[f]);
            if (p.id) __builtin_prefetch(&p.id[f]);
            if (p.momentum) prefetchVec(p.momentum[f]);
        }
        const int32_t j  = p.order[k];
        const Vec3d a    = accelerationOf(p.out[k], p.G);
        const double phi = potentialOf(p.out[k], p.G);
        if (p.acc)
        {
            p.acc[k] = a;
            p.pot[k] = phi;
        }
        resultNotFinite = std::max(resultNotFinite, int(!finiteResult(a, phi)));
        Vec3d v         = p.vel[j];
        if (p.kick)
        {
            kickVelocity(v, a, p.halfKick);
            bodyNotFinite = std::max(bodyNotFinite, int(!finiteBody(p.pos[k], v)));
            if (p.nextPos)
            {
                // The next step's opening half: what kickAndDrift would do to this body, in the same order.
                kickVelocity(v, a, p.halfKick);
                Vec3d x = p.pos[k];
                driftPosition(x, v, p.h, p.box);
                p.nextPos[k] = x;
                outOfRange   = std::max(outOfRange, int(!positionInRange(x)));
            }
        }
        p.velOut[k]         = v;
        p.callerIndexOut[k] = p.callerIndex[j];
        if (p.idOut) p.idOut[k] = p.id[j];
        if (p.momentumOut) p.momentumOut[k] = p.momentum[j];
    }
    return {resultNotFinite != 0, bodyNotFinite != 0, outOfRange != 0};
}

StepPlan planSteps(double t0, double tEnd, double timestep)
{
    if (!(timestep > 0) || !std::isfinite(timestep))
    {
        throw ParameterError("parameter timestep = " + std::to_string(timestep) +
                             " is invalid: must be finite and > 0");
    }
    checkEndTime(t0, tEnd);
    double steps = std::ceil((tEnd - t0) / timestep * (1 - 1e-12));
    checkStepCount(steps);
    StepPlan plan;
    plan.t0       = t0;
    plan.numSteps = std::max<int64_t>(1, int64_t(steps));
    plan.h        = (tEnd - t0) / double(plan.numSteps);
    return plan;
}

Simulation::Simulation(ParticleSet initial, const Parameters& p, StepPlan plan, ForceOptions forces)
    : Simulation(std::move(initial), p, plan, forces, std::nullopt)
{}

namespace {

/// Sum of the masses in index order (the same for any thread count).
double totalMass(const ParticleSet& p)
{
    double m = 0;
    for (double mi : p.mass) m += mi;
    return m;
}

/// H0 in the run's units: GADGET's, or in N-body units the one that makes the box's mean density the
/// matter density (cosmology.h). Checks what the units fix (ParameterError for G, InputError for the mass).
double comovingHubble0(const ParticleSet& bodies, const Parameters& p, const ComovingSettings& s)
{
    const UnitSystem& units = unitSystem(s.units);
    const double G          = p.gravitational_constant;
    const double L          = p.box_size;
    const double mass       = totalMass(bodies);
    if (units.units == CosmoUnits::NBody) return hubbleConstantForDensity(mass, L, s.cosmology.omega0, G);
    if (G != units.gravitationalConstant)
    {
        std::ostringstream m;
        m.precision(17);
        m << "parameter gravitational_constant = " << G << " is invalid in " << units.name << " units: G is "
          << units.gravitationalConstant;
        throw ParameterError(m.str());
    }
    const double expected = s.cosmology.omega0 * 3 * units.hubble0 * units.hubble0 / (8 * M_PI * G) * L * L * L;
    if (!(std::fabs(mass / expected - 1) <= 0.01))
    {
        std::ostringstream m;
        m.precision(9);
        m << "the bodies' total mass " << mass << " is not Omega0 rho_crit L^3 = " << expected << " of a box of " << L
          << " in " << units.name << " units with Omega0 = " << s.cosmology.omega0
          << " (within 1%): wrong units or box size?";
        throw InputError(m.str());
    }
    return units.hubble0;
}

/// Validates a comoving run's settings against its parameters and bodies, and gives its clock at a_begin.
Simulation::Comoving comovingStart(const ParticleSet& bodies, const Parameters& p, const ComovingSettings& s)
{
    validate(s);
    if (!(p.box_size > 0))
    {
        throw ParameterError("parameter box_size = " + std::to_string(p.box_size) +
                             " is invalid for a comoving run: must be > 0 (the periodic box)");
    }
    if (s.dlna == 0 && !(p.epsilon_squared > 0))
    {
        throw ParameterError("the err_tol_int_accuracy step criterion needs a softening epsilon > 0 (or give a fixed "
                             "dlna)");
    }
    checkInsideBox(bodies, p.box_size);
    Simulation::Comoving c;
    c.settings = s;
    c.a        = s.aBegin;
    c.hubble0  = comovingHubble0(bodies, p, s);
    return c;
}

} // namespace

Simulation::Simulation(ParticleSet initial, const Parameters& p, const ComovingSettings& settings, ForceOptions forces)
    : Simulation(std::move(initial), p, StepPlan{}, forces, comovingStart(initial, p, settings))
{}

namespace {

/// The pipelined step for forces.rebuildEvery != 1 on the solver's backend; ParameterError for what it
/// does not support (host/sim/pipeline.h).
std::unique_ptr<Pipeline> makePipeline(const Parameters& p, const ForceOptions& forces, bool comoving)
{
    const std::string option = "option --rebuild-every = " + std::to_string(forces.rebuildEvery);
    if (comoving) throw ParameterError(option + ": comoving runs keep the classic per-step build (--rebuild-every 1)");
    if (forces.direct) throw ParameterError(option + " does not apply to direct summation (--rebuild-every 1)");
    if (forces.zeroNetForce) throw ParameterError(option + " does not support zero_net_force (--rebuild-every 1)");
    const PipelineDevice device = resolveBackend(p.backend) == Backend::Gpu ? PipelineDevice::Gpu : PipelineDevice::Cpu;
    return std::make_unique<Pipeline>(p, forces.rebuildEvery, device, Prediction::MidServed, forces.rebuildLag);
}

} // namespace

// initial is a reference here so that comovingStart above reads it before anything moves it.
Simulation::Simulation(ParticleSet&& initial, const Parameters& p, StepPlan plan, ForceOptions forces,
                       std::optional<Comoving> comoving, std::vector<F4> results)
    : state_(std::move(initial)), params_(p), plan_(plan), forces_(forces), solver_(p), comoving_(std::move(comoving))
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
    if (forces_.rebuildEvery != 1) pipeline_ = makePipeline(params_, forces_, comoving_.has_value());
    idsByCaller_ = !pipeline_ && std::is_sorted(state_.id.begin(), state_.id.end());
    if (results.empty()) computeForces();
    else adoptResults(std::move(results));
    if (pipeline_)
    {
        pipeline_->start(state_.pos.data(), state_.vel.data(), state_.mass.data(), state_.id.data(),
                         callerIndex_.data(), state_.size(), step_);
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
        // eps(a) = min(eps, eps_max_phys / a), squared without a square root so that an unclipped
        // epsilon_squared is used exactly as given.
        const double clip = comoving_->settings.softeningMaxPhys / comoving_->a;
        Parameters q      = params_;
        q.epsilon_squared = std::min(params_.epsilon_squared, clip * clip);
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

bool Simulation::reorder(const F4* out, const double* halfKick)
{
    const int64_t n     = state_.size();
    const bool comoving = comoving_.has_value();
    // Only what reads the accelerations again beyond the drift needs them stored in double: the net force's
    // removal and the comoving step criterion.
    const bool storeAcc = forces_.zeroNetForce || comoving;
    // Without stored accelerations nothing happens to the state between this pass and the next step's drift
    // (the step is fixed), so the pass makes that drift too.
    const bool driftAhead = halfKick && !storeAcc;
    if (storeAcc)
    {
        acc_.resize(size_t(n));
        pot_.resize(size_t(n));
    }
    else
    {
        acc_.clear();
        pot_.clear();
    }
    scratchVec_.resize(size_t(n));
    scratchIndex_.resize(size_t(n));
    if (!idsByCaller_) scratchId_.resize(size_t(n));
    if (comoving) scratchMomentum_.resize(size_t(n));
    if (driftAhead) nextPos_.resize(size_t(n));
    TreeOrderPass p;
    p.n              = n;
    p.order          = solver_.treeOrder().data();
    p.out            = out;
    p.G              = solver_.parameters().gravitational_constant;
    p.pos            = solver_.hostTree().pos.data();
    p.vel            = state_.vel.data();
    p.velOut         = scratchVec_.data();
    p.callerIndex    = callerIndex_.data();
    p.callerIndexOut = scratchIndex_.data();
    if (!idsByCaller_)
    {
        p.id    = state_.id.data();
        p.idOut = scratchId_.data();
    }
    if (comoving)
    {
        p.momentum    = momentum_.data();
        p.momentumOut = scratchMomentum_.data();
    }
    if (storeAcc)
    {
        p.acc = acc_.data();
        p.pot = pot_.data();
    }
    p.kick     = halfKick != nullptr;
    p.halfKick = halfKick ? *halfKick : 0.0;
    if (driftAhead)
    {
        p.nextPos = nextPos_.data();
        p.h       = plan_.h;
        p.box     = params_.box_size;
    }
    ahead_                     = false;
    const TreeOrderFlags flags = treeOrderPass(p);
    // Before the state changes: an error leaves it as it was.
    solver_.checkTreeOrderResults(out, flags.resultNotFinite);
    results_     = storeAcc ? nullptr : out;
    lastResults_ = out;
    state_.vel.swap(scratchVec_);
    if (!idsByCaller_) state_.id.swap(scratchId_);
    callerIndex_.swap(scratchIndex_);
    if (comoving) momentum_.swap(scratchMomentum_);
    // Positions and masses are not gathered: the sort already made them in tree order.
    solver_.swapTreeOrderBodies(state_.pos, state_.mass);
    ahead_            = driftAhead;
    nextOutOfRange_   = flags.nextOutOfRange;
    callerStateValid_ = false;
    slotsValid_       = false;
    // The buffers the solver read now hold other data: it reads the reordered state from here on.
    solver_.attachBodies(bodySpan(), true);
    return flags.bodyNotFinite;
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

namespace {

template<class T>
void gather(const std::vector<T>& from, const std::vector<int32_t>& slot, std::vector<T>& to)
{
    const int64_t n = int64_t(slot.size());
    to.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) to[i] = from[slot[i]];
}

} // namespace

const ParticleSet& Simulation::state() const
{
    if (callerStateValid_) return callerState_;
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
    if (pipeline_) pipeline_->copyState(callerState_.pos.data(), callerState_.vel.data());
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

double Simulation::comovingStepLimit() const
{
    const ComovingSettings& s = comoving_->settings;
    if (s.dlna > 0) return s.dlna;
    const double epsilon = comovingSoftening(s, std::sqrt(params_.epsilon_squared), comoving_->a);
    return criterionDlna(s, comoving_->hubble0, comoving_->a, epsilon, acc_);
}

void Simulation::updateComovingPlan(double dlna)
{
    plan_.t0       = comoving_->settings.aBegin;
    plan_.h        = dlna;
    plan_.numSteps = step_ + stepsToEnd(comoving_->settings, comoving_->a, dlna);
}

void Simulation::comovingStep()
{
    const ComovingSettings& s = comoving_->settings;
    const Cosmology& c        = s.cosmology;
    const double a0 = comoving_->a, a1 = nextScaleFactor(a0, nextStop(s, a0), comovingStepLimit());
    if (!(a1 > a0))
    {
        throw InputError("comoving step " + std::to_string(step_ + 1) + " at a = " + std::to_string(a0) +
                         " does not advance a (step limit " + std::to_string(comovingStepLimit()) +
                         " in ln a): the accelerations are too large for the softening");
    }
    const double aMid = std::sqrt(a0 * a1), h0 = comoving_->hubble0, box = params_.box_size;
    // Kick factors carry 1/H0: the solver's accelerations are G sum m dx / r^3 in the run's units.
    const double kick0 = kickFactor(c, a0, aMid) / h0, drift = driftFactor(c, a0, a1) / h0;
    const double kick1 = kickFactor(c, aMid, a1) / h0;
    const int64_t n    = state_.size();
    lastStepTimes_     = StepTimes{};
    callerStateValid_  = false;
    Stopwatch clock;
    int outOfRange = 0;
#pragma omp parallel for schedule(static) reduction(max : outOfRange)
    for (int64_t i = 0; i < n; ++i)
    {
        momentum_[i] += kick0 * acc_[i];
        state_.pos[i] = wrapIntoBox(state_.pos[i] + drift * momentum_[i], box);
        outOfRange    = std::max(outOfRange, int(!positionInRange(state_.pos[i])));
    }
    positionsChecked_   = outOfRange == 0;
    comoving_->a        = a1;
    comoving_->lastDlna = std::log(a1 / a0);
    double integration  = clock.lap();
    computeForces();
    recordForceTimes(clock.lap());
    int notFinite = 0;
#pragma omp parallel for schedule(static) reduction(max : notFinite)
    for (int64_t i = 0; i < n; ++i)
    {
        momentum_[i] += kick1 * acc_[i];
        state_.vel[i] = (1 / a1) * momentum_[i];
        notFinite     = std::max(notFinite, int(!finiteBody(state_.pos[i], state_.vel[i])));
    }
    ++step_;
    state_.time = a1;
    checkFinite(notFinite != 0);
    updateComovingPlan(comovingStepLimit());
    // Layzer-Irvine: d(K + W)/d ln a = -(2K + W), integrated by the trapezoidal rule over the step.
    const Diagnostics d = diagnostics();
    const double rate   = 2 * d.kinetic + d.potential;
    comoving_->layzerIrvineIntegral += 0.5 * (layzerIrvineRate_ + rate) * comoving_->lastDlna;
    layzerIrvineRate_                      = rate;
    lastStepTimes_[StepPhase::Integration] = integration + clock.lap();
}

void Simulation::pipelineStep()
{
    lastStepTimes_    = StepTimes{};
    callerStateValid_ = false;
    Stopwatch clock;
    pipeline_->step(plan_.h);
    lastStepTimes_.forces                = pipeline_->lastStep().times;
    lastStepTimes_[StepPhase::ForceWall] = clock.lap();
    ++step_;
    state_.time = time();
}

void Simulation::step()
{
    if (comoving_)
    {
        comovingStep();
        return;
    }
    if (pipeline_)
    {
        pipelineStep();
        return;
    }
    double h          = plan_.h;
    int64_t n         = state_.size();
    const double box  = params_.box_size;
    lastStepTimes_    = StepTimes{};
    callerStateValid_ = false;
    Stopwatch clock;
    // The drift checks what validateBodies would check of the positions (the masses do not change), so
    // the solver does not read them all again; a body out of range is left to its full message there.
    if (!results_ && int64_t(acc_.size()) != n)
    {
        throw InputError("simulation: no forces to step with at step " + std::to_string(step_) +
                         " (their evaluation failed)");
    }
    bool outOfRange = false;
    if (ahead_)
    {
        // The last pass made this step's opening half-kick (state_.vel) and drift.
        state_.pos.swap(nextPos_);
        ahead_     = false;
        outOfRange = nextOutOfRange_;
    }
    else if (results_)
        outOfRange = kickAndDriftPass(state_.pos.data(), state_.vel.data(), results_,
                                      solver_.parameters().gravitational_constant, n, h, box);
    else
        outOfRange = kickAndDrift(
            state_.pos.data(), state_.vel.data(), n, [this](int64_t i) -> const Vec3d& { return acc_[i]; }, h, box);
    positionsChecked_          = !outOfRange;
    double integration         = clock.lap();
    const double halfKick      = 0.5 * h;
    const ForceOutcome outcome = computeForces(&halfKick);
    recordForceTimes(clock.lap());
    int notFinite = outcome.kickedNotFinite;
    if (!outcome.kicked)
    {
#pragma omp parallel for schedule(static) reduction(max : notFinite)
        for (int64_t i = 0; i < n; ++i)
        {
            kickVelocity(state_.vel[i], acc_[i], halfKick);
            notFinite = std::max(notFinite, int(!finiteBody(state_.pos[i], state_.vel[i])));
        }
    }
    ++step_;
    state_.time = time();
    checkFinite(notFinite != 0);
    lastStepTimes_[StepPhase::Integration] = integration + clock.lap();
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

void Simulation::extendTo(double tEnd)
{
    if (comoving_) throw ParameterError("parameter t_end does not apply to a comoving run (it ends at a_end)");
    checkEndTime(plan_.t0, tEnd);
    double steps = (tEnd - plan_.t0) / plan_.h;
    double whole = std::round(steps);
    checkStepCount(whole);
    if (!(whole >= double(step_)) || std::fabs(steps - whole) > 1e-9 * std::max(1.0, whole))
    {
        throw ParameterError("parameter t_end = " + std::to_string(tEnd) + " is invalid for this restart: it must be " +
                             "t0 + k h with h = " + std::to_string(plan_.h) + " and k >= " + std::to_string(step_));
    }
    plan_.numSteps = int64_t(whole);
}

Diagnostics Simulation::diagnostics() const
{
    Diagnostics d;
    d.time = time();
    // Summed in the caller's order: the same bits whatever order the state is in.
    const std::vector<int32_t>& slot = slots();
    const F4* out                    = results_;
    const double G                   = solver_.parameters().gravitational_constant;
    const DiagnosticSums s =
        pipeline_ ? pipeline_->diagnosticSums() : deterministicSum<DiagnosticSums>(state_.size(), [&](int64_t c) {
            const int32_t i = slot[c];
            return diagnosticTerms(state_.mass[i], state_.pos[i], velocityAt(i),
                                   out ? potentialOf(out[i], G) : pot_[i]);
        });
    const double m    = s.mass;
    d.kinetic         = s.kinetic;
    d.potential       = s.potential;
    d.comPos          = s.comPos;
    d.momentum        = s.momentum;
    d.angularMomentum = s.angularMomentum;
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

namespace {

/// The clock of a comoving run, then its settings, as "name=value" lines (reals exact).
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

} // namespace

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
    if (passesPreviousAccelerations() && lastResults_)
    {
        // The next step's previous accelerations: a restart takes these forces instead of evaluating them again.
        const std::vector<int32_t>& slot = slots();
        c.results.resize(slot.size());
        for (size_t i = 0; i < slot.size(); ++i) c.results[i] = lastResults_[slot[i]];
    }
    if (comoving_)
    {
        // The integrated state is p, not p / a: a restart continues from the same bits.
        gather(momentum_, slots(), c.state.vel);
        c.comoving = comovingCheckpointText(*comoving_);
    }
    octwalk::writeCheckpoint(path, c);
}

Simulation Simulation::fromCheckpoint(const std::string& path, std::string* extra)
{
    CheckpointImage c = readCheckpoint(path);
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
    Simulation sim(std::move(c.state), c.parameters, plan, forces, std::move(comoving), std::move(c.results));
    if (sim.comoving_)
    {
        for (size_t k = 0; k < momentum.size(); ++k) sim.momentum_[k] = momentum[sim.callerIndex_[k]];
        sim.step_ = c.step;
        sim.updateComovingPlan(sim.comovingStepLimit());
    }
    sim.step_          = c.step;
    sim.initialEnergy_ = c.initialEnergy;
    if (sim.pipeline_)
    {
        // The topologies of the interrupted run, not a fresh one: the same forces, the same rebuilds.
        const ParticleSet& s = sim.state_;
        sim.pipeline_->restore(s.pos.data(), s.vel.data(), s.mass.data(), s.id.data(), sim.callerIndex_.data(),
                               s.size(), c.step, c.pipeline);
    }
    if (extra) *extra = std::move(c.extra);
    return sim;
}

} // namespace octwalk

#include "host/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "common/integrate.h"
#include "host/core/timer.h"

namespace octwalk {

namespace {

/// Sum of the masses in index order (the same for any thread count).
double totalMass(const ParticleSet& p)
{
    double m = 0;
    for (double mi : p.mass) m += mi;
    return m;
}

} // namespace

double comovingHubble0(double mass, const Parameters& p, const ComovingSettings& s)
{
    const UnitSystem& units = unitSystem(s.units);
    const double G          = p.gravitational_constant;
    const double L          = p.box_size;
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

void checkComovingStart(const Parameters& p, const ComovingSettings& s)
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
}

namespace {

/// Validates a comoving run's settings against its parameters and bodies, and gives its clock at a_begin.
Simulation::Comoving comovingStart(const ParticleSet& bodies, const Parameters& p, const ComovingSettings& s)
{
    checkComovingStart(p, s);
    checkInsideBox(bodies, p.box_size);
    Simulation::Comoving c;
    c.settings = s;
    c.a        = s.aBegin;
    c.hubble0  = comovingHubble0(totalMass(bodies), p, s);
    return c;
}

} // namespace

Simulation::Simulation(ParticleSet initial, const Parameters& p, const ComovingSettings& settings, ForceOptions forces)
    : Simulation(std::move(initial), p, StepPlan{}, forces, comovingStart(initial, p, settings))
{}

double Simulation::comovingStepLimit() const
{
    const ComovingSettings& s = comoving_->settings;
    if (s.dlna > 0) return s.dlna;
    const double epsilon = comovingSoftening(s, std::sqrt(params_.epsilon_squared), comoving_->a);
    if (pipeline_)
    {
        return criterionDlnaOfLargest(s, comoving_->hubble0, comoving_->a, epsilon,
                                      pipeline_->largestAccelerationSquared());
    }
    return criterionDlna(s, comoving_->hubble0, comoving_->a, epsilon, acc_);
}

void Simulation::updateComovingPlan(double dlna)
{
    plan_.t0       = comoving_->settings.aBegin;
    plan_.h        = dlna;
    plan_.numSteps = step_ + stepsToEnd(comoving_->settings, comoving_->a, dlna);
}

Simulation::ComovingFactors Simulation::comovingFactors() const
{
    const ComovingSettings& s = comoving_->settings;
    const Cosmology& c        = s.cosmology;
    // updateComovingPlan left the step limit of the current forces in plan_.h (a pass over all of them).
    const double limit = plan_.h;
    const double a0 = comoving_->a, a1 = nextScaleFactor(a0, nextStop(s, a0), limit);
    if (!(a1 > a0))
    {
        throw InputError("comoving step " + std::to_string(step_ + 1) + " at a = " + std::to_string(a0) +
                         " does not advance a (step limit " + std::to_string(limit) +
                         " in ln a): the accelerations are too large for the softening");
    }
    const double aMid = std::sqrt(a0 * a1), h0 = comoving_->hubble0;
    // Kick factors carry 1/H0: the solver's accelerations are G sum m dx / r^3 in the run's units.
    return {a0, a1, kickFactor(c, a0, aMid) / h0, driftFactor(c, a0, a1) / h0, kickFactor(c, aMid, a1) / h0};
}

float Simulation::comovingEpsilonSquared() const
{
    // The solver's float of the classic step's softening (computeForces) at the current a.
    return float(octwalk::comovingEpsilonSquared(comoving_->settings, params_.epsilon_squared, comoving_->a));
}

void Simulation::endComovingStep(double a0, double a1)
{
    comoving_->a        = a1;
    comoving_->lastDlna = std::log(a1 / a0);
}

void Simulation::comovingLayzerIrvine()
{
    // Layzer-Irvine: d(K + W)/d ln a = -(2K + W), integrated by the trapezoidal rule over the step.
    const Diagnostics d = diagnostics();
    const double rate   = 2 * d.kinetic + d.potential;
    comoving_->layzerIrvineIntegral += 0.5 * (layzerIrvineRate_ + rate) * comoving_->lastDlna;
    layzerIrvineRate_ = rate;
}

void Simulation::comovingPipelineStep()
{
    const ComovingFactors f = comovingFactors();
    lastStepTimes_          = StepTimes{};
    callerStateValid_       = false;
    diagnosticsStep_        = -1;
    Stopwatch clock;
    endComovingStep(f.a0, f.a1);
    // The evaluation's softening at the new a, as the classic step's computeForces takes it.
    pipeline_->step({f.kick0, f.drift, f.kick1, comovingEpsilonSquared(), 1 / f.a1});
    lastStepTimes_.forces                = pipeline_->lastStep().times;
    lastStepTimes_[StepPhase::ForceWall] = clock.lap();
    ++step_;
    state_.time = f.a1;
    updateComovingPlan(comovingStepLimit());
    comovingLayzerIrvine();
    lastStepTimes_[StepPhase::Integration] = clock.lap();
}

void Simulation::comovingStep()
{
    if (pipeline_) return comovingPipelineStep();
    const ComovingFactors f = comovingFactors();
    const double a0 = f.a0, a1 = f.a1, kick0 = f.kick0, drift = f.drift, kick1 = f.kick1;
    const double box  = params_.box_size;
    const int64_t n   = state_.size();
    lastStepTimes_    = StepTimes{};
    callerStateValid_ = false;
    diagnosticsStep_  = -1;
    Stopwatch clock;
    int outOfRange = 0;
#pragma omp parallel for schedule(static) reduction(max : outOfRange)
    for (int64_t i = 0; i < n; ++i)
    {
        momentum_[i] += kick0 * acc_[i];
        state_.pos[i] = wrapIntoBox(state_.pos[i] + drift * momentum_[i], box);
        outOfRange    = std::max(outOfRange, int(!positionInRange(state_.pos[i])));
    }
    positionsChecked_ = outOfRange == 0;
    endComovingStep(a0, a1);
    double integration         = clock.lap();
    const ForceOutcome outcome = computeForces(&kick1);
    recordForceTimes(clock.lap());
    int notFinite = outcome.kickedNotFinite;
    if (!outcome.kicked)
    {
#pragma omp parallel for schedule(static) reduction(max : notFinite)
        for (int64_t i = 0; i < n; ++i)
        {
            momentum_[i] += kick1 * acc_[i];
            state_.vel[i] = (1 / a1) * momentum_[i];
            notFinite     = std::max(notFinite, int(!finiteBody(state_.pos[i], state_.vel[i])));
        }
    }
    ++step_;
    state_.time = a1;
    checkFinite(notFinite != 0);
    updateComovingPlan(comovingStepLimit());
    comovingLayzerIrvine();
    lastStepTimes_[StepPhase::Integration] = integration + clock.lap();
}

} // namespace octwalk

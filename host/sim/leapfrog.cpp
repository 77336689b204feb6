#include "host/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/errors.h"
#include "common/integrate.h"
#include "host/core/timer.h"

namespace octwalk {

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
    diagnosticsStep_  = -1;
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

} // namespace octwalk

#include "host/sim/simulation.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "common/errors.h"
#include "host/core/mass_weighted.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/io/checkpoint.h"

namespace octwalk {

std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions)
{
    const MassWeighted centre = massWeighted(p.mass, p.pos);
    const double m            = centre.mass;
    const Vec3d c             = centre.mean();
    std::vector<std::pair<double, double>> rm(p.size());
    for (int64_t i = 0; i < p.size(); ++i)
    {
        Vec3d d = p.pos[i] - c;
        rm[i]   = {std::sqrt(dot(d, d)), p.mass[i]};
    }
    std::sort(rm.begin(), rm.end());
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

} // namespace

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
    : state_(std::move(initial)), params_(p), plan_(plan), forces_(forces), solver_(p)
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
    computeForces();
    initialEnergy_ = diagnostics().total;
}

void Simulation::computeForces()
{
    // In place: the state is not touched until the forces are back, and copying it each step would
    // cost as much as a tree phase.
    solver_.attachBodies(state_.pos.data(), state_.mass.data(), state_.id.data(), state_.size());
    if (forces_.direct) solver_.computeDirect({}, acc_, pot_);
    else solver_.computeForces(acc_, pot_);
    if (forces_.zeroNetForce) removeNetForce();
}

void Simulation::removeNetForce()
{
    const MassWeighted force = massWeighted(state_.mass, acc_);
    if (!(force.mass > 0)) return;
    Vec3d mean = force.mean();
    for (auto& a : acc_) a = a - mean;
}

void Simulation::step()
{
    double h       = plan_.h;
    int64_t n      = state_.size();
    lastStepTimes_ = StepTimes{};
    Stopwatch clock;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        state_.vel[i] += (0.5 * h) * acc_[i];
        state_.pos[i] += h * state_.vel[i];
    }
    double integration = clock.lap();
    computeForces();
    lastStepTimes_.forces                = solver_.timings();
    lastStepTimes_[StepPhase::ForceWall] = clock.lap();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) state_.vel[i] += (0.5 * h) * acc_[i];
    ++step_;
    state_.time     = time();
    const int64_t i = firstIndexWhere(n, [this](int64_t k) {
        const Vec3d& x = state_.pos[k];
        return !std::isfinite(x.x + x.y + x.z + state_.vel[k].x + state_.vel[k].y + state_.vel[k].z);
    });
    if (i < n)
    {
        throw InputError("body " + std::to_string(i) + " (id " + std::to_string(state_.id[i]) +
                         ") has a non-finite position or velocity after step " + std::to_string(step_) +
                         ": the timestep is too large for the softening");
    }
    lastStepTimes_[StepPhase::Integration] = integration + clock.lap();
}

void Simulation::extendTo(double tEnd)
{
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

namespace {

/// The sums behind the diagnostics, added in fixed blocks (host/core/parallel.h) so they are the
/// same for any thread count.
struct DiagnosticSums
{
    double mass = 0, kinetic = 0, potential = 0;
    Vec3d comPos{0, 0, 0}, momentum{0, 0, 0}, angularMomentum{0, 0, 0};

    DiagnosticSums& operator+=(const DiagnosticSums& o)
    {
        mass += o.mass;
        kinetic += o.kinetic;
        potential += o.potential;
        comPos += o.comPos;
        momentum += o.momentum;
        angularMomentum += o.angularMomentum;
        return *this;
    }
};

} // namespace

Diagnostics Simulation::diagnostics() const
{
    Diagnostics d;
    d.time                 = time();
    const DiagnosticSums s = deterministicSum<DiagnosticSums>(state_.size(), [this](int64_t i) {
        DiagnosticSums b;
        double mi         = state_.mass[i];
        const Vec3d& x    = state_.pos[i];
        const Vec3d& v    = state_.vel[i];
        b.mass            = mi;
        b.kinetic         = 0.5 * mi * dot(v, v);
        b.potential       = 0.5 * mi * pot_[i];
        b.comPos          = mi * x;
        b.momentum        = mi * v;
        b.angularMomentum = mi * Vec3d{x.y * v.z - x.z * v.y, x.z * v.x - x.x * v.z, x.x * v.y - x.y * v.x};
        return b;
    });
    const double m         = s.mass;
    d.kinetic              = s.kinetic;
    d.potential            = s.potential;
    d.comPos               = s.comPos;
    d.momentum             = s.momentum;
    d.angularMomentum      = s.angularMomentum;
    if (m > 0)
    {
        d.comPos = (1 / m) * d.comPos;
        d.comVel = (1 / m) * d.momentum;
    }
    d.total               = d.kinetic + d.potential;
    d.relativeEnergyError = initialEnergy_ != 0 ? (d.total - initialEnergy_) / std::fabs(initialEnergy_) : 0.0;
    d.virialRatio         = d.potential != 0 ? 2 * d.kinetic / std::fabs(d.potential) : 0.0;
    return d;
}

void Simulation::writeCheckpoint(const std::string& path, const std::string& extra) const
{
    CheckpointImage c;
    c.state         = state_;
    c.step          = step_;
    c.numSteps      = plan_.numSteps;
    c.t0            = plan_.t0;
    c.h             = plan_.h;
    c.initialEnergy = initialEnergy_;
    c.parameters    = params_;
    c.direct        = forces_.direct;
    c.zeroNetForce  = forces_.zeroNetForce;
    c.extra         = extra;
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
    Simulation sim(std::move(c.state), c.parameters, plan, ForceOptions{c.direct, c.zeroNetForce});
    sim.step_          = c.step;
    sim.initialEnergy_ = c.initialEnergy;
    if (extra) *extra = std::move(c.extra);
    return sim;
}

} // namespace octwalk

#include "host/sim/distributed_comoving.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "host/sim/comoving.h"

namespace octwalk {

DistributedComoving::DistributedComoving(const mpi::Communicator& comm, const Parameters& p,
                                         const Simulation::Comoving& clock)
    : comm_(comm), lf_(comm, p), clock_(clock), epsilonSquared_(p.epsilon_squared),
      epsilon_(std::sqrt(p.epsilon_squared))
{
    checkComovingStart(p, clock.settings);
}

Simulation::Comoving DistributedComoving::startClock(const mpi::Communicator& comm, const ParticleSet& local,
                                                     const Parameters& p, const ComovingSettings& s)
{
    checkComovingStart(p, s);
    double mine = 0;
    for (double m : local.mass) mine += m;
    Simulation::Comoving c;
    c.settings = s;
    c.a        = s.aBegin;
    c.hubble0  = comovingHubble0(comm.allreduceSumOrdered(mine), p, s);
    return c;
}

double DistributedComoving::epsilonSquaredAt(double a) const
{
    return comovingEpsilonSquared(clock_.settings, epsilonSquared_, a);
}

void DistributedComoving::updateStepLimit()
{
    const ComovingSettings& s = clock_.settings;
    if (s.dlna > 0)
    {
        stepLimit_ = s.dlna;
        return;
    }
    const double mine =
        criterionDlna(s, clock_.hubble0, clock_.a, comovingSoftening(s, epsilon_, clock_.a), lf_.forces().acc);
    stepLimit_ = comm_.allreduceMin({mine})[0];
}

void DistributedComoving::start(ParticleSet& local)
{
    const double a = clock_.a;
    for (Vec3d& v : local.vel) v = a * v;
    lf_.setEpsilonSquared(epsilonSquaredAt(a));
    lf_.start(local);
    updateStepLimit();
    rate_ = layzerIrvineRate(local);
    if (clock_.layzerIrvineIntegral == 0) clock_.layzerIrvineStart = diagnostics(local).total;
}

void DistributedComoving::resume(const ParticleSet& local, std::vector<F4> previous)
{
    lf_.setEpsilonSquared(epsilonSquaredAt(clock_.a));
    lf_.resume(local, std::move(previous));
    updateStepLimit();
    rate_ = layzerIrvineRate(local);
}

void DistributedComoving::step(ParticleSet& local)
{
    const ComovingSettings& s = clock_.settings;
    const Cosmology& c        = s.cosmology;
    const double a0 = clock_.a, a1 = nextScaleFactor(a0, nextStop(s, a0), stepLimit_);
    if (!(a1 > a0))
    {
        throw InputError("comoving step at a = " + std::to_string(a0) + " does not advance a (step limit " +
                         std::to_string(stepLimit_) + " in ln a): the accelerations are too large for the softening");
    }
    const double aMid = std::sqrt(a0 * a1), h0 = clock_.hubble0;
    // Kick factors carry 1/H0: the forces are G sum m dx / r^3 in the run's units (comoving_step.cpp).
    mpi::StepFactors f;
    f.kickOpen       = kickFactor(c, a0, aMid) / h0;
    f.drift          = driftFactor(c, a0, a1) / h0;
    f.kickClose      = kickFactor(c, aMid, a1) / h0;
    f.epsilonSquared = epsilonSquaredAt(a1);
    lf_.step(local, f);
    clock_.a        = a1;
    clock_.lastDlna = std::log(a1 / a0);
    local.time      = a1;
    updateStepLimit();
    // Layzer-Irvine: d(K + W)/d ln a = -(2K + W), the trapezoidal rule over the step.
    const double rate = layzerIrvineRate(local);
    clock_.layzerIrvineIntegral += 0.5 * (rate_ + rate) * clock_.lastDlna;
    rate_ = rate;
}

Diagnostics DistributedComoving::diagnostics(const ParticleSet& local) const
{
    const double a = clock_.a;
    // Peculiar velocities v = u / a from the canonical momenta u.
    const DiagnosticSums l = lf_.localSums(local, 1 / a);
    const std::vector<double> sums =
        comm_.allreduceSumOrdered({l.kinetic, l.potential, l.momentum.x, l.momentum.y, l.momentum.z});
    Diagnostics d;
    d.time        = a;
    d.kinetic     = sums[0];
    d.potential   = sums[1] / a;
    d.total       = d.kinetic + d.potential;
    d.momentum    = {sums[2], sums[3], sums[4]};
    d.virialRatio = d.potential != 0 ? 2 * d.kinetic / std::fabs(d.potential) : 0.0;
    return d;
}

double DistributedComoving::layzerIrvineRate(const ParticleSet& local) const
{
    const Diagnostics d = diagnostics(local);
    return 2 * d.kinetic + d.potential;
}

} // namespace octwalk

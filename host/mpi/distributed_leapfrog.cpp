#include "host/mpi/distributed_leapfrog.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>

#include "common/integrate.h"
#include "host/core/parallel.h"
#include "host/mpi/domain.h"

namespace octwalk::mpi {

DistributedLeapfrog::DistributedLeapfrog(const Communicator& comm, const Parameters& p, double rebalance)
    : comm_(comm), gravity_(comm, p), rebalance_(rebalance)
{
    if (!(rebalance >= 1.0))
    {
        throw ParameterError("rebalance threshold " + std::to_string(rebalance) +
                             " is invalid: the largest rank's cost over the mean is at least 1");
    }
}

void DistributedLeapfrog::evaluate(const ParticleSet& local)
{
    taken_.swap(previous_);
    gravity_.computeForces(local, forces_, taken_.empty() ? nullptr : taken_.data());
    checkFiniteForces(local);
    const double invG = 1.0 / gravity_.parameters().gravitational_constant;
    const int64_t n   = int64_t(forces_.acc.size());
    previous_.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d a        = invG * forces_.acc[size_t(i)];
        previous_[size_t(i)] = {float(a.x), float(a.y), float(a.z), float(invG * forces_.pot[size_t(i)])};
    }
    const int64_t mine               = deterministicSum<int64_t>(n, [&](int64_t i) { return forces_.cost[size_t(i)]; });
    const std::vector<int64_t> costs = comm_.allgather(mine);
    const int64_t total              = std::accumulate(costs.begin(), costs.end(), int64_t(0));
    imbalance_ =
        total > 0 ? double(*std::max_element(costs.begin(), costs.end())) * double(comm_.size()) / double(total) : 1.0;
}

void DistributedLeapfrog::checkFiniteForces(const ParticleSet& local) const
{
    const int64_t n   = int64_t(forces_.acc.size());
    const int64_t bad = firstIndexWhere(n, [&](int64_t k) {
        const Vec3d& a = forces_.acc[size_t(k)];
        return !(std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z) &&
                 std::isfinite(forces_.pot[size_t(k)]));
    });
    if (bad < n)
    {
        const size_t i = size_t(bad);
        const Vec3d& a = forces_.acc[i];
        std::ostringstream m;
        m << "body " << local.id[i] << " (on " << comm_.where() << "): acceleration (" << a.x << ", " << a.y << ", "
          << a.z << ") and potential " << forces_.pot[i]
          << " are not all finite: the force overflows floating point (bodies this close need a larger softening)";
        throw InputError(m.str());
    }
}

void DistributedLeapfrog::start(ParticleSet& local)
{
    redistribute(comm_, local);
    evaluate(local);
    started_ = true;
}

void DistributedLeapfrog::resume(const ParticleSet& local, std::vector<F4> previous)
{
    if (!previous.empty() && previous.size() != local.pos.size())
    {
        throw InputError("resume: " + std::to_string(previous.size()) + " previous results for " +
                         std::to_string(local.pos.size()) + " bodies");
    }
    previous_ = std::move(previous);
    evaluate(local);
    started_ = true;
}

void DistributedLeapfrog::kick(ParticleSet& local, double dt) const
{
    const int64_t n = int64_t(local.vel.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) local.vel[size_t(i)] += dt * forces_.acc[size_t(i)];
}

void DistributedLeapfrog::step(ParticleSet& local, double dt)
{
    step(local, StepFactors{0.5 * dt, dt, 0.5 * dt, gravity_.parameters().epsilon_squared});
}

void DistributedLeapfrog::step(ParticleSet& local, const StepFactors& f)
{
    if (!started_) throw InputError("DistributedLeapfrog::step before start");
    kick(local, f.kickOpen);
    const double box = gravity_.parameters().box_size;
    const int64_t n  = local.size();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) driftPosition(local.pos[size_t(i)], local.vel[size_t(i)], f.drift, box);
    // Every rank sees the same imbalance (gathered), so all take the same branch.
    rebalanced_ = imbalance_ > rebalance_;
    if (rebalanced_)
    {
        redistribute(comm_, local, forces_.cost);
        previous_.clear();
    }
    setEpsilonSquared(f.epsilonSquared);
    evaluate(local);
    kick(local, f.kickClose);
}

void DistributedLeapfrog::setEpsilonSquared(double epsilonSquared) { gravity_.setEpsilonSquared(epsilonSquared); }

DistributedEnergy DistributedLeapfrog::energy(const ParticleSet& local) const
{
    const DiagnosticSums s         = localSums(local, 1.0);
    const std::vector<double> sums = comm_.allreduceSumOrdered(std::vector<double>{s.kinetic, s.potential});
    return {sums[0], sums[1]};
}

DiagnosticSums DistributedLeapfrog::localSums(const ParticleSet& local, double velocityScale) const
{
    return interleavedSum<kDiagnosticLanes, DiagnosticSums>(local.size(), [&](int64_t i) {
        const size_t k = size_t(i);
        return diagnosticTerms(local.mass[k], local.pos[k], velocityScale * local.vel[k], forces_.pot[k]);
    });
}

} // namespace octwalk::mpi

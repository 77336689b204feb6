#include "host/mpi/distributed_leapfrog.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <string>

#include "common/integrate.h"
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
    previous_.resize(forces_.acc.size());
    for (size_t i = 0; i < previous_.size(); ++i)
    {
        const Vec3d a = invG * forces_.acc[i];
        previous_[i]  = {float(a.x), float(a.y), float(a.z), float(invG * forces_.pot[i])};
    }
    const int64_t mine               = std::accumulate(forces_.cost.begin(), forces_.cost.end(), int64_t(0));
    const std::vector<int64_t> costs = comm_.allgather(mine);
    const int64_t total              = std::accumulate(costs.begin(), costs.end(), int64_t(0));
    imbalance_ =
        total > 0 ? double(*std::max_element(costs.begin(), costs.end())) * double(comm_.size()) / double(total) : 1.0;
}

void DistributedLeapfrog::checkFiniteForces(const ParticleSet& local) const
{
    for (size_t i = 0; i < forces_.acc.size(); ++i)
    {
        const Vec3d& a = forces_.acc[i];
        if (std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z) && std::isfinite(forces_.pot[i])) continue;
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
    for (size_t i = 0; i < local.vel.size(); ++i) local.vel[i] += dt * forces_.acc[i];
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
    for (size_t i = 0; i < local.pos.size(); ++i) driftPosition(local.pos[i], local.vel[i], f.drift, box);
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
    double kinetic = 0, potential = 0;
    for (size_t i = 0; i < local.pos.size(); ++i)
    {
        kinetic += 0.5 * local.mass[i] * dot(local.vel[i], local.vel[i]);
        potential += 0.5 * local.mass[i] * forces_.pot[i];
    }
    const std::vector<double> sums = comm_.allreduceSumOrdered(std::vector<double>{kinetic, potential});
    return {sums[0], sums[1]};
}

} // namespace octwalk::mpi

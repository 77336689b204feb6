// The distributed leapfrog: energy kept over a few dozen steps of a Plummer sphere while the domains are
// cut again, bodies conserved, the same bits from the same start.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "host/models/models.h"
#include "host/mpi/distributed_leapfrog.h"
#include "mpi/mpi_test_util.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;
using namespace octwalk::mpi::testing;

Parameters leapfrogParameters()
{
    Parameters p;
    p.backend         = Backend::Cpu;
    p.opening_angle   = 0.5;
    p.epsilon_squared = 1e-4;
    return p;
}

struct RunResult
{
    DistributedEnergy first, last;
    int rebalances = 0;
    ParticleSet bodies;
};

RunResult run(double rebalance, int steps)
{
    const Communicator& comm = world();
    const ParticleSet all    = makePlummer(1 << 12, 17);
    ParticleSet mine         = roundRobinShare(all, comm.rank(), comm.size());
    DistributedLeapfrog leapfrog(comm, leapfrogParameters(), rebalance);
    leapfrog.start(mine);
    RunResult r;
    r.first = leapfrog.energy(mine);
    for (int s = 0; s < steps; ++s)
    {
        leapfrog.step(mine, 1.0 / 128);
        r.rebalances += leapfrog.rebalanced();
    }
    r.last   = leapfrog.energy(mine);
    r.bodies = gatherAll(comm, mine);
    return r;
}

TEST(Leapfrog, KeepsEnergyAndBodiesWhileRebalancing)
{
    const RunResult r  = run(1.0, 32);
    const double drift = std::fabs(r.last.total() - r.first.total()) / std::fabs(r.first.total());
    EXPECT_LT(drift, 1e-3);
    EXPECT_GT(r.rebalances, 0);
    EXPECT_EQ(r.bodies.size(), 1 << 12);
    if (world().rank() == 0)
    {
        std::printf("P=%d, 32 steps of 1/128: E %.9f -> %.9f (relative drift %.2e), %d rebalances\n", world().size(),
                    r.first.total(), r.last.total(), drift, r.rebalances);
    }
}

TEST(Leapfrog, SameStartSameBits)
{
    const RunResult a = run(1.05, 8), b = run(1.05, 8);
    EXPECT_EQ(std::memcmp(&a.last, &b.last, sizeof(DistributedEnergy)), 0);
    EXPECT_EQ(std::memcmp(a.bodies.pos.data(), b.bodies.pos.data(), a.bodies.pos.size() * sizeof(Vec3d)), 0);
}

TEST(Leapfrog, ThresholdBelowOneIsRefused)
{
    EXPECT_THROW(DistributedLeapfrog(world(), leapfrogParameters(), 0.9), ParameterError);
}

} // namespace

// Distributed forces on the GPU backend against the CPU backend's ranks: the same bodies on the same ranks give
// the same interactions body by body (the device walks the twin's lists, of its own tree and of the essential
// trees it receives), the same essential trees, and forces within the twin tolerances of tests/gpu; on the GPU
// backend, repeats are bit-identical whatever the thread count (in a periodic box the mesh's transforms then run
// on a host thread beside the device's walk). Isolated (Bonsai's and Octgrav's MAC) and periodic under TreePM, where
// the GPU ranks' mesh is whole on the first rank's device and the CPU ranks' cut into slabs; that device mesh is also
// its CPU twin (the host's mesh on the first rank) to the rounding of their sums.
// Every test skips without a GPU on every rank, unless OCTWALK_REQUIRE_GPU=1 makes that a failure.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/gpu_solver.h"
#include "host/models/models.h"
#include "host/mpi/distributed_forces.h"
#include "host/mpi/domain.h"
#include "host/mpi/gathered_mesh.h"
#include "host/reference/error_stats.h"
#include "mpi/mpi_test_util.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;
using namespace octwalk::mpi::testing;

/// The twin tolerances of tests/gpu: the device's force kernels use rsqrtf, erfcf and expf of their own and
/// fused multiply-adds, the host none of them.
constexpr double kTwinMedian = 1e-5;
constexpr double kTwinMax    = 1e-4;

class DistributedGpu : public ::testing::Test
{
protected:
    void SetUp() override
    {
        // Every rank takes the same decision: a rank that skipped would leave the others in a collective.
        if (onAllRanks(world(), gpuAvailable())) return;
        const char* require = std::getenv("OCTWALK_REQUIRE_GPU");
        if (require && std::string(require) == "1") FAIL() << "no GPU on some rank but OCTWALK_REQUIRE_GPU=1";
        GTEST_SKIP() << "no CUDA device on every rank (" << gpuDescription() << ")";
    }
};

ParticleSet decomposed(const ParticleSet& all)
{
    const Communicator& comm = world();
    ParticleSet mine         = roundRobinShare(all, comm.rank(), comm.size());
    redistribute(comm, mine);
    return mine;
}

/// One distributed evaluation of this rank's bodies on the given backend.
DistributedForces evaluate(const ParticleSet& mine, Parameters p, Backend backend, const F4* previous = nullptr)
{
    p.backend = backend;
    DistributedGravity gravity(world(), p);
    DistributedForces f;
    gravity.computeForces(mine, f, previous);
    return f;
}

/// The device's ranks against the CPU backend's on the same bodies: the same costs and essential trees on every
/// rank, the accelerations (relative) and potentials (against the largest) within the twin tolerances, the
/// largest difference within worstTolerance.
void expectTwinRanks(const DistributedForces& gpu, const DistributedForces& cpu, double worstTolerance,
                     const char* name)
{
    const Communicator& comm = world();
    EXPECT_TRUE(onAllRanks(comm, gpu.cost == cpu.cost)) << name << ": per-body interactions differ";
    EXPECT_TRUE(onAllRanks(comm, gpu.localInteractions == cpu.localInteractions &&
                                     gpu.remoteInteractions == cpu.remoteInteractions))
        << name << ": local " << gpu.localInteractions << " against " << cpu.localInteractions << ", remote "
        << gpu.remoteInteractions << " against " << cpu.remoteInteractions;
    EXPECT_TRUE(onAllRanks(comm, gpu.bytesSent == cpu.bytesSent && gpu.nodesSent == cpu.nodesSent))
        << name << ": the essential trees differ";
    const std::vector<Vec3d> gpuAcc = comm.allgatherv(gpu.acc), cpuAcc = comm.allgatherv(cpu.acc);
    const std::vector<double> gpuPot = comm.allgatherv(gpu.pot), cpuPot = comm.allgatherv(cpu.pot);
    ASSERT_EQ(gpuAcc.size(), cpuAcc.size());
    const ErrorStats a = errorStats(relativeErrors(gpuAcc, cpuAcc));
    double worstPot = 0, scale = 0;
    for (size_t i = 0; i < gpuPot.size(); ++i)
    {
        worstPot = std::max(worstPot, std::fabs(gpuPot[i] - cpuPot[i]));
        scale    = std::max(scale, std::fabs(cpuPot[i]));
    }
    if (comm.rank() == 0)
    {
        std::printf("%s, %d ranks: device against CPU ranks, acceleration median %.3g, max %.3g; potential %.3g\n",
                    name, comm.size(), a.median, a.max, worstPot / scale);
    }
    EXPECT_LE(a.median, kTwinMedian) << name << ", max " << a.max;
    EXPECT_LE(a.max, worstTolerance) << name << ", median " << a.median;
    EXPECT_LE(worstPot, worstTolerance * scale) << name;
}

TEST_F(DistributedGpu, IsolatedRanksAreTheCpuRanks)
{
    const ParticleSet all  = makePlummer(1 << 14, 11);
    const ParticleSet mine = decomposed(all);
    for (Mac mac : {Mac::Bonsai, Mac::Octgrav})
    {
        Parameters p;
        p.opening_angle   = 0.5;
        p.epsilon_squared = 1e-4;
        p.mac             = mac;
        expectTwinRanks(evaluate(mine, p, Backend::Gpu), evaluate(mine, p, Backend::Cpu), kTwinMax,
                        mac == Mac::Bonsai ? "plummer, bonsai" : "plummer, octgrav");
    }
}

Parameters treePmParameters()
{
    Parameters p;
    p.opening_angle   = 0.5;
    p.epsilon_squared = 1e-6;
    p.box_size        = 1.0;
    p.pm_grid         = 16;
    p.asmth           = 1.25; // GADGET-2's split
    p.rcut            = 4.5;
    return p;
}

// The error control takes both backends' group tolerances from the same previous accelerations (the CPU ranks'
// first evaluation): from each backend's own estimate walk the float rounding could open other nodes.
TEST_F(DistributedGpu, PeriodicTreePmRanksAreTheCpuRanks)
{
    const Parameters p = treePmParameters();
    for (bool clustered : {true, false})
    {
        const ParticleSet all  = clustered ? makeClusteredBox(1 << 13, 1.0, 5) : makeUniformBox(1 << 13, 1.0, 5);
        const ParticleSet mine = decomposed(all);
        const std::vector<F4> previous = previousOf(evaluate(mine, p, Backend::Cpu).acc, p.gravitational_constant);
        const DistributedForces cpu    = evaluate(mine, p, Backend::Cpu, previous.data());
        const DistributedForces gpu    = evaluate(mine, p, Backend::Gpu, previous.data());
        // The short-range force of a uniform box is itself a remainder of neighbours' pulls that cancel, so rounding
        // moves its worst body relatively further (as in tests/gpu's TreePM twins).
        expectTwinRanks(gpu, cpu, clustered ? kTwinMax : 10 * kTwinMax, clustered ? "clustered box" : "uniform box");
        EXPECT_TRUE(onAllRanks(world(), gpu.secondsMeshSolve > 0));
    }
}

// The bodies of all ranks on the first rank's device mesh against the host's mesh there: the same gathering, the
// meshes differing in the order of their sums and the device's rounding (device/pm_gpu.h: about 1e-14).
TEST_F(DistributedGpu, FirstRanksDeviceMeshIsItsHostTwin)
{
    const Communicator& comm = world();
    const ParticleSet mine   = decomposed(makeClusteredBox(1 << 13, 1.0, 5));
    const Parameters p       = treePmParameters();
    GatheredMesh device(comm, p, true), host(comm, p, false);
    std::vector<Vec3d> acc, twin;
    std::vector<double> pot, twinPot;
    device.computeForces(mine.pos.data(), mine.mass.data(), mine.size(), acc, pot);
    host.computeForces(mine.pos.data(), mine.mass.data(), mine.size(), twin, twinPot);
    double largest = 0, worst = 0, largestPot = 0, worstPot = 0;
    for (size_t i = 0; i < twin.size(); ++i)
    {
        const Vec3d d = acc[i] - twin[i];
        largest       = std::max(largest, std::sqrt(dot(twin[i], twin[i])));
        worst         = std::max(worst, std::sqrt(dot(d, d)));
        largestPot    = std::max(largestPot, std::fabs(twinPot[i]));
        worstPot      = std::max(worstPot, std::fabs(pot[i] - twinPot[i]));
    }
    largest    = comm.allreduceMax({largest})[0];
    largestPot = comm.allreduceMax({largestPot})[0];
    EXPECT_TRUE(onAllRanks(comm, worst <= 1e-12 * largest)) << worst << " against " << largest;
    EXPECT_TRUE(onAllRanks(comm, worstPot <= 1e-12 * largestPot)) << worstPot << " against " << largestPot;
    EXPECT_TRUE(onAllRanks(comm, device.timings().transforms > 0 || comm.rank() != 0));
}

TEST_F(DistributedGpu, RepeatsAreBitIdenticalAtAnyThreadCount)
{
    Parameters isolated;
    isolated.backend         = Backend::Gpu;
    isolated.epsilon_squared = 1e-4;
    Parameters periodic      = treePmParameters();
    periodic.backend         = Backend::Gpu;
    const struct
    {
        ParticleSet all;
        Parameters p;
        const char* name;
    } cases[] = {{makePlummer(1 << 13, 3), isolated, "plummer"},
                 {makeClusteredBox(1 << 13, 1.0, 7), periodic, "clustered box"}};
    for (const auto& c : cases)
    {
        const std::vector<std::vector<char>> runs = resultsAtThreadCounts(c.all, c.p, {1, 2, 1});
        EXPECT_EQ(runs[0], runs[1]) << c.name << ": 1 and 2 threads";
        EXPECT_EQ(runs[0], runs[2]) << c.name << ": repeated";
    }
}

} // namespace

// TreePM in a periodic box on several ranks (CPU backend): the mesh cut into slabs over the ranks is one
// process's mesh up to the rounding of its sums (odd meshes, all bodies on one rank, ranks without planes) and
// bit-identical as the thread count changes, and each rank holds its slab's share of the mesh's memory; the
// forces' errors against the split's exact sum (short range pair by pair, long range from one process's mesh)
// are one rank's errors (median and p99 within 10%) on a clustered and on a uniform box; repeats are
// bit-identical whatever the thread count; the Ewald sum is refused. The whole mesh on the first rank, the bodies
// gathered there, is one process's mesh of the bodies in rank order bit for bit (ranks without bodies too), checks
// each rank's bodies before any exchange, and without a device refuses its place there on every rank.

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "host/models/models.h"
#include "host/mpi/distributed_forces.h"
#include "host/mpi/distributed_mesh.h"
#include "host/mpi/domain.h"
#include "host/mpi/gathered_mesh.h"
#include "device/gpu_solver.h"
#include "host/pm/pm_mesh.h"
#include "host/reference/error_stats.h"
#include "host/reference/short_range_direct.h"
#include "mpi/mpi_test_util.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;
using namespace octwalk::mpi::testing;

/// TreePM on a 16^3 mesh (the smallest that holds the cutoff of asmth 1.25, rcut 4.5 below L / 2).
Parameters treePmParameters(double theta)
{
    Parameters p;
    p.backend         = Backend::Cpu;
    p.opening_angle   = theta;
    p.epsilon_squared = 1e-6;
    p.box_size        = 1.0;
    p.pm_grid         = 16;
    p.asmth           = 1.25; // GADGET-2's split
    p.rcut            = 4.5;
    return p;
}

ParticleSet decomposed(const ParticleSet& all)
{
    const Communicator& comm = world();
    ParticleSet mine         = roundRobinShare(all, comm.rank(), comm.size());
    redistribute(comm, mine);
    return mine;
}

/// One process's mesh forces on every body (indexed like all; G = 1).
void oneProcessMesh(const ParticleSet& all, const Parameters& p, std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    PmMesh mesh(p.box_size, p.pm_grid, p.asmth, p.pm_assignment, 1.0, p.pm_interlace);
    mesh.computeForces(all.pos.data(), all.mass.data(), all.size(), acc, pot);
}

/// The split's exact accelerations of every body (indexed by id = index): the short range summed pair by pair
/// in double, the ranks sharing the targets, plus one process's mesh.
std::vector<Vec3d> exactSplit(const ParticleSet& all, const Parameters& p)
{
    const Communicator& comm = world();
    std::vector<int64_t> targets;
    for (int64_t i = comm.rank(); i < all.size(); i += comm.size()) targets.push_back(i);
    const double rs = p.asmth * p.box_size / double(p.pm_grid);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    shortRangeDirectSum(all.pos.data(), all.mass.data(), all.size(), targets, {p.box_size, rs, p.rcut * rs},
                        p.epsilon_squared, 1.0, acc, pot);
    const std::vector<Vec3d> gathered = comm.allgatherv(acc);
    std::vector<Vec3d> exact(size_t(all.size()));
    size_t at = 0;
    for (int r = 0; r < comm.size(); ++r)
    {
        for (int64_t i = r; i < all.size(); i += comm.size()) exact[size_t(i)] = gathered[at++];
    }
    std::vector<Vec3d> meshAcc;
    oneProcessMesh(all, p, meshAcc, pot);
    for (size_t i = 0; i < exact.size(); ++i) exact[i] += meshAcc[i];
    return exact;
}

/// The ranks' slabs of the mesh against one process's whole mesh, for this rank's share of all's bodies: the sums
/// differ only in their order (to 1e-12 of the largest).
void expectOneProcessMesh(const ParticleSet& all, const ParticleSet& mine, const Parameters& p, const char* name)
{
    const Communicator& comm = world();
    DistributedMesh mesh(comm, p);
    std::vector<Vec3d> acc, one;
    std::vector<double> pot, onePot;
    mesh.computeForces(mine.pos.data(), mine.mass.data(), mine.size(), acc, pot);
    oneProcessMesh(all, p, one, onePot);
    double largest = 0, worst = 0, worstPot = 0, largestPot = 0;
    for (size_t i = 0; i < one.size(); ++i)
    {
        largest    = std::max(largest, std::sqrt(dot(one[i], one[i])));
        largestPot = std::max(largestPot, std::fabs(onePot[i]));
    }
    ASSERT_EQ(acc.size(), mine.id.size());
    for (size_t k = 0; k < mine.id.size(); ++k)
    {
        const size_t i = size_t(mine.id[k]);
        const Vec3d d  = acc[k] - one[i];
        worst          = std::max(worst, std::sqrt(dot(d, d)));
        worstPot       = std::max(worstPot, std::fabs(pot[k] - onePot[i]));
    }
    EXPECT_TRUE(onAllRanks(comm, worst <= 1e-12 * largest)) << name << ": " << worst << " against " << largest;
    EXPECT_TRUE(onAllRanks(comm, worstPot <= 1e-12 * largestPot))
        << name << ": " << worstPot << " against " << largestPot;
}

void expectOneProcessMesh(const ParticleSet& all, const Parameters& p, const char* name)
{
    expectOneProcessMesh(all, decomposed(all), p, name);
}

TEST(DistributedTreePm, MeshIsOneProcessMesh)
{
    const ParticleSet all = makeClusteredBox(1 << 12, 1.0, 5);
    for (MassAssignment assignment : {MassAssignment::Cic, MassAssignment::Tsc})
    {
        Parameters p    = treePmParameters(0.5);
        p.pm_assignment = assignment;
        expectOneProcessMesh(all, p, assignment == MassAssignment::Cic ? "CIC" : "TSC");
    }
}

// An odd mesh: planes of n^2 doubles then start at two alignments, and the slabs differ in size.
TEST(DistributedTreePm, OddMeshIsOneProcessMesh)
{
    Parameters p = treePmParameters(0.5);
    p.pm_grid    = 15;
    expectOneProcessMesh(makeClusteredBox(1 << 12, 1.0, 7), p, "15^3 mesh");
}

// Every body on rank 0: the other ranks' slabs receive them all from it, and rank 0's own slab its share.
TEST(DistributedTreePm, BodiesOfOneRankReachEverySlab)
{
    const ParticleSet all = makeClusteredBox(1 << 12, 1.0, 5);
    const ParticleSet none;
    expectOneProcessMesh(all, world().rank() == 0 ? all : none, treePmParameters(0.5), "all bodies on rank 0");
}

// A 3^3 mesh (asmth 0.5, rcut 2) on 4 ranks leaves a rank without planes, and a cloud of three planes reaches
// past the next rank's single plane into the one after.
TEST(DistributedTreePm, MeshWithFewerPlanesThanRanksIsOneProcessMesh)
{
    Parameters p = treePmParameters(0.5);
    p.pm_grid    = 3;
    p.asmth      = 0.5;
    p.rcut       = 2;
    for (MassAssignment assignment : {MassAssignment::Cic, MassAssignment::Tsc})
    {
        p.pm_assignment = assignment;
        expectOneProcessMesh(makeClusteredBox(1 << 12, 1.0, 5), p,
                             assignment == MassAssignment::Cic ? "3^3 CIC" : "3^3 TSC");
    }
}

// One mesh called at 1, then 3, then 2 threads (more threads than it was made for): the same bits each time.
TEST(DistributedTreePm, MeshRepeatsBitForBitAsTheThreadsChange)
{
    const ParticleSet all  = makeClusteredBox(1 << 12, 1.0, 5);
    const ParticleSet mine = decomposed(all);
    const int before       = omp_get_max_threads();
    omp_set_num_threads(1);
    DistributedMesh mesh(world(), treePmParameters(0.5));
    std::vector<std::vector<Vec3d>> acc;
    std::vector<std::vector<double>> pot;
    for (int threads : {1, 3, 2})
    {
        omp_set_num_threads(threads);
        acc.emplace_back();
        pot.emplace_back();
        mesh.computeForces(mine.pos.data(), mine.mass.data(), mine.size(), acc.back(), pot.back());
    }
    omp_set_num_threads(before);
    for (size_t k = 1; k < acc.size(); ++k)
    {
        EXPECT_EQ(std::memcmp(acc[k].data(), acc[0].data(), acc[0].size() * sizeof(Vec3d)), 0) << "call " << k;
        EXPECT_EQ(std::memcmp(pot[k].data(), pot[0].data(), pot[0].size() * sizeof(double)), 0) << "call " << k;
    }
}

// The mesh's memory is divided among the ranks: each holds its slab's share of one process's arrays, plus the
// planes its clouds reach past its slab.
TEST(DistributedTreePm, EachRankHoldsItsSlabOfTheMesh)
{
    Parameters p             = treePmParameters(0.5);
    p.pm_grid                = 32;
    const Communicator& comm = world();
    const Communicator self(MPI_COMM_SELF);
    const DistributedMesh whole(self, p);
    const DistributedMesh slab(comm, p);
    const int64_t n = p.pm_grid, planes = slab.firstPlane(comm.rank() + 1) - slab.firstPlane(comm.rank());
    const double share = double(whole.heldDoubles()) * double(planes) / double(n);
    EXPECT_TRUE(onAllRanks(comm, double(slab.heldDoubles()) <= share + 5.0 * 2 * n * n))
        << slab.heldDoubles() << " doubles on " << comm.where() << " against one process's " << whole.heldDoubles();
    if (comm.size() > 1) EXPECT_TRUE(onAllRanks(comm, slab.heldDoubles() < whole.heldDoubles()));
}

/// The first rank's whole mesh of every rank's bodies against one process's mesh of the same bodies in rank order:
/// the same bits, body by body.
void expectFirstRanksMeshIsOneProcessMesh(const ParticleSet& mine, const Parameters& p, const char* name)
{
    const Communicator& comm = world();
    GatheredMesh mesh(comm, p, false);
    std::vector<Vec3d> acc, one;
    std::vector<double> pot, onePot;
    mesh.computeForces(mine.pos.data(), mine.mass.data(), mine.size(), acc, pot);
    std::vector<int64_t> counts;
    const std::vector<Vec3d> pos     = comm.allgatherv(mine.pos, &counts);
    const std::vector<double> masses = comm.allgatherv(mine.mass);
    PmMesh whole(p.box_size, p.pm_grid, p.asmth, p.pm_assignment, 1.0, p.pm_interlace);
    whole.computeForces(pos.data(), masses.data(), int64_t(pos.size()), one, onePot);
    int64_t first = 0;
    for (int r = 0; r < comm.rank(); ++r) first += counts[size_t(r)];
    ASSERT_EQ(acc.size(), mine.pos.size());
    const bool same =
        mine.pos.empty() || (std::memcmp(acc.data(), one.data() + first, acc.size() * sizeof(Vec3d)) == 0 &&
                             std::memcmp(pot.data(), onePot.data() + first, pot.size() * sizeof(double)) == 0);
    EXPECT_TRUE(onAllRanks(comm, same)) << name << ": the first rank's mesh differs from one process's";
}

TEST(DistributedTreePm, FirstRanksMeshIsOneProcessMeshBitForBit)
{
    const ParticleSet all = makeClusteredBox(1 << 12, 1.0, 5);
    Parameters p          = treePmParameters(0.5);
    expectFirstRanksMeshIsOneProcessMesh(decomposed(all), p, "interlaced TSC");
    p.pm_interlace  = false;
    p.pm_assignment = MassAssignment::Cic;
    expectFirstRanksMeshIsOneProcessMesh(decomposed(all), p, "one CIC mesh");
}

// All bodies on the last rank: the first rank gathers none of its own, and the others send none.
TEST(DistributedTreePm, FirstRanksMeshTakesRanksWithoutBodies)
{
    const ParticleSet all = makeClusteredBox(1 << 11, 1.0, 6);
    const ParticleSet none;
    const bool last = world().rank() + 1 == world().size();
    expectFirstRanksMeshIsOneProcessMesh(last ? all : none, treePmParameters(0.5), "all bodies on the last rank");
}

TEST(DistributedTreePm, FirstRanksMeshChecksTheBodiesBeforeAnyExchange)
{
    const Parameters p = treePmParameters(0.5);
    GatheredMesh mesh(world(), p, false);
    ParticleSet mine = makeUniformBox(8, 1.0, 3);
    mine.pos[5].y    = 1.25;
    try
    {
        mesh.assignAndSum(mine.pos.data(), mine.mass.data(), mine.size());
        ADD_FAILURE() << "a body outside the box was taken";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("body 5"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("1.25"), std::string::npos) << e.what();
    }
}

// Without a device the first rank cannot hold the device's mesh: every rank is told, none waits for it.
TEST(DistributedTreePm, FirstRanksDeviceMeshWithoutADeviceIsRefusedOnEveryRank)
{
    if (gpuAvailable()) GTEST_SKIP() << "a CUDA device is present (the DistributedGpu suite takes its mesh)";
    try
    {
        GatheredMesh mesh(world(), treePmParameters(0.5), true);
        ADD_FAILURE() << "the device's mesh was made without a device";
    }
    catch (const BackendError& e)
    {
        EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    }
}

/// The errors of the distributed evaluation and of one rank's solver against the split's exact sum. With
/// withPrevious, each evaluates a second time with its first forces as the previous accelerations, so that TreePM's
/// error control acts (as in a run's steps after the first), and that second evaluation is measured.
void expectOneRankAccuracy(const ParticleSet& all, const Parameters& p, const char* name, bool withPrevious = false)
{
    const Communicator& comm       = world();
    const std::vector<Vec3d> exact = exactSplit(all, p);
    const ParticleSet mine         = decomposed(all);
    DistributedGravity gravity(comm, p);
    DistributedForces f;
    gravity.computeForces(mine, f);
    const int64_t first = comm.allreduceSum(f.localInteractions + f.remoteInteractions);
    if (withPrevious)
    {
        const std::vector<F4> previous = previousOf(f.acc, p.gravitational_constant);
        gravity.computeForces(mine, f, previous.data());
    }
    std::vector<Vec3d> ref;
    for (uint64_t id : mine.id) ref.push_back(exact[size_t(id)]);
    const ErrorStats distributed = errorStats(comm.allgatherv(relativeErrors(f.acc, ref)));
    GravitySolver solver(p);
    solver.setBodies(all.pos, all.mass, all.id);
    std::vector<Vec3d> oneAcc;
    std::vector<double> onePot;
    solver.computeForces(oneAcc, onePot);
    if (withPrevious)
    {
        solver.setPreviousAccelerations(oneAcc);
        solver.computeForces(oneAcc, onePot);
    }
    const ErrorStats one = errorStats(relativeErrors(oneAcc, exact));
    EXPECT_EQ(distributed.count, all.size());
    EXPECT_LE(distributed.median, 1.1 * one.median);
    EXPECT_LE(distributed.p99, 1.1 * one.p99);
    const int64_t interactions = comm.allreduceSum(f.localInteractions + f.remoteInteractions);
    const int64_t oneRank      = solver.stats().nodeInteractions + solver.stats().leafInteractions;
    // The error control acts (it expands wide nodes and opens those whose truncation rivals a group's force, so the
    // walk differs from the first evaluation's), on several ranks as on one (within 10% of one rank's).
    if (withPrevious) EXPECT_NE(interactions, first);
    EXPECT_LE(double(interactions), 1.1 * double(oneRank));
    const int64_t sent = comm.allreduceSum(f.bytesSent);
    if (comm.rank() == 0)
    {
        std::printf("%s: N=%lld, P=%d, pm_grid %d, theta=%.2f: median %.3e (1 rank %.3e), p99 %.3e (1 rank %.3e), "
                    "%.1f interactions/body (1 rank %.1f; first evaluation %.1f), %.1f KiB of essential trees\n",
                    name, (long long)all.size(), comm.size(), p.pm_grid, p.opening_angle, distributed.median,
                    one.median, distributed.p99, one.p99, double(interactions) / double(all.size()),
                    double(oneRank) / double(all.size()), double(first) / double(all.size()), double(sent) / 1024.0);
    }
}

TEST(DistributedTreePm, ClusteredBoxErrorsAreOneRanksErrors)
{
    expectOneRankAccuracy(makeClusteredBox(1 << 13, 1.0, 3), treePmParameters(0.5), "clustered box");
}

TEST(DistributedTreePm, ErrorControlFromPreviousForcesIsOneRanks)
{
    expectOneRankAccuracy(makeClusteredBox(1 << 13, 1.0, 3), treePmParameters(0.5), "clustered box, error control",
                          true);
}

TEST(DistributedTreePm, UniformBoxErrorsAreOneRanksErrors)
{
    expectOneRankAccuracy(makeUniformBox(1 << 13, 1.0, 4), treePmParameters(0.6), "uniform box");
}

TEST(DistributedTreePm, RepeatsAreBitIdenticalWhateverTheThreads)
{
    const ParticleSet all                     = makeClusteredBox(1 << 12, 1.0, 8);
    const Parameters p                        = treePmParameters(0.6);
    const std::vector<std::vector<char>> runs = resultsAtThreadCounts(all, p, {1, 2, 1});
    EXPECT_TRUE(runs[0] == runs[1]);
    EXPECT_TRUE(runs[0] == runs[2]);
}

/// Ranks with no bodies and with one body still take part in the mesh and the trees.
TEST(DistributedTreePm, EmptyAndSingleBodyRanks)
{
    const Communicator& comm = world();
    // Rank r holds min(r, 2) bodies: rank 0 none, rank 1 one.
    auto held     = [](int r) { return std::min(r, 2); };
    int64_t first = 0, total = 0;
    for (int r = 0; r < comm.size(); ++r)
    {
        if (r == comm.rank()) first = total;
        total += held(r);
    }
    const ParticleSet all  = makeUniformBox(total, 1.0, 2);
    const Parameters p     = treePmParameters(0.5);
    const ParticleSet mine = selectBodies(all, [&](int64_t i) { return i >= first && i < first + held(comm.rank()); });
    DistributedGravity gravity(comm, p);
    DistributedForces f;
    gravity.computeForces(mine, f);
    const std::vector<Vec3d> exact = exactSplit(all, p);
    // A lone body (2 ranks) feels no force but the rounding of its mesh: errors are measured against the pull of a
    // body a box length away where the force is smaller.
    const double pullAcrossTheBox = total > 0 ? all.mass[0] / (p.box_size * p.box_size) : 0.0;
    for (size_t k = 0; k < mine.id.size(); ++k)
    {
        const Vec3d e = exact[size_t(mine.id[k])], d = f.acc[k] - e;
        EXPECT_LT(std::sqrt(dot(d, d)) / std::max(std::sqrt(dot(e, e)), pullAcrossTheBox), 1e-4);
    }
}

TEST(DistributedTreePm, TheEwaldSumIsRefused)
{
    Parameters ewald = treePmParameters(0.5);
    ewald.pm_grid    = 0;
    EXPECT_THROW(DistributedGravity(world(), ewald), ParameterError);
}

} // namespace

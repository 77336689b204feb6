// Domain decomposition along the Morton curve: the exchange conserves every body bit for bit, each rank's
// bodies form one contiguous range of the (key, id) order, the ranges balance the cost, the cuts do not
// depend on how the bodies were spread before, and ranks left without bodies are no special case.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "host/models/models.h"
#include "host/mpi/domain.h"
#include "mpi/mpi_test_util.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;
using namespace octwalk::mpi::testing;

/// all's bodies sorted by id.
ParticleSet sortedById(const ParticleSet& all)
{
    std::vector<int64_t> order(static_cast<size_t>(all.size()));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::sort(order.begin(), order.end(), [&all](int64_t a, int64_t b) { return all.id[a] < all.id[b]; });
    ParticleSet out;
    for (int64_t i : order)
    {
        out.pos.push_back(all.pos[i]);
        out.vel.push_back(all.vel[i]);
        out.mass.push_back(all.mass[i]);
        out.id.push_back(all.id[i]);
        out.type.push_back(all.type[i]);
    }
    return out;
}

template<class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Whether the gathered bodies are exactly the original ones (any order).
bool sameBodies(const ParticleSet& original, const ParticleSet& gathered)
{
    const ParticleSet a = sortedById(original), b = sortedById(gathered);
    return sameBits(a.pos, b.pos) && sameBits(a.vel, b.vel) && sameBits(a.mass, b.mass) && sameBits(a.id, b.id) &&
           sameBits(a.type, b.type);
}

/// Whether every rank's bodies lie in its own range of the (key, id) order, ranks in order.
bool rangesInRankOrder(const Communicator& comm, const Decomposition& d, const ParticleSet& local)
{
    const std::vector<uint64_t> keys = keysInCube(d.cube, local.pos);
    bool ok                          = true;
    for (size_t i = 0; i < keys.size(); ++i) ok = ok && d.owner({keys[i], local.id[i]}) == comm.rank();
    return onAllRanks(comm, ok);
}

/// A model with masses that differ (so a mass sum depends on the order of its additions).
ParticleSet unequalMasses(int64_t n)
{
    ParticleSet all = makePlummer(n, 21);
    for (int64_t i = 0; i < n; ++i) all.mass[i] *= 1.0 + 0.37 * double(i % 11);
    return all;
}

TEST(Domain, ExchangeConservesEveryBody)
{
    const Communicator& comm = world();
    const ParticleSet all    = unequalMasses(1 << 13);
    ParticleSet mine         = roundRobinShare(all, comm.rank(), comm.size());
    const int64_t before     = int64_t(mine.size());
    const Decomposition d    = decompose(comm, mine);
    const ExchangeCounts c   = exchangeBodies(comm, d, mine);
    EXPECT_EQ(c.kept + c.sent, before);
    EXPECT_EQ(c.kept + c.received, mine.size());
    EXPECT_EQ(comm.allreduceSum(mine.size()), all.size());
    EXPECT_TRUE(sameBodies(all, gatherAll(comm, mine)));
    EXPECT_TRUE(rangesInRankOrder(comm, d, mine));
    // Equal costs: every rank within one body of N / P.
    for (int64_t cost : d.rankCost) EXPECT_LE(std::llabs(cost - all.size() / comm.size()), 1);
    EXPECT_EQ(mine.size(), d.rankCost[size_t(comm.rank())]);
    // Bodies are ordered by (key, id) on their rank.
    const std::vector<uint64_t> keys = keysInCube(d.cube, mine.pos);
    for (size_t i = 1; i < keys.size(); ++i)
    {
        ASSERT_TRUE((SfcPosition{keys[i - 1], mine.id[i - 1]} < SfcPosition{keys[i], mine.id[i]}));
    }
}

TEST(Domain, CutsDoNotDependOnThePreviousSpread)
{
    const Communicator& comm = world();
    const ParticleSet all    = unequalMasses(1 << 12);
    const int P = comm.size(), me = comm.rank();
    const ParticleSet a    = roundRobinShare(all, me, P);
    const ParticleSet b    = selectBodies(all, [&](int64_t i) { return i * P / all.size() == P - 1 - me; });
    const Decomposition da = decompose(comm, a), db = decompose(comm, b);
    ASSERT_EQ(da.cuts.size(), db.cuts.size());
    for (size_t k = 0; k < da.cuts.size(); ++k) EXPECT_TRUE(da.cuts[k] == db.cuts[k]);
    EXPECT_EQ(da.rankCost, db.rankCost);
}

TEST(Domain, CostsAreBalanced)
{
    const Communicator& comm = world();
    const ParticleSet all    = makePlummer(1 << 13, 5);
    ParticleSet mine         = roundRobinShare(all, comm.rank(), comm.size());
    // Costs from 1 to 100, larger near the centre (as a tree's interaction counts are).
    std::vector<int64_t> cost;
    int64_t largest = 0;
    for (const Vec3d& p : mine.pos)
    {
        cost.push_back(1 + int64_t(99.0 / (1.0 + dot(p, p))));
        largest = std::max(largest, cost.back());
    }
    const Decomposition d = decompose(comm, mine, cost);
    const int64_t mean    = d.totalCost / comm.size();
    for (int64_t c : d.rankCost) EXPECT_LE(std::llabs(c - mean), 100 + 1);
    EXPECT_LT(d.imbalance(), 1.01);
    EXPECT_EQ(std::accumulate(d.rankCost.begin(), d.rankCost.end(), int64_t(0)), d.totalCost);
    exchangeBodies(comm, d, mine);
    EXPECT_TRUE(rangesInRankOrder(comm, d, mine));
}

TEST(Domain, RanksLeftWithoutBodies)
{
    const Communicator& comm = world();
    const ParticleSet all    = unequalMasses(1 << 11);
    ParticleSet mine         = roundRobinShare(all, comm.rank(), comm.size());
    // The last body of the (key, id) order costs more than all others together: every cut falls on it, so
    // rank 0 gets every body and the others none.
    const KeyCube cube               = globalKeyCube(comm, mine.pos);
    const std::vector<uint64_t> keys = keysInCube(cube, all.pos);
    int64_t last                     = 0;
    for (int64_t i = 1; i < all.size(); ++i)
    {
        if (SfcPosition{keys[last], all.id[last]} < SfcPosition{keys[i], all.id[i]}) last = i;
    }
    std::vector<int64_t> cost(static_cast<size_t>(mine.size()), 1);
    for (int64_t i = 0; i < mine.size(); ++i)
    {
        if (mine.id[i] == all.id[last]) cost[i] = int64_t(1) << 40;
    }
    redistribute(comm, mine, cost);
    EXPECT_EQ(mine.size(), comm.rank() == 0 ? all.size() : 0);
    EXPECT_TRUE(sameBodies(all, gatherAll(comm, mine)));
    // And back from there: ranks that hold nothing take part in the next decomposition.
    redistribute(comm, mine);
    EXPECT_LE(std::llabs(mine.size() - all.size() / comm.size()), 1);
    EXPECT_TRUE(sameBodies(all, gatherAll(comm, mine)));
}

TEST(Domain, FewerBodiesThanRanks)
{
    const Communicator& comm = world();
    ParticleSet all          = makePlummer(16, 2);
    all                      = selectBodies(all, [](int64_t i) { return i < 3; });
    ParticleSet mine         = comm.rank() == 0 ? all : ParticleSet{};
    redistribute(comm, mine);
    EXPECT_LE(mine.size(), 1 + (comm.size() < 3 ? 1 : 0));
    EXPECT_TRUE(sameBodies(all, gatherAll(comm, mine)));
}

TEST(Domain, NoBodiesAnywhere)
{
    const Communicator& comm = world();
    ParticleSet mine;
    const Decomposition d = redistribute(comm, mine);
    EXPECT_EQ(mine.size(), 0);
    EXPECT_EQ(d.totalCost, 0);
    EXPECT_EQ(d.numRanks(), comm.size());
}

TEST(Domain, MismatchedCostsAreAnInputError)
{
    const Communicator& comm = world();
    ParticleSet mine         = makePlummer(8, 1);
    EXPECT_THROW(decompose(comm, mine, std::vector<int64_t>(3, 1)), InputError);
}

} // namespace

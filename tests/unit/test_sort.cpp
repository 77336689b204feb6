// The sort of the host build (sortBodies) against std::sort on (key, id, name) for the inputs its
// paths treat differently: random and nearly sorted orders, runs of equal keys across the threads'
// chunks, fewer bodies than threads, the periodic box, ranks, and one HostTree reused for inputs of
// other sizes and shapes (the sort keeps its working memory between calls).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/sfc.h"
#include "host/core/random.h"
#include "host/tree/octree.h"
#include "test_helpers.h"

using namespace octwalk;

namespace {

/// Bodies with optional ranks, as sortBodies sees them.
struct Bodies
{
    ParticleSet set;
    std::vector<int32_t> rank;
    double boxSize = 0.0;

    BodySpan span() const
    {
        return {set.pos.data(), set.mass.data(), set.id.data(), set.size(), rank.empty() ? nullptr : rank.data()};
    }
};

/// The tree order by std::sort: key (in the bounding cube, or the periodic box), then id, then name.
std::vector<int32_t> referenceOrder(const Bodies& b)
{
    const int64_t n = b.set.size();
    std::vector<uint64_t> keys;
    if (b.boxSize > 0)
    {
        const double cellsPerUnit = double(kKeyGridSize) / b.boxSize;
        keys.resize(size_t(n));
        for (int64_t i = 0; i < n; ++i)
        {
            const Vec3d& p = b.set.pos[i];
            keys[i]        = mortonKey(gridCoordinate(p.x, 0.0, cellsPerUnit), gridCoordinate(p.y, 0.0, cellsPerUnit),
                                       gridCoordinate(p.z, 0.0, cellsPerUnit));
        }
    }
    else
    {
        keys = mortonKeysInBoundingCube(b.set.pos.data(), n);
    }
    const BodySpan s = b.span();
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t c) {
        if (keys[a] != keys[c]) return keys[a] < keys[c];
        if (s.id[a] != s.id[c]) return s.id[a] < s.id[c];
        return s.nameOf(a) < s.nameOf(c);
    });
    return order;
}

/// The keys of b in their bounding cube sorted stably elsewhere, as the device's sort gives them: keys and
/// the index of each.
void stablySortedKeys(const Bodies& b, std::vector<uint64_t>& sortedKeys, std::vector<int32_t>& index)
{
    const std::vector<uint64_t> keys = mortonKeysInBoundingCube(b.set.pos.data(), b.set.size());
    index.resize(keys.size());
    std::iota(index.begin(), index.end(), 0);
    std::stable_sort(index.begin(), index.end(), [&](int32_t a, int32_t c) { return keys[a] < keys[c]; });
    sortedKeys.resize(keys.size());
    for (size_t k = 0; k < keys.size(); ++k) sortedKeys[k] = keys[index[k]];
}

/// The tree of t (sortBodies' result) equals the one adoptSortedKeys makes from the stably sorted keys.
void expectSortedKeysAdoptedAlike(const Bodies& b, const HostTree& t)
{
    std::vector<uint64_t> keys;
    std::vector<int32_t> index;
    stablySortedKeys(b, keys, index);
    HostTree adopted;
    adoptSortedKeys(b.span(), keys.data(), index.data(), adopted);
    EXPECT_EQ(adopted.order, t.order);
    EXPECT_EQ(adopted.keys, t.keys);
    EXPECT_EQ(adopted.mass, t.mass);
    EXPECT_TRUE(adopted.pos.empty());
}

/// sortBodies into t on 1, 2, 3, 4, 7 and 16 threads: the reference order, keys sorted, bodies gathered;
/// for isolated bodies, adoptSortedKeys from keys sorted elsewhere gives the same tree.
void expectReferenceOrder(const Bodies& b, HostTree& t)
{
    const std::vector<int32_t> ref = referenceOrder(b);
    const int64_t n                = b.set.size();
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
    for (int threads : {1, 2, 3, 4, 7, 16})
    {
        omp_set_num_threads(threads);
#else
    for (int threads : {1})
    {
#endif
        SCOPED_TRACE("threads = " + std::to_string(threads) + ", n = " + std::to_string(n));
        sortBodies(b.span(), t, b.boxSize);
        ASSERT_EQ(t.order.size(), size_t(n));
        EXPECT_TRUE(std::is_sorted(t.keys.begin(), t.keys.end()));
        for (int64_t k = 0; k < n; ++k) ASSERT_EQ(t.order[k], ref[k]) << "tree position " << k;
        for (int64_t k = 0; k < n; ++k)
        {
            ASSERT_EQ(0, std::memcmp(&t.pos[k], &b.set.pos[ref[k]], sizeof(Vec3d))) << "tree position " << k;
            ASSERT_EQ(t.mass[k], b.set.mass[ref[k]]) << "tree position " << k;
        }
        if (b.boxSize == 0 && n > 0) expectSortedKeysAdoptedAlike(b, t);
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
}

void expectReferenceOrder(const Bodies& b)
{
    HostTree t;
    expectReferenceOrder(b, t);
}

Bodies plummerBodies(int64_t n, uint64_t seed)
{
    Bodies b;
    b.set = makePlummer(n, seed);
    return b;
}

/// The bodies of b in their tree order, drifted by dt (a simulation step's input), with duplicate
/// ids and coincident pairs so that ties need the id and the rank; ranks are the caller's indices.
Bodies nearlySortedWithTies(const Bodies& b, double dt)
{
    HostTree t;
    sortBodies(b.span(), t);
    const int64_t n = b.set.size();
    Bodies s;
    s.set.resize(n);
    s.rank.resize(size_t(n));
    for (int64_t k = 0; k < n; ++k)
    {
        const int32_t i = t.order[k];
        s.set.pos[k]    = k % 5 == 1 ? s.set.pos[k - 1] : b.set.pos[i] + dt * b.set.vel[i];
        s.set.mass[k]   = b.set.mass[i];
        s.set.id[k]     = uint64_t(k / 3); // repeats: equal keys and ids fall back to the rank
        s.rank[k]       = int32_t(n - 1 - k);
    }
    return s;
}

/// n bodies at `clumps` points (equal keys), ids decreasing, so each clump's order is by id.
Bodies clumps(int64_t n, int clumps)
{
    Random rng(17);
    std::vector<Vec3d> points(static_cast<size_t>(clumps));
    for (Vec3d& p : points) p = {rng.uniform(), rng.uniform(), rng.uniform()};
    Bodies b;
    b.set.resize(n);
    for (int64_t i = 0; i < n; ++i)
    {
        b.set.pos[i]  = points[size_t(i * clumps / n)];
        b.set.mass[i] = 1.0 + double(i);
        b.set.id[i]   = uint64_t(n - i);
    }
    return b;
}

/// Clusters inside clusters: 40% of the bodies in a cube of edge 1e-6 inside one of edge 1e-3 that
/// holds another 40%, the rest in the unit cube, so that long runs share many top bits (the passes
/// that split runs on all threads and on one thread).
Bodies nestedClusters(int64_t n)
{
    Random rng(23);
    Bodies b;
    b.set.resize(n);
    for (int64_t i = 0; i < n; ++i)
    {
        const double scale = i % 5 < 2 ? 1e-6 : i % 5 < 4 ? 1e-3 : 1.0;
        const double at    = scale < 1.0 ? 0.3 : 0.0;
        b.set.pos[i]       = {at + scale * rng.uniform(), at + scale * rng.uniform(), at + scale * rng.uniform()};
        b.set.mass[i]      = 1.0;
        b.set.id[i]        = uint64_t(i);
    }
    return b;
}

} // namespace

TEST(Sort, RandomOrderMatchesReference) { expectReferenceOrder(plummerBodies(60000, 5)); }

TEST(Sort, NearlySortedInputWithTiesMatchesReference)
{
    expectReferenceOrder(nearlySortedWithTies(plummerBodies(60000, 6), 1.0 / 64));
}

TEST(Sort, EqualKeysAcrossChunkBoundariesMatchReference)
{
    expectReferenceOrder(clumps(10007, 3));
    expectReferenceOrder(clumps(70001, 1));
}

TEST(Sort, NestedClustersMatchReference) { expectReferenceOrder(nestedClusters(100000)); }

TEST(Sort, FewerBodiesThanThreadsMatchReference)
{
    for (int64_t n : {1, 2, 3, 5, 15})
    {
        Bodies b = plummerBodies(std::max<int64_t>(n, 2), 7);
        b.set.resize(n);
        expectReferenceOrder(b);
    }
}

TEST(Sort, PeriodicBoxMatchesReference)
{
    Bodies b  = plummerBodies(40000, 8);
    b.boxSize = 64.0;
    for (Vec3d& p : b.set.pos) p = {p.x / 4 + 32, p.y / 4 + 32, p.z / 4 + 32};
    for (Vec3d& p : b.set.pos) p = {std::clamp(p.x, 0.0, 63.0), std::clamp(p.y, 0.0, 63.0), std::clamp(p.z, 0.0, 63.0)};
    expectReferenceOrder(b);
}

// One tree sorts inputs of other sizes, shapes and orders in turn: what it keeps from the last call
// may make a call faster but never changes its order.
TEST(Sort, ReusedTreeMatchesReferenceForChangingInputs)
{
    HostTree t;
    const Bodies plummer = plummerBodies(80000, 9);
    expectReferenceOrder(plummer, t);
    expectReferenceOrder(nearlySortedWithTies(plummer, 1.0 / 64), t);
    expectReferenceOrder(nearlySortedWithTies(plummer, 4.0), t);
    expectReferenceOrder(clumps(5000, 2), t);
    expectReferenceOrder(plummerBodies(3, 10), t);
    Bodies shifted = plummerBodies(80000, 9);
    for (Vec3d& p : shifted.set.pos) p = {p.x * 1e-3 + 5.0, p.y * 1e3, p.z};
    expectReferenceOrder(shifted, t);
    expectReferenceOrder(plummer, t);
}

// The sort of the host build (sortBodies) against std::sort on (key, id, name) for the inputs its
// paths treat differently: random and nearly sorted orders, runs of equal keys across the threads'
// chunks, fewer bodies than threads, the periodic box, ranks, and one HostTree reused for inputs of
// other sizes and shapes (the sort keeps its working memory between calls).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>
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

/// sortBodies into t on 1, 2, 3, 4, 7 and 16 threads: the reference order, keys sorted, bodies gathered.
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

// The bucket path (bodies near their tree order, as a simulation step gives them) and its fallback to
// the radix path: the order is the reference's either way, for every thread count; which path ran is
// checked so that each test exercises the path it is about.
namespace {

/// Enough bodies for the bucket path on every thread count of expectReferenceOrder (4096 per thread).
constexpr int64_t kBucketN = 70000;

/// The thread counts expectReferenceOrder sorts on.
std::vector<int> threadCounts()
{
#ifdef _OPENMP
    return {1, 2, 3, 4, 7, 16};
#else
    return {1};
#endif
}

/// expectReferenceOrder, and that each thread count took the bucket path (bucket) or the radix path.
void expectReferenceOrderOnPath(const Bodies& b, bool bucket)
{
    HostTree t;
    expectReferenceOrder(b, t);
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
#endif
    for (int threads : threadCounts())
    {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
        sortBodies(b.span(), t, b.boxSize);
        // One thread owns every key: nothing is foreign, so even a random order takes the bucket path.
        EXPECT_EQ(t.scratch.bucketPath, bucket || threads == 1) << "threads = " << threads;
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
}

/// The bodies of b in their tree order (ranks the caller's indices) drifted by dt.
Bodies inTreeOrder(const Bodies& b, double dt)
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
        s.set.pos[k]    = b.set.pos[i] + dt * b.set.vel[i];
        s.set.mass[k]   = b.set.mass[i];
        s.set.id[k]     = b.set.id[i];
        s.rank[k]       = i;
    }
    return s;
}

/// A Plummer sphere whose bounding cube two bodies at rest fix, so that the edits of a test do not move
/// the key grid (a grid moved by a fair fraction of a cell reorders the keys at that cell's level and
/// below: the fallback's case, not the bucket path's), and with coincident pairs (bodies 5j + 2 and
/// 5j + 3, same velocity) for ties of key.
Bodies anchoredPlummer(int64_t n, uint64_t seed)
{
    Bodies b     = plummerBodies(n, seed);
    b.set.pos[0] = {-40.0, -40.0, -40.0};
    b.set.pos[1] = {40.0, 40.0, 40.0};
    b.set.vel[0] = {0.0, 0.0, 0.0};
    b.set.vel[1] = {0.0, 0.0, 0.0};
    for (int64_t i = 2; i + 1 < n; i += 5)
    {
        b.set.pos[i + 1] = b.set.pos[i];
        b.set.vel[i + 1] = b.set.vel[i];
    }
    return b;
}

/// Every chunk boundary of 2, 3, 4, 7 and 16 threads over n bodies.
std::vector<int64_t> chunkBoundaries(int64_t n)
{
    std::vector<int64_t> at;
    for (int parts : {2, 3, 4, 7, 16})
    {
        for (int p = 1; p < parts; ++p) at.push_back(n * p / parts);
    }
    return at;
}

} // namespace

TEST(SortBuckets, SimulationStepInputTakesTheBucketPath)
{
    const Bodies plummer = anchoredPlummer(kBucketN, 31);
    expectReferenceOrderOnPath(inTreeOrder(plummerBodies(kBucketN, 31), 1.0 / 64), true);
    expectReferenceOrderOnPath(inTreeOrder(plummer, 1.0 / 64), true);
    expectReferenceOrderOnPath(inTreeOrder(plummer, 1.0 / 128), true);
    expectReferenceOrderOnPath(inTreeOrder(plummer, 0.0), true);
}

// Short runs of bodies far ahead of their place and far behind it, next to the chunk boundaries and
// inside chunks: a few bodies set aside each, the rest of the chunk kept.
TEST(SortBuckets, FarJumpsForwardAndBackwardMatchReference)
{
    Bodies b        = inTreeOrder(anchoredPlummer(kBucketN, 32), 1.0 / 64);
    const int64_t n = b.set.size();
    for (int64_t at : chunkBoundaries(n))
    {
        for (int64_t k = 0; k < 12; ++k)
        {
            std::swap(b.set.pos[at - 6 + k], b.set.pos[(at * 7 + k * 977) % n]); // far either way
        }
    }
    for (int64_t k = 0; k < 40; ++k) std::swap(b.set.pos[1000 + k], b.set.pos[n - 1000 + k]);
    for (int64_t k = 0; k < 40; ++k) std::swap(b.set.pos[n / 2 + 500 + k], b.set.pos[50 + k]);
    expectReferenceOrderOnPath(b, true);
}

// Runs of equal keys (coincident bodies, ids decreasing, ranks given) across every chunk boundary: part
// of each run lies in the chunk before the boundary (foreign there), part in the one after it.
TEST(SortBuckets, EqualKeysAcrossChunksAndForeignKeysMatchReference)
{
    Bodies b        = inTreeOrder(anchoredPlummer(kBucketN, 33), 1.0 / 64);
    const int64_t n = b.set.size();
    for (int64_t at : chunkBoundaries(n))
    {
        for (int64_t k = at - 40; k < at + 40; ++k)
        {
            b.set.pos[k] = b.set.pos[at];
            b.set.id[k]  = uint64_t(n - k);
        }
    }
    expectReferenceOrderOnPath(b, true);
    // Equal ids too: the ranks decide.
    for (int64_t at : chunkBoundaries(n))
    {
        for (int64_t k = at - 40; k < at + 40; ++k) b.set.id[k] = 7;
    }
    expectReferenceOrderOnPath(b, true);
}

// Coincident pairs with ids repeated in threes and ranks reversed: ties by id, then by rank.
TEST(SortBuckets, TiesByIdAndRankMatchReference)
{
    Bodies b        = inTreeOrder(anchoredPlummer(kBucketN, 34), 1.0 / 64);
    const int64_t n = b.set.size();
    for (int64_t k = 0; k < n; ++k)
    {
        b.set.id[k]       = uint64_t(k / 3);
        b.rank[size_t(k)] = int32_t(n - 1 - k);
    }
    expectReferenceOrderOnPath(b, true);
}

// Inputs far from their tree order fall back to the radix path: a fresh model (random order), and a
// step's input reversed.
TEST(SortBuckets, RandomAndReversedOrdersFallBackToRadix)
{
    expectReferenceOrderOnPath(plummerBodies(kBucketN, 35), false);
    Bodies reversed = inTreeOrder(plummerBodies(kBucketN, 36), 1.0 / 64);
    std::reverse(reversed.set.pos.begin(), reversed.set.pos.end());
    expectReferenceOrderOnPath(reversed, false);
}

// Too few bodies for buckets on the thread count (fewer than 4096 per thread, down to one body): the
// radix path; 4096 per thread: the bucket path.
TEST(SortBuckets, FewBodiesPerThreadTakeTheRadixPath)
{
    for (int64_t n : {int64_t(1), int64_t(2), int64_t(5), int64_t(8191), int64_t(8192)})
    {
        Bodies b = inTreeOrder(plummerBodies(std::max<int64_t>(n, 2), 37), 1.0 / 64);
        b.set.resize(n);
        b.rank.resize(size_t(n));
        for (int64_t k = 0; k < n; ++k) b.rank[size_t(k)] = int32_t(k);
        HostTree t;
        expectReferenceOrder(b, t);
#ifdef _OPENMP
        const int saved = omp_get_max_threads();
        omp_set_num_threads(2);
        sortBodies(b.span(), t);
        EXPECT_EQ(t.scratch.bucketPath, n >= 8192) << "n = " << n;
        omp_set_num_threads(saved);
#endif
    }
}

// One tree alternates between the paths and between sizes: the scratch of one call never leaks into
// the order of the next.
TEST(SortBuckets, ReusedTreeAlternatingPathsMatchesReference)
{
    HostTree t;
    const Bodies plummer = plummerBodies(kBucketN, 38);
    expectReferenceOrder(inTreeOrder(plummer, 1.0 / 64), t);
    expectReferenceOrder(plummer, t);
    expectReferenceOrder(inTreeOrder(plummerBodies(2 * kBucketN, 39), 1.0 / 128), t);
    expectReferenceOrder(inTreeOrder(plummer, 1.0 / 64), t);
}

// Without ids and ranks, equal keys keep the caller's order: the bucket collects the keys of lower
// chunks, then its own, then those of higher chunks, so that its stable sort sees them in that order.
TEST(SortBuckets, EqualKeysWithoutIdsKeepTheCallersOrder)
{
    Bodies b        = inTreeOrder(anchoredPlummer(kBucketN, 40), 1.0 / 64);
    const int64_t n = b.set.size();
    for (int64_t at : chunkBoundaries(n))
    {
        for (int64_t k = at - 300; k < at + 300; k += 3) b.set.pos[k] = b.set.pos[at];
    }
    const BodySpan span{b.set.pos.data(), b.set.mass.data(), nullptr, n};
    const std::vector<uint64_t> keys = mortonKeysInBoundingCube(b.set.pos.data(), n);
    std::vector<int32_t> ref(static_cast<size_t>(n));
    std::iota(ref.begin(), ref.end(), 0);
    std::stable_sort(ref.begin(), ref.end(), [&keys](int32_t a, int32_t c) { return keys[a] < keys[c]; });
    HostTree t;
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
#endif
    for (int threads : threadCounts())
    {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
        sortBodies(span, t);
        EXPECT_TRUE(t.scratch.bucketPath) << "threads = " << threads;
        EXPECT_EQ(t.order, ref) << "threads = " << threads;
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
}

// The host tree and its packing: structural invariants the walk relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "common/errors.h"
#include "common/sfc.h"
#include "host/reference/direct.h"
#include "test_helpers.h"

using namespace octwalk;

namespace {

HostTree buildFor(const ParticleSet& b, int nLeaf, int nGroup)
{
    HostTree t;
    BodySpan s{b.pos.data(), b.mass.data(), b.id.data(), b.size()};
    sortBodies(s, t);
    buildCells(nLeaf, t);
    computeMultipoles(t);
    makeGroups(nGroup, t);
    return t;
}

} // namespace

TEST(Tree, CellsPartitionBodiesAndRespectLeafSize)
{
    ParticleSet b        = makePlummer(20000, 11);
    HostTree t           = buildFor(b, 16, 64);
    const OctreeCells& c = t.cells;
    EXPECT_TRUE(std::is_sorted(t.keys.begin(), t.keys.end()));
    int64_t leafBodies = 0;
    for (int32_t i = 0; i < c.size(); ++i)
    {
        if (c.isLeaf[i])
        {
            leafBodies += c.count[i];
            EXPECT_TRUE(c.count[i] <= 16 || c.level[i] == kMaxTreeLevel);
            continue;
        }
        EXPECT_GT(c.count[i], 16);
        int32_t expectedFirst = c.first[i], sum = 0;
        for (int32_t k : c.child[i])
        {
            if (k < 0) continue;
            EXPECT_EQ(c.first[k], expectedFirst); // children are contiguous, in octant order
            EXPECT_EQ(c.level[k], c.level[i] + 1);
            EXPECT_GT(k, i); // breadth-first
            expectedFirst += c.count[k];
            sum += c.count[k];
        }
        EXPECT_EQ(sum, c.count[i]);
    }
    EXPECT_EQ(leafBodies, b.size());
}

TEST(Tree, MultipolesMatchBodies)
{
    ParticleSet b        = makeHernquist(5000, 5);
    HostTree t           = buildFor(b, 8, 32);
    const Multipoles& mp = t.poles;
    EXPECT_NEAR(mp.mass[0], 1.0, 1e-12);
    EXPECT_NEAR(mp.com[0].x, 0.0, 1e-12);
    for (int32_t i = 0; i < t.cells.size(); ++i)
    {
        const auto& q = mp.quad[i];
        EXPECT_NEAR(q.xx + q.yy + q.zz, 0.0, 1e-10 * (std::fabs(q.xx) + std::fabs(q.yy) + std::fabs(q.zz) + 1e-30));
        for (int32_t k = t.cells.first[i]; k < t.cells.first[i] + t.cells.count[i]; ++k)
        {
            EXPECT_GE(t.pos[k].x, mp.boxMin[i].x);
            EXPECT_LE(t.pos[k].z, mp.boxMax[i].z);
        }
    }
}

TEST(Tree, GroupsCoverEveryBodyOnceInOrder)
{
    ParticleSet b = makePlummer(10000, 2);
    HostTree t    = buildFor(b, 16, 64);
    int32_t next  = 0;
    for (const I2& g : t.groups)
    {
        EXPECT_EQ(g.x, next);
        EXPECT_GE(g.y, 1);
        EXPECT_LE(g.y, 64);
        next += g.y;
    }
    EXPECT_EQ(next, 10000);
}

TEST(Tree, MergedGroupsAreFewerFullerAndStillContiguous)
{
    ParticleSet b   = makePlummer(10000, 2);
    HostTree cells  = buildFor(b, 16, 64);
    HostTree merged = cells;
    makeGroups(64, merged, true);
    EXPECT_LT(merged.groups.size(), cells.groups.size() / 2);
    int32_t next = 0;
    for (const I2& g : merged.groups)
    {
        EXPECT_EQ(g.x, next);
        EXPECT_LE(g.y, 64);
        next += g.y;
    }
    EXPECT_EQ(next, 10000);
}

TEST(Tree, SparseCellsBesideADenseOneAreGroupsOfTheirOwn)
{
    // 30000 bodies in a small cube at the origin and 10 in each of four other octants of the root: the four
    // sparse octants are consecutive small siblings, which merging would join into one group of 40 spanning
    // the box, but each holds fewer than 1/kGroupContrast of the root's bodies, so each is a group of its own.
    const int dense = 30000, sparse = 10;
    const int corners[4][3] = {{0, 1, 1}, {1, 0, 1}, {1, 1, 0}, {1, 1, 1}};
    ParticleSet b;
    b.resize(dense + 4 * sparse);
    for (int i = 0; i < dense; ++i)
    {
        b.pos[i] = {0.05 * std::fmod(i * 0.618034, 1.0), 0.05 * std::fmod(i * 0.754878, 1.0),
                    0.05 * std::fmod(i * 0.569840, 1.0)};
    }
    for (int k = 0; k < 4; ++k)
    {
        for (int j = 0; j < sparse; ++j)
        {
            const double u                = 0.6 + 0.035 * j;
            b.pos[dense + k * sparse + j] = {corners[k][0] ? u : 0.05 - 0.004 * j, corners[k][1] ? u : 0.002 * j,
                                             corners[k][2] ? 0.95 - 0.03 * j : 0.003 * j};
        }
    }
    for (int i = 0; i < b.size(); ++i)
    {
        b.mass[i] = 1.0 / b.size();
        b.id[i]   = i;
    }
    static_assert(dense > kGroupContrast * sparse, "each sparse octant holds less than 1/kGroupContrast of the root");
    HostTree t = buildFor(b, 16, 64);
    makeGroups(64, t, true);
    auto octant  = [](const Vec3d& p) { return (p.x > 0.5 ? 4 : 0) + (p.y > 0.5 ? 2 : 0) + (p.z > 0.5 ? 1 : 0); };
    int32_t next = 0, sparseGroups = 0;
    for (const I2& g : t.groups)
    {
        EXPECT_EQ(g.x, next);
        EXPECT_LE(g.y, 64);
        next += g.y;
        const int first = octant(t.pos[g.x]);
        for (int32_t i = g.x; i < g.x + g.y; ++i) EXPECT_EQ(octant(t.pos[i]), first) << "group at body " << g.x;
        if (first != 0)
        {
            EXPECT_EQ(g.y, sparse);
            ++sparseGroups;
        }
    }
    EXPECT_EQ(next, b.size());
    EXPECT_EQ(sparseGroups, 4);
}

TEST(Tree, CoincidentBodiesStopAtMaximumDepth)
{
    ParticleSet b;
    b.resize(1000);
    for (int i = 0; i < 1000; ++i)
    {
        b.pos[i]  = {0.25, 0.25, 0.25};
        b.mass[i] = 1e-3;
        b.id[i]   = i;
    }
    b.pos[0]   = {0, 0, 0};
    b.pos[1]   = {1, 1, 1};
    HostTree t = buildFor(b, 16, 64);
    EXPECT_EQ(t.cells.depth, kMaxTreeLevel);
    int64_t covered = 0;
    for (const I2& g : t.groups)
    {
        EXPECT_LE(g.y, 64);
        covered += g.y;
    }
    EXPECT_EQ(covered, 1000);
}

TEST(PackedTree, ChildEntriesDecodeToTheHostCells)
{
    ParticleSet b = makePlummer(3000, 9);
    HostTree t    = buildFor(b, 16, 64);
    PackedTree pk;
    packTree(t, test::cpuParameters(), pk);
    TreeView v = pk.treeView();
    EXPECT_EQ(v.numInternal + v.numLeaves, t.cells.size());
    EXPECT_EQ(v.rootEntry, 0u);
    // Every body is reached exactly once by descending the packed children from the root.
    std::vector<int> seen(b.size(), 0);
    std::vector<uint32_t> stack{v.rootEntry};
    while (!stack.empty())
    {
        uint32_t e = stack.back();
        stack.pop_back();
        int32_t n = int32_t(e & ~kLeafBit);
        if (e & kLeafBit)
        {
            ASSERT_GE(n, v.numInternal);
            I2 r     = v.leafRange[n - v.numInternal];
            double m = 0;
            for (int32_t k = r.x; k < r.x + r.y; ++k)
            {
                seen[k]++;
                m += pk.bodies[k].w;
            }
            EXPECT_NEAR(v.nodeCom[n].w, m, 1e-6);
            continue;
        }
        ASSERT_LT(n, v.numInternal);
        const U4* w = &v.children[2 * n];
        for (uint32_t c : {w[0].x, w[0].y, w[0].z, w[0].w, w[1].x, w[1].y, w[1].z, w[1].w})
        {
            if (c != kEmptyChild) stack.push_back(c);
        }
    }
    for (int s : seen) ASSERT_EQ(s, 1);
}

TEST(PackedTree, SingleLeafTreeHasLeafRoot)
{
    ParticleSet b = makePlummer(10, 1);
    HostTree t    = buildFor(b, 16, 64);
    PackedTree pk;
    packTree(t, test::cpuParameters(), pk);
    EXPECT_EQ(pk.numInternal, 0);
    EXPECT_EQ(pk.rootEntry, kLeafBit);
    auto f = test::treeForces(b, test::cpuParameters());
    std::vector<Vec3d> ref;
    std::vector<double> refPot;
    directSumAll(b.pos.data(), b.mass.data(), b.size(), 0.0, 1.0, ref, refPot);
    for (int i = 0; i < 10; ++i) EXPECT_NEAR(f.pot[i] / refPot[i], 1.0, 1e-6);
}

TEST(PackedTree, GroupBoxesContainTheirBodies)
{
    ParticleSet b = makePlummer(5000, 4);
    HostTree t    = buildFor(b, 16, 64);
    PackedTree pk;
    packTree(t, test::cpuParameters(), pk);
    for (size_t g = 0; g < pk.groupRange.size(); ++g)
    {
        for (int32_t k = pk.groupRange[g].x; k < pk.groupRange[g].x + pk.groupRange[g].y; ++k)
        {
            EXPECT_LE(std::fabs(pk.bodies[k].x - pk.groupCenter[g].x), pk.groupHalf[g].x);
            EXPECT_LE(std::fabs(pk.bodies[k].y - pk.groupCenter[g].y), pk.groupHalf[g].y);
            EXPECT_LE(std::fabs(pk.bodies[k].z - pk.groupCenter[g].z), pk.groupHalf[g].z);
        }
    }
}

TEST(Tree, RankedBodiesInAnotherOrderBuildTheCallersTree)
{
    // Coincident bodies with equal ids, so that only the tie-break by caller's index orders them.
    ParticleSet b = makePlummer(4000, 3);
    for (int64_t i = 0; i < b.size(); ++i)
    {
        b.id[i] = uint64_t(i / 9);
        if (i % 3 == 0) b.pos[i] = b.pos[i - i % 9];
    }
    HostTree reference = buildFor(b, 8, 32);

    // The same bodies reversed, each carrying its caller's index as its rank.
    const int64_t n = b.size();
    std::vector<Vec3d> pos(n);
    std::vector<double> mass(n);
    std::vector<uint64_t> id(n);
    std::vector<int32_t> rank(n);
    for (int64_t k = 0; k < n; ++k)
    {
        const int64_t i = n - 1 - k;
        pos[k]          = b.pos[i];
        mass[k]         = b.mass[i];
        id[k]           = b.id[i];
        rank[k]         = int32_t(i);
    }
    HostTree t;
    sortBodies({pos.data(), mass.data(), id.data(), n, rank.data()}, t);
    ASSERT_EQ(t.order.size(), reference.order.size());
    for (int64_t k = 0; k < n; ++k) ASSERT_EQ(rank[t.order[k]], reference.order[k]) << "tree position " << k;
    EXPECT_EQ(0, std::memcmp(t.pos.data(), reference.pos.data(), n * sizeof(Vec3d)));
}

TEST(Tree, RankedBodiesAreNamedByRankInErrors)
{
    std::vector<Vec3d> pos{{0, 0, 0}, {1, 0, 0}, {0, std::nan(""), 0}, {0, 0, 1}};
    std::vector<double> mass{1, 1, 1, 1};
    std::vector<int32_t> rank{3, 0, 7, 1};
    try
    {
        validateBodies({pos.data(), mass.data(), nullptr, 4, rank.data()});
        FAIL() << "a NaN coordinate was accepted";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("body 7: y"), std::string::npos) << e.what();
    }
}

// A rebuild into the same HostTree and PackedTree with more cells than the first build had keeps their arrays where
// they are (room for twice the first length): a pipelined run rebuilds into the same buffers every step, and moving
// them cost its early steps 0.3 s each at 2^24 bodies. The trees are the fresh trees' all the same.
TEST(Tree, ARebuildWithSomeMoreCellsKeepsTheArraysInPlace)
{
    const ParticleSet small = makePlummer(20000, 21), large = makePlummer(26000, 21);
    const Parameters p = test::cpuParameters();
    HostTree t         = buildFor(small, 16, 64);
    PackedTree packed;
    packTree(t, p, packed);
    const int32_t* first     = t.cells.first.data();
    const double* cellMass   = t.poles.mass.data();
    const I2* groups         = t.groups.data();
    const U4* children       = packed.children.data();
    const F4* nodeMac        = packed.nodeMac.data();
    const int32_t smallCells = t.cells.size();
    BodySpan s{large.pos.data(), large.mass.data(), large.id.data(), large.size()};
    sortBodies(s, t);
    buildCells(16, t);
    computeMultipoles(t);
    makeGroups(64, t);
    packTree(t, p, packed);
    ASSERT_GT(t.cells.size(), smallCells);
    EXPECT_EQ(t.cells.first.data(), first);
    EXPECT_EQ(t.poles.mass.data(), cellMass);
    EXPECT_EQ(t.groups.data(), groups);
    EXPECT_EQ(packed.children.data(), children);
    EXPECT_EQ(packed.nodeMac.data(), nodeMac);

    const HostTree fresh = buildFor(large, 16, 64);
    PackedTree freshPacked;
    packTree(fresh, p, freshPacked);
    EXPECT_EQ(t.cells.first, fresh.cells.first);
    EXPECT_EQ(t.cells.child, fresh.cells.child);
    EXPECT_EQ(t.groups.size(), fresh.groups.size());
    ASSERT_EQ(packed.nodeMac.size(), freshPacked.nodeMac.size());
    EXPECT_EQ(std::memcmp(packed.nodeMac.data(), freshPacked.nodeMac.data(), sizeof(F4) * packed.nodeMac.size()), 0);
    EXPECT_EQ(std::memcmp(packed.children.data(), freshPacked.children.data(), sizeof(U4) * packed.children.size()), 0);
}

// The host build against a plain serial reference kept here: order by std::sort on (key, id,
// index), cells by a breadth-first queue with a linear scan of octant digits, multipoles in the
// order the tree has always used (leaves by direct sums, internal cells by M2M from their
// children, bottom-up) and a serial packer. Everything must agree bit for bit, for any thread count;
// the direct sums over each cell's bodies agree to rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <numeric>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/mac.h"
#include "common/multipole.h"
#include "common/sfc.h"
#include "host/core/random.h"
#include "host/tree/bounds.h"
#include "host/models/galaxy.h"
#include "test_helpers.h"

using namespace octwalk;

namespace {

template<class T, class A>
bool sameBits(const std::vector<T, A>& a, const std::vector<T, A>& b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/// Keys as the tree defines them (common/sfc.h), serially.
std::vector<uint64_t> referenceKeys(const ParticleSet& b)
{
    Box<Vec3d> box = boundingBox(b.pos.data(), b.size());
    double size    = largestExtent(box);
    if (!(size > 0)) size = 1.0;
    double cellsPerUnit = double(kKeyGridSize) / size;
    std::vector<uint64_t> keys(b.size());
    for (int64_t i = 0; i < b.size(); ++i)
    {
        const Vec3d& p = b.pos[i];
        keys[i] = mortonKey(gridCoordinate(p.x, box.lo.x, cellsPerUnit), gridCoordinate(p.y, box.lo.y, cellsPerUnit),
                            gridCoordinate(p.z, box.lo.z, cellsPerUnit));
    }
    return keys;
}

void referenceMultipoles(HostTree& t)
{
    const OctreeCells& c = t.cells;
    Multipoles& mp       = t.poles;
    int32_t n            = c.size();
    mp.mass.assign(n, 0);
    mp.com.assign(n, {0, 0, 0});
    mp.quad.assign(n, {0, 0, 0, 0, 0, 0});
    mp.boxMin.assign(n, {0, 0, 0});
    mp.boxMax.assign(n, {0, 0, 0});
    for (int32_t i = n - 1; i >= 0; --i) // breadth-first: children come after their parent
    {
        double m = 0;
        Vec3d weighted{0, 0, 0};
        Box<Vec3d> box{{HUGE_VAL, HUGE_VAL, HUGE_VAL}, {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL}};
        SymTensor<double> q{0, 0, 0, 0, 0, 0};
        Vec3d com;
        if (c.isLeaf[i])
        {
            int32_t first = c.first[i], last = first + c.count[i];
            for (int32_t k = first; k < last; ++k)
            {
                m += t.mass[k];
                weighted += t.mass[k] * t.pos[k];
            }
            box = boundingBox(t.pos.data() + first, last - first);
            com = m > 0 ? (1.0 / m) * weighted : 0.5 * (box.lo + box.hi);
            for (int32_t k = first; k < last; ++k) addPointQuadrupole(t.pos[k] - com, t.mass[k], q);
        }
        else
        {
            for (int32_t k : c.child[i])
            {
                if (k < 0) continue;
                m += mp.mass[k];
                weighted += mp.mass[k] * mp.com[k];
                includeBox(box, {mp.boxMin[k], mp.boxMax[k]});
            }
            com = m > 0 ? (1.0 / m) * weighted : 0.5 * (box.lo + box.hi);
            for (int32_t k : c.child[i])
            {
                if (k >= 0) shiftQuadrupole(mp.quad[k], mp.com[k], mp.mass[k], com, q);
            }
        }
        mp.mass[i]   = m;
        mp.com[i]    = com;
        mp.quad[i]   = q;
        mp.boxMin[i] = box.lo;
        mp.boxMax[i] = box.hi;
    }
}

/// The reference host tree: std::sort, a breadth-first queue, multipoles in the tree's order, groups.
HostTree referenceTree(const ParticleSet& b, int nLeaf, int nGroup, bool merge)
{
    HostTree t;
    const int64_t n            = b.size();
    std::vector<uint64_t> keys = referenceKeys(b);
    t.order.resize(n);
    std::iota(t.order.begin(), t.order.end(), 0);
    std::sort(t.order.begin(), t.order.end(), [&](int32_t i, int32_t j) {
        if (keys[i] != keys[j]) return keys[i] < keys[j];
        return b.id[i] != b.id[j] ? b.id[i] < b.id[j] : i < j;
    });
    for (int64_t k = 0; k < n; ++k)
    {
        t.keys.push_back(keys[t.order[k]]);
        t.pos.push_back(b.pos[t.order[k]]);
        t.mass.push_back(b.mass[t.order[k]]);
    }

    OctreeCells& c = t.cells;
    auto addCell   = [&c](int32_t first, int32_t count, int32_t level) {
        c.first.push_back(first);
        c.count.push_back(count);
        c.level.push_back(level);
        c.child.push_back({-1, -1, -1, -1, -1, -1, -1, -1});
        return c.size() - 1;
    };
    addCell(0, int32_t(n), 0);
    std::deque<int32_t> queue{0};
    while (!queue.empty())
    {
        int32_t cell = queue.front();
        queue.pop_front();
        if (c.count[cell] <= nLeaf || c.level[cell] >= kMaxTreeLevel) continue;
        int32_t k = c.first[cell], end = c.first[cell] + c.count[cell];
        for (int oct = 0; oct < 8; ++oct)
        {
            int32_t start = k;
            while (k < end && octantAtLevel(t.keys[k], c.level[cell] + 1) == oct) ++k;
            if (k == start) continue;
            int32_t child      = addCell(start, k - start, c.level[cell] + 1);
            c.child[cell][oct] = child;
            queue.push_back(child);
        }
    }
    for (int32_t i = 0; i < c.size(); ++i)
    {
        c.isLeaf.push_back(c.child[i] == std::array<int32_t, 8>{-1, -1, -1, -1, -1, -1, -1, -1});
        c.depth = std::max(c.depth, c.level[i]);
    }
    referenceMultipoles(t);
    makeGroups(nGroup, t, merge);
    return t;
}

/// The packed arrays of common/tree_view.h, serially.
PackedTree referencePacking(const HostTree& t, const Parameters& p)
{
    const OctreeCells& c = t.cells;
    const Multipoles& mp = t.poles;
    PackedTree out;
    std::vector<int32_t> index(c.size());
    for (int32_t i = 0; i < c.size(); ++i)
    {
        if (!c.isLeaf[i]) index[i] = out.numInternal++;
    }
    int32_t next = out.numInternal;
    for (int32_t i = 0; i < c.size(); ++i)
    {
        if (c.isLeaf[i]) index[i] = next++;
    }
    out.numLeaves = c.size() - out.numInternal;
    out.depth     = c.depth;
    for (int32_t level = 0; level <= c.depth + 1; ++level) // internal cells above each level
    {
        int32_t above = 0;
        for (int32_t i = 0; i < c.size(); ++i) above += !c.isLeaf[i] && c.level[i] < level;
        out.internalLevelFirst.push_back(above);
    }
    auto entry = [&](int32_t cell) {
        if (cell < 0) return kEmptyChild;
        return c.isLeaf[cell] ? (kLeafBit | uint32_t(index[cell])) : uint32_t(index[cell]);
    };
    out.rootEntry = entry(0);
    out.children.resize(2 * size_t(out.numInternal));
    out.nodeMac.resize(c.size());
    out.nodeCom.resize(c.size());
    out.nodeQuad.resize(2 * size_t(c.size()));
    out.leafRange.resize(out.numLeaves);
    float invTheta    = float(1.0 / p.opening_angle);
    float quadScale   = p.use_quadrupole ? 1.0f : 0.0f;
    float spreadScale = p.use_quadrupole && p.softened_quadrupole ? 1.0f : 0.0f;
    for (int32_t i = 0; i < c.size(); ++i)
    {
        int32_t k = index[i];
        if (c.isLeaf[i]) out.leafRange[k - out.numInternal] = {c.first[i], c.count[i]};
        else
        {
            const auto& ch          = c.child[i];
            out.children[2 * k]     = {entry(ch[0]), entry(ch[1]), entry(ch[2]), entry(ch[3])};
            out.children[2 * k + 1] = {entry(ch[4]), entry(ch[5]), entry(ch[6]), entry(ch[7])};
        }
        Vec3d center     = 0.5 * (mp.boxMin[i] + mp.boxMax[i]);
        Vec3d extent     = mp.boxMax[i] - mp.boxMin[i];
        double side      = std::max({extent.x, extent.y, extent.z});
        Vec3d offset     = mp.com[i] - center;
        float delta      = float(std::sqrt(dot(offset, offset)));
        const Vec3d& com = mp.com[i];
        out.nodeCom[k]   = {float(com.x), float(com.y), float(com.z), float(mp.mass[i])};
        out.nodeMac[k]   = {float(com.x), float(com.y), float(com.z), macRadius2(p.mac, float(side), delta, invTheta)};
        const SymTensor<double>& q = mp.quad[i];
        out.nodeQuad[2 * k]        = {quadScale * float(q.xx), quadScale * float(q.yy), quadScale * float(q.zz),
                                      quadScale * float(q.xy)};
        out.nodeQuad[2 * k + 1]    = {quadScale * float(q.xz), quadScale * float(q.yz), spreadScale * float(q.spread),
                                      0.0f};
    }
    for (size_t k = 0; k < t.pos.size(); ++k)
    {
        out.bodies.push_back({float(t.pos[k].x), float(t.pos[k].y), float(t.pos[k].z), float(t.mass[k])});
    }
    out.groupRange.assign(t.groups.begin(), t.groups.end());
    out.groupCenter.resize(t.groups.size());
    out.groupHalf.resize(t.groups.size());
    groupBoxes(out.bodies.data(), out.groupRange.data(), int64_t(t.groups.size()), out.groupCenter.data(),
               out.groupHalf.data());
    return out;
}

void expectSameTree(const HostTree& a, const HostTree& r)
{
    EXPECT_TRUE(sameBits(a.order, r.order)) << "order";
    EXPECT_TRUE(sameBits(a.keys, r.keys)) << "keys";
    EXPECT_TRUE(sameBits(a.pos, r.pos)) << "pos";
    EXPECT_TRUE(sameBits(a.mass, r.mass)) << "mass";
    EXPECT_TRUE(sameBits(a.cells.first, r.cells.first)) << "cells.first";
    EXPECT_TRUE(sameBits(a.cells.count, r.cells.count)) << "cells.count";
    EXPECT_TRUE(sameBits(a.cells.level, r.cells.level)) << "cells.level";
    EXPECT_TRUE(sameBits(a.cells.child, r.cells.child)) << "cells.child";
    EXPECT_TRUE(sameBits(a.cells.isLeaf, r.cells.isLeaf)) << "cells.isLeaf";
    EXPECT_EQ(a.cells.depth, r.cells.depth);
    EXPECT_TRUE(sameBits(a.poles.mass, r.poles.mass)) << "poles.mass";
    EXPECT_TRUE(sameBits(a.poles.com, r.poles.com)) << "poles.com";
    EXPECT_TRUE(sameBits(a.poles.quad, r.poles.quad)) << "poles.quad";
    EXPECT_TRUE(sameBits(a.poles.boxMin, r.poles.boxMin)) << "poles.boxMin";
    EXPECT_TRUE(sameBits(a.poles.boxMax, r.poles.boxMax)) << "poles.boxMax";
    EXPECT_TRUE(sameBits(a.groups, r.groups)) << "groups";
}

void expectSamePacking(const PackedTree& a, const PackedTree& r)
{
    EXPECT_EQ(a.numInternal, r.numInternal);
    EXPECT_EQ(a.numLeaves, r.numLeaves);
    EXPECT_EQ(a.depth, r.depth);
    EXPECT_EQ(a.rootEntry, r.rootEntry);
    EXPECT_TRUE(sameBits(a.children, r.children)) << "children";
    EXPECT_TRUE(sameBits(a.nodeMac, r.nodeMac)) << "nodeMac";
    EXPECT_TRUE(sameBits(a.nodeCom, r.nodeCom)) << "nodeCom";
    EXPECT_TRUE(sameBits(a.nodeQuad, r.nodeQuad)) << "nodeQuad";
    EXPECT_TRUE(sameBits(a.leafRange, r.leafRange)) << "leafRange";
    EXPECT_TRUE(sameBits(a.groupRange, r.groupRange)) << "groupRange";
    EXPECT_TRUE(sameBits(a.groupCenter, r.groupCenter)) << "groupCenter";
    EXPECT_TRUE(sameBits(a.groupHalf, r.groupHalf)) << "groupHalf";
    EXPECT_TRUE(sameBits(a.bodies, r.bodies)) << "bodies";
    EXPECT_EQ(a.internalLevelFirst, r.internalLevelFirst) << "refit levels";
}

/// The pipeline on every thread count in `threads` (one HostTree reused, as the solver does),
/// against the reference.
void checkAgainstReference(const ParticleSet& b, const Parameters& p)
{
    HostTree ref       = referenceTree(b, p.n_leaf, p.n_group, p.merge_groups);
    PackedTree refPack = referencePacking(ref, p);
    HostTree t;
    PackedTree packed;
#ifdef _OPENMP
    const int saved = omp_get_max_threads();
    for (int threads : {1, 2, 3, 4, 7, 16})
    {
        omp_set_num_threads(threads);
#else
    for (int threads : {1})
    {
#endif
        SCOPED_TRACE("threads = " + std::to_string(threads));
        BodySpan s{b.pos.data(), b.mass.data(), b.id.data(), b.size()};
        sortBodies(s, t);
        buildCells(p.n_leaf, t);
        computeMultipoles(t);
        makeGroups(p.n_group, t, p.merge_groups);
        packTree(t, p, packed);
        expectSameTree(t, ref);
        expectSamePacking(packed, refPack);
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
}

/// Clusters of coincident bodies (equal keys) with shuffled, repeated ids, in shuffled order.
ParticleSet clumpsWithShuffledIds(int64_t n, uint64_t seed)
{
    Random rng(seed);
    ParticleSet b;
    b.resize(n);
    for (int64_t i = 0; i < n; ++i)
    {
        if (i > 0 && rng.uniform() < 0.3) b.pos[i] = b.pos[rng.below(uint64_t(i))];
        else b.pos[i] = {rng.uniform(), rng.uniform(), rng.uniform() * 0.01};
        b.mass[i] = rng.uniform();
        b.id[i]   = rng.below(uint64_t(n / 2)); // repeats: ties fall back to the caller's index
    }
    return b;
}

} // namespace

TEST(TreeReference, PlummerMatchesBitForBit)
{
    Parameters p = test::cpuParameters(0.5, 1e-4);
    checkAgainstReference(makePlummer(30000, 21), p);
}

// Long enough that the sort splits runs with all threads before sorting them one per thread.
TEST(TreeReference, LargePlummerAndClumpsMatchBitForBit)
{
    Parameters p = test::cpuParameters(0.5, 1e-4);
    checkAgainstReference(makePlummer(300000, 4), p);
    checkAgainstReference(clumpsWithShuffledIds(150000, 9), p);
}

TEST(TreeReference, GalaxyWithMergedGroupsMatchesBitForBit)
{
    Parameters p   = test::cpuParameters(0.6, 1e-4);
    p.merge_groups = true;
    p.n_leaf       = 8;
    checkAgainstReference(makeGalaxy(20000, 5), p);
}

// The traceless expansion packs a zero spread (nodeQuad[2n+1].z), the default packs sum m |s|^2.
TEST(TreeReference, TracelessQuadrupoleMatchesBitForBit)
{
    Parameters p          = test::cpuParameters(0.5, 1e-4);
    p.softened_quadrupole = false;
    checkAgainstReference(makePlummer(20000, 6), p);
}

TEST(TreeReference, CoincidentBodiesWithShuffledIdsMatchBitForBit)
{
    Parameters p     = test::cpuParameters(0.7, 1e-4);
    p.use_quadrupole = false;
    checkAgainstReference(clumpsWithShuffledIds(20000, 8), p);
}

TEST(TreeReference, AllBodiesCoincidentMatchBitForBit)
{
    ParticleSet b;
    b.resize(5000);
    for (int64_t i = 0; i < b.size(); ++i)
    {
        b.pos[i]  = {0.5, -0.25, 2.0};
        b.mass[i] = 1e-3;
        b.id[i]   = uint64_t(b.size() - i); // decreasing: the order is reversed from the caller's
    }
    checkAgainstReference(b, test::cpuParameters(0.5, 1e-4));
}

namespace {

/// n bodies uniform in the unit cube, with distinct ids.
ParticleSet uniformCube(int64_t n, uint64_t seed)
{
    Random rng(seed);
    ParticleSet b;
    b.resize(n);
    for (int64_t i = 0; i < n; ++i)
    {
        b.pos[i]  = {rng.uniform(), rng.uniform(), rng.uniform()};
        b.mass[i] = rng.uniform();
        b.id[i]   = uint64_t(i);
    }
    return b;
}

/// Clumps of `perClump` coincident bodies (leaves at the deepest level, bigger than a subtree of the
/// build on many threads) at random places, between uniform bodies.
ParticleSet deepClumps(int64_t numClumps, int64_t perClump, int64_t numUniform, uint64_t seed)
{
    Random rng(seed);
    ParticleSet b = uniformCube(numUniform + numClumps * perClump, seed + 1);
    for (int64_t c = 0; c < numClumps; ++c)
    {
        const Vec3d at{rng.uniform(), rng.uniform(), rng.uniform()};
        for (int64_t k = 0; k < perClump; ++k) b.pos[numUniform + c * perClump + k] = at;
    }
    return b;
}

} // namespace

// Trees of one leaf (n <= n_leaf), of one split and a little more: the build on every thread count
// has a single subtree or a top of one cell.
TEST(TreeReference, SmallTreesMatchBitForBit)
{
    Parameters p = test::cpuParameters(0.5, 1e-4);
    for (int64_t n : {2, 3, 15, 16, 17, 100, 1000})
    {
        SCOPED_TRACE("n = " + std::to_string(n));
        checkAgainstReference(uniformCube(n, 40 + uint64_t(n)), p);
    }
}

// Groups bigger than the subtrees of the build (top cells that are whole groups, merged with their
// siblings) and leaves bigger than groups, with and without merging.
TEST(TreeReference, GroupsAcrossSubtreesMatchBitForBit)
{
    Parameters p = test::cpuParameters(0.5, 1e-4);
    p.n_leaf     = 4;
    p.n_group    = 300;
    for (bool merge : {false, true})
    {
        SCOPED_TRACE(merge ? "merged" : "not merged");
        p.merge_groups = merge;
        checkAgainstReference(uniformCube(5000, 7), p);
        checkAgainstReference(makePlummer(5000, 8), p);
    }
    p.n_leaf  = 64;
    p.n_group = 16;
    checkAgainstReference(makePlummer(5000, 9), p);
}

// Coincident clumps of 600 bodies: maximum-depth leaves inside subtrees and as subtrees of their own,
// cut into group chunks.
TEST(TreeReference, DeepClumpsMatchBitForBit)
{
    Parameters p = test::cpuParameters(0.5, 1e-4);
    checkAgainstReference(deepClumps(12, 600, 3000, 11), p);
    p.merge_groups = true;
    checkAgainstReference(deepClumps(3, 40, 200, 12), p);
}

// Cells that buildCells did not make (the reference's) have no subtrees to follow: computeMultipoles
// and makeGroups fall back to one recursion from the root and still match.
TEST(TreeReference, MultipolesAndGroupsOfCellsBuiltElsewhereMatchBitForBit)
{
    const HostTree ref = referenceTree(makePlummer(3000, 13), 8, 32, true);
    HostTree t         = ref;
    t.poles            = Multipoles{};
    t.groups.clear();
    computeMultipoles(t);
    makeGroups(32, t, true);
    expectSameTree(t, ref);
}

TEST(TreeReference, MultipolesMatchDirectSumsOverEachCell)
{
    ParticleSet b = makePlummer(20000, 3);
    HostTree t;
    BodySpan s{b.pos.data(), b.mass.data(), b.id.data(), b.size()};
    sortBodies(s, t);
    buildCells(16, t);
    computeMultipoles(t);
    const OctreeCells& c = t.cells;
    for (int32_t i = 0; i < c.size(); ++i)
    {
        int32_t first = c.first[i], last = first + c.count[i];
        double m = 0;
        Vec3d weighted{0, 0, 0};
        for (int32_t k = first; k < last; ++k)
        {
            m += t.mass[k];
            weighted += t.mass[k] * t.pos[k];
        }
        Vec3d com = (1.0 / m) * weighted;
        SymTensor<double> q{0, 0, 0, 0, 0, 0};
        for (int32_t k = first; k < last; ++k) addPointQuadrupole(t.pos[k] - com, t.mass[k], q);
        Box<Vec3d> box = boundingBox(t.pos.data() + first, last - first);
        ASSERT_NEAR(t.poles.mass[i], m, 1e-11 * m) << "cell " << i;
        Vec3d d  = t.poles.com[i] - com;
        Vec3d e  = box.hi - box.lo;
        double l = std::max({e.x, e.y, e.z});
        ASSERT_LE(std::sqrt(dot(d, d)), 1e-11 * (l + std::sqrt(dot(com, com)))) << "cell " << i;
        double scale = m * l * l + 1e-300;
        for (double diff : {t.poles.quad[i].xx - q.xx, t.poles.quad[i].yy - q.yy, t.poles.quad[i].zz - q.zz,
                            t.poles.quad[i].xy - q.xy, t.poles.quad[i].xz - q.xz, t.poles.quad[i].yz - q.yz,
                            t.poles.quad[i].spread - q.spread})
        {
            ASSERT_LE(std::fabs(diff), 1e-10 * scale) << "cell " << i;
        }
        ASSERT_TRUE(
            sameBits(std::vector<Vec3d>{t.poles.boxMin[i], t.poles.boxMax[i]}, std::vector<Vec3d>{box.lo, box.hi}))
            << "cell " << i;
    }
}

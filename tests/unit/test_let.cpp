// Local Essential Trees (host/mpi/let.h) in one process: a group inside the box an essential tree was cut
// for meets, in the pruned tree, the nodes and leaves it meets in the full tree, in the same order, and feels
// bit-identical forces; the conservative acceptance never accepts a node that a group in the box opens; the
// byte form round-trips and a malformed one is refused.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/mac.h"
#include "host/core/parallel.h"
#include "host/models/galaxy.h"
#include "host/models/models.h"
#include "host/mpi/let.h"
#include "host/mpi/mpi_error.h"
#include "host/mpi/tree_walk.h"
#include "host/solver/solver.h"
#include "test_helpers.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;

/// Groups [first, first + count) of a packed tree, their bodies copied as probe targets (ranges from 0).
struct GroupSubset
{
    std::vector<I2> range;
    std::vector<F4> center, half, targets;

    GroupView view() const { return {range.data(), center.data(), half.data(), int32_t(range.size())}; }
    TargetView targetView() const { return {targets.data(), int32_t(targets.size()), false}; }
};

GroupSubset subsetOf(const PackedTree& p, int32_t first, int32_t count)
{
    GroupSubset s;
    for (int32_t g = first; g < first + count; ++g)
    {
        const I2 r = p.groupRange[g];
        s.range.push_back({int32_t(s.targets.size()), r.y});
        s.center.push_back(p.groupCenter[g]);
        s.half.push_back(p.groupHalf[g]);
        s.targets.insert(s.targets.end(), p.bodies.begin() + r.x, p.bodies.begin() + r.x + r.y);
    }
    return s;
}

/// Per group: its node list and leaf list, in the numbering of the tree they were cut from when source is
/// given; and the forces.
struct Walk
{
    std::vector<std::vector<int32_t>> nodes, leaves;
    std::vector<F4> out;
    InteractionTotals totals;
};

Walk walkFor(const TreeView& tree, const BodyView& bodies, const GroupSubset& s, float eps2,
             const std::vector<int32_t>* source = nullptr)
{
    TreeWalkScratch scratch;
    Walk w;
    w.totals                     = evaluateTreeCpu(tree, s.view(), bodies, s.targetView(), eps2, scratch);
    const InteractionLists& list = scratch.lists;
    auto name                    = [source](int32_t n) { return source ? (*source)[size_t(n)] : n; };
    for (size_t g = 0; g < s.range.size(); ++g)
    {
        std::vector<int32_t> nodes, leaves;
        for (int64_t k = list.nodeOffset[g]; k < list.nodeOffset[g + 1]; ++k) nodes.push_back(name(list.nodeList[k]));
        for (int64_t k = list.leafOffset[g]; k < list.leafOffset[g + 1]; ++k) leaves.push_back(name(list.leafList[k]));
        w.nodes.push_back(nodes);
        w.leaves.push_back(leaves);
    }
    w.out = scratch.out;
    return w;
}

bool bitIdentical(const std::vector<F4>& a, const std::vector<F4>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(F4)) == 0;
}

struct Case
{
    const char* model;
    double theta;
    Mac mac;
};

class EssentialTreeWalk : public ::testing::TestWithParam<Case>
{
};

ParticleSet modelOf(const char* name, int64_t n) { return makeModel(name, n, 7); }

/// The group subsets (first, count) an essential tree is cut for: a quarter of the groups, a thin slice, one
/// group, all of them.
std::vector<std::pair<int32_t, int32_t>> groupSubsets(int32_t numGroups)
{
    return {{0, numGroups / 4}, {numGroups / 2, std::max(1, numGroups / 20)}, {numGroups / 3, 1}, {0, numGroups}};
}

/// The essential tree of several group subsets (a quarter of the groups, a thin slice, one group, all of
/// them) against the full tree.
TEST_P(EssentialTreeWalk, ListsAndForcesEqualTheFullTree)
{
    const Case c               = GetParam();
    Parameters p               = test::cpuParameters(c.theta, 1e-4);
    p.mac                      = c.mac;
    const ParticleSet bodies   = modelOf(c.model, 1 << 13);
    const GravitySolver solver = test::evaluatedSolver(p, bodies);
    const PackedTree& packed   = solver.packedTree();
    const int32_t numGroups    = int32_t(packed.groupRange.size());
    const float eps2           = float(p.epsilon_squared);

    for (auto [first, count] : groupSubsets(numGroups))
    {
        SCOPED_TRACE("groups " + std::to_string(first) + " + " + std::to_string(count));
        const GroupSubset s     = subsetOf(packed, first, count);
        const EssentialTree let = buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBox(s.view()));
        const Walk full         = walkFor(packed.treeView(), packed.bodyView(), s, eps2);
        const Walk pruned       = walkFor(let.view(), let.bodyView(), s, eps2, &let.source);
        EXPECT_EQ(pruned.nodes, full.nodes);
        EXPECT_EQ(pruned.leaves, full.leaves);
        EXPECT_TRUE(bitIdentical(pruned.out, full.out));
        EXPECT_EQ(pruned.totals.nodes, full.totals.nodes);
        EXPECT_EQ(pruned.totals.leafBodies, full.totals.leafBodies);
        // Cut for the groups' boxes in runs (as ranks send them): the same walk, from no larger a tree.
        for (int32_t boxes : {2, 7, 64})
        {
            const EssentialTree cut =
                buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBoxes(s.view(), boxes));
            const Walk w = walkFor(cut.view(), cut.bodyView(), s, eps2, &cut.source);
            EXPECT_EQ(w.nodes, full.nodes) << boxes << " boxes";
            EXPECT_EQ(w.leaves, full.leaves) << boxes << " boxes";
            EXPECT_TRUE(bitIdentical(w.out, full.out)) << boxes << " boxes";
            EXPECT_LE(cut.numNodes(), let.numNodes()) << boxes << " boxes";
        }
        // A part of the groups needs a part of the bodies; one group, a part of the nodes too (at 2^13 bodies
        // the nodes a quarter of the groups can close are mostly leaves, whose count stays).
        if (count <= numGroups / 4) EXPECT_LT(let.bodies.size(), packed.bodies.size());
        if (count == 1) EXPECT_LT(let.numNodes(), packed.numInternal + packed.numLeaves);
        std::printf("  %d groups: %d of %d nodes, %zu of %zu bodies\n", count, let.numNodes(),
                    packed.numInternal + packed.numLeaves, let.bodies.size(), packed.bodies.size());
    }
}

INSTANTIATE_TEST_SUITE_P(Models, EssentialTreeWalk,
                         ::testing::Values(Case{"plummer", 0.5, Mac::Bonsai}, Case{"plummer", 0.3, Mac::Bonsai},
                                           Case{"plummer", 0.8, Mac::Octgrav}, Case{"galaxy", 0.5, Mac::Bonsai},
                                           Case{"merger", 0.6, Mac::Bonsai}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                             // A stable name (the default prints the model's pointer, which changes per run).
                             const int thetaPercent = static_cast<int>(info.param.theta * 100 + 0.5);
                             return std::string(info.param.model) + "_theta" + std::to_string(thetaPercent) +
                                    (info.param.mac == Mac::Octgrav ? "_octgrav" : "_bonsai");
                         });

struct PeriodicCase
{
    const char* model; ///< "clustered" or "uniform" (host/models/models.h's boxes)
    double theta;
    Mac mac;
    int pmGrid;
};

/// A periodic case's parameters and its solver, evaluated once on the case's 2^13 bodies.
struct PeriodicCaseTree
{
    Parameters p;
    GravitySolver solver;
};

PeriodicCaseTree periodicCaseTree(const PeriodicCase& c)
{
    Parameters p = test::cpuParameters(c.theta, 1e-6);
    p.mac        = c.mac;
    p.box_size   = 1.0;
    p.pm_grid    = c.pmGrid;
    p.asmth      = 1.25; // GADGET-2's split
    p.rcut       = 4.5;
    const ParticleSet bodies =
        std::string(c.model) == "clustered" ? makeClusteredBox(1 << 13, 1.0, 7) : makeUniformBox(1 << 13, 1.0, 7);
    return {p, test::evaluatedSolver(p, bodies)};
}

class ShortRangeEssentialTreeWalk : public ::testing::TestWithParam<PeriodicCase>
{
};

/// In a periodic box under TreePM: the essential tree of group subsets (some across the box's faces) walks like
/// the full tree, without the bodies beyond the short range's reach, and sends no node closed.
TEST_P(ShortRangeEssentialTreeWalk, ListsAndForcesEqualTheFullTree)
{
    const PeriodicCaseTree t = periodicCaseTree(GetParam());
    const PackedTree& packed = t.solver.packedTree();
    const TreeView tree      = packed.treeView();
    const int32_t numGroups  = int32_t(packed.groupRange.size());
    const float eps2         = float(t.p.epsilon_squared);
    for (auto [first, count] : groupSubsets(numGroups))
    {
        SCOPED_TRACE("groups " + std::to_string(first) + " + " + std::to_string(count));
        const GroupSubset s = subsetOf(packed, first, count);
        const Walk full     = walkFor(tree, packed.bodyView(), s, eps2);
        for (int32_t boxes : {1, 7, 64})
        {
            const EssentialTree let = buildEssentialTree(tree, packed.bodyView(), groupsBoxes(s.view(), boxes, true));
            const Walk pruned       = walkFor(let.view(tree.periodic), let.bodyView(), s, eps2, &let.source);
            EXPECT_EQ(pruned.nodes, full.nodes) << boxes << " boxes";
            EXPECT_EQ(pruned.leaves, full.leaves) << boxes << " boxes";
            EXPECT_TRUE(bitIdentical(pruned.out, full.out)) << boxes << " boxes";
            EXPECT_EQ(std::count(let.leafClosed.begin(), let.leafClosed.end(), uint8_t(1)), 0);
            // A slice of the groups needs a part of the bodies (a quarter of them, on a 16^3 mesh whose cutoff is
            // 0.35 L, may reach all).
            if (count <= numGroups / 20) EXPECT_LT(let.bodies.size(), packed.bodies.size()) << boxes << " boxes";
            if (boxes == 64)
            {
                std::printf("  %d groups: %d of %d nodes, %zu of %zu bodies\n", count, let.numNodes(),
                            packed.numInternal + packed.numLeaves, let.bodies.size(), packed.bodies.size());
            }
        }
    }
}

/// Whether every body of leaf n lies at or beyond the cutoff from every target of group g (nearest images, double).
bool leafBeyondTheCutoff(const PackedTree& packed, const GroupSubset& s, int32_t g, int32_t n, double cutoff)
{
    const I2 leaf  = packed.leafRange[size_t(n - packed.numInternal)];
    const I2 group = s.range[size_t(g)];
    const double L = packed.periodic.boxSize;
    auto wrap      = [L](double d) { return d - L * std::nearbyint(d / L); };
    for (int32_t j = leaf.x; j < leaf.x + leaf.y; ++j)
    {
        const F4 b = packed.bodies[size_t(j)];
        for (int32_t t = group.x; t < group.x + group.y; ++t)
        {
            const F4 a     = s.targets[size_t(t)];
            const double x = wrap(double(b.x) - a.x), y = wrap(double(b.y) - a.y), z = wrap(double(b.z) - a.z);
            if (x * x + y * y + z * z < cutoff * cutoff * (1 - 1e-6)) return false;
        }
    }
    return true;
}

/// TreePM's drop test bounds a node's extent by shortRangeNodeExtentFactor of its MAC radius, not the whole radius:
/// the walk lists fewer leaves, and every leaf that the whole radius would have listed and the tight bound drops
/// holds only bodies beyond the cutoff of its group's bodies, which add nothing; the forces stay within 1e-6 of the
/// whole radius's (a node dropped whole may have had a child accepted within the cutoff, which the split's
/// bodies beyond it do not need).
TEST_P(ShortRangeEssentialTreeWalk, TheTightExtentBoundDropsLeavesBeyondTheCutoff)
{
    const PeriodicCase c                       = GetParam();
    const PeriodicCaseTree t                   = periodicCaseTree(c);
    const PackedTree& packed                   = t.solver.packedTree();
    const TreeView tight                       = packed.treeView();
    TreeView whole                             = tight;
    whole.periodic.shortRange.nodeExtentFactor = c.mac == Mac::Octgrav ? 1.7320509f : 1.0f;
    ASSERT_LT(tight.periodic.shortRange.nodeExtentFactor, whole.periodic.shortRange.nodeExtentFactor);
    const GroupSubset s  = subsetOf(packed, 0, int32_t(packed.groupRange.size()));
    const float eps2     = float(t.p.epsilon_squared);
    const Walk withTight = walkFor(tight, packed.bodyView(), s, eps2);
    const Walk withWhole = walkFor(whole, packed.bodyView(), s, eps2);
    EXPECT_LT(withTight.totals.leafBodies, withWhole.totals.leafBodies);
    const double cutoff = tight.periodic.shortRange.cutoff;
    int64_t dropped     = 0;
    for (size_t g = 0; g < s.range.size(); ++g)
    {
        for (int32_t n : withWhole.leaves[g])
        {
            const std::vector<int32_t>& kept = withTight.leaves[g];
            if (std::find(kept.begin(), kept.end(), n) != kept.end()) continue;
            ++dropped;
            ASSERT_TRUE(leafBeyondTheCutoff(packed, s, int32_t(g), n, cutoff)) << "group " << g << ", leaf " << n;
        }
    }
    EXPECT_GT(dropped, 0);
    double worst = 0;
    for (size_t i = 0; i < withTight.out.size(); ++i)
    {
        const F4 a = withTight.out[i], b = withWhole.out[i];
        const double d = std::sqrt(double(a.x - b.x) * (a.x - b.x) + double(a.y - b.y) * (a.y - b.y) +
                                   double(a.z - b.z) * (a.z - b.z));
        worst          = std::max(worst, d / std::sqrt(double(b.x) * b.x + double(b.y) * b.y + double(b.z) * b.z));
    }
    std::printf("  leaf bodies %lld instead of %lld, %lld leaves dropped; largest force difference %.3g\n",
                (long long)withTight.totals.leafBodies, (long long)withWhole.totals.leafBodies, (long long)dropped,
                worst);
    EXPECT_LE(worst, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Boxes, ShortRangeEssentialTreeWalk,
                         ::testing::Values(PeriodicCase{"clustered", 0.5, Mac::Bonsai, 16},
                                           PeriodicCase{"clustered", 0.7, Mac::Octgrav, 32},
                                           PeriodicCase{"uniform", 0.6, Mac::Bonsai, 32}),
                         [](const ::testing::TestParamInfo<PeriodicCase>& info) {
                             const int thetaPercent = static_cast<int>(info.param.theta * 100 + 0.5);
                             return std::string(info.param.model) + "_theta" + std::to_string(thetaPercent) + "_pm" +
                                    std::to_string(info.param.pmGrid);
                         });

/// An essential tree of a periodic box needs TreePM's short range: the Ewald sum reaches every body.
TEST(EssentialTree, PeriodicWithoutTreePmIsRefused)
{
    Parameters p;
    p.backend                  = Backend::Cpu;
    p.box_size                 = 1.0;
    p.pm_grid                  = 0;
    const ParticleSet bodies   = makeUniformBox(1 << 10, 1.0, 3);
    const GravitySolver solver = test::evaluatedSolver(p, bodies);
    const PackedTree& packed   = solver.packedTree();
    EXPECT_THROW(buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBox(packed.groupView())),
                 ParameterError);
}

/// A packed Plummer sphere (2^12 bodies by default).
GravitySolver plummerSolver(int64_t n = 1 << 12, uint64_t seed = 3)
{
    return test::evaluatedSolver(test::cpuParameters(0.5, 1e-4), makePlummer(n, seed));
}

TEST(EssentialTree, DistantBoxGetsTheRootAlone)
{
    GravitySolver solver     = plummerSolver();
    const PackedTree& packed = solver.packedTree();
    GroupsBox far;
    far.lo                  = {1e4, 1e4, 1e4};
    far.hi                  = {1e4 + 1, 1e4 + 1, 1e4 + 1};
    far.numGroups           = 1;
    const EssentialTree let = buildEssentialTree(packed.treeView(), packed.bodyView(), far);
    EXPECT_EQ(let.numInternal, 0);
    EXPECT_EQ(let.numLeaves, 1);
    EXPECT_EQ(let.rootEntry, kLeafBit);
    EXPECT_TRUE(let.bodies.empty());
    EXPECT_EQ(let.leafClosed[0], 1);
    EXPECT_EQ(std::memcmp(&let.nodeCom[0], &packed.nodeCom[0], sizeof(F4)), 0);
}

/// Groups in two distant runs of the tree order (a rank's keys seldom make one box): their boxes cut a tree
/// smaller than their one union box does, and the walk is the full tree's.
TEST(EssentialTree, BoxesOfRunsCutLessThanOneBox)
{
    GravitySolver solver     = plummerSolver(1 << 14, 9);
    const PackedTree& packed = solver.packedTree();
    const int32_t numGroups  = int32_t(packed.groupRange.size());
    GroupSubset s            = subsetOf(packed, 0, numGroups / 8);
    const GroupSubset tail   = subsetOf(packed, numGroups - numGroups / 8, numGroups / 8);
    for (size_t g = 0; g < tail.range.size(); ++g)
    {
        s.range.push_back({int32_t(s.targets.size()), tail.range[g].y});
        s.center.push_back(tail.center[g]);
        s.half.push_back(tail.half[g]);
        s.targets.insert(s.targets.end(), tail.targets.begin() + tail.range[g].x,
                         tail.targets.begin() + tail.range[g].x + tail.range[g].y);
    }
    const EssentialTree one  = buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBox(s.view()));
    const EssentialTree many = buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBoxes(s.view(), 64));
    EXPECT_LT(many.numNodes(), one.numNodes());
    EXPECT_LT(many.bodies.size(), one.bodies.size());
    const float eps2 = float(solver.parameters().epsilon_squared);
    const Walk full  = walkFor(packed.treeView(), packed.bodyView(), s, eps2);
    const Walk w     = walkFor(many.view(), many.bodyView(), s, eps2, &many.source);
    EXPECT_EQ(w.nodes, full.nodes);
    EXPECT_EQ(w.leaves, full.leaves);
    EXPECT_TRUE(bitIdentical(w.out, full.out));
    std::printf("  two runs of groups: %d nodes and %zu bodies for one box, %d and %zu for 64\n", one.numNodes(),
                one.bodies.size(), many.numNodes(), many.bodies.size());
}

/// A run of consecutive groups that jumps across the box (the end of one coarse cell of the curve and the start of
/// the next) is halved until no box spans the jump.
TEST(EssentialTree, RunsAcrossAJumpAreHalved)
{
    // 128 groups along x in [0, 1), but group 40 sits at x = 100: the run holding it spans the gap.
    const int32_t n = 128;
    std::vector<I2> range(n);
    std::vector<F4> center(n), half(n, F4{0.002f, 0.002f, 0.002f, 0.0f});
    for (int32_t g = 0; g < n; ++g)
    {
        range[size_t(g)]  = {g, 1};
        center[size_t(g)] = {g == 40 ? 100.0f : float(g) / n, 0.5f, 0.5f, 0.0f};
    }
    const GroupView groups{range.data(), center.data(), half.data(), n};
    EXPECT_EQ(groupsBoxes(groups, 8).size(), 8u) << "halved without being asked";
    const std::vector<GroupsBox> boxes = groupsBoxes(groups, 8, true);
    EXPECT_GT(boxes.size(), 8u);
    EXPECT_LE(boxes.size(), 32u);
    int32_t covered = 0;
    for (const GroupsBox& b : boxes)
    {
        EXPECT_LT(b.hi.x - b.lo.x, 1.0) << "a box spans the jump";
        covered += b.numGroups;
    }
    EXPECT_EQ(covered, n);
}

TEST(EssentialTree, NoGroupsNoTree)
{
    GravitySolver solver     = plummerSolver();
    const PackedTree& packed = solver.packedTree();
    EXPECT_TRUE(buildEssentialTree(packed.treeView(), packed.bodyView(), GroupsBox{}).empty());
    std::vector<char> bytes;
    serializeEssentialTree(EssentialTree{}, bytes);
    EXPECT_TRUE(bytes.empty());
    EXPECT_TRUE(deserializeEssentialTree(nullptr, 0, "rank 1").empty());
}

/// A group outside the box meets closed nodes it would open: the check names it.
TEST(EssentialTree, GroupOutsideTheBoxIsCaught)
{
    GravitySolver solver     = plummerSolver();
    const PackedTree& packed = solver.packedTree();
    const int32_t numGroups  = int32_t(packed.groupRange.size());
    const GroupSubset inside = subsetOf(packed, 0, numGroups / 8);
    const GroupSubset other  = subsetOf(packed, numGroups - 1, 1);
    const EssentialTree let  = buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBox(inside.view()));
    TreeWalkScratch scratch;
    evaluateTreeCpu(let.view(), other.view(), let.bodyView(), other.targetView(), 1e-4f, scratch);
    try
    {
        checkClosedLeavesNotOpened(let, scratch.lists.leafOffset.data(), scratch.lists.leafList.data(), 1, "rank 5");
        FAIL() << "a group outside the box opened no closed node";
    }
    catch (const std::logic_error& e)
    {
        EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos) << e.what();
    }
}

TEST(EssentialTree, BytesRoundTrip)
{
    GravitySolver solver     = plummerSolver();
    const PackedTree& packed = solver.packedTree();
    const GroupSubset s      = subsetOf(packed, 10, 20);
    const EssentialTree let  = buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBox(s.view()));
    std::vector<char> bytes{'x'};
    serializeEssentialTree(let, bytes);
    const EssentialTree back = deserializeEssentialTree(bytes.data() + 1, bytes.size() - 1, "rank 2");
    EXPECT_EQ(back.numInternal, let.numInternal);
    EXPECT_EQ(back.numLeaves, let.numLeaves);
    EXPECT_EQ(back.depth, let.depth);
    EXPECT_EQ(back.rootEntry, let.rootEntry);
    EXPECT_EQ(back.farField2, let.farField2);
    EXPECT_TRUE(bitIdentical(back.nodeMac, let.nodeMac));
    EXPECT_TRUE(bitIdentical(back.nodeQuad, let.nodeQuad));
    EXPECT_TRUE(bitIdentical(back.bodies, let.bodies));
    EXPECT_EQ(back.leafClosed, let.leafClosed);
    const Walk a = walkFor(let.view(), let.bodyView(), s, 1e-4f);
    const Walk b = walkFor(back.view(), back.bodyView(), s, 1e-4f);
    EXPECT_TRUE(bitIdentical(a.out, b.out));
}

/// The bytes of the essential tree of packed for boxes, cut on the given number of threads.
std::vector<char> essentialBytes(const PackedTree& packed, const std::vector<GroupsBox>& boxes, int threads)
{
    const int saved = maxThreads();
    setThreadsOfThisThread(threads);
    std::vector<char> bytes;
    serializeEssentialTree(buildEssentialTree(packed.treeView(), packed.bodyView(), boxes), bytes);
    setThreadsOfThisThread(saved);
    return bytes;
}

// The cut settles a level's nodes and copies their words and bodies on the threads: the tree it sends is the same
// bytes for any thread count, isolated (closed nodes) and periodic (dropped ones) alike.
TEST(EssentialTree, SameBytesOnAnyThreadCount)
{
    GravitySolver isolated          = plummerSolver();
    const PeriodicCaseTree periodic = periodicCaseTree({"clustered", 0.5, Mac::Bonsai, 16});
    for (const PackedTree* packed : {&isolated.packedTree(), &periodic.solver.packedTree()})
    {
        const GroupSubset s                = subsetOf(*packed, 10, 40);
        const std::vector<GroupsBox> boxes = groupsBoxes(s.view(), 8, packed->treeView().periodic.boxSize > 0);
        const std::vector<char> one        = essentialBytes(*packed, boxes, 1);
        EXPECT_GT(one.size(), 1000u);
        for (int threads : {2, 3, 7}) EXPECT_EQ(essentialBytes(*packed, boxes, threads), one) << threads << " threads";
    }
}

/// The MpiError message of reading bytes, or "" when they are accepted.
std::string readError(const std::vector<char>& bytes)
{
    try
    {
        deserializeEssentialTree(bytes.data(), bytes.size(), "rank 3");
    }
    catch (const MpiError& e)
    {
        return e.what();
    }
    return "";
}

TEST(EssentialTree, MalformedBytesAreRefused)
{
    GravitySolver solver     = plummerSolver();
    const PackedTree& packed = solver.packedTree();
    const GroupSubset s      = subsetOf(packed, 0, 30);
    const EssentialTree let  = buildEssentialTree(packed.treeView(), packed.bodyView(), groupsBox(s.view()));
    ASSERT_GT(let.numInternal, 1);
    std::vector<char> good;
    serializeEssentialTree(let, good);
    EXPECT_EQ(readError(good), "");

    std::vector<char> truncated(good.begin(), good.end() - 5);
    EXPECT_NE(readError(truncated).find("rank 3"), std::string::npos);
    std::vector<char> longer = good;
    longer.push_back(0);
    EXPECT_NE(readError(longer).find("left over"), std::string::npos);
    std::vector<char> magic = good;
    magic[0] ^= 1;
    EXPECT_NE(readError(magic).find("header"), std::string::npos);
    // The first child word of the root: an internal node index beyond the tree.
    std::vector<char> child = good;
    const uint32_t bad      = uint32_t(let.numInternal + 7);
    std::memcpy(child.data() + 40, &bad, sizeof(bad));
    EXPECT_NE(readError(child).find("child entry"), std::string::npos) << readError(child);
}

/// The margins of acceptedByEveryGroup against acceptNode itself: random group boxes inside random boxes,
/// nodes placed near the acceptance distance (where float rounding decides), at several coordinate scales.
TEST(EssentialTree, AcceptedByTheBoxIsAcceptedByEveryGroupInIt)
{
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    int64_t acceptedByBox = 0;
    for (double scale : {1e-3, 1.0, 1e3, 1e6})
    {
        for (int trial = 0; trial < 20000; ++trial)
        {
            // A group box: float centre and half-size, within the rank's box below.
            const F4 c{float(scale * (u(rng) - 0.5)), float(scale * (u(rng) - 0.5)), float(scale * (u(rng) - 0.5)), 0};
            const F4 h{float(scale * 0.1 * u(rng)), float(scale * 0.1 * u(rng)), float(scale * 0.1 * u(rng)),
                       trial % 3 == 0 ? float(3 * u(rng)) : 0.0f};
            GroupsBox box;
            box.numGroups = 1;
            box.maxScale  = h.w;
            // The rank's box reaches the group box's faces exactly on some axes, where rounding matters most.
            const double grow = trial % 2 ? 0.0 : scale * 0.05 * u(rng);
            box.lo            = {double(c.x) - h.x - grow, double(c.y) - h.y, double(c.z) - h.z - grow};
            box.hi            = {double(c.x) + h.x, double(c.y) + h.y + grow, double(c.z) + h.z};
            // A node at a random direction, its radius set so the box's distance is within 5e-5 of it.
            const double dist = scale * (0.01 + u(rng));
            const F4 com{float(box.hi.x + dist * u(rng)), float(box.hi.y + dist * u(rng)),
                         float(box.lo.z - dist * u(rng)), 0};
            const double dx = std::max(double(com.x) - box.hi.x, 0.0), dy = std::max(double(com.y) - box.hi.y, 0.0),
                         dz = std::max(box.lo.z - double(com.z), 0.0);
            const double d2 = dx * dx + dy * dy + dz * dz;
            const F4 node{com.x, com.y, com.z, float(d2 / (1.0 + box.maxScale) * (1.0 - 1e-4 * (u(rng) - 0.5)))};
            if (!acceptedByEveryGroup(node, box)) continue;
            ++acceptedByBox;
            ASSERT_TRUE(acceptNode(node, c, h)) << "scale " << scale << " trial " << trial;
        }
    }
    EXPECT_GT(acceptedByBox, 1000);
}

} // namespace

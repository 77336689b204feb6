// The CPU twin's two passes: counts, lists and their coverage of the whole mass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/walk.h"
#include "host/cpu/walk_cpu.h"
#include "test_helpers.h"

using namespace octwalk;

namespace {

struct WalkCase
{
    const char* model;
    Mac mac;
    double theta;
    bool merge = false;
};

class WalkPasses : public ::testing::TestWithParam<WalkCase>
{
};

} // namespace

TEST_P(WalkPasses, CountsEqualWrittenLengthsAndListsCoverAllMass)
{
    WalkCase wc   = GetParam();
    ParticleSet b = makeModel(wc.model, 20000, 21);
    for (int64_t i = 0; i < b.size(); ++i) b.mass[i] *= 0.5 + double(i % 7) / 7.0; // unequal masses
    Parameters p   = test::cpuParameters(wc.theta);
    p.mac          = wc.mac;
    p.merge_groups = wc.merge;
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    s.computeForces(acc, pot);

    const PackedTree& pk = s.packedTree();
    TreeView tree        = pk.treeView();
    GroupView groups     = pk.groupView();
    WalkCounts counts;
    InteractionLists lists;
    int32_t overflowGroup = -1;
    counts.resize(groups.numGroups);
    countInteractionsCpu(tree, groups, counts.view(), &overflowGroup);
    ASSERT_EQ(overflowGroup, 0);
    lists.resizeOffsets(groups.numGroups);
    scanCountsCpu(counts.view(), lists.view());
    lists.resizeLists();
    writeInteractionsCpu(tree, groups, lists.view(), &overflowGroup);
    ASSERT_EQ(overflowGroup, 0);

    // Pass 2 once more, serially, each group into a buffer that no walk can overrun (a node is
    // reported at most once): what it writes is what pass 1 counted and what the lists hold.
    int32_t numNodes = tree.numInternal + tree.numLeaves;
    std::vector<int32_t> nodeOut(numNodes), leafOut(numNodes);
    std::vector<uint32_t> stack(walkStackCapacity(tree.depth));
    double total = 0;
    for (const F4& body : pk.bodies) total += body.w;
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        WriteSink sink{nodeOut.data(), leafOut.data()};
        ASSERT_EQ(walkGroup(tree, groups.center[g], groups.half[g], stack.data(), int32_t(stack.size()), sink),
                  WalkStatus::Ok);
        int64_t nodesWritten = sink.nodeOut - nodeOut.data(), leavesWritten = sink.leafOut - leafOut.data();
        ASSERT_EQ(counts.nodes[g], nodesWritten) << "group " << g;
        ASSERT_EQ(counts.leaves[g], leavesWritten) << "group " << g;
        ASSERT_EQ(lists.nodeOffset[g + 1] - lists.nodeOffset[g], nodesWritten) << "group " << g;
        ASSERT_EQ(lists.leafOffset[g + 1] - lists.leafOffset[g], leavesWritten) << "group " << g;
        ASSERT_TRUE(
            std::equal(nodeOut.begin(), nodeOut.begin() + nodesWritten, lists.nodeList.begin() + lists.nodeOffset[g]))
            << "group " << g;
        ASSERT_TRUE(
            std::equal(leafOut.begin(), leafOut.begin() + leavesWritten, lists.leafList.begin() + lists.leafOffset[g]))
            << "group " << g;
        double covered = 0;
        for (int64_t k = lists.nodeOffset[g]; k < lists.nodeOffset[g + 1]; ++k)
        {
            ASSERT_GE(lists.nodeList[k], 0);
            covered += tree.nodeCom[lists.nodeList[k]].w;
        }
        for (int64_t k = lists.leafOffset[g]; k < lists.leafOffset[g + 1]; ++k)
        {
            int32_t n = lists.leafList[k];
            ASSERT_GE(n, tree.numInternal);
            I2 r = tree.leafRange[n - tree.numInternal];
            for (int32_t j = r.x; j < r.x + r.y; ++j) covered += pk.bodies[j].w;
        }
        ASSERT_NEAR(covered / total, 1.0, 1e-5) << "group " << g << " does not see the whole mass exactly once";
    }
    // One function for the totals of both backends: sum over groups of count * group size.
    InteractionTotals totals = interactionTotals(groups, counts.view());
    EXPECT_EQ(totals.nodes, s.stats().nodeInteractions);
    EXPECT_EQ(totals.leafBodies - int64_t(pk.bodies.size()), s.stats().leafInteractions);
    // The solver's own lists are the same as this independent run.
    EXPECT_EQ(s.cpuLists().nodeOffset, lists.nodeOffset);
    EXPECT_EQ(s.cpuLists().leafOffset, lists.leafOffset);
    EXPECT_EQ(s.cpuLists().nodeList, lists.nodeList);
    EXPECT_EQ(s.cpuLists().leafList, lists.leafList);
}

INSTANTIATE_TEST_SUITE_P(
    BothMacs, WalkPasses,
    ::testing::Values(WalkCase{"plummer", Mac::Bonsai, 0.5}, WalkCase{"plummer", Mac::Octgrav, 0.5},
                      WalkCase{"hernquist", Mac::Bonsai, 0.75}, WalkCase{"hernquist", Mac::Octgrav, 0.3},
                      WalkCase{"uniform", Mac::Bonsai, 1.0}, WalkCase{"plummer", Mac::Bonsai, 0.5, true},
                      WalkCase{"plummer", Mac::Relative, 0.5}, WalkCase{"hernquist", Mac::Relative, 0.75, true}));

namespace {

/// Per packed node: the largest distance from its centre of mass to one of its bodies.
std::vector<double> nodeRadii(const HostTree& t, const PackedTree& pk)
{
    std::vector<double> radius(t.cells.size());
    for (int32_t i = 0; i < t.cells.size(); ++i)
    {
        double r = 0;
        for (int32_t k = t.cells.first[i]; k < t.cells.first[i] + t.cells.count[i]; ++k)
        {
            r = std::max(r, std::sqrt(dot(t.pos[k] - t.poles.com[i], t.pos[k] - t.poles.com[i])));
        }
        radius[pk.cellIndex[i]] = r;
    }
    return radius;
}

} // namespace

// Every node a group accepts is farther from each body of the group than any of the node's own
// bodies is from its centre of mass (a convergent expansion), for the relative MAC at theta 1.
TEST(Walk, RelativeMacAcceptsOnlyWellSeparatedNodes)
{
    ParticleSet b = makeModel("plummer", 20000, 5);
    Parameters p  = test::cpuParameters(1.0);
    p.mac         = Mac::Relative;
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    s.computeForces(acc, pot);
    const PackedTree& pk       = s.packedTree();
    const HostTree& t          = s.hostTree();
    const InteractionLists& l  = s.cpuLists();
    std::vector<double> radius = nodeRadii(t, pk);
    float smallest = HUGE_VALF, largest = 0;
    for (size_t g = 0; g < pk.groupRange.size(); ++g)
    {
        smallest = std::min(smallest, pk.groupHalf[g].w);
        largest  = std::max(largest, pk.groupHalf[g].w);
        I2 r     = pk.groupRange[g];
        for (int64_t k = l.nodeOffset[g]; k < l.nodeOffset[g + 1]; ++k)
        {
            int32_t n = l.nodeList[k];
            Vec3d com{pk.nodeCom[n].x, pk.nodeCom[n].y, pk.nodeCom[n].z};
            for (int32_t j = r.x; j < r.x + r.y; ++j)
            {
                Vec3d x{pk.bodies[j].x, pk.bodies[j].y, pk.bodies[j].z};
                ASSERT_GT(std::sqrt(dot(x - com, x - com)), radius[n])
                    << "group " << g << " node " << n << " body " << j;
            }
        }
    }
    // The groups' factors span the allowed range: Bonsai's criterion somewhere, far tighter elsewhere.
    EXPECT_EQ(smallest, 0.0f);
    EXPECT_GT(largest, 1.0f);
}

TEST(Walk, RelativeGroupScaleIsBoundedAndMonotone)
{
    float previous = -1.0f;
    for (float c : {0.01f, 0.5f, 1.0f, 2.0f, 8.0f, 1e3f, HUGE_VALF})
    {
        float w = relativeGroupScale(c, 1.0f);
        EXPECT_GE(w, previous) << c;
        EXPECT_GE(w, 0.0f) << c; // never looser than Bonsai's criterion
        EXPECT_LE(w, kRelativeMaxFactor * kRelativeMaxFactor - 1.0f) << c;
        previous = w;
    }
    EXPECT_FLOAT_EQ(relativeGroupScale(8.0f, 1.0f), 3.0f); // f = 2
    EXPECT_EQ(cancellation({0, 0, 0, -1}), HUGE_VALF);
    EXPECT_FLOAT_EQ(cancellation({3, 0, 4, -2}), 0.8f);
    // The scale multiplies the squared radius: 0 leaves the unscaled decision.
    F4 node{3, 0, 0, 4}, center{0, 0, 0, 0};
    EXPECT_TRUE(acceptNode(node, center, F4{0.5f, 0.5f, 0.5f, 0.0f}));     // 2.5^2 > 4
    EXPECT_FALSE(acceptNode(node, center, F4{0.5f, 0.5f, 0.5f, 0.5625f})); // 2.5^2 = 4 * 1.5625
}

TEST(Walk, SmallerThetaOpensMoreNodes)
{
    ParticleSet b   = makePlummer(20000, 3);
    double previous = 1e300;
    for (double theta : {0.2, 0.4, 0.6, 0.8})
    {
        GravitySolver s(test::cpuParameters(theta));
        s.setBodies(b.pos, b.mass, b.id);
        std::vector<Vec3d> acc;
        std::vector<double> pot;
        s.computeForces(acc, pot);
        double work = s.stats().nodesPerBody() + s.stats().leavesPerBody();
        EXPECT_LT(work, previous);
        previous = work;
    }
}

// The CPU twin's two passes: counts, lists and their coverage of the whole mass.
#include <gtest/gtest.h>

#include <algorithm>
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
                      WalkCase{"uniform", Mac::Bonsai, 1.0}, WalkCase{"plummer", Mac::Bonsai, 0.5, true}));

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

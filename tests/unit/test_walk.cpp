// The CPU twin's two passes: counts, lists and their coverage of the whole mass.
#include <gtest/gtest.h>

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
    WalkCase wc = GetParam();
    ParticleSet b = makeModel(wc.model, 20000, 21);
    for (int64_t i = 0; i < b.size(); ++i) b.mass[i] *= 0.5 + double(i % 7) / 7.0; // unequal masses
    Parameters p = test::cpuParameters(wc.theta);
    p.mac          = wc.mac;
    p.merge_groups = wc.merge;
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    s.computeForces(acc, pot);

    const PackedTree& pk = s.packedTree();
    TreeView tree = pk.treeView();
    GroupView groups = pk.groupView();
    WalkCounts counts;
    InteractionLists lists;
    std::vector<I2> written;
    countInteractionsCpu(tree, groups, counts);
    scanCountsCpu(counts, lists);
    writeInteractionsCpu(tree, groups, lists, &written);

    double total = 0;
    for (const F4& body : pk.bodies) total += body.w;
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        ASSERT_EQ(counts.nodes[g], written[g].x) << "group " << g;
        ASSERT_EQ(counts.leaves[g], written[g].y) << "group " << g;
        double covered = 0;
        for (int32_t k = lists.nodeOffset[g]; k < lists.nodeOffset[g + 1]; ++k)
        {
            ASSERT_GE(lists.nodeList[k], 0);
            covered += tree.nodeCom[lists.nodeList[k]].w;
        }
        for (int32_t k = lists.leafOffset[g]; k < lists.leafOffset[g + 1]; ++k)
        {
            int32_t n = lists.leafList[k];
            ASSERT_GE(n, tree.numInternal);
            I2 r = tree.leafRange[n - tree.numInternal];
            for (int32_t j = r.x; j < r.x + r.y; ++j) covered += pk.bodies[j].w;
        }
        ASSERT_NEAR(covered / total, 1.0, 1e-5) << "group " << g << " does not see the whole mass exactly once";
    }
    // The solver's own lists are the same as this independent run.
    EXPECT_EQ(s.cpuLists().nodeList, lists.nodeList);
    EXPECT_EQ(s.cpuLists().leafList, lists.leafList);
}

INSTANTIATE_TEST_SUITE_P(BothMacs, WalkPasses,
                         ::testing::Values(WalkCase{"plummer", Mac::Bonsai, 0.5}, WalkCase{"plummer", Mac::Octgrav, 0.5},
                                           WalkCase{"hernquist", Mac::Bonsai, 0.75},
                                           WalkCase{"hernquist", Mac::Octgrav, 0.3},
                                           WalkCase{"uniform", Mac::Bonsai, 1.0},
                                           WalkCase{"plummer", Mac::Bonsai, 0.5, true}));

TEST(Walk, SmallerThetaOpensMoreNodes)
{
    ParticleSet b = makePlummer(20000, 3);
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

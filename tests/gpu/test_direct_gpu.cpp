// directGpu (through GpuSolver::direct) against its CPU twin directCpu where the device splits the
// source range over warps (few targets), where it does not, at the edges of the split (one target,
// more targets than bodies), on the range-safe path (eps2 = 0, a mass beyond softenedMassLimit), and
// repeat runs bit for bit. Every test skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a
// failure (GPU CI).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/gravity.h"
#include "device/gpu_solver.h"
#include "host/core/random.h"
#include "host/cpu/direct_cpu.h"

namespace octwalk {
namespace {

constexpr float kEps2    = 1e-4f;
constexpr uint64_t kSeed = 20261122;
/// Twin tolerances, per target: the device uses rsqrtf and fused multiply-adds and sums in slices,
/// the host none of these (as GpuDirect.MatchesCpuTwin in test_gpu.cpp).
constexpr double kTwinMedian = 1e-5;
constexpr double kTwinMax    = 1e-4;
/// In double both round nearly the same sums to float.
constexpr double kTwinDouble = 1e-6;

void requireGpu()
{
    if (gpuAvailable()) return;
    const char* require = std::getenv("OCTWALK_REQUIRE_GPU");
    if (require && std::string(require) == "1") FAIL() << "no GPU but OCTWALK_REQUIRE_GPU=1";
    GTEST_SKIP() << "no CUDA device (" << gpuDescription() << ")";
}

class GpuDirectSplit : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

/// n bodies uniform in [-1, 1]^3, masses (0.5 .. 1.5) / n.
std::vector<F4> uniformBodies(int32_t n, uint64_t seed)
{
    Random rng(seed);
    std::vector<F4> bodies(size_t(n), F4{0, 0, 0, 0});
    for (F4& b : bodies)
    {
        b.x = float(2 * rng.uniform() - 1);
        b.y = float(2 * rng.uniform() - 1);
        b.z = float(2 * rng.uniform() - 1);
        b.w = float((0.5 + rng.uniform()) / n);
    }
    return bodies;
}

/// numTargets indices drawn from [0, n), repeats allowed.
std::vector<int32_t> randomTargets(int32_t numTargets, int32_t n, uint64_t seed)
{
    Random rng(seed);
    std::vector<int32_t> targets(static_cast<size_t>(numTargets));
    for (int32_t& t : targets) t = int32_t(rng.below(uint64_t(n)));
    return targets;
}

std::vector<F4> onDevice(const std::vector<F4>& bodies, const std::vector<int32_t>& targets, float eps2,
                         bool doubleAccumulate)
{
    GpuSolver device;
    std::vector<F4> out;
    double seconds = -1;
    device.direct({bodies.data(), int32_t(bodies.size())}, targets, eps2, doubleAccumulate, out, seconds);
    EXPECT_GE(seconds, 0.0);
    return out;
}

std::vector<F4> onHost(const std::vector<F4>& bodies, const std::vector<int32_t>& targets, float eps2,
                       bool doubleAccumulate)
{
    std::vector<F4> out(targets.size());
    directCpu({bodies.data(), int32_t(bodies.size())}, targets.data(), int32_t(targets.size()), eps2, doubleAccumulate,
              out.data());
    return out;
}

double relativeDifference(double value, double ref, double scale) { return std::fabs(value - ref) / scale; }

/// Per-target relative differences of acceleration (by |a_ref|) and potential (by |pot_ref|): the
/// median within medianTol, the largest within maxTol; every value finite.
void expectTwins(const std::vector<F4>& device, const std::vector<F4>& host, double medianTol, double maxTol)
{
    ASSERT_EQ(device.size(), host.size());
    std::vector<double> accErr, potErr;
    for (size_t t = 0; t < device.size(); ++t)
    {
        const F4& d = device[t];
        const F4& h = host[t];
        ASSERT_TRUE(std::isfinite(d.x) && std::isfinite(d.y) && std::isfinite(d.z) && std::isfinite(d.w))
            << "target " << t;
        const double norm = std::sqrt(double(h.x) * h.x + double(h.y) * h.y + double(h.z) * h.z);
        const double dx = double(d.x) - h.x, dy = double(d.y) - h.y, dz = double(d.z) - h.z;
        accErr.push_back(norm > 0 ? std::sqrt(dx * dx + dy * dy + dz * dz) / norm
                                  : std::fabs(dx) + std::fabs(dy) + std::fabs(dz));
        potErr.push_back(h.w != 0 ? relativeDifference(d.w, h.w, std::fabs(h.w)) : std::fabs(d.w));
    }
    for (std::vector<double>* e : {&accErr, &potErr})
    {
        std::sort(e->begin(), e->end());
        const char* what = e == &accErr ? "acceleration" : "potential";
        EXPECT_LE((*e)[e->size() / 2], medianTol) << what << " median";
        EXPECT_LE(e->back(), maxTol) << what << " max";
    }
}

void expectTwinsBothPrecisions(const std::vector<F4>& bodies, const std::vector<int32_t>& targets, float eps2)
{
    for (bool doubleAccumulate : {false, true})
    {
        SCOPED_TRACE(doubleAccumulate ? "double accumulation" : "float accumulation");
        std::vector<F4> device = onDevice(bodies, targets, eps2, doubleAccumulate);
        std::vector<F4> host   = onHost(bodies, targets, eps2, doubleAccumulate);
        if (doubleAccumulate) expectTwins(device, host, kTwinDouble, kTwinDouble);
        else expectTwins(device, host, kTwinMedian, kTwinMax);
    }
}

bool bitIdentical(const std::vector<F4>& a, const std::vector<F4>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(F4)) == 0;
}

TEST_F(GpuDirectSplit, FewTargetsMatchCpuTwin)
{
    std::vector<F4> bodies = uniformBodies(50000, kSeed);
    expectTwinsBothPrecisions(bodies, randomTargets(100, 50000, kSeed + 1), kEps2);
}

TEST_F(GpuDirectSplit, ManyTargetsMatchCpuTwin)
{
    std::vector<F4> bodies = uniformBodies(20000, kSeed);
    std::vector<int32_t> all(bodies.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = int32_t(i);
    expectTwinsBothPrecisions(bodies, all, kEps2);
}

TEST_F(GpuDirectSplit, OneTargetMatchesCpuTwin)
{
    std::vector<F4> bodies = uniformBodies(30001, kSeed);
    expectTwinsBothPrecisions(bodies, {30000}, kEps2);
}

/// More targets than bodies (each body many times) and fewer bodies than one tile of sources.
TEST_F(GpuDirectSplit, MoreTargetsThanBodiesMatchCpuTwin)
{
    std::vector<F4> bodies = uniformBodies(37, kSeed);
    expectTwinsBothPrecisions(bodies, randomTargets(1000, 37, kSeed + 2), kEps2);
}

/// eps2 = 0 rules bodyBodySoftened out: every tile takes bodyBody with the own body massless.
TEST_F(GpuDirectSplit, UnsoftenedMatchesCpuTwin)
{
    ASSERT_LT(softenedMassLimit(0.0f), 0.0f);
    std::vector<F4> bodies = uniformBodies(5000, kSeed);
    expectTwinsBothPrecisions(bodies, randomTargets(200, 5000, kSeed + 3), 0.0f);
}

/// A mass whose m/eps^3 overflows float must take bodyBody: the bodies near it get finite,
/// twin-matching forces (bodyBodySoftened would give inf there).
TEST_F(GpuDirectSplit, HeavyMassTakesRangeSafeFormula)
{
    std::vector<F4> bodies = uniformBodies(3000, kSeed);
    const float heavy      = 1e33f;
    ASSERT_GT(heavy, softenedMassLimit(kEps2));
    bodies[1234].w = heavy;
    bodies[1235]   = {bodies[1234].x + 1e-4f, bodies[1234].y, bodies[1234].z, bodies[1235].w};
    std::vector<int32_t> targets{1235, 1234, 0, 2999};
    expectTwinsBothPrecisions(bodies, targets, kEps2);
}

TEST_F(GpuDirectSplit, RepeatedCallsAreBitIdentical)
{
    std::vector<F4> bodies    = uniformBodies(1 << 17, kSeed);
    std::vector<int32_t> few  = randomTargets(256, 1 << 17, kSeed + 4);
    std::vector<int32_t> many = randomTargets(1 << 15, 1 << 17, kSeed + 5);
    for (const std::vector<int32_t>* targets : {&few, &many})
    {
        for (bool doubleAccumulate : {false, true})
        {
            SCOPED_TRACE(std::to_string(targets->size()) + (doubleAccumulate ? " targets, double" : " targets, float"));
            std::vector<F4> first  = onDevice(bodies, *targets, kEps2, doubleAccumulate);
            std::vector<F4> second = onDevice(bodies, *targets, kEps2, doubleAccumulate);
            EXPECT_TRUE(bitIdentical(first, second));
        }
    }
}

} // namespace
} // namespace octwalk

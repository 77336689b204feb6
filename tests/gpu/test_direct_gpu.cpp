// directGpu (through GpuSolver::direct) against its CPU twin directCpu where the device splits the
// source range over warps (few targets), where it does not, at the edges of the split (one target,
// more targets than bodies), on the range-safe path (eps2 = 0, a mass beyond softenedMassLimit), and
// repeat runs bit for bit; each kernel variant (DirectKernelConfig) the same way. Every test skips
// without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a failure (GPU CI).
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
#include "gpu/gpu_test_util.h"

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
                         bool doubleAccumulate, const DirectKernelConfig& config = {})
{
    GpuSolver device;
    std::vector<F4> out;
    double seconds = -1;
    device.direct({bodies.data(), int32_t(bodies.size())}, targets, eps2, doubleAccumulate, out, seconds, config);
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

/// Each variant of directTuningVariants against the CPU twin on the cases above that change its launch
/// shape (one target, few, many, more targets than bodies; the range-safe paths), and bit for bit on
/// repeats. The host sums are computed once per case.
class GpuDirectVariant : public ::testing::TestWithParam<DirectKernelConfig>
{
protected:
    void SetUp() override { requireGpu(); }

    struct Case
    {
        std::vector<F4> bodies;
        std::vector<int32_t> targets;
        float eps2;
        std::vector<F4> host[2]; ///< float, double accumulation
    };

    static const std::vector<Case>& cases()
    {
        static const std::vector<Case> all = [] {
            std::vector<Case> c;
            auto add = [&c](std::vector<F4> bodies, std::vector<int32_t> targets, float eps2) {
                Case k{std::move(bodies), std::move(targets), eps2, {}};
                for (int d = 0; d < 2; ++d) k.host[d] = onHost(k.bodies, k.targets, k.eps2, d == 1);
                c.push_back(std::move(k));
            };
            add(uniformBodies(30001, kSeed), {30000}, kEps2);
            add(uniformBodies(50000, kSeed), randomTargets(100, 50000, kSeed + 1), kEps2);
            std::vector<int32_t> all(12000);
            for (size_t i = 0; i < all.size(); ++i) all[i] = int32_t(i);
            add(uniformBodies(12000, kSeed), all, kEps2);
            add(uniformBodies(37, kSeed), randomTargets(1000, 37, kSeed + 2), kEps2);
            add(uniformBodies(5000, kSeed), randomTargets(200, 5000, kSeed + 3), 0.0f);
            std::vector<F4> heavy = uniformBodies(3000, kSeed);
            heavy[1234].w         = 1e33f;
            heavy[1235]           = {heavy[1234].x + 1e-4f, heavy[1234].y, heavy[1234].z, heavy[1235].w};
            add(heavy, {1235, 1234, 0, 2999}, kEps2);
            return c;
        }();
        return all;
    }
};

TEST_P(GpuDirectVariant, MatchesCpuTwin)
{
    for (const Case& c : cases())
    {
        for (bool doubleAccumulate : {false, true})
        {
            SCOPED_TRACE(std::to_string(c.bodies.size()) + " bodies, " + std::to_string(c.targets.size()) +
                         " targets, eps2 " + std::to_string(c.eps2) + (doubleAccumulate ? ", double" : ", float"));
            std::vector<F4> device      = onDevice(c.bodies, c.targets, c.eps2, doubleAccumulate, GetParam());
            const std::vector<F4>& host = c.host[doubleAccumulate ? 1 : 0];
            if (doubleAccumulate) expectTwins(device, host, kTwinDouble, kTwinDouble);
            else expectTwins(device, host, kTwinMedian, kTwinMax);
        }
    }
}

TEST_P(GpuDirectVariant, RepeatedCallsAreBitIdentical)
{
    std::vector<F4> bodies = uniformBodies(1 << 17, kSeed);
    for (int32_t numTargets : {64, 1 << 14})
    {
        std::vector<int32_t> targets = randomTargets(numTargets, 1 << 17, kSeed + 4);
        for (bool doubleAccumulate : {false, true})
        {
            SCOPED_TRACE(std::to_string(numTargets) + (doubleAccumulate ? " targets, double" : " targets, float"));
            std::vector<F4> first  = onDevice(bodies, targets, kEps2, doubleAccumulate, GetParam());
            std::vector<F4> second = onDevice(bodies, targets, kEps2, doubleAccumulate, GetParam());
            EXPECT_TRUE(bitIdentical(first, second));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuDirectVariant, ::testing::ValuesIn(directTuningVariants()),
                         [](const ::testing::TestParamInfo<DirectKernelConfig>& info) {
                             return directVariantName(info.param);
                         });

/// The batched reduction adds the same partial sums in the same order: the same bits as the plain
/// one, for both splits, where a lane has more than one batch of slices (64 targets, 2^17 sources).
TEST_F(GpuDirectSplit, BatchedReduceIsBitIdenticalToPlain)
{
    std::vector<F4> bodies       = uniformBodies(1 << 17, kSeed);
    std::vector<int32_t> targets = randomTargets(64, 1 << 17, kSeed + 6);
    for (DirectSplit split : {DirectSplit::OneWave, DirectSplit::Balanced, DirectSplit::Dynamic})
    {
        for (bool doubleAccumulate : {false, true})
        {
            DirectKernelConfig plain{4, 64, split, false};
            DirectKernelConfig batched{4, 64, split, true};
            SCOPED_TRACE(directVariantName(plain) + (doubleAccumulate ? ", double" : ", float"));
            EXPECT_TRUE(bitIdentical(onDevice(bodies, targets, kEps2, doubleAccumulate, plain),
                                     onDevice(bodies, targets, kEps2, doubleAccumulate, batched)));
        }
    }
}

TEST(DirectKernelConfigTest, RejectsVariantsThatAreNotBuilt)
{
    EXPECT_THROW(checkDirectConfig({3, 64, DirectSplit::OneWave, false}), ParameterError);
    EXPECT_THROW(checkDirectConfig({4, 96, DirectSplit::OneWave, false}), ParameterError);
    for (const DirectKernelConfig& c : directTuningVariants())
        EXPECT_NO_THROW(checkDirectConfig(c)) << directVariantName(c);
}

} // namespace
} // namespace octwalk

// The CPU twin of the device's direct-summation kernel (host/cpu/direct_cpu.h) against the
// double-precision reference (host/reference/direct.h), on the float32 bodies both twins read, so
// the comparison isolates the accumulation. eps > 0 so that softening cannot be dropped unseen.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/gravity.h"
#include "host/core/random.h"
#include "host/cpu/direct_cpu.h"
#include "host/models/models.h"
#include "host/reference/direct.h"
#include "host/reference/error_stats.h"

namespace octwalk {
namespace {

constexpr double kEps2 = 1e-4;

class DirectCpu : public ::testing::Test
{
protected:
    void SetUp() override
    {
        ParticleSet b = makePlummer(4096, 11);
        int64_t n     = b.size();
        bodies_.resize(n);
        std::vector<Vec3d> pos(n);
        std::vector<double> mass(n);
        for (int64_t i = 0; i < n; ++i)
        {
            bodies_[i] = {float(b.pos[i].x), float(b.pos[i].y), float(b.pos[i].z), float(b.mass[i])};
            pos[i]     = {bodies_[i].x, bodies_[i].y, bodies_[i].z};
            mass[i]    = bodies_[i].w;
        }
        std::vector<int64_t> sample = sampleIndices(n, 500, 5);
        sample.push_back(0); // the first and the last body: the skip by index at both ends
        sample.push_back(n - 1);
        targets_.assign(sample.begin(), sample.end());
        directSum(pos.data(), mass.data(), n, sample, double(float(kEps2)), 1.0, accRef_, potRef_);
    }

    void run(bool doubleAccumulate, std::vector<Vec3d>& acc, std::vector<double>& pot) const
    {
        std::vector<F4> out(targets_.size());
        directCpu({bodies_.data(), int32_t(bodies_.size())}, targets_.data(), int32_t(targets_.size()), float(kEps2),
                  doubleAccumulate, out.data());
        for (const F4& f : out)
        {
            acc.push_back({f.x, f.y, f.z});
            pot.push_back(f.w);
        }
    }

    static std::vector<double> potentialErrors(const std::vector<double>& pot, const std::vector<double>& ref)
    {
        std::vector<double> err(pot.size());
        for (size_t i = 0; i < pot.size(); ++i) err[i] = std::fabs(pot[i] - ref[i]) / std::fabs(ref[i]);
        return err;
    }

    std::vector<F4> bodies_;
    std::vector<int32_t> targets_;
    std::vector<Vec3d> accRef_;
    std::vector<double> potRef_;
};

TEST_F(DirectCpu, DoubleAccumulationEqualsReferenceToFloatRounding)
{
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    run(true, acc, pot);
    // The same double sums as the reference, rounded once to float (2^-24 = 6e-8 per component).
    ErrorStats a = errorStats(relativeErrors(acc, accRef_));
    ErrorStats p = errorStats(potentialErrors(pot, potRef_));
    EXPECT_LE(a.max, 2e-7) << "acceleration, median " << a.median;
    EXPECT_LE(p.max, 1e-7) << "potential, median " << p.median;
}

TEST_F(DirectCpu, FloatAccumulationIsCloseToReference)
{
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    run(false, acc, pot);
    ErrorStats a = errorStats(relativeErrors(acc, accRef_));
    ErrorStats p = errorStats(potentialErrors(pot, potRef_));
    EXPECT_LE(a.median, 1e-5) << "acceleration, max " << a.max;
    EXPECT_LE(a.p99, 1e-4) << "acceleration, max " << a.max;
    EXPECT_LE(p.median, 1e-5) << "potential, max " << p.max;
    EXPECT_LE(p.max, 1e-4) << "potential, median " << p.median;
}

/// bodyBodySoftened is bodyBody by another route: equal to rounding for softened pairs in both precisions.
TEST(SoftenedPair, EqualsBodyBodyToRounding)
{
    Random rng(3);
    for (int k = 0; k < 1000; ++k)
    {
        const Vec3d d{2 * rng.uniform() - 1, 2 * rng.uniform() - 1, 2 * rng.uniform() - 1};
        const double m = 0.5 + rng.uniform(), eps2 = 1e-6 + 1e-2 * rng.uniform();
        Vec3d accFast{0, 0, 0}, accRef{0, 0, 0};
        double potFast = 0, potRef = 0;
        bodyBodySoftened(d, m, eps2, accFast, potFast);
        bodyBody(d, m, eps2, accRef, potRef);
        const double scale = std::sqrt(dot(accRef, accRef));
        EXPECT_LE(std::sqrt(dot(accFast - accRef, accFast - accRef)), 1e-14 * scale) << "pair " << k;
        EXPECT_LE(std::fabs(potFast - potRef), 1e-14 * std::fabs(potRef)) << "pair " << k;

        const Vec3f df{float(d.x), float(d.y), float(d.z)};
        Vec3f accFastF{0, 0, 0}, accRefF{0, 0, 0};
        float potFastF = 0, potRefF = 0;
        bodyBodySoftened(df, float(m), float(eps2), accFastF, potFastF);
        bodyBody(df, float(m), float(eps2), accRefF, potRefF);
        const double scaleF = std::sqrt(double(dot(accRefF, accRefF)));
        const Vec3f diff    = accFastF - accRefF;
        EXPECT_LE(std::sqrt(double(dot(diff, diff))), 1e-6 * scaleF) << "pair " << k;
        EXPECT_LE(std::fabs(double(potFastF) - potRefF), 1e-6 * std::fabs(double(potRefF))) << "pair " << k;
    }
}

/// At the mass limit the closest possible pair (d = 0, r = eps) stays finite; below kMinSoftenedEps2,
/// at eps2 = 0 and for NaN the limit rules bodyBodySoftened out.
TEST(SoftenedPair, MassLimitKeepsTheClosestPairFinite)
{
    for (float eps2 : {kMinSoftenedEps2, 1e-20f, 1e-10f, 1e-4f, 1.0f, 1e10f})
    {
        const float m = softenedMassLimit(eps2);
        ASSERT_GT(m, 0.0f) << "eps2 " << eps2;
        for (Vec3f d : {Vec3f{0, 0, 0}, Vec3f{std::sqrt(eps2), 0, 0}})
        {
            Vec3f acc{0, 0, 0};
            float pot = 0;
            bodyBodySoftened(d, m, eps2, acc, pot);
            EXPECT_TRUE(std::isfinite(acc.x) && std::isfinite(pot)) << "eps2 " << eps2 << ", |d| " << d.x;
        }
    }
    EXPECT_LT(softenedMassLimit(0.0f), 0.0f);
    EXPECT_LT(softenedMassLimit(kMinSoftenedEps2 / 2), 0.0f);
    EXPECT_LT(softenedMassLimit(std::nanf("")), 0.0f);
}

/// A mass beyond the limit takes bodyBody in the float twin: a body 1e-4 from a mass of 1e33 feels a
/// finite pull (m/eps^3 = 1e39 would overflow through bodyBodySoftened), as the double sum has it.
TEST(DirectCpuRange, HeavyMassTakesRangeSafeFormula)
{
    const float eps2 = 1e-4f;
    ASSERT_GT(1e33f, softenedMassLimit(eps2));
    std::vector<F4> bodies{{0, 0, 0, 1e33f}, {1e-4f, 0, 0, 1e-3f}, {0.5f, 0.25f, 0, 1e-3f}};
    std::vector<int32_t> targets{1, 2};
    std::vector<F4> f(targets.size()), d(targets.size());
    directCpu({bodies.data(), 3}, targets.data(), 2, eps2, false, f.data());
    directCpu({bodies.data(), 3}, targets.data(), 2, eps2, true, d.data());
    for (size_t t = 0; t < targets.size(); ++t)
    {
        ASSERT_TRUE(std::isfinite(f[t].x) && std::isfinite(f[t].w)) << "target " << t;
        EXPECT_NEAR(f[t].x, d[t].x, 1e-6 * std::fabs(d[t].x)) << "target " << t;
        EXPECT_NEAR(f[t].w, d[t].w, 1e-6 * std::fabs(d[t].w)) << "target " << t;
    }
}

} // namespace
} // namespace octwalk

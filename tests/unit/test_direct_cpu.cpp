// The CPU twin of the device's direct-summation kernel (host/cpu/direct_cpu.h) against the
// double-precision reference (host/reference/direct.h), on the float32 bodies both twins read, so
// the comparison isolates the accumulation. eps > 0 so that softening cannot be dropped unseen.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

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

} // namespace
} // namespace octwalk

// The device's particle mesh (device/pm_gpu.h) against its CPU twin, the host's mesh (host/pm/pm_mesh.h), on the
// same bodies: CIC and TSC, even and odd meshes, uniform and clustered boxes, G != 1. The two differ only in the
// order of their sums and in the fixed point of the device's mass assignment, so they agree to far below any
// force error of the split. The device's results repeat bit for bit, and a bad body is named as the host names
// it. Every test skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "device/gpu_solver.h"
#include "device/pm_gpu.h"
#include "host/models/models.h"
#include "host/pm/pm_mesh.h"

namespace octwalk {
namespace {

constexpr double kG = 2.5;
/// The largest difference allowed between the meshes, relative to the largest magnitude of each field. The
/// fixed point keeps about 2^-38 of a body's mass per share, the transforms differ by rounding: 1e-9 leaves
/// room for both and is still far below the split's own error (1e-4 and more).
constexpr double kMeshTwinTolerance = 1e-9;

void requireGpu()
{
    if (gpuAvailable()) return;
    const char* require = std::getenv("OCTWALK_REQUIRE_GPU");
    if (require && std::string(require) == "1") FAIL() << "no GPU but OCTWALK_REQUIRE_GPU=1";
    GTEST_SKIP() << "no CUDA device (" << gpuDescription() << ")";
}

struct MeshCase
{
    bool clustered;
    int meshSize;
    MassAssignment assignment;
    double asmth;
    const char* name;
};

std::string caseName(const ::testing::TestParamInfo<MeshCase>& info) { return info.param.name; }

/// gtest prints a case by its name (its bytes hold padding).
void PrintTo(const MeshCase& c, std::ostream* os) { *os << c.name; }

class GpuPmMesh : public ::testing::TestWithParam<MeshCase>
{
protected:
    void SetUp() override { requireGpu(); }
};

/// max |a - b| over max |b|, over every body and component.
double relativeDifference(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < b.size(); ++i)
    {
        worst = std::max({worst, std::fabs(a[i].x - b[i].x), std::fabs(a[i].y - b[i].y), std::fabs(a[i].z - b[i].z)});
        scale = std::max({scale, std::fabs(b[i].x), std::fabs(b[i].y), std::fabs(b[i].z)});
    }
    return worst / scale;
}

double relativeDifference(const std::vector<double>& a, const std::vector<double>& b)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < b.size(); ++i)
    {
        worst = std::max(worst, std::fabs(a[i] - b[i]));
        scale = std::max(scale, std::fabs(b[i]));
    }
    return worst / scale;
}

TEST_P(GpuPmMesh, MatchesTheHostMeshAndRepeatsBitForBit)
{
    const MeshCase& c        = GetParam();
    const double L           = 3.0;
    const int64_t n          = int64_t(1) << 15;
    const ParticleSet bodies = c.clustered ? makeClusteredBox(n, L, 20261129) : makeUniformBox(n, L, 20261130);
    PmMesh host(L, c.meshSize, c.asmth, c.assignment, kG);
    GpuMesh device(L, c.meshSize, c.asmth, c.assignment, kG);
    EXPECT_EQ(device.meshSize(), host.meshSize());
    EXPECT_EQ(device.splitScale(), host.splitScale());
    std::vector<Vec3d> hostAcc, acc, again;
    std::vector<double> hostPot, pot, potAgain;
    host.computeForces(bodies.pos.data(), bodies.mass.data(), n, hostAcc, hostPot);
    // Ordinary memory here (the solver's arrays are page-locked): either is copied right.
    acc.resize(size_t(n));
    pot.resize(size_t(n));
    again.resize(size_t(n));
    potAgain.resize(size_t(n));
    device.computeForces(bodies.pos.data(), bodies.mass.data(), n, acc.data(), pot.data());
    const double accDifference = relativeDifference(acc, hostAcc), potDifference = relativeDifference(pot, hostPot);
    std::printf("%s: device mesh against the host's: acceleration %.3g, potential %.3g (%.3g s on the device)\n",
                c.name, accDifference, potDifference, device.timings().total());
    EXPECT_LE(accDifference, kMeshTwinTolerance);
    EXPECT_LE(potDifference, kMeshTwinTolerance);
    EXPECT_GT(device.timings().total(), 0.0);

    device.computeForces(bodies.pos.data(), bodies.mass.data(), n, again.data(), potAgain.data());
    for (int64_t i = 0; i < n; ++i)
    {
        ASSERT_EQ(std::memcmp(&acc[i], &again[i], sizeof(Vec3d)), 0) << "body " << i;
        ASSERT_EQ(std::memcmp(&pot[i], &potAgain[i], sizeof(double)), 0) << "body " << i;
    }
}

std::vector<MeshCase> meshCases()
{
    return {
        {false, 32, MassAssignment::Tsc, 1.25, "uniform_tsc32"},
        {true, 32, MassAssignment::Tsc, 1.25, "clustered_tsc32"},
        {true, 32, MassAssignment::Cic, 1.25, "clustered_cic32"},
        // An odd mesh has no Nyquist plane; the slopes there are all kept.
        {true, 27, MassAssignment::Tsc, 2.0, "clustered_tsc27_asmth2"},
        {false, 27, MassAssignment::Cic, 1.25, "uniform_cic27"},
        {true, 64, MassAssignment::Tsc, 1.25, "clustered_tsc64"},
    };
}

INSTANTIATE_TEST_SUITE_P(Boxes, GpuPmMesh, ::testing::ValuesIn(meshCases()), caseName);

class GpuPmMeshInput : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

/// The message of what computeForces throws, or "" when it throws nothing.
template<class Compute>
std::string errorOf(Compute compute)
{
    try
    {
        compute();
    }
    catch (const InputError& e)
    {
        return e.what();
    }
    return "";
}

TEST_F(GpuPmMeshInput, NamesTheFirstBadBodyAsTheHostMeshDoes)
{
    const double L = 2.0;
    PmMesh host(L, 16, 1.25, MassAssignment::Tsc, 1.0);
    GpuMesh device(L, 16, 1.25, MassAssignment::Tsc, 1.0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    struct Bad
    {
        Vec3d pos;
        double mass;
    };
    for (const Bad& bad : {Bad{{0.5, 2.0, 0.5}, 1.0}, Bad{{-1e-9, 0.5, 0.5}, 1.0}, Bad{{0.5, 0.5, nan}, 1.0},
                           Bad{{0.5, 0.5, 0.5}, std::numeric_limits<double>::infinity()}})
    {
        std::vector<Vec3d> pos(100, Vec3d{1.0, 1.0, 1.0});
        std::vector<double> mass(100, 0.01);
        pos[37]  = bad.pos;
        mass[37] = bad.mass;
        pos[80]  = {5.0, 0.0, 0.0};
        std::vector<Vec3d> acc(100);
        std::vector<double> pot(100);
        const std::string expected = errorOf([&] { host.computeForces(pos.data(), mass.data(), 100, acc, pot); });
        ASSERT_NE(expected.find("body 37"), std::string::npos) << expected;
        EXPECT_EQ(errorOf([&] { device.computeForces(pos.data(), mass.data(), 100, acc.data(), pot.data()); }),
                  expected);
    }
    // The mesh is still usable after a refused call.
    std::vector<Vec3d> pos(8, Vec3d{1.0, 1.0, 1.0}), acc(8);
    std::vector<double> mass(8, 0.125), pot(8);
    EXPECT_EQ(errorOf([&] { device.computeForces(pos.data(), mass.data(), 8, acc.data(), pot.data()); }), "");
}

TEST_F(GpuPmMeshInput, RefusesTheParametersTheHostMeshRefuses)
{
    EXPECT_THROW(GpuMesh(0.0, 16, 1.25, MassAssignment::Tsc, 1.0), ParameterError);
    EXPECT_THROW(GpuMesh(1.0, 1, 1.25, MassAssignment::Tsc, 1.0), ParameterError);
    EXPECT_THROW(GpuMesh(1.0, 16, -1.0, MassAssignment::Tsc, 1.0), ParameterError);
    EXPECT_THROW(GpuMesh(1.0, 16, 1.25, MassAssignment::Tsc, std::nan("")), ParameterError);
}

TEST_F(GpuPmMeshInput, NoBodiesGiveNoForces)
{
    GpuMesh device(1.0, 16, 1.25, MassAssignment::Cic, 1.0);
    device.computeForces(nullptr, nullptr, 0, nullptr, nullptr);
    EXPECT_EQ(device.timings().total(), 0.0);
}

} // namespace
} // namespace octwalk

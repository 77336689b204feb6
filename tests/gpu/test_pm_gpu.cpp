// The device's particle mesh (device/pm_gpu.h) against its CPU twin, the host's mesh (host/pm/pm_mesh.h), on the
// same bodies: CIC and TSC, even and odd meshes, uniform and clustered boxes, G != 1. The two differ in the
// order of their sums, in the fixed point of the device's mass assignment and in the precision of its fields and
// transforms (single), so they agree to far below any force error of the split. The device's results repeat bit for bit, and a bad body is named as the host names
// it. The entry point for bodies already on the device adds computeForces' results into the tree's, rounded as
// the host adds them, bit for bit, and takes bodies that drifted out of the box by their wrapped positions. Every
// test skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a failure.
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
#include "common/integrate.h"
#include "common/treepm.h"
#include "device/gpu_solver.h"
#include "device/pinned_memory.h"
#include "device/pm_gpu.h"
#include "host/models/models.h"
#include "host/pm/pm_mesh.h"
#include "host/solver/solver.h"
#include "gpu/gpu_test_util.h"

namespace octwalk {
namespace {

constexpr double kG = 2.5;
/// The largest difference allowed between the meshes, relative to the largest magnitude of each field. The
/// device's fields and transforms are in single precision (the host's in double), so the two differ by the float
/// rounding of the transforms, about 1e-6, far below the split's own error (1e-5 and more).
constexpr double kMeshTwinTolerance = 1e-5;

struct MeshCase
{
    bool clustered;
    int meshSize;
    MassAssignment assignment;
    double asmth;
    const char* name;
    /// Masses from 1e-6 to 1 of each other, some zero and some negative, and one body with half the box's |mass|:
    /// the fixed point's scale follows the total, not the typical body.
    bool mixedMasses = false;
    /// The mean of the mesh's forces and the half-cell shifted mesh's (the parameter pm_interlace).
    bool interlaced = false;
};

/// The masses of a mixed case (MeshCase::mixedMasses), deterministic.
std::vector<double> mixedMasses(int64_t n)
{
    std::vector<double> mass(static_cast<size_t>(n));
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
    {
        const double m  = std::pow(10.0, -6.0 * double((i * 7919) % 1000) / 999.0);
        mass[size_t(i)] = i % 97 == 0 ? 0.0 : i % 89 == 0 ? -m : m;
        total += std::fabs(mass[size_t(i)]);
    }
    mass[size_t(n / 3)] = total;
    return mass;
}

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
    const MeshCase& c  = GetParam();
    const double L     = 3.0;
    const int64_t n    = int64_t(1) << 15;
    ParticleSet bodies = c.clustered ? makeClusteredBox(n, L, 20261129) : makeUniformBox(n, L, 20261130);
    if (c.mixedMasses) bodies.mass = mixedMasses(n);
    PmMesh host(L, c.meshSize, c.asmth, c.assignment, kG, c.interlaced);
    GpuMesh device(L, c.meshSize, c.asmth, c.assignment, kG, c.interlaced);
    EXPECT_EQ(device.interlaced(), c.interlaced);
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
        {true, 32, MassAssignment::Tsc, 1.25, "clustered_tsc32_mixed_masses", true},
        {false, 27, MassAssignment::Cic, 1.25, "uniform_cic27_mixed_masses", true},
        {true, 64, MassAssignment::Tsc, 2.0, "clustered_tsc64_asmth2_interlaced", false, true},
        {false, 27, MassAssignment::Cic, 1.25, "uniform_cic27_interlaced", false, true},
        {true, 32, MassAssignment::Tsc, 1.25, "clustered_tsc32_mixed_masses_interlaced", true, true},
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
    // The mesh is still usable after a refused call: the host's results on good bodies.
    const ParticleSet good = makeClusteredBox(512, L, 7);
    std::vector<Vec3d> acc(512), hostAcc;
    std::vector<double> pot(512), hostPot;
    EXPECT_EQ(errorOf([&] { device.computeForces(good.pos.data(), good.mass.data(), 512, acc.data(), pot.data()); }),
              "");
    host.computeForces(good.pos.data(), good.mass.data(), 512, hostAcc, hostPot);
    EXPECT_LE(relativeDifference(acc, hostAcc), kMeshTwinTolerance);
    EXPECT_LE(relativeDifference(pot, hostPot), kMeshTwinTolerance);
}

TEST_F(GpuPmMeshInput, ASolverSwitchesBetweenTheMeshesWithPmBackend)
{
    // One GPU solver, its mesh moved from the device to the host's cores (beside the device's walk) and back by
    // setParameters: the forces stay those of the CPU twin's mesh, to the float rounding of the sum.
    const double L           = 2.0;
    const ParticleSet bodies = makeClusteredBox(1 << 13, L, 11);
    Parameters p;
    p.backend         = Backend::Gpu;
    p.box_size        = L;
    p.pm_grid         = 32;
    p.asmth           = 1.25; // GADGET-2's split
    p.rcut            = 4.5;
    p.epsilon_squared = 1e-4;
    GravitySolver solver(p);
    solver.setBodies(bodies.pos, bodies.mass);
    std::vector<Vec3d> device, host, again;
    std::vector<double> devicePot, hostPot, potAgain;
    solver.computeForces(device, devicePot);
    p.pm_backend = Backend::Cpu;
    solver.setParameters(p);
    solver.computeForces(host, hostPot);
    p.pm_backend = Backend::Auto;
    solver.setParameters(p);
    solver.computeForces(again, potAgain);
    for (size_t i = 0; i < device.size(); ++i)
    {
        ASSERT_EQ(std::memcmp(&device[i], &again[i], sizeof(Vec3d)), 0) << "body " << i;
        ASSERT_EQ(devicePot[i], potAgain[i]) << "body " << i;
    }
    EXPECT_LE(relativeDifference(device, host), 1e-6);
    EXPECT_LE(relativeDifference(devicePot, hostPot), 1e-6);
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
    device.addForcesOnDevice(nullptr, nullptr, 0, nullptr, nullptr);
    EXPECT_EQ(device.timings().total(), 0.0);
}

// The single-precision field is in units of a power of two near the total mass: masses 2^130 times larger (their
// total beyond a float's range, 3.4e38) with G 2^130 times smaller give the same forces and potentials, bit for bit.
TEST_F(GpuPmMeshInput, MassesBeyondAFloatsRangeGiveTheSameForces)
{
    const double L           = 3.0;
    const int64_t n          = int64_t(1) << 14;
    const size_t count       = size_t(n);
    const double factor      = std::ldexp(1.0, 130);
    const ParticleSet bodies = makeClusteredBox(n, L, 20261202);
    std::vector<double> heavy(bodies.mass);
    for (double& m : heavy) m *= factor;
    GpuMesh mesh(L, 32, 1.25, MassAssignment::Tsc, kG, true),
        heavyMesh(L, 32, 1.25, MassAssignment::Tsc, kG / factor, true);
    std::vector<Vec3d> acc(count), heavyAcc(count);
    std::vector<double> pot(count), heavyPot(count);
    mesh.computeForces(bodies.pos.data(), bodies.mass.data(), n, acc.data(), pot.data());
    heavyMesh.computeForces(bodies.pos.data(), heavy.data(), n, heavyAcc.data(), heavyPot.data());
    for (size_t i = 0; i < count; ++i)
    {
        ASSERT_EQ(std::memcmp(&acc[i], &heavyAcc[i], sizeof(Vec3d)), 0) << "body " << i << ": " << heavyAcc[i].x;
        ASSERT_EQ(std::memcmp(&pot[i], &heavyPot[i], sizeof(double)), 0) << "body " << i << ": " << heavyPot[i];
    }
}

// addForcesOnDevice reads and writes device memory. Page-locked host memory stands for it here: with unified
// addressing its pointers are the device's too, and this target sees no CUDA header to allocate device memory with.
class GpuPmMeshOnDevice : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

template<class T>
PinnedVector<T> pinnedCopy(const std::vector<T>& v)
{
    return PinnedVector<T>(v.begin(), v.end());
}

/// What addForcesOnDevice must leave in results that held initial: computeForces' acc and pot added with
/// addMeshTerm.
std::vector<F4> expectedSums(const std::vector<F4>& initial, const std::vector<Vec3d>& acc,
                             const std::vector<double>& pot)
{
    std::vector<F4> sums(initial.size());
    for (size_t i = 0; i < initial.size(); ++i) sums[i] = addMeshTerm(initial[i], acc[i], pot[i]);
    return sums;
}

template<class Results>
void expectSameBits(const Results& results, const std::vector<F4>& expected)
{
    ASSERT_EQ(results.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
    {
        ASSERT_EQ(std::memcmp(&results[i], &expected[i], sizeof(F4)), 0)
            << "body " << i << ": " << results[i].x << " " << results[i].w << " against " << expected[i].x << " "
            << expected[i].w;
    }
}

TEST_F(GpuPmMeshOnDevice, AddsTheHostEntryPointsForcesBitForBit)
{
    const double L           = 3.0;
    const int64_t n          = int64_t(1) << 14;
    const size_t count       = size_t(n);
    const ParticleSet bodies = makeClusteredBox(n, L, 20261201);
    struct Case
    {
        int meshSize;
        MassAssignment assignment;
        bool interlaced;
    };
    for (const Case& c : {Case{32, MassAssignment::Tsc, false}, Case{27, MassAssignment::Cic, false},
                          Case{32, MassAssignment::Tsc, true}})
    {
        GpuMesh mesh(L, c.meshSize, 1.25, c.assignment, kG, c.interlaced);
        std::vector<Vec3d> acc(count);
        std::vector<double> pot(count);
        mesh.computeForces(bodies.pos.data(), bodies.mass.data(), n, acc.data(), pot.data());
        const PinnedVector<Vec3d> pos   = pinnedCopy(bodies.pos);
        const PinnedVector<double> mass = pinnedCopy(bodies.mass);
        const std::vector<F4> zero(count, F4{0.0f, 0.0f, 0.0f, 0.0f});
        PinnedVector<F4> results = pinnedCopy(zero);
        mesh.addForcesOnDevice(pos.data(), mass.data(), n, results.data(), nullptr);
        expectSameBits(results, expectedSums(zero, acc, pot));
        EXPECT_EQ(mesh.timings().upload, 0.0);
        EXPECT_EQ(mesh.timings().download, 0.0);
        EXPECT_GT(mesh.timings().total(), 0.0);

        // Nonzero tree results, of both signs and of the mesh's magnitudes, on a stream of the caller's.
        std::vector<F4> initial(count);
        for (int64_t i = 0; i < n; ++i)
        {
            const float f      = float((i * 7919) % 2001 - 1000) / 1000.0f;
            initial[size_t(i)] = {f * float(acc[size_t(i)].y), -f, 0.5f * f, f * float(pot[size_t(i)])};
        }
        results = pinnedCopy(initial);
        GpuSolver solver;
        mesh.addForcesOnDevice(pos.data(), mass.data(), n, results.data(), solver.stream().handle);
        expectSameBits(results, expectedSums(initial, acc, pot));
    }
}

TEST_F(GpuPmMeshOnDevice, TakesBodiesOutsideTheBoxAtTheirWrappedPositions)
{
    const double L           = 2.0;
    const int64_t n          = int64_t(1) << 13;
    const size_t count       = size_t(n);
    const ParticleSet bodies = makeUniformBox(n, L, 20261202);
    // Bodies near a face moved by one box length to the other side of the opposite one, as bodies that drifted
    // out of the box since their last wrapping lie: x = 0.999 L as x - L = -0.001 L, y = 0.001 L as y + L.
    std::vector<Vec3d> shifted = bodies.pos;
    int64_t moved              = 0;
    auto shift                 = [L](double& x, int64_t& moves) {
        if (x > 0.95 * L) x -= L;
        else if (x < 0.05 * L) x += L;
        else return;
        ++moves;
    };
    for (Vec3d& p : shifted)
    {
        shift(p.x, moved);
        shift(p.y, moved);
        shift(p.z, moved);
    }
    ASSERT_GT(moved, n / 5);
    // One box length times floor's +-1 is exact, so that the host's wrap and the device's (with fused
    // multiply-adds) give the same positions: x - L + L, itself not always x.
    std::vector<Vec3d> wrapped(shifted.size());
    for (size_t i = 0; i < shifted.size(); ++i) wrapped[i] = wrapPosition(shifted[i], L);

    GpuMesh mesh(L, 32, 1.25, MassAssignment::Tsc, 1.0);
    std::vector<Vec3d> acc(count), wrappedAcc(count);
    std::vector<double> pot(count), wrappedPot(count);
    mesh.computeForces(bodies.pos.data(), bodies.mass.data(), n, acc.data(), pot.data());
    mesh.computeForces(wrapped.data(), bodies.mass.data(), n, wrappedAcc.data(), wrappedPot.data());
    EXPECT_LE(relativeDifference(wrappedAcc, acc), 1e-12);
    EXPECT_LE(relativeDifference(wrappedPot, pot), 1e-12);

    const PinnedVector<Vec3d> pos   = pinnedCopy(shifted);
    const PinnedVector<double> mass = pinnedCopy(bodies.mass);
    const std::vector<F4> zero(count, F4{0.0f, 0.0f, 0.0f, 0.0f});
    PinnedVector<F4> results = pinnedCopy(zero);
    mesh.addForcesOnDevice(pos.data(), mass.data(), n, results.data(), nullptr);
    expectSameBits(results, expectedSums(zero, wrappedAcc, wrappedPot));
}

TEST_F(GpuPmMeshOnDevice, NamesTheFirstBodyThatIsNotFinite)
{
    const double L = 2.0;
    GpuMesh device(L, 16, 1.25, MassAssignment::Tsc, 1.0);
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    struct Bad
    {
        Vec3d pos;
        double mass;
        const char* message; ///< after "PM mesh: body 37"
    };
    // Body 12 lies outside the box, but is finite: wrapped, not refused. Body 37's finite coordinates are wrapped.
    for (const Bad& bad : {Bad{{0.5, 0.5, nan}, 1.0, ": position z = nan is outside the periodic box [0, 2)"},
                           Bad{{-inf, 0.5, 0.5}, 1.0, ": position x = -inf is outside the periodic box [0, 2)"},
                           Bad{{-0.1, nan, 0.5}, 1.0, ": position y = nan is outside the periodic box [0, 2)"},
                           Bad{{0.5, 0.5, 0.5}, inf, " has mass inf: must be finite"},
                           Bad{{2.1, 0.5, 0.5}, nan, " has mass nan: must be finite"}})
    {
        std::vector<Vec3d> pos(100, Vec3d{1.0, 1.0, 1.0});
        std::vector<double> mass(100, 0.01);
        pos[12]  = {-0.01, 2.01, 1.0};
        pos[37]  = bad.pos;
        mass[37] = bad.mass;
        pos[80]  = {5.0, 0.0, 0.0};

        const PinnedVector<Vec3d> devicePos   = pinnedCopy(pos);
        const PinnedVector<double> deviceMass = pinnedCopy(mass);
        const std::vector<F4> initial(100, F4{1.0f, 2.0f, 3.0f, 4.0f});
        PinnedVector<F4> results = pinnedCopy(initial);
        EXPECT_EQ(errorOf([&] {
                      device.addForcesOnDevice(devicePos.data(), deviceMass.data(), 100, results.data(), nullptr);
                  }),
                  std::string("PM mesh: body 37") + bad.message);
        // A refused call leaves the results as they were.
        expectSameBits(results, initial);
    }
    // The mesh is still usable after a refused call.
    const ParticleSet good = makeClusteredBox(512, L, 7);
    std::vector<Vec3d> acc(512);
    std::vector<double> pot(512);
    device.computeForces(good.pos.data(), good.mass.data(), 512, acc.data(), pot.data());
    const std::vector<F4> zero(512, F4{0.0f, 0.0f, 0.0f, 0.0f});
    PinnedVector<F4> results        = pinnedCopy(zero);
    const PinnedVector<Vec3d> pos   = pinnedCopy(good.pos);
    const PinnedVector<double> mass = pinnedCopy(good.mass);
    device.addForcesOnDevice(pos.data(), mass.data(), 512, results.data(), nullptr);
    expectSameBits(results, expectedSums(zero, acc, pot));
}

} // namespace
} // namespace octwalk

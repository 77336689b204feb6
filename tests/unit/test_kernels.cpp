// Layer (a): the common/ formulas against analytic cases.
#include <gtest/gtest.h>

#include <cmath>

#include "common/gravity.h"
#include "common/mac.h"
#include "common/multipole.h"
#include "common/sfc.h"
#include "host/reference/direct.h"
#include "host/reference/error_stats.h"
#include "test_helpers.h"

using namespace octwalk;

TEST(Kernels, TwoBodiesNewton)
{
    ParticleSet b;
    b.resize(2);
    b.pos                    = {{0, 0, 0}, {2, 0, 0}};
    b.mass                   = {3, 5};
    b.id                     = {0, 1};
    Parameters p             = test::cpuParameters();
    p.gravitational_constant = 1.5;
    auto f                   = test::treeForces(b, p);
    EXPECT_NEAR(f.acc[0].x, 1.5 * 5 / 4.0, 1e-6);
    EXPECT_NEAR(f.acc[1].x, -1.5 * 3 / 4.0, 1e-6);
    EXPECT_NEAR(f.pot[0], -1.5 * 5 / 2.0, 1e-6);
    EXPECT_NEAR(f.pot[1], -1.5 * 3 / 2.0, 1e-6);
    EXPECT_EQ(f.acc[0].y, 0.0);
}

TEST(Kernels, SoftenedPairAndCoincidentUnsoftenedPair)
{
    Vec3d acc{0, 0, 0};
    double pot = 0;
    bodyBody(Vec3d{3, 0, 0}, 2.0, 16.0, acc, pot);
    EXPECT_NEAR(pot, -2.0 / 5.0, 1e-15);
    EXPECT_NEAR(acc.x, 2.0 * 3 / 125.0, 1e-15);
    Vec3f a{0, 0, 0};
    float phi = 0;
    bodyBody(Vec3f{0, 0, 0}, 1.0f, 0.0f, a, phi);
    EXPECT_EQ(phi, 0.0f);
    EXPECT_EQ(a.x, 0.0f);
}

TEST(Kernels, ThirtyTwoBodiesOnALine)
{
    ParticleSet b;
    b.resize(32);
    for (int i = 0; i < 32; ++i)
    {
        b.pos[i]  = {double(i), 0, 0};
        b.mass[i] = 10;
        b.id[i]   = i;
    }
    auto f          = test::treeForces(b, test::cpuParameters(0.5, 0.01));
    double expected = 0;
    for (int x = 0; x <= 30; ++x) expected -= 10 / std::sqrt((x + 1.0) * (x + 1.0) + 0.01);
    EXPECT_NEAR(f.pot[0] / expected, 1.0, 1e-5);

    double pairs = 0, half = 0;
    for (int i = 0; i < 32; ++i)
    {
        half += 0.5 * b.mass[i] * f.pot[i];
        for (int j = i + 1; j < 32; ++j) pairs -= 100 / std::sqrt((j - i) * (j - i) + 0.01);
    }
    EXPECT_NEAR(half / pairs, 1.0, 1e-5);
}

TEST(Kernels, QuadrupoleImprovesFarFieldToExpectedOrder)
{
    // A compact lumpy cluster of radius 0.5 (uniform sphere, few bodies, so its quadrupole is large).
    ParticleSet c              = makeUniformSphere(40, 7);
    std::vector<Vec3d> shifted = c.pos;
    for (auto& x : shifted) x = Vec3d{x.x * 0.5 + 0.05, x.y * 0.5, x.z * 0.3};
    double m = 0;
    Vec3d weighted{0, 0, 0};
    for (size_t i = 0; i < shifted.size(); ++i)
    {
        m += c.mass[i];
        weighted += c.mass[i] * shifted[i];
    }
    Vec3d com = (1 / m) * weighted;
    SymTensor<double> q{0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < shifted.size(); ++i) addPointQuadrupole(shifted[i] - com, c.mass[i], q);
    EXPECT_NEAR(q.xx + q.yy + q.zz, 0.0, 1e-12);

    double previousMono = 0, previousQuad = 0;
    for (double dist : {2.0, 4.0, 8.0})
    {
        Vec3d target{dist * 0.6, dist * 0.8, 0};
        Vec3d exact{0, 0, 0};
        double exactPot = 0;
        for (size_t i = 0; i < shifted.size(); ++i) bodyBody(shifted[i] - target, c.mass[i], 0.0, exact, exactPot);
        Vec3d mono{0, 0, 0}, quad{0, 0, 0};
        double pm = 0, pq = 0;
        bodyNode(com - target, m, SymTensor<double>{0, 0, 0, 0, 0, 0}, 0.0, mono, pm);
        bodyNode(com - target, m, q, 0.0, quad, pq);
        double errMono = std::sqrt(dot(mono - exact, mono - exact) / dot(exact, exact));
        double errQuad = std::sqrt(dot(quad - exact, quad - exact) / dot(exact, exact));
        EXPECT_LT(errQuad, 0.2 * errMono) << "at distance " << dist;
        EXPECT_NEAR(pq / exactPot, 1.0, 0.2 * std::pow(0.5 / dist, 3));
        if (previousQuad > 0)
        {
            // Monopole error ~ (s/d)^2 (com expansion), quadrupole error ~ (s/d)^3: halving s/d
            // divides them by about 4 and 8.
            EXPECT_GT(previousMono / errMono, 3.0);
            EXPECT_GT(previousQuad / errQuad, 6.0);
        }
        previousMono = errMono;
        previousQuad = errQuad;
    }
}

TEST(Kernels, QuadrupoleShiftMatchesDirectAccumulation)
{
    ParticleSet c = makePlummer(50, 3);
    Vec3d origin{0.3, -0.2, 0.1};
    SymTensor<double> direct{0, 0, 0, 0, 0, 0}, shifted{0, 0, 0, 0, 0, 0}, local{0, 0, 0, 0, 0, 0};
    double m = 0;
    Vec3d weighted{0, 0, 0};
    for (int i = 0; i < 50; ++i)
    {
        m += c.mass[i];
        weighted += c.mass[i] * c.pos[i];
    }
    Vec3d com = (1 / m) * weighted;
    for (int i = 0; i < 50; ++i)
    {
        addPointQuadrupole(c.pos[i] - origin, c.mass[i], direct);
        addPointQuadrupole(c.pos[i] - com, c.mass[i], local);
    }
    shiftQuadrupole(local, com, m, origin, shifted);
    EXPECT_NEAR(shifted.xx, direct.xx, 1e-12);
    EXPECT_NEAR(shifted.xy, direct.xy, 1e-12);
    EXPECT_NEAR(shifted.yz, direct.yz, 1e-12);
    EXPECT_NEAR(shifted.zz, direct.zz, 1e-12);
    EXPECT_NEAR(shifted.spread, direct.spread, 1e-12);
    double spread = 0;
    for (int i = 0; i < 50; ++i) spread += c.mass[i] * dot(c.pos[i] - origin, c.pos[i] - origin);
    EXPECT_NEAR(direct.spread, spread, 1e-12);
}

namespace {

/// A point-symmetric cluster (bodies at com +- s): no odd moments, so the second-order expansion's
/// own error is of fourth order and the softening term stands out.
struct SymmetricCluster
{
    std::vector<Vec3d> pos;
    std::vector<double> mass;
    double m = 0;
    SymTensor<double> q{0, 0, 0, 0, 0, 0};
};

SymmetricCluster symmetricCluster(Vec3d com)
{
    ParticleSet c = makeUniformSphere(20, 11);
    SymmetricCluster s;
    for (int64_t i = 0; i < c.size(); ++i)
    {
        Vec3d d{0.3 * c.pos[i].x, 0.2 * c.pos[i].y, 0.25 * c.pos[i].z};
        for (double sign : {1.0, -1.0})
        {
            s.pos.push_back(com + sign * d);
            s.mass.push_back(c.mass[i]);
            addPointQuadrupole(sign * d, c.mass[i], s.q);
            s.m += c.mass[i];
        }
    }
    return s;
}

} // namespace

// With softening the traceless quadrupole misses the term eps^2 sum m |s|^2 of the softened potential's
// expansion; with it (q.spread) the error drops to the fourth-order remainder.
TEST(Kernels, SoftenedQuadrupoleKeepsTheSpreadTerm)
{
    const Vec3d com{0.1, -0.2, 0.3};
    SymmetricCluster c          = symmetricCluster(com);
    SymTensor<double> traceless = c.q;
    traceless.spread            = 0;
    for (double eps : {0.5, 1.0, 2.0})
    {
        const Vec3d target = com - Vec3d{1.2, 1.6, 0.0}; // distance 2
        Vec3d exact{0, 0, 0}, soft{0, 0, 0}, plain{0, 0, 0};
        double exactPot = 0, softPot = 0, plainPot = 0;
        for (size_t i = 0; i < c.pos.size(); ++i) bodyBody(c.pos[i] - target, c.mass[i], eps * eps, exact, exactPot);
        bodyNode(com - target, c.m, c.q, eps * eps, soft, softPot);
        bodyNode(com - target, c.m, traceless, eps * eps, plain, plainPot);
        double errSoft  = std::sqrt(dot(soft - exact, soft - exact) / dot(exact, exact));
        double errPlain = std::sqrt(dot(plain - exact, plain - exact) / dot(exact, exact));
        SCOPED_TRACE("eps = " + std::to_string(eps));
        EXPECT_LT(errSoft, 0.1 * errPlain);
        EXPECT_LT(std::fabs(softPot / exactPot - 1), 0.1 * std::fabs(plainPot / exactPot - 1));
    }
}

// Unsoftened, the spread term vanishes exactly: the same bits with and without it.
TEST(Kernels, SpreadTermVanishesWithoutSoftening)
{
    SymTensor<float> q{0.3f, -0.1f, -0.2f, 0.05f, 0.02f, -0.04f, 0.7f};
    SymTensor<float> traceless = q;
    traceless.spread           = 0;
    Vec3f a{0, 0, 0}, b{0, 0, 0};
    float pa = 0, pb = 0;
    bodyNode(Vec3f{1.5f, -2.0f, 0.7f}, 2.0f, q, 0.0f, a, pa);
    bodyNode(Vec3f{1.5f, -2.0f, 0.7f}, 2.0f, traceless, 0.0f, b, pb);
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.z, b.z);
    EXPECT_EQ(pa, pb);
}

TEST(Kernels, MacRadiusAndBoxDistance)
{
    EXPECT_FLOAT_EQ(macRadius2(Mac::Octgrav, 1.0f, 0.3f, 2.0f), 4.0f);
    EXPECT_FLOAT_EQ(macRadius2(Mac::Bonsai, 1.0f, 0.5f, 2.0f), 6.25f);
    EXPECT_FLOAT_EQ(boxPointDistance2({0, 0, 0}, {1, 1, 1}, {3, 0, 0}), 4.0f);
    EXPECT_FLOAT_EQ(boxPointDistance2({0, 0, 0}, {1, 1, 1}, {0.5f, 0.5f, 0}), 0.0f);
    EXPECT_FALSE(acceptNode(F4{0.5f, 0, 0, 0.0f}, F4{0, 0, 0, 0}, F4{1, 1, 1, 0}));
}

TEST(Kernels, MortonKeysOrderOctants)
{
    EXPECT_EQ(mortonKey(0, 0, 0), 0u);
    uint32_t top = kKeyGridSize / 2;
    EXPECT_EQ(octantAtLevel(mortonKey(top, 0, 0), 1), 4);
    EXPECT_EQ(octantAtLevel(mortonKey(0, top, 0), 1), 2);
    EXPECT_EQ(octantAtLevel(mortonKey(0, 0, top), 1), 1);
    EXPECT_EQ(octantAtLevel(mortonKey(1, 1, 1), kMaxTreeLevel), 7);
    EXPECT_EQ(gridCoordinate(-5.0, 0.0, 1.0), 0u);
    EXPECT_EQ(gridCoordinate(1e30, 0.0, 1.0), kKeyGridSize - 1);
}

// Layer (b): the whole CPU path (P2M/M2M, packer, walk, force kernel) uses the spread. A softening
// comparable to the core's leaves, where the traceless expansion's error is largest (mac_study.md section 7).
TEST(Kernels, SoftenedQuadrupoleThinsTheTreeErrorTail)
{
    ParticleSet b = makePlummer(10000, 5);
    Parameters p  = test::cpuParameters(0.5, 0.05 * 0.05);
    std::vector<Vec3d> exact;
    std::vector<double> exactPot;
    directSumAll(b.pos.data(), b.mass.data(), b.size(), p.epsilon_squared, 1.0, exact, exactPot);
    const ErrorStats soft  = errorStats(relativeErrors(test::treeForces(b, p).acc, exact));
    p.softened_quadrupole  = false;
    const ErrorStats plain = errorStats(relativeErrors(test::treeForces(b, p).acc, exact));
    // Measured: median 1.04e-4 vs 1.82e-4, p99 6.7e-4 vs 1.68e-3.
    EXPECT_LT(soft.p99, 0.6 * plain.p99) << soft.p99 << " vs " << plain.p99;
    EXPECT_LT(soft.median, 0.8 * plain.median) << soft.median << " vs " << plain.median;
}

// Layer (a): the range and the guards of common/gravity.h's float formulas against the same formulas in
// double, over the whole input range the validators accept (|x| <= 1e15, any finite mass whose
// moments fit in float32), and the geometric fact that lets bodyNode drop its zero guard.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/gravity.h"
#include "common/mac.h"
#include "common/multipole.h"
#include "common/refit.h"

using namespace octwalk;

namespace {

Vec3f toFloat(Vec3d v) { return {float(v.x), float(v.y), float(v.z)}; }

SymTensor<float> toFloat(const SymTensor<double>& q)
{
    return {float(q.xx), float(q.yy), float(q.zz), float(q.xy), float(q.xz), float(q.yz), float(q.spread)};
}

double relativeError(Vec3f a, Vec3d b)
{
    const Vec3d d{a.x - b.x, a.y - b.y, a.z - b.z};
    return std::sqrt(dot(d, d) / dot(b, b));
}

/// Moments of a few bodies of total mass `mass` in a cube of side `size` around `centre`.
Moments cluster(Vec3d centre, double size, double mass, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    std::vector<Vec3d> pos(5);
    std::vector<double> m(5);
    for (int i = 0; i < 5; ++i)
    {
        pos[i] = centre + size * Vec3d{u(rng), u(rng), u(rng)};
        m[i]   = mass * (0.1 + 0.2 * i) / 2.5;
    }
    return leafMoments(pos.data(), m.data(), 0, 5);
}

} // namespace

// bodyNode in float against itself in double, the node 3 of its sizes away, over the coordinate range
// (1e-15 .. 1e15) and masses from 1e-30 to 1e30: wherever the force, the potential and the moments are
// normal floats, the float result keeps float precision (u = d/r keeps every intermediate in range; a
// form through 1/r^5 would give 0 from r ~ 1e9 on and overflow M d at large masses).
TEST(Gravity, BodyNodeKeepsFloatPrecisionOverTheInputRange)
{
    int checked = 0;
    for (double scale : {1e-15, 1e-9, 1e-3, 1.0, 1e3, 1e9, 1e12, 1e15})
    {
        for (double mass : {1e-30, 1e-10, 1.0, 1e10, 1e30})
        {
            const double size = 0.3 * scale;
            const Moments mo  = cluster({0.2 * scale, -0.7 * scale, 0.4 * scale}, size, mass, 11);
            const Vec3d target{-0.6 * scale, 0.25 * scale, -0.45 * scale}; // |d| ~ 1.3 scale, 4 node sizes
            const double q = std::fabs(mo.quad.xx) + std::fabs(mo.quad.xy) + mo.quad.spread;
            // Out of float's normal range (the moments, the force or the potential): nothing to keep.
            if (q > 1e36 || q < 1e-36 || mass / (scale * scale) < 1e-36 || mass / (scale * scale) > 1e36 ||
                mass / scale > 1e36)
                continue;
            for (double eps : {0.0, 0.1 * scale})
            {
                Vec3d accD{0, 0, 0};
                double potD = 0;
                bodyNode(mo.com - target, mo.mass, mo.quad, eps * eps, accD, potD);
                Vec3f accF{0, 0, 0};
                float potF = 0;
                bodyNode(toFloat(mo.com) - toFloat(target), float(mo.mass), toFloat(mo.quad), float(eps * eps), accF,
                         potF);
                SCOPED_TRACE(::testing::Message() << "scale " << scale << ", mass " << mass << ", eps " << eps);
                EXPECT_LT(relativeError(accF, accD), 2e-6);
                EXPECT_LT(std::fabs(potF / potD - 1), 2e-6);
                ++checked;
            }
        }
    }
    EXPECT_GE(checked, 40); // most of the grid is in range
}

// The floor under the softening (2^-126) leaves unsoftened nodes as they were down to |d| ~ 2^-51; a closer
// one is exactly the node with the floor as its softening: for a one-body leaf (no quadrupole, as any node
// that small) finite, never NaN, even at d = 0.
TEST(Gravity, BodyNodeFloorsTheSofteningAtFloatsSmallestNormal)
{
    for (float x : {1e-14f, 1e-12f, 1.0f, 1e12f})
    {
        // A node of size ~x / 3 at distance ~x: its quadrupole scales as x^2.
        const float s2 = 0.1f * x * x;
        const SymTensor<float> q{0.3f * s2, -0.1f * s2, -0.2f * s2, 0.05f * s2, 0.02f * s2, -0.04f * s2, 0.0f};
        const SymTensor<double> qd{q.xx, q.yy, q.zz, q.xy, q.xz, q.yz, 0.0};
        const Vec3f d{x, -0.5f * x, 0.25f * x};
        Vec3f a{0, 0, 0}, b{0, 0, 0};
        float pa = 0, pb = 0;
        bodyNode(d, 2.0f, q, 0.0f, a, pa);
        Vec3d ad{0, 0, 0};
        double pd = 0;
        bodyNode(Vec3d{d.x, d.y, d.z}, 2.0, qd, 0.0, ad, pd);
        SCOPED_TRACE(::testing::Message() << "x = " << x);
        EXPECT_LT(relativeError(a, ad), 2e-6);
        EXPECT_LT(std::fabs(pa / pd - 1), 2e-6);
        bodyNode(d, 2.0f, q, minNormal<float>(), b, pb);
        EXPECT_EQ(a.x, b.x);
        EXPECT_EQ(pa, pb);
    }
    const SymTensor<float> point{0, 0, 0, 0, 0, 0, 0};
    for (float x : {1e-25f, 1e-40f, 0.0f})
    {
        const Vec3f d{x, 0.0f, -x};
        Vec3f a{0, 0, 0}, b{0, 0, 0};
        float pa = 0, pb = 0;
        bodyNode(d, 1e-3f, point, 0.0f, a, pa);
        bodyNode(d, 1e-3f, point, minNormal<float>(), b, pb);
        SCOPED_TRACE(::testing::Message() << "x = " << x);
        EXPECT_TRUE(std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z) && std::isfinite(pa));
        EXPECT_EQ(a.x, b.x);
        EXPECT_EQ(a.z, b.z);
        EXPECT_EQ(pa, pb);
    }
}

// invSqrtOrZero: exact for every normal argument, 0 for zero and subnormal ones; so bodyBody counts a pair
// whose r^2 is not a normal float as coincident (nothing), and computes every other one in full.
TEST(Gravity, BodyBodyCountsSubnormalDistancesAsCoincident)
{
    EXPECT_EQ(invSqrtOrZero(0.0f), 0.0f);
    EXPECT_EQ(invSqrtOrZero(FLT_TRUE_MIN), 0.0f);
    EXPECT_EQ(invSqrtOrZero(0.5f * FLT_MIN), 0.0f);
    EXPECT_EQ(invSqrtOrZero(FLT_MIN), 1.0f / std::sqrt(FLT_MIN));
    EXPECT_EQ(invSqrtOrZero(4.0f), 0.5f);
    EXPECT_EQ(invSqrtOrZero(FLT_MAX), 1.0f / std::sqrt(FLT_MAX));
    EXPECT_EQ(invSqrtOrZero(0.0), 0.0);
    EXPECT_EQ(invSqrtOrZero(0.25), 2.0);

    Vec3f a{0, 0, 0};
    float pot = 0;
    bodyBody(Vec3f{1e-30f, 0, 0}, 1.0f, 0.0f, a, pot); // r^2 = 1e-60: zero in float
    bodyBody(Vec3f{3e-20f, 0, 0}, 1.0f, 0.0f, a, pot); // r^2 = 9e-40: subnormal
    EXPECT_EQ(a.x, 0.0f);
    EXPECT_EQ(pot, 0.0f);
    bodyBody(Vec3f{2e-19f, 0, 0}, 1e-30f, 0.0f, a, pot); // r^2 = 4e-38: normal
    EXPECT_NEAR(a.x / (1e-30 / (2e-19 * 2e-19)), 1.0, 1e-6);
    EXPECT_NEAR(pot / (-1e-30 / 2e-19), 1.0, 1e-6);
}

// Why bodyNode needs no zero guard: the group's box (groupBox, the only builder of group boxes) holds
// each of its bodies at box distance exactly 0 in float, so a node the MAC accepts (box distance > a
// radius >= 0) never has its centre of mass on a target of the group. Scales from 1e-30 to the
// coordinate limit, bodies on the box's faces and corners, a one-body group.
TEST(Gravity, GroupBoxHoldsEveryTargetAtDistanceZero)
{
    std::mt19937 rng(5);
    for (double scale : {1e-30, 1e-7, 1.0, 3.3, 1e9, 1e15})
    {
        for (int count : {1, 2, 17, 64})
        {
            std::uniform_real_distribution<double> u(-1.0, 1.0);
            std::vector<F4> bodies(static_cast<size_t>(count));
            const double offset = u(rng) * scale;
            for (F4& b : bodies)
                b = {float(offset + scale * u(rng)), float(scale * u(rng) - offset), float(scale * u(rng)), 1.0f};
            F4 centre{}, half{};
            groupBox(bodies.data(), I2{0, count}, centre, half);
            for (const F4& b : bodies)
            {
                EXPECT_EQ(boxPointDistance2(xyz(centre), xyz(half), xyz(b)), 0.0f);
                // A one-body leaf at a target's own position (radius 0) is never accepted for the group.
                EXPECT_FALSE(acceptNode(F4{b.x, b.y, b.z, 0.0f}, centre, half));
            }
        }
    }
}

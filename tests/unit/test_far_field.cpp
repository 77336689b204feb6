// The far-field expansion (common/far_field.h): its derivatives and truncation against exact sums, and the
// CPU tree with it against direct summation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/far_field.h"
#include "common/multipole.h"
#include "host/core/random.h"
#include "host/cpu/forces_cpu.h"
#include "host/reference/direct.h"
#include "host/reference/error_stats.h"
#include "test_helpers.h"

using namespace octwalk;

namespace {

/// psi(d) = -(|d|^2 + eps^2)^(-1/2) in double.
double psi(double x, double y, double z, double eps2) { return -1.0 / std::sqrt(x * x + y * y + z * z + eps2); }

/// TreePM's short-range kernel -1 / sqrt(r^2 + eps^2) + erf(k r) / r in double.
double shortRangePsi(double x, double y, double z, double eps2, double k)
{
    const double r = std::sqrt(x * x + y * y + z * z);
    return psi(x, y, z, eps2) + std::erf(k * r) / r;
}

/// d^(nx+ny+nz) f / dx^nx dy^ny dz^nz by central differences of step h (nested, one axis at a time).
template<class F>
double differencedDerivative(const F& f, double x, double y, double z, int nx, int ny, int nz, double h)
{
    if (nx > 0)
    {
        return (differencedDerivative(f, x + h, y, z, nx - 1, ny, nz, h) -
                differencedDerivative(f, x - h, y, z, nx - 1, ny, nz, h)) /
               (2 * h);
    }
    if (ny > 0)
    {
        return (differencedDerivative(f, x, y + h, z, nx, ny - 1, nz, h) -
                differencedDerivative(f, x, y - h, z, nx, ny - 1, nz, h)) /
               (2 * h);
    }
    if (nz > 0)
    {
        return (differencedDerivative(f, x, y, z + h, nx, ny, nz - 1, h) -
                differencedDerivative(f, x, y, z - h, nx, ny, nz - 1, h)) /
               (2 * h);
    }
    return f(x, y, z);
}

/// Every derivative of D (ewaldDerivIndex order) against f's central differences: within tolerance times the
/// larger of 1 and the derivative, returned as the largest such ratio.
template<class F>
double worstDerivativeMismatch(const float* D, const F& f, Vec3f d, double tolerance)
{
    double worst = 0;
    for (int n = 0; n <= 4; ++n)
        for (int ny = 0; ny <= n; ++ny)
            for (int nz = 0; nz <= n - ny; ++nz)
            {
                const int nx     = n - ny - nz;
                const double h   = n == 0 ? 0.0 : 4e-3;
                const double ref = differencedDerivative(f, d.x, d.y, d.z, nx, ny, nz, h);
                const double err = std::fabs(D[ewaldDerivIndex(nx, ny, nz)] - ref) / std::max(1.0, std::fabs(ref));
                EXPECT_LT(err, tolerance) << nx << ny << nz << " at " << d.x << " " << d.y << " " << d.z;
                worst = std::max(worst, err / tolerance);
            }
    return worst;
}

/// A node of a few bodies (offsets from its com within size/2), its packed moments and its bodies.
struct TestNode
{
    std::vector<Vec3d> pos;
    std::vector<double> mass;
    F4 com;
    SymTensor<float> q;
};

TestNode makeNode(Vec3d centre, double size, int count, uint64_t seed)
{
    TestNode n;
    Random rng(seed);
    Vec3d com{0, 0, 0};
    double m = 0;
    for (int k = 0; k < count; ++k)
    {
        const Vec3d p{centre.x + size * (rng.uniform() - 0.5), centre.y + size * (rng.uniform() - 0.5),
                      centre.z + size * (rng.uniform() - 0.5)};
        const double mk = 0.5 + rng.uniform();
        n.pos.push_back(p);
        n.mass.push_back(mk);
        com = com + mk * p;
        m += mk;
    }
    com         = (1.0 / m) * com;
    double Q[6] = {0, 0, 0, 0, 0, 0}, S = 0;
    for (int k = 0; k < count; ++k)
    {
        const Vec3d s   = n.pos[size_t(k)] - com;
        const double mk = n.mass[size_t(k)], s2 = dot(s, s);
        Q[0] += mk * (3 * s.x * s.x - s2);
        Q[1] += mk * (3 * s.y * s.y - s2);
        Q[2] += mk * (3 * s.z * s.z - s2);
        Q[3] += mk * 3 * s.x * s.y;
        Q[4] += mk * 3 * s.x * s.z;
        Q[5] += mk * 3 * s.y * s.z;
        S += mk * s2;
    }
    n.com = {float(com.x), float(com.y), float(com.z), float(m)};
    n.q   = {float(Q[0]), float(Q[1]), float(Q[2]), float(Q[3]), float(Q[4]), float(Q[5]), float(S)};
    return n;
}

/// Largest relative error of the node's pull through a group expansion (group of radius R about the
/// origin, targets spread over its box) against the node's own softened quadrupole pull (bodyNode in double),
/// so that only the expansion's truncation is measured, not the node's.
double expansionError(const TestNode& node, double R, double eps2)
{
    const float half = float(R / std::sqrt(3.0));
    const F4 groupHalf{half, half, half, 0.0f};
    const float invR = 1.0f / farFieldScale(groupHalf), eps2R = float(eps2) * invR * invR;
    FarLocal loc = zeroEwaldLocal();
    addFarFieldTerm(xyz(node.com), node.com.w, prepareQuadrupole(node.q, float(eps2)), invR, eps2R, loc);
    Random rng(11);
    double worst = 0;
    for (int t = 0; t < 50; ++t)
    {
        const Vec3d target{half * (2 * rng.uniform() - 1), half * (2 * rng.uniform() - 1),
                           half * (2 * rng.uniform() - 1)};
        Vec3f acc{0, 0, 0};
        float pot = 0;
        evalFarField(loc, Vec3f{-float(target.x), -float(target.y), -float(target.z)}, invR, acc, pot);
        Vec3d exact{0, 0, 0};
        double exactPot = 0;
        const SymTensor<double> q{node.q.xx, node.q.yy, node.q.zz, node.q.xy, node.q.xz, node.q.yz, node.q.spread};
        bodyNode(Vec3d{node.com.x - target.x, node.com.y - target.y, node.com.z - target.z}, double(node.com.w), q,
                 eps2, exact, exactPot);
        const Vec3d err{acc.x - exact.x, acc.y - exact.y, acc.z - exact.z};
        worst = std::max(worst, std::sqrt(dot(err, err) / dot(exact, exact)));
    }
    return worst;
}

} // namespace

TEST(FarFieldExpansion, DerivativesMatchDifferencesOfThePotential)
{
    const double eps2 = 0.3;
    const Vec3f d{0.7f, -0.4f, 1.1f};
    float D[kEwaldDerivs];
    softenedPotentialDerivatives(d, float(eps2), D);
    // Central differences err by O(h^2) times the next derivatives (~10 here).
    worstDerivativeMismatch(
        D, [&](double x, double y, double z) { return psi(x, y, z, eps2); }, d, 5e-4);
}

TEST(FarFieldExpansion, ShortRangeDerivativesMatchDifferencesOfTheKernel)
{
    // TreePM's kernel in units of the group radius: k r from 0.4 (r below r_s, the Newtonian part dominating) to 3.6
    // (beyond the usual cutoff, where the Gaussian's terms and the softening's difference carry it), with and
    // without softening.
    for (const double eps2 : {0.0, 0.3})
        for (const double k : {0.2, 0.8, 1.6})
            for (const Vec3f d : {Vec3f{0.7f, -0.4f, 1.1f}, Vec3f{-1.5f, 0.9f, 1.3f}})
            {
                float D[kEwaldDerivs];
                shortRangePotentialDerivatives(d, float(eps2), float(k), D);
                // The differences' O(h^2) error grows with k^6 here: 1e-3 of the larger of 1 and the derivative.
                worstDerivativeMismatch(
                    D, [&](double x, double y, double z) { return shortRangePsi(x, y, z, eps2, k); }, d, 1e-3);
            }
}

TEST(FarFieldExpansion, TruncationFallsWithTheRatioAsDesigned)
{
    // A point mass: the fourth-order expansion errs by ~(R/d)^4 of the pull, so doubling the distance cuts the
    // error ~16-fold. A node of 20 bodies of size 0.4 d: its second moment is expanded to second order only,
    // so its error falls as (R/d)^2 (s/d)^2, ~4-fold at a fixed s/d (measured: 1.8e-3 at 8 group radii,
    // 4.0e-4 at 16; the node's own truncation, which the MAC bounds, is larger: 3.4e-3 at s/d = 0.4).
    const double eps2 = 1e-4;
    double pointErr[2], nodeErr[2];
    for (int k = 0; k < 2; ++k)
    {
        const double dist = k == 0 ? 8.0 : 16.0;
        const Vec3d at{dist * 0.6, -dist * 0.48, dist * 0.64};
        TestNode point;
        point.pos   = {at};
        point.mass  = {1.0};
        point.com   = {float(at.x), float(at.y), float(at.z), 1.0f};
        point.q     = {0, 0, 0, 0, 0, 0, 0};
        pointErr[k] = expansionError(point, 1.0, eps2);
        nodeErr[k]  = expansionError(makeNode(at, 0.4 * dist, 20, 3), 1.0, eps2);
        EXPECT_LT(pointErr[k], 2.0 * std::pow(1.0 / dist, 4)) << dist; // measured 3.1e-4, 1.9e-5
        EXPECT_LT(nodeErr[k], 0.15 * std::pow(1.0 / dist, 2)) << dist;
    }
    EXPECT_GT(pointErr[0], 10.0 * pointErr[1]);
    EXPECT_GT(nodeErr[0], 3.0 * nodeErr[1]);
}

TEST(FarFieldExpansion, SofteningIsExpandedExactlyForAPointMass)
{
    // A point mass inside a few softening lengths: the expansion of the softened potential, not of 1/r.
    TestNode point;
    point.pos          = {{3.0, 1.0, -2.0}};
    point.mass         = {2.0};
    point.com          = {3.0f, 1.0f, -2.0f, 2.0f};
    point.q            = {0, 0, 0, 0, 0, 0, 0};
    const double ratio = std::sqrt(14.0) / 0.5; // distance over the group radius
    const double err   = expansionError(point, 0.5, 4.0);
    EXPECT_LT(err, std::pow(1.0 / ratio, 4)) << err;
}

TEST(FarFieldExpansion, ClassificationNeedsTheRatioAndTheSoftening)
{
    const F4 c{0, 0, 0, 0}, h{1, 1, 1, 0};                                   // radius sqrt(3)
    EXPECT_FALSE(farFromGroup({10, 0, 0, 1}, c, h, 0.0f, 0.0f));             // off
    EXPECT_TRUE(farFromGroup({10, 0, 0, 1}, c, h, 25.0f, 0.0f));             // 10 > 5 sqrt(3)
    EXPECT_FALSE(farFromGroup({8, 0, 0, 1}, c, h, 25.0f, 0.0f));             // 8 < 8.66
    EXPECT_FALSE(farFromGroup({10, 0, 0, 1}, c, h, 25.0f, 101.0f));          // inside the softening
    EXPECT_FALSE(farFromGroup({1e12f, 0, 0, 1}, c, h, 25.0f, 0.0f));         // the group is a point for it
    EXPECT_FALSE(farFromGroup({10, 0, 0, 1}, c, {0, 0, 0, 0}, 25.0f, 0.0f)); // a point group
}

// Under TreePM a group takes the far field only where a far node can be listed: a node the classification would take
// (beyond the ratio, within the size-distance bound, its centre of mass inside the cutoff) never belongs to a group
// that groupFarField2 leaves without one, and groups too large for any are left without.
TEST(FarFieldExpansion, TreePmGroupsTooLargeForAFarNodeTakeNone)
{
    PeriodicView box{nullptr, 0, 100.0f, 0.01f};
    box.shortRange.splitScale       = 1.0f;
    box.shortRange.cutoff           = 6.0f;
    box.shortRange.cutoff2          = 36.0f;
    box.shortRange.farSizeDistance2 = float(kTreePmFarSizeDistance * kTreePmFarSizeDistance);
    const float farField2 = 36.0f, eps2 = 1e-6f;
    EXPECT_GT(groupFarField2(farField2, true, true, {0.1f, 0.1f, 0.1f, 0}, box), 0.0f);
    EXPECT_EQ(groupFarField2(farField2, true, true, {0.6f, 0.6f, 0.6f, 0}, box), 0.0f);  // 6 R > 2 r_s^2 / R
    EXPECT_EQ(groupFarField2(farField2, true, false, {0.1f, 0.1f, 0.1f, 0}, box), 0.0f); // nearest image per body
    Random rng(17);
    int far = 0, withoutFarField = 0;
    for (int k = 0; k < 200000; ++k)
    {
        const float h = float(0.7 * rng.uniform());
        const F4 half{h, h, h, 0}, centre{0, 0, 0, 0};
        const float d = float(6.0 * rng.uniform());
        const F4 com{d, 0, 0, 1};
        if (!farFromGroup(com, centre, half, farField2, eps2, farSizeDistance2(box))) continue;
        ++far;
        withoutFarField += !(groupFarField2(farField2, true, true, half, box) > 0.0f);
    }
    EXPECT_GT(far, 1000);
    EXPECT_EQ(withoutFarField, 0);
}

TEST(FarFieldExpansion, RatioOutsideItsRangeIsRefused)
{
    Parameters p;
    p.far_field_ratio = 1.5;
    EXPECT_THROW(validate(p), ParameterError);
    p.far_field_ratio = -1;
    EXPECT_THROW(validate(p), ParameterError);
    p.far_field_ratio = 2;
    EXPECT_NO_THROW(validate(p));
    p.far_field_ratio = 0;
    EXPECT_NO_THROW(validate(p));
}

TEST(FarFieldExpansion, TreeWithTheFarFieldMatchesDirectSummation)
{
    // Plummer 2^14, theta 0.5, eps 0.01: the far field takes most node interactions and adds little error.
    ParticleSet b     = makePlummer(16384, 9);
    Parameters p      = test::cpuParameters(0.5, 1e-4);
    p.far_field_ratio = 0;
    std::vector<Vec3d> exact;
    std::vector<double> exactPot;
    directSumAll(b.pos.data(), b.mass.data(), b.size(), p.epsilon_squared, 1.0, exact, exactPot);
    const ErrorStats plain = errorStats(relativeErrors(test::treeForces(b, p).acc, exact));
    p.far_field_ratio      = 6;
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    test::Forces f;
    s.computeForces(f.acc, f.pot);
    const ErrorStats far   = errorStats(relativeErrors(f.acc, exact));
    InteractionLists lists = s.cpuLists();
    const FarFieldCounts c = farFieldCountsCpu(s.packedTree().treeView(), s.packedTree().groupView(), lists.view(),
                                               float(p.epsilon_squared));
    const double farShare  = double(c.interactions) / double(s.stats().nodeInteractions);
    std::printf("far field ratio 6: median %.3g p99 %.3g (plain %.3g / %.3g), far share %.3f\n", far.median, far.p99,
                plain.median, plain.p99, farShare);
    EXPECT_GT(farShare, 0.3);
    EXPECT_LT(far.median, 1.3 * plain.median);
    EXPECT_LT(far.p99, 1.3 * plain.p99);
    for (size_t i = 0; i < f.pot.size(); ++i) ASSERT_TRUE(finiteResult(f.acc[i], f.pot[i])) << i;
}

TEST(FarFieldExpansion, ProbesAndBodiesAgreeWithTheTreeWithoutIt)
{
    // The far field changes a force by a fraction of the tree's own error: Plummer 2^16, theta 0.5, ratio 6 against
    // 0, on the bodies and on probe points inside and far outside the model.
    const ParticleSet b = makePlummer(1 << 16, 4);
    Parameters p        = test::cpuParameters(0.5, 1e-4);
    Random rng(4);
    std::vector<Vec3d> points(2000);
    for (Vec3d& x : points) x = {8 * rng.uniform() - 4, 8 * rng.uniform() - 4, 8 * rng.uniform() - 4};
    points.push_back({50, -20, 10});
    points.push_back(b.pos[17]);
    for (bool probes : {false, true})
    {
        std::vector<std::vector<Vec3d>> acc(2);
        std::vector<std::vector<double>> pot(2);
        for (int k = 0; k < 2; ++k)
        {
            p.far_field_ratio = k == 0 ? 0.0 : 6.0;
            GravitySolver s(p);
            s.setBodies(b.pos, b.mass, b.id);
            if (probes) s.evaluateAt(points, acc[k], pot[k]);
            else s.computeForces(acc[k], pot[k]);
        }
        const ErrorStats a = errorStats(relativeErrors(acc[1], acc[0]));
        double worstPot    = 0;
        for (size_t i = 0; i < pot[0].size(); ++i)
        {
            worstPot = std::max(worstPot, std::fabs(pot[1][i] - pot[0][i]) / std::fabs(pot[0][i]));
        }
        // Measured (bodies / probes): median 3.1e-6 / 2.2e-8, max 1.2e-3 / 3.4e-7, potential 1.9e-5 / 2.3e-7.
        EXPECT_LT(a.median, 1e-5) << probes;
        EXPECT_LT(a.max, 5e-3) << probes;
        EXPECT_LT(worstPot, 1e-4) << probes;
        std::printf("%s: acceleration median %.2g, max %.2g; potential max %.2g\n", probes ? "probes" : "bodies",
                    a.median, a.max, worstPot);
    }
}

namespace {

/// 2^15 bodies in 32 clumps of side 0.04 in a unit box.
std::vector<Vec3d> clumpedUnitBox()
{
    Random rng(5);
    std::vector<Vec3d> centres(32), pos(1 << 15);
    for (Vec3d& c : centres) c = {rng.uniform(), rng.uniform(), rng.uniform()};
    for (size_t i = 0; i < pos.size(); ++i)
    {
        const Vec3d& c = centres[i % centres.size()];
        Vec3d x{c.x + 0.04 * (rng.uniform() - 0.5), c.y + 0.04 * (rng.uniform() - 0.5),
                c.z + 0.04 * (rng.uniform() - 0.5)};
        pos[i] = {x.x - std::floor(x.x), x.y - std::floor(x.y), x.z - std::floor(x.z)};
    }
    return pos;
}

/// The periodic tree's forces on pos with the far field (ratio 6) against those without it, and the far field's
/// share of the node interactions.
struct FarAgainstPlain
{
    ErrorStats acc;
    double worstPot;
    double farShare;
};

FarAgainstPlain farAgainstPlain(const std::vector<Vec3d>& pos, Parameters p)
{
    const std::vector<double> mass(pos.size(), 1.0 / double(pos.size()));
    std::vector<std::vector<Vec3d>> acc(2);
    std::vector<std::vector<double>> pot(2);
    FarAgainstPlain r{};
    for (int k = 0; k < 2; ++k)
    {
        p.far_field_ratio = k == 0 ? 0.0 : 6.0;
        GravitySolver s(p);
        s.setBodies(pos, mass);
        s.computeForces(acc[k], pot[k]);
        if (k == 0) continue;
        InteractionLists lists = s.cpuLists();
        const FarFieldCounts c = farFieldCountsCpu(s.packedTree().treeView(), s.packedTree().groupView(), lists.view(),
                                                   float(p.epsilon_squared));
        r.farShare             = double(c.interactions) / double(s.stats().nodeInteractions);
    }
    r.acc = errorStats(relativeErrors(acc[1], acc[0]));
    for (size_t i = 0; i < pot[0].size(); ++i)
    {
        r.worstPot = std::max(r.worstPot, std::fabs(pot[1][i] - pot[0][i]) / std::fabs(pot[0][i]));
    }
    for (size_t i = 0; i < pot[1].size(); ++i) EXPECT_TRUE(finiteResult(acc[1][i], pot[1][i])) << i;
    std::printf("far share %.3f; ratio 6 against 0: acceleration median %.2g, p99 %.2g, max %.2g; potential max %.2g\n",
                r.farShare, r.acc.median, r.acc.p99, r.acc.max, r.worstPot);
    return r;
}

/// The clumps in a unit box with a pm_grid^3 mesh (0: tree + Ewald), far field against none: a fair share of the
/// node interactions in the expansion, moving the forces far less than the tree's own error.
void expectFarFieldAgreesWithTheTreeWithoutIt(int pmGrid)
{
    Parameters p            = test::cpuParameters(0.5, 1e-6);
    p.box_size              = 1.0;
    p.pm_grid               = pmGrid;
    const FarAgainstPlain r = farAgainstPlain(clumpedUnitBox(), p);
    EXPECT_GT(r.farShare, 0.2);
    EXPECT_LT(r.acc.median, 1e-5);
    EXPECT_LT(r.acc.p99, 5e-4);
    EXPECT_LT(r.worstPot, 1e-4);
}

} // namespace

// In a periodic box the groups small enough to expand their Ewald correction take the far field too, each node as
// its image nearest the group's centre (common/far_field.h, groupFarField2): 2^15 bodies in 32 clumps in a unit
// box, where the groups are small beside the box and most of their accepted nodes lie beyond 6 group radii.
// Measured: far share 0.415; median 1.4e-6, p99 5.1e-5, max 2.6e-4; potential 1.6e-5.
TEST(FarFieldExpansion, PeriodicGroupsThatExpandTakeItAndAgreeWithTheTreeWithoutIt)
{
    expectFarFieldAgreesWithTheTreeWithoutIt(0);
}

// Under TreePM the groups that shift each node once take the far field of the short-range kernel
// (shortRangePotentialDerivatives): the same clumps on a 32^3 mesh, whose cutoff (0.33 of the box) holds many
// group radii. Measured: far share 0.829; median 8.2e-7, p99 4.9e-5, max 7.3e-4; potential 1.7e-5.
TEST(FarFieldExpansion, TreePmGroupsTakeTheShortRangeKernelsAndAgreeWithTheTreeWithoutIt)
{
    expectFarFieldAgreesWithTheTreeWithoutIt(32);
}

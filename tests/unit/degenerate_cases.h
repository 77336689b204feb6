#pragma once
// The degenerate-input matrix, in one place: tests/test_degenerate.cpp runs it on the CPU backend
// and tests/test_gpu_degenerate.cpp on the GPU backend. Each case is either a set of bodies whose
// tree forces must be finite and agree with double-precision direct summation, or one that
// GravitySolver::setBodies must refuse with an InputError whose message names the problem.
//
// G != 1 throughout, so a missing factor cannot hide; softened and unsoftened variants where the
// softening changes the outcome (coincident bodies).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "host/reference/direct.h"
#include "common/errors.h"
#include "host/models/models.h"
#include "host/core/params.h"
#include "host/core/particles.h"
#include "host/solver/solver.h"

namespace octwalk::degenerate {

constexpr double kG    = 2.5;
constexpr double kSoft = 1e-4; ///< epsilon^2 of the softened variants
constexpr int kNLeaf   = Parameters{}.n_leaf;
constexpr int kNGroup  = Parameters{}.n_group;
/// Tree against direct summation at theta = 0.5 with quadrupoles, per body: the force error relative
/// to the sum of the magnitudes of the pulls, the potential error relative to the potential.
constexpr double kForceTolerance     = 1e-2;
constexpr double kPotentialTolerance = 5e-3;

enum class Outcome
{
    Forces,          ///< finite, and within tolerance of direct summation
    FiniteOnly,      ///< finite (beyond float32's resolution, where direct summation in double differs)
    InputError,      ///< setBodies throws InputError containing every fragment
    ForceInputError, ///< setBodies accepts, computeForces throws InputError containing every fragment
};

struct Case
{
    std::string name; ///< gtest name: letters, digits and underscores only
    ParticleSet bodies;
    double eps2     = 0.0;
    Outcome outcome = Outcome::Forces;
    std::vector<std::string> fragments;
    int nLeaf  = kNLeaf;
    int nGroup = kNGroup;
};

inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " (N = " << c.bodies.size() << ")"; }

inline ParticleSet plummer(int64_t n, uint64_t seed = 7)
{
    if (n >= 2) return makePlummer(n, seed);
    ParticleSet p = makePlummer(2, seed);
    p.resize(n);
    return p;
}

/// n bodies of mass 1/n at one point.
inline ParticleSet coincident(int64_t n, Vec3d at)
{
    ParticleSet p;
    p.resize(n);
    for (int64_t i = 0; i < n; ++i)
    {
        p.pos[i]  = at;
        p.vel[i]  = {0, 0, 0};
        p.mass[i] = 1.0 / double(n);
        p.id[i]   = uint64_t(i);
    }
    return p;
}

/// nx * ny * nz bodies at k / (n - 1), k = 0..n-1 along each axis (0 where n = 1): the unit cube's
/// corners and faces, and for n = 2^m + 1 every coordinate exactly on an octree cell boundary.
inline ParticleSet lattice(int nx, int ny, int nz)
{
    ParticleSet p;
    p.resize(int64_t(nx) * ny * nz);
    auto coordinate = [](int k, int n) { return n > 1 ? double(k) / double(n - 1) : 0.0; };
    int64_t i       = 0;
    for (int a = 0; a < nx; ++a)
    {
        for (int b = 0; b < ny; ++b)
        {
            for (int c = 0; c < nz; ++c, ++i)
            {
                p.pos[i]  = {coordinate(a, nx), coordinate(b, ny), coordinate(c, nz)};
                p.vel[i]  = {0, 0, 0};
                p.mass[i] = 1.0 / double(p.size());
                p.id[i]   = uint64_t(i);
            }
        }
    }
    return p;
}

inline ParticleSet concatenate(ParticleSet a, const ParticleSet& b)
{
    const int64_t n = a.size();
    a.resize(n + b.size());
    for (int64_t i = 0; i < b.size(); ++i)
    {
        a.pos[n + i]  = b.pos[i];
        a.vel[n + i]  = b.vel[i];
        a.mass[n + i] = b.mass[i];
        a.id[n + i]   = uint64_t(n + i);
    }
    return a;
}

inline double& field(ParticleSet& p, int64_t i, const std::string& name)
{
    if (name == "x") return p.pos[i].x;
    if (name == "y") return p.pos[i].y;
    if (name == "z") return p.pos[i].z;
    return p.mass[i];
}

/// The whole matrix (built on each call; every set is small).
inline std::vector<Case> cases()
{
    std::vector<Case> all;
    auto forces = [&](std::string name, ParticleSet b, double eps2 = 0.0) {
        Case c;
        c.name   = std::move(name);
        c.bodies = std::move(b);
        c.eps2   = eps2;
        all.push_back(std::move(c));
        return &all.back();
    };
    auto other = [&](Outcome outcome, std::string name, ParticleSet b, std::vector<std::string> fragments) {
        Case c;
        c.name      = std::move(name);
        c.bodies    = std::move(b);
        c.outcome   = outcome;
        c.fragments = std::move(fragments);
        all.push_back(std::move(c));
    };
    auto refused = [&](std::string name, ParticleSet b, std::vector<std::string> fragments) {
        other(Outcome::InputError, std::move(name), std::move(b), std::move(fragments));
    };
    auto computeRefused = [&](std::string name, ParticleSet b, std::vector<std::string> fragments) {
        other(Outcome::ForceInputError, std::move(name), std::move(b), std::move(fragments));
    };
    auto finiteOnly = [&](std::string name, ParticleSet b) {
        other(Outcome::FiniteOnly, std::move(name), std::move(b), {});
    };

    // Sizes around the limits of the tree: too few bodies, n_leaf +- 1, a warp, n_group +- 1.
    refused("N0", plummer(0), {"N = 0"});
    refused("N1", plummer(1), {"N = 1"});
    for (int64_t n : {2, kNLeaf - 1, kNLeaf, kNLeaf + 1, 31, 32, 33, kNGroup - 1, kNGroup, kNGroup + 1})
    {
        forces("N" + std::to_string(n), plummer(n));
        forces("N" + std::to_string(n) + "_Softened", plummer(n), kSoft);
    }
    Case* tiny  = forces("N33_LeafAndGroupOfOne", plummer(33));
    tiny->nLeaf = tiny->nGroup = 1;

    // Bodies at one point: softened, a finite potential and no force; unsoftened, pairs at zero
    // distance contribute nothing (no NaN). 10 * n_leaf bodies end in one maximum-depth leaf.
    for (int64_t n : {int64_t(2), int64_t(17), int64_t(10 * kNLeaf)})
    {
        forces("Coincident" + std::to_string(n) + "_Softened", coincident(n, {0.5, -0.25, 2.0}), kSoft);
        forces("Coincident" + std::to_string(n) + "_Unsoftened", coincident(n, {0.5, -0.25, 2.0}));
    }
    forces("CoincidentClumpInPlummer_Softened", concatenate(plummer(200), coincident(10 * kNLeaf, {0.1, 0.1, 0.1})),
           kSoft);
    forces("CoincidentClumpInPlummer_Unsoftened", concatenate(plummer(200), coincident(10 * kNLeaf, {0.1, 0.1, 0.1})));
    forces("AllAtOrigin_Softened", coincident(100, {0, 0, 0}), kSoft);
    forces("AllAtOrigin_Unsoftened", coincident(100, {0, 0, 0}));

    // Flat and regular sets: a zero-size box in two or one dimensions, coordinates on cell boundaries.
    forces("Line", lattice(100, 1, 1));
    forces("Plane", lattice(12, 12, 1));
    forces("LatticeOnCellBoundaries", lattice(9, 9, 9));
    forces("LatticeCorners", lattice(2, 2, 2));

    // Far bodies: 1e9 is correct; beyond the coordinate limit (1e15) a clear error naming the body.
    {
        ParticleSet b = plummer(200);
        b.pos[57]     = {1e9, 0, 0};
        forces("OneBodyAt1e9", b);
        b.pos[57] = {0, 0, 1e30};
        refused("OneBodyAt1e30", b, {"body 57", "z", "1e15"});
        b.pos[57] = {0, double(FLT_MAX), 0};
        refused("OneBodyAtFltMax", b, {"body 57", "y", "1e15"});
        b.pos[57] = {-double(FLT_MAX), 0, 0};
        refused("OneBodyAtMinusFltMax", b, {"body 57", "x", "1e15"});
    }
    // Coordinates near 1e-30: bodies a few 1e-30 from the origin inside a unit-scale system.
    {
        ParticleSet b = plummer(200);
        b.pos[3]      = {1e-30, -2e-30, 3e-30};
        b.pos[4]      = {-1e-30, 0, 1e-30};
        b.pos[5]      = {0, 0, 0};
        forces("BodiesNear1e-30_Softened", b, kSoft);
    }

    // Limits of float32, in which the walk runs. Softened, these agree with direct summation.
    // Unsoftened: a pair is exact while r^2 and m/r^2 are normal floats (1e-13 apart: an acceleration of
    // 2.5e23); a pair distinct in float32 but closer than 2^-63 ~ 1.08e-19, whose r^2 leaves the normal range
    // and which the kernels would drop, is an InputError naming both bodies, as is a pair whose acceleration
    // overflows float32 (naming the body, not inf or NaN); a pair that float32 cannot resolve (equal after
    // rounding) counts as coincident and contributes nothing, so only finiteness is checked.
    {
        ParticleSet b = plummer(200);
        b.pos[3]      = {1e-13, 0, 0};
        b.pos[4]      = {0, 0, 0};
        forces("PairAt1e-13_Unsoftened", b);
        b.pos[3] = {1e-20, 0, 0};
        forces("PairAt1e-20_Softened", b, kSoft);
        computeRefused("PairAt1e-20_Unsoftened", b, {"bodies 3 and 4", "1e-20 apart", "2^-63"});
        b.pos[3]  = {1e-18, 0, 0};
        b.mass[3] = b.mass[4] = 1e3; // 1e3 / 1e-36 overflows float32
        computeRefused("HeavyPairAt1e-18_Unsoftened", b, {"body 3", "not all finite", "epsilon_squared"});
        b        = plummer(200);
        b.pos[3] = {0.25, 0.25, 0.25};
        b.pos[4] = {0.25 + 1e-12, 0.25, 0.25}; // distinct in double, equal in float32
        finiteOnly("PairBelowFloatResolution_Unsoftened", b);
        b = plummer(200);
        for (Vec3d& x : b.pos) x = 1e-30 * x;
        forces("SystemOfSize1e-30_Softened", b, kSoft);
        computeRefused("SystemOfSize1e-30_Unsoftened", b, {"apart", "2^-63"});
    }
    // Far from the rest of the mass: the acceleration (~1e-30 at the coordinate limit 1e15) is formed
    // without leaving float32's normal range, so it is as exact as near the mass.
    {
        ParticleSet b = plummer(200);
        b.pos[57]     = {1e12, 0, 0};
        forces("OneBodyAt1e12", b);
        b.pos[57] = {0, -1e15, 0};
        forces("OneBodyAtCoordinateLimit1e15", b);
    }

    // Masses: zero, tiny and huge bodies among ordinary ones, and zero total mass.
    for (auto [name, mass] : {std::pair<const char*, double>{"Mass0", 0.0}, {"Mass1e-30", 1e-30}, {"Mass1e30", 1e30}})
    {
        ParticleSet b = plummer(200);
        b.mass[11] = b.mass[150] = mass;
        forces(std::string("TwoBodiesOf") + name, b);
    }
    {
        ParticleSet b = plummer(200);
        for (double& m : b.mass) m = 1e-30;
        forces("AllMasses1e-30", b);
        for (double& m : b.mass) m = 1e30 / 200;
        forces("AllMasses1e30", b, kSoft);
        for (double& m : b.mass) m = 0;
        forces("ZeroTotalMass", b);
    }

    // NaN and infinities in each field: an error naming the body and the field.
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (const std::string f : {"x", "y", "z", "mass"})
    {
        for (auto [label, value] : {std::pair<const char*, double>{"NaN", nan}, {"Inf", inf}, {"MinusInf", -inf}})
        {
            ParticleSet b                       = plummer(100);
            field(b, 42, f)                     = value;
            std::string name                    = std::string(label) + "In" + f;
            name[std::string(label).size() + 2] = char(std::toupper(name[std::string(label).size() + 2]));
            refused(name, b, {"body 42", f + " =", "not finite"});
        }
    }
    return all;
}

inline std::string caseName(const ::testing::TestParamInfo<Case>& info)
{
    std::string s = info.param.name;
    std::replace(s.begin(), s.end(), '-', 'm'); // "1e-30" -> "1em30": gtest names are [A-Za-z0-9_]
    return s;
}

inline Parameters parameters(const Case& c, Backend backend)
{
    Parameters p;
    p.opening_angle          = 0.5;
    p.epsilon_squared        = c.eps2;
    p.gravitational_constant = kG;
    p.n_leaf                 = c.nLeaf;
    p.n_group                = c.nGroup;
    p.backend                = backend;
    return p;
}

inline bool finite(const Vec3d& v) { return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z); }
inline double norm(const Vec3d& v) { return std::sqrt(v.x * v.x + v.y * v.y + v.z * v.z); }

/// Runs one case on `backend`: the error it must raise, or forces checked against direct summation.
inline void run(const Case& c, Backend backend)
{
    GravitySolver solver(parameters(c, backend));
    const ParticleSet& b = c.bodies;
    if (c.outcome == Outcome::InputError)
    {
        try
        {
            solver.setBodies(b.pos, b.mass, b.id);
            ADD_FAILURE() << c.name << ": setBodies accepted the bodies";
        }
        catch (const InputError& e)
        {
            for (const std::string& s : c.fragments)
            {
                EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "'" << s << "' not in: " << e.what();
            }
        }
        return;
    }

    solver.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc, ref;
    std::vector<double> pot, refPot;
    if (c.outcome == Outcome::ForceInputError)
    {
        try
        {
            solver.computeForces(acc, pot);
            ADD_FAILURE() << c.name << ": computeForces gave no error";
        }
        catch (const InputError& e)
        {
            for (const std::string& s : c.fragments)
            {
                EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "'" << s << "' not in: " << e.what();
            }
        }
        return;
    }
    solver.computeForces(acc, pot);
    ASSERT_EQ(acc.size(), size_t(b.size()));
    ASSERT_EQ(pot.size(), size_t(b.size()));
    if (c.outcome == Outcome::FiniteOnly)
    {
        for (int64_t i = 0; i < b.size(); ++i)
        {
            ASSERT_TRUE(finite(acc[i]) && std::isfinite(pot[i])) << c.name << ": body " << i;
        }
        return;
    }
    directSumAll(b.pos.data(), b.mass.data(), b.size(), c.eps2, kG, ref, refPot);

    int reported = 0;
    for (int64_t i = 0; i < b.size() && reported < 5; ++i)
    {
        // The force error of a tree is relative to the pulls it sums, not to their net (which cancels to
        // nearly zero in a lattice or at the middle of a line): scale = G sum_j m_j / (r_ij^2 + eps^2).
        // The potential does not cancel. Where direct summation gives exactly zero (no mass, or every pair
        // at zero distance), so must the tree.
        double scale = 0;
        for (int64_t j = 0; j < b.size(); ++j)
        {
            const Vec3d d   = b.pos[j] - b.pos[i];
            const double r2 = d.x * d.x + d.y * d.y + d.z * d.z + c.eps2;
            if (j != i && r2 > 0) scale += kG * b.mass[j] / r2;
        }
        const bool ok         = finite(acc[i]) && std::isfinite(pot[i]);
        const double accError = norm(acc[i] - ref[i]) / scale;
        const double potError = std::fabs(pot[i] - refPot[i]) / std::fabs(refPot[i]);
        const bool accOk      = scale > 0 ? accError <= kForceTolerance : norm(acc[i]) == 0;
        const bool potOk      = refPot[i] != 0 ? potError <= kPotentialTolerance : pot[i] == 0;
        if (!ok || !accOk || !potOk)
        {
            ++reported;
            ADD_FAILURE() << c.name << ": body " << i << " tree a = (" << acc[i].x << ", " << acc[i].y << ", "
                          << acc[i].z << ") phi = " << pot[i] << "; direct a = (" << ref[i].x << ", " << ref[i].y
                          << ", " << ref[i].z << ") phi = " << refPot[i] << "; relative errors " << accError << ", "
                          << potError;
        }
    }
}

} // namespace octwalk::degenerate

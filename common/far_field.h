#pragma once
/// @file far_field.h
/// The far field of a group as one local expansion, once for both backends (isolated boxes, and periodic ones for
/// the groups that meet every node at the image nearest their centre: Ewald's expanding groups, and under TreePM,
/// with the short-range kernel's derivatives, those that shortRangeShiftsOnce).
///
/// A node the MAC accepts for a group is summed body by body (bodyNodePrepared, common/gravity.h): per
/// (body, node) work. A node far from the group compared with the group's own size pulls every body of the
/// group with a field that is smooth over the group, so its pull is accumulated once per (group, node) into
/// a Taylor expansion of the potential about the group's centre c (to fourth order in the offset
/// y = c - body) and evaluated once per body: the M2L and L2P of a fast multipole method, with the
/// group as the only target cell. A node is far when its centre of mass is more than sqrt(farField2)
/// group radii R = |half| from c (farFromGroup). The expansion of its mass errs by about (R / d)^4 of its
/// pull; that of its second moment, kept to second order only, by about (R / d)^2 (s / d)^2 for a node of
/// size s, below the node's own truncation at the MAC's s / d (measured: tests/unit/test_far_field.cpp,
/// README "Far field").
///
/// Terms: the node's mass to fourth order and its second moment to second order. psi(d) = -(|d|^2 +
/// eps^2)^(-1/2) is the softened Newtonian potential of unit mass at offset d = source - target (pot
/// accumulates -m/r, as everywhere); a node of mass M and second moment I_ij = sum m s_i s_j about its com
/// pulls with the potential M psi(d) + (1/2) I_ij d_i d_j psi(d) + ..., and I = (Q + S 1) / 3 from the
/// packed traceless Q and spread S, i.e. prepareQuadrupole's Q' divided by 3 (with eps = 0, S is left out:
/// psi is then harmonic and the trace adds nothing).
///
/// Units: coefficients are kept in units of the group radius (d' = d / R, eps' = eps / R), where every
/// derivative of a far node is at most of the order of M / d, so no power of 1/r leaves float's range.
/// The coefficient layout is the Ewald correction's (ewaldDerivIndex, EwaldLocal; common/ewald.h), and so
/// are the Taylor evaluation and the lanes' reduction.

#include "common/ewald.h"
#include "common/gravity.h"
#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

/// A group's far-field expansion: the Ewald correction's 35 coefficients (value and derivatives up to
/// fourth order, ewaldDerivIndex order), here in units of the group radius.
using FarLocal = EwaldLocal;

/// Largest d / R taken through the expansion: beyond it the group is a point for that node (d'^2 up to
/// 2^60 keeps every scaled product in float).
constexpr float kFarMaxRatio2 = 0x1p60f;

/// |half|^2: the squared radius of the sphere about the group's centre that holds its box.
HOST_DEVICE inline float groupRadius2(F4 groupHalf)
{
    return addNoFma(addNoFma(mulNoFma(groupHalf.x, groupHalf.x), mulNoFma(groupHalf.y, groupHalf.y)),
                    mulNoFma(groupHalf.z, groupHalf.z));
}

/// Whether a TreePM group whose radius^2 is r2 can take a far node at all: one beyond sqrt(farField2) radii, within
/// the cutoff (nodes beyond it are not listed) and within farSizeDistance2's bound. A group too large for any (every
/// group of a nearly uniform box at high redshift) leaves the far field's staging and its scan of the list undone.
HOST_DEVICE inline bool shortRangeFarFieldReaches(float r2, float farField2, const ShortRangeView& s)
{
    const float inner2 = mulNoFma(farField2, r2);
    return inner2 < s.cutoff2 && mulNoFma(inner2, r2) < s.farSizeDistance2;
}

/// The far field's farField2 for one group of half-sizes half: the tree's in an isolated box; in a periodic box only
/// for a group that meets each node as the image nearest its centre (shiftedOnce: its Ewald correction is its
/// expansion, ewaldGroupExpands, or under TreePM shortRangeShiftsOnce), which the far-field expansion approximates as
/// in an isolated box, and under TreePM only where a far node can be listed (shortRangeFarFieldReaches); a larger
/// group takes the nearest image per target, which no expansion about its centre follows (0: never).
HOST_DEVICE inline float groupFarField2(float farField2, bool periodic, bool shiftedOnce, F4 half,
                                        const PeriodicView& box)
{
    if (!periodic) return farField2;
    if (!shiftedOnce) return 0.0f;
    if (shortRangeOn(box.shortRange) && !shortRangeFarFieldReaches(groupRadius2(half), farField2, box.shortRange))
        return 0.0f;
    return farField2;
}

/// Whether an accepted node whose centre of mass is com goes into its group's far-field expansion: more
/// than sqrt(farField2) group radii from the centre, outside the softening length (inside it the
/// expansion of the softened potential converges slowly), and not so far that the group is a point
/// (kFarMaxRatio2). farField2 == 0: never. sizeDistance2 (farSizeDistance2): the largest (R d)^2 for a group of
/// radius R at distance d, which under TreePM keeps the group small beside the scale on which the short-range
/// kernel varies. Rounded identically on both backends (no FMA), so both take the same nodes body by body.
HOST_DEVICE inline bool farFromGroup(F4 com, F4 groupCenter, F4 groupHalf, float farField2, float eps2,
                                     float sizeDistance2 = HUGE_VALF)
{
    if (!(farField2 > 0.0f)) return false;
    const float dx = com.x - groupCenter.x, dy = com.y - groupCenter.y, dz = com.z - groupCenter.z;
    const float d2 = addNoFma(addNoFma(mulNoFma(dx, dx), mulNoFma(dy, dy)), mulNoFma(dz, dz));
    const float r2 = groupRadius2(groupHalf);
    // Without a bound (a constant HUGE_VALF where inlined) the product is not formed.
    return d2 > mulNoFma(farField2, r2) && d2 >= eps2 && d2 <= mulNoFma(kFarMaxRatio2, r2) &&
           (!(sizeDistance2 < HUGE_VALF) || mulNoFma(r2, d2) <= sizeDistance2);
}

/// farFromGroup's sizeDistance2 for a box: under TreePM (kTreePmFarSizeDistance r_s^2)^2, else no bound.
HOST_DEVICE inline float farSizeDistance2(const PeriodicView& box)
{
    return box.boxSize > 0.0f && shortRangeOn(box.shortRange) ? box.shortRange.farSizeDistance2 : HUGE_VALF;
}

/// The expansion's length unit R for a group: its radius (for a group of coincident bodies, whose offsets
/// are all 0, any unit serves: 1).
HOST_DEVICE inline float farFieldScale(F4 groupHalf)
{
    const float r2 = groupRadius2(groupHalf);
    return r2 > 0.0f ? sqrtf(r2) : 1.0f;
}

/// 2^k d^k/du^k of -u^(-1/2) at u = r^2 (k = 0..4): -1/r, 1/r^3, -3/r^5, 15/r^7, -105/r^9. With them
/// d^n psi / dx^nx dy^ny dz^nz = sum_(i, j, k) c(nx, i) c(ny, j) c(nz, k) x^(nx - 2i) y^(ny - 2j)
/// z^(nz - 2k) f_(n - i - j - k), c(n, i) = n! / ((n - 2i)! i! 2^i).
HOST_DEVICE constexpr float farPairCount(int n, int i)
{
    return n == 2 && i == 1 ? 1.0f : n == 3 && i == 1 ? 3.0f : n == 4 && i == 1 ? 6.0f : n == 4 && i == 2 ? 3.0f : 1.0f;
}

/// Powers v^0..v^4.
HOST_DEVICE inline void farPowers(float v, float* p)
{
    p[0] = 1.0f;
    p[1] = v;
    p[2] = v * v;
    p[3] = p[2] * v;
    p[4] = p[2] * p[2];
}

/// The derivatives up to fourth order at d of a radial potential psi = g(|d|^2) whose factors are f[n] = 2^n
/// g^(n)(|d|^2), in ewaldDerivIndex order.
HOST_DEVICE inline void potentialDerivativesOf(Vec3f d, const float* f, float* D)
{
    float px[5], py[5], pz[5];
    farPowers(d.x, px);
    farPowers(d.y, py);
    farPowers(d.z, pz);
    // (clang-format would read OCTWALK_UNROLL as the body of the loop before it)
    // clang-format off
    OCTWALK_UNROLL
    for (int k = 0; k <= 4; ++k)
        OCTWALK_UNROLL
        for (int j = 0; j <= k; ++j)
            OCTWALK_UNROLL
            for (int nz = 0; nz <= j; ++nz)
            {
                const int nx = k - j, ny = j - nz;
                float v      = 0.0f;
                OCTWALK_UNROLL
                for (int a = 0; 2 * a <= nx; ++a)
                    OCTWALK_UNROLL
                    for (int b = 0; 2 * b <= ny; ++b)
                        OCTWALK_UNROLL
                        for (int c = 0; 2 * c <= nz; ++c)
                        {
                            const float w = farPairCount(nx, a) * farPairCount(ny, b) * farPairCount(nz, c);
                            v += w * (px[nx - 2 * a] * py[ny - 2 * b] * pz[nz - 2 * c]) * f[k - a - b - c];
                        }
                D[ewaldDerivIndex(nx, ny, nz)] = v;
            }
    // clang-format on
}

/// The derivatives of psi up to fourth order at d (in units of R: d', eps'^2), in ewaldDerivIndex order.
HOST_DEVICE inline void softenedPotentialDerivatives(Vec3f d, float eps2, float* D)
{
    const float r2    = softenedDistance2(d, eps2);
    const float invR  = rsqrtApprox(r2);
    const float invR2 = invR * invR;
    float f[5];
    f[0] = -invR;
    f[1] = invR * invR2;
    f[2] = -3.0f * f[1] * invR2;
    f[3] = -5.0f * f[2] * invR2;
    f[4] = -7.0f * f[3] * invR2;
    potentialDerivativesOf(d, f, D);
}

/// Adds to a group's expansion a node of mass m and second moment q (3 I: prepareQuadrupole's Q') whose potential's
/// derivatives at its com are D (in units of R, ewaldDerivIndex order): the mass to fourth order, the second moment
/// to second.
HOST_DEVICE inline void addFarFieldDerivatives(const float* D, float m, const SymTensor<float>& q, float invR,
                                               FarLocal& loc)
{
    const float invR2 = invR * invR;
    const float qq[6] = {q.xx * invR2, q.yy * invR2, q.zz * invR2, q.xy * invR2, q.xz * invR2, q.yz * invR2};
    // (clang-format would read OCTWALK_UNROLL as the body of the loop before it)
    // clang-format off
    OCTWALK_UNROLL
    for (int k = 0; k <= 4; ++k)
        OCTWALK_UNROLL
        for (int j = 0; j <= k; ++j)
            OCTWALK_UNROLL
            for (int nz = 0; nz <= j; ++nz)
            {
                const int nx = k - j, ny = j - nz, at = ewaldDerivIndex(nx, ny, nz);
                float v = m * D[at];
                if (k <= 2) v += ewaldQuadrupoleTerm(D, qq, nx, ny, nz);
                loc.d[at] += v;
            }
    // clang-format on
}

/// Adds to a group's expansion the pull of an accepted node (mass m, q = prepareQuadrupole(Q, eps^2), com
/// at offset d = com - centre), all in units of R (invR = 1 / R, eps2R = eps^2 / R^2).
HOST_DEVICE inline void addFarFieldTerm(Vec3f d, float m, const SymTensor<float>& q, float invR, float eps2R,
                                        FarLocal& loc)
{
    float D[kEwaldDerivs];
    softenedPotentialDerivatives({d.x * invR, d.y * invR, d.z * invR}, eps2R, D);
    addFarFieldDerivatives(D, m, q, invR, loc);
}

/// TreePM's short-range kernel psi(d) = -1 / S + erf(k r) / r (S^2 = r^2 + eps^2, k = 1 / (2 r_s)): its factors
/// f_n = (2 d/du)^n psi at u = r^2 (softenedPotentialDerivatives' f) are
///   f_n = (-1)^n [(2n - 1)!! (1 / r^(2n+1) - 1 / S^(2n+1)) - B_n(r)],
/// B_0 = erfc(k r) / r and B_n = ((2n - 1) B_(n-1) + (2 k^2)^n / (k sqrt(pi)) exp(-k^2 r^2)) / r^2 (Smith's
/// recurrence for the real-space Ewald kernel, every term positive: no cancellation; without softening the first
/// term is exactly 0). In units of R: d, eps2 and kR = k R scaled, as softenedPotentialDerivatives takes them.
HOST_DEVICE inline void shortRangePotentialDerivatives(Vec3f d, float eps2, float kR, float* D)
{
    const float r2    = addNoFma(addNoFma(mulNoFma(d.x, d.x), mulNoFma(d.y, d.y)), mulNoFma(d.z, d.z));
    const float invR  = rsqrtApprox(r2);
    const float invR2 = invR * invR;
    const float invS  = rsqrtApprox(r2 + eps2);
    const float invS2 = invS * invS;
    const float x     = r2 * invR * kR;
    const float gauss = shortRangeGaussian(x);
    // (2 k^2)^n / (k sqrt(pi)) exp(-x^2) for n = 1, 2, ..: the first, then times 2 k^2 each.
    float term        = float(treepm_detail::kTwoOverSqrtPi) * kR * gauss;
    const float twoK2 = 2.0f * kR * kR;
    float b           = gauss * scaledErfc(x) * invR;
    float pr = invR, ps = invS, doubleFactorial = 1.0f, sign = 1.0f;
    float f[5];
    f[0] = (pr - ps) - b;
    OCTWALK_UNROLL
    for (int n = 1; n <= 4; ++n)
    {
        b = (float(2 * n - 1) * b + term) * invR2;
        term *= twoK2;
        pr *= invR2;
        ps *= invS2;
        doubleFactorial *= float(2 * n - 1);
        sign = -sign;
        f[n] = sign * (doubleFactorial * (pr - ps) - b);
    }
    potentialDerivativesOf(d, f, D);
}

/// Adds an accepted node (mass m, traceless quadrupole q as packed, com at offset d = com - centre) to a group's
/// expansion, in units of R (invR = 1 / R, eps2R = eps^2 / R^2): the softened Newtonian potential's
/// (addFarFieldTerm), or under TreePM the short-range kernel's (shortRangePotentialDerivatives). The short-range
/// kernel is not harmonic even without softening, so its second moment keeps the spread's trace always, as
/// bodyNodeShortRange's long-range terms keep it.
HOST_DEVICE inline void addNodeToFarField(Vec3f d, float m, const SymTensor<float>& q, float eps2, float invR,
                                          float eps2R, const PeriodicView& box, FarLocal& loc)
{
    if (!(box.boxSize > 0.0f && shortRangeOn(box.shortRange)))
    {
        addFarFieldTerm(d, m, prepareQuadrupole(q, eps2), invR, eps2R, loc);
        return;
    }
    float D[kEwaldDerivs];
    shortRangePotentialDerivatives({d.x * invR, d.y * invR, d.z * invR}, eps2R, box.shortRange.uPerLength / invR, D);
    const float s = q.spread;
    addFarFieldDerivatives(D, m, {q.xx + s, q.yy + s, q.zz + s, q.xy, q.xz, q.yz, s}, invR, loc);
}

/// Adds the expansion's pull at y = centre - body (not scaled) to (acc, pot), for a group of radius R.
HOST_DEVICE inline void evalFarField(const FarLocal& loc, Vec3f y, float invR, Vec3f& acc, float& pot)
{
    evalScaledLocal(loc, y, invR, acc, pot);
}

} // namespace octwalk

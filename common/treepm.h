#pragma once
/// @file treepm.h
/// The force split of TreePM (GADGET-2; Springel 2005, section 2.3). The potential of a unit mass, -1/r
/// (G = 1), is split at the scale r_s into
///   long range   phi_long(k)  = -4 pi / k^2 exp(-k^2 r_s^2)   (Fourier space, on the mesh: host/pm/pm_mesh.h)
///   short range  phi_short(r) = -erfc(u) / r,  u = r / (2 r_s)  (real space, pair by pair).
/// The functions here give the short-range pair as factors of the Newtonian pair: the acceleration
/// m d / r^3 times shortRangeAccFactor, the potential -m / r times shortRangePotFactor. Both fall below
/// 1.8e-2 at r = 4.5 r_s (the usual cutoff) and 4.4e-4 at 6 r_s.
///
/// In a periodic box with the potential's mean subtracted (host/reference/ewald_direct.h's convention) the
/// pairs leave out two terms that belong to no pair: shortRangeSelfPotential and
/// shortRangeBackgroundPotential. The mesh potential of host/pm/pm_mesh.h includes both.
///
/// In double (the references, the mesh's tests, the pair table) erfc/exp are the C library's. The tree's float kernels
/// take a pair's factors from a table over its softened distance (shortRangePairFactors), and a node's long-range
/// terms with one exponential shared between erf and the Gaussian (scaledErfc).
///
/// The tree's short-range half (ShortRangeView, bodyNodeShortRange, bodyBodyShortRange and the walk's
/// classifyShortRangeEntry in common/walk.h) is here too, once for both backends: with TreePM on, the
/// periodic walk meets every source at its nearest image, takes a pair's softened Newtonian pull less the
/// unsoftened long-range pull (longRangePair), a node through the short-range kernel's own second-order expansion,
/// leaves out whatever lies beyond the cutoff and adds no Ewald correction: the mesh carries the rest.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/gravity.h"
#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

/// How mass is assigned to the TreePM mesh and forces are interpolated from it (host/pm/pm_mesh.h).
enum class MassAssignment : int32_t
{
    Cic, ///< cloud in cell: 2 cells per axis, window sinc^2
    Tsc, ///< triangular-shaped cloud: 3 cells per axis, window sinc^3
};

/// The split scale in mesh cells, r_s = asmth L / n (GADGET-2's ASMTH).
constexpr double kTreePmAsmth = 1.25;
/// The short-range cutoff in units of r_s (GADGET-2's RCUT).
constexpr double kTreePmCutoff = 4.5;

namespace treepm_detail {

HOST_DEVICE inline float erfcOf(float x) { return erfcf(x); }
HOST_DEVICE inline double erfcOf(double x) { return erfc(x); }
HOST_DEVICE inline float expOf(float x) { return expf(x); }
HOST_DEVICE inline double expOf(double x) { return exp(x); }

/// 2 / sqrt(pi) and 1 / sqrt(pi).
constexpr double kTwoOverSqrtPi = 1.12837916709551257390;
constexpr double kOneOverSqrtPi = 0.56418958354775628695;
constexpr double kPi            = 3.14159265358979323846;

} // namespace treepm_detail

/// The short-range factors of a pair at distance r: acc multiplies the Newtonian acceleration m d / r^3,
/// pot the Newtonian potential -m / r.
template<class T>
struct ShortRangeFactors
{
    T acc, pot;
};

/// Both factors at distance r >= 0 for the split scale rs > 0, sharing u = r / (2 rs):
/// acc = erfc(u) + (2u / sqrt(pi)) exp(-u^2) (the gradient of erfc(u)/r has the second term), pot = erfc(u).
template<class T>
HOST_DEVICE inline ShortRangeFactors<T> shortRangeFactors(T r, T rs)
{
    const T u   = r / (T(2) * rs);
    const T pot = treepm_detail::erfcOf(u);
    const T acc = pot + T(treepm_detail::kTwoOverSqrtPi) * u * treepm_detail::expOf(-u * u);
    return {acc, pot};
}

namespace treepm_detail {

/// scaledErfc's t = 1 / (1 + kScaledErfcP u).
constexpr float kScaledErfcP = 0.5f;

} // namespace treepm_detail

/// 2^x for x <= 0 in plain arithmetic, which the host's compiler vectorises in a loop over a group's targets (the C
/// library's exp2 is a call): 2^n (1 + f P(f)) with n = x rounded to the nearest integer (half away from zero), |f| <=
/// 1/2 and Cephes' exp2f polynomial (relative error below 2e-7). Below float's normal range (x < -126) the value is
/// flushed to 0, as the device's ex2.approx.ftz flushes it; NaN stays NaN.
inline float exp2NonPositive(float x)
{
    const float xc     = x > -126.0f ? x : -126.0f;
    const auto n       = int32_t(xc - 0.5f);
    const float f      = xc - float(n);
    float p            = 1.535336188319500e-4f;
    p                  = p * f + 1.339887440266574e-3f;
    p                  = p * f + 9.618437357674640e-3f;
    p                  = p * f + 5.550332471162809e-2f;
    p                  = p * f + 2.402264791363012e-1f;
    p                  = p * f + 6.931472028550421e-1f;
    const int32_t bits = (n + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    const float y = (1.0f + f * p) * scale;
    return x >= -126.0f ? y : (x < -126.0f ? 0.0f : x);
}

/// exp(-u^2) for the factors: 2^x of x = -u^2 log2(e), whose two roundings cost about 2^-23 u^2 of the value (1e-6 at
/// the usual cutoff u = 3, where the factors are 4e-4); on the device the hardware's 2^x (ex2.approx.ftz, 2 ulp), on
/// the host exp2NonPositive. Both flush what falls below float's normal range.
HOST_DEVICE inline float shortRangeGaussian(float u)
{
    const float x = (-u * u) * 1.44269504088896341f;
#ifdef __CUDA_ARCH__
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return exp2NonPositive(x);
#endif
}

/// 1 / x for x >= 1, as scaledErfc takes it: on the device the hardware's approximation (rcp.approx.ftz, 1 ulp),
/// on the host the exact quotient.
HOST_DEVICE inline float reciprocalAtLeastOne(float x)
{
#ifdef __CUDA_ARCH__
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return 1.0f / x;
#endif
}

/// exp(u^2) erfc(u) for 0 <= u <= 10.5 (Faddeeva's erfcx) as t P(t), t = 1 / (1 + u / 2), P of
/// degree 8: a Lawson fit of the relative error on [0, 10.5], 4.3e-8 in exact arithmetic and at most 3.4e-7
/// evaluated in float (Horner), measured on 40001 points against mpmath (dev/fit_scaled_erfc.py makes the
/// coefficients and these figures; tests/unit/test_treepm.cpp checks 1e-6
/// against the C library's double erfc). Its point is the shared exponential: erfc(u) = exp(-u^2) scaledErfc(u),
/// and the acceleration's factor needs exp(-u^2) anyway, so a pair takes one exponential and one reciprocal,
/// where erfcf and expf took an exponential each and erfcf its own quotients (the short-range kernels are bound
/// by their arithmetic). Beyond u = 10.5, exp(-u^2) is 0 in float (u^2 > 103.9): the value there is finite and
/// multiplied by that 0.
HOST_DEVICE inline float scaledErfc(float u)
{
    const float t = reciprocalAtLeastOne(1.0f + treepm_detail::kScaledErfcP * u);
    float p       = -5.919331183e-02f;
    p             = p * t + 2.851827393e-01f;
    p             = p * t - 4.884607103e-01f;
    p             = p * t + 2.795124166e-01f;
    p             = p * t - 2.762332264e-02f;
    p             = p * t + 2.031098812e-01f;
    p             = p * t + 2.429966232e-01f;
    p             = p * t + 2.823900662e-01f;
    p             = p * t + 2.820855748e-01f;
    return t * p;
}

template<class T>
HOST_DEVICE inline T shortRangeAccFactor(T r, T rs)
{
    return shortRangeFactors(r, rs).acc;
}

template<class T>
HOST_DEVICE inline T shortRangePotFactor(T r, T rs)
{
    return treepm_detail::erfcOf(r / (T(2) * rs));
}

/// The distance beyond which short-range pairs are left out: cutoff (in units of rs) times rs.
template<class T>
HOST_DEVICE inline T shortRangeCutoff(T rs, T cutoff = T(kTreePmCutoff))
{
    return cutoff * rs;
}

/// The tree's short-range split as the walk and the force kernels read it (a member of PeriodicView,
/// common/ewald.h). splitScale 0: off, the periodic box is summed by Ewald's method; nothing else is read.
struct ShortRangeView
{
    float splitScale = 0.0f; ///< r_s
    float uPerLength = 0.0f; ///< 1 / (2 r_s): a distance r times this is the factors' u
    float cutoff     = 0.0f; ///< r_cut: pairs, and nodes by their centre of mass, at r >= r_cut are left out
    float cutoff2    = 0.0f; ///< r_cut^2
    /// R / sqrt(nodeMac.w): every body of a node lies within R of its centre of mass (shortRangeNodeExtentFactor).
    float nodeExtentFactor = 1.0f;
    /// (kTreePmNodeSizeDistance r_s^2)^2: a node is accepted only where its MAC radius times its farthest
    /// distance from the group is at most kTreePmNodeSizeDistance r_s^2 (shortRangeNodeSmallEnough), or where
    /// its expansion's error is small beside the group's own acceleration (shortRangeNodeErrorSmallEnough).
    float nodeSizeDistance2 = 0.0f;
    /// (kTreePmFarSizeDistance r_s^2)^2: a node enters a group's far-field expansion only where the group's radius
    /// times the node's distance from its centre is at most kTreePmFarSizeDistance r_s^2 (farFromGroup).
    float farSizeDistance2 = 0.0f;
    /// r_s^4 / kTreePmNodeErrorFactor: the scale of shortRangeNodeErrorSmallEnough's comparison.
    float nodeErrorScale = 0.0f;
    /// kTreePmTruncationFactor nodeExtentFactor^3: the scale of shortRangeNodeTruncationSmallEnough's comparison.
    float nodeTruncationScale = 0.0f;
    /// A pair's factors against its softened distance for one eps^2 (shortRangePairFactors): kShortRangePairIntervals
    /// words (fillShortRangePairTable). The body-leaf passes attach the table of their own eps^2
    /// (withShortRangePairTable: bodyLeafForcesCpu, the device's evaluation); only bodyBodyShortRange reads it.
    const F4* pairTable = nullptr;
    float pairPerLength = 0.0f; ///< the table's intervals per unit of softened distance (shortRangePairPerLength)
};

/// The bound R / r_MAC on how far a node's bodies lie from its centre of mass, for ShortRangeView's
/// nodeExtentFactor. The bodies and the com lie in the node's tight box (largest side l, common/mac.h), so
/// R <= c l + delta with c = sqrt(3)/2 (half the diagonal) and delta = |com - box centre| <= c l. Octgrav's radius
/// r_MAC = l / theta gives R <= 2 c l = sqrt(3) theta r_MAC; Bonsai's (and the relative MAC's) r_MAC = l / theta +
/// delta gives R / r_MAC = (c l + delta) / (l / theta + delta), largest at delta = c l for theta < 1 / c: 2 c theta /
/// (1 + c theta), 0.60 at theta 0.5. The factor 1.001 covers the float rounding of l, delta and r_MAC (about 1e-7
/// each; the positions' own rounding: shortRangeNodeOutOfReach). A tighter bound drops more of the large, sparse
/// leaves of voids whose MAC radius reaches far past the cutoff: their pairs all lie beyond it and add nothing.
inline double shortRangeNodeExtentFactor(bool octgrav, double theta)
{
    constexpr double c = 0.86602540378443865;
    return 1.001 * (octgrav ? 2 * c * theta : 2 * c * theta / (1 + c * theta));
}

/// Whether the periodic box takes the TreePM split (else Ewald's sum).
HOST_DEVICE inline bool shortRangeOn(const ShortRangeView& s) { return s.splitScale > 0.0f; }

/// |d|^2 rounded identically on both backends (no FMA), so that a pair at the cutoff is in or out on both.
HOST_DEVICE inline float shortRangeDistance2(Vec3f d)
{
    return addNoFma(addNoFma(mulNoFma(d.x, d.x), mulNoFma(d.y, d.y)), mulNoFma(d.z, d.z));
}

/// Beyond r_s the split's factors vary on the scale r_s^2 / r (the Gaussian exp(-r^2 / 4 r_s^2)), where a node's
/// second-order expansion (bodyNodeShortRange) errs by about (l r / r_s^2)^2 of its pull for a node of size l; the
/// walk accepts a node only where its MAC radius (at least l) times its farthest distance from the group is at most
/// this many r_s^2: GADGET-2's "open the nodes near r_s more" in the form of that scale. Measured at 2^15 bodies on
/// 32^3 (docs/periodic.md, TreePM): the tree's error at the 99th percentile, in units of the force, and the
/// interactions per body, uniform / clustered box: without the bound 3.0e-2 / 9.4e-4 at 1315 / 2136; at 8 5.3e-4 /
/// 9.4e-4; at 4 1.7e-4 / 9.4e-4 at 7411 / 2425; at 2 1.4e-5 / 9.4e-4 at 7412 / 2705. At 4 the uniform 2^13 box on
/// 32^3 with asmth 2 and rcut 6 (TreePm.UniformBoxAgainstTheEwaldSum) has a p99 of 3.1e-3 against the Ewald sum, at
/// 2 9.9e-4. The clustered box's error is the same throughout, but its interactions grow as the bound tightens: at
/// 2^18 bodies on 64^3, 2864 per body without it, 8891 at 4 and 13362 at 2 (a relative criterion, with each group's
/// own acceleration, would spare it).
constexpr double kTreePmNodeSizeDistance = 2.0;

/// A group's far-field expansion (common/far_field.h) of the short-range kernel about its centre is a Taylor series
/// in the offset y of a body, |y| <= R, whose terms beyond r_s shrink as (R d / 2 r_s^2)^n / n! for a node at
/// distance d (the Gaussian's derivatives): a node enters the expansion only where R d is at most this many r_s^2,
/// as a node's own expansion is bounded by kTreePmNodeSizeDistance.
constexpr double kTreePmFarSizeDistance = 2.0;

/// The error of a node's expansion beyond shortRangeNodeSmallEnough's bound, in units of (size / r_s^2)^2 M / d^2
/// (shortRangeNodeErrorSmallEnough): the estimate bounds the second-order remainder without the Gaussian's damping,
/// which beyond r_s makes the true error far smaller, so the factor is set where the measured error barely moves.
/// On the default split (interlaced mesh of 2 N^(1/3) cells, asmth 1.75, rcut 6), theta 0.5, alpha 0.002, against the
/// Ewald sum on the last of a run's pipelined steps (median / p99, interactions per body) at 3e-3 / 1.2e-3 / 6e-4:
/// the evolved 32^3 LCDM box at z = 0 1.81e-5 / 1.83e-4 at 3166, 1.80e-5 / 2.18e-4 at 2896, 1.97e-5 / 2.17e-4 at
/// 2665; the evolved 64^3 box 4.20e-5 / 5.32e-4 at 4304, 4.42e-5 / 5.31e-4 at 3964, 4.43e-5 / 5.30e-4 at 3790 (tree
/// + Ewald's default there: 6.18e-5 / 5.31e-4 at 4954). A second evaluation of the 32^3 box at 1024 targets
/// (PeriodicTree.EvolvedCosmologicalBoxMatchesTheEwaldSum) 2.17e-5 / 6.47e-4 at 2815, 2.37e-5 / 6.38e-4 at 2553,
/// 2.67e-5 / 6.75e-4 at 2343, against tree + Ewald's 2.47e-5 / 4.61e-4: at 6e-4 the median passes tree + Ewald's,
/// so the factor is 1.2e-3. The clustered 2^15 box (a second evaluation) 1.01e-4 / 9.77e-4 at 2294 and 1.02e-4 /
/// 9.77e-4 at 2208 (3e-3, 6e-4); the uniform one is unchanged (no group's tolerance lets a wide node through).
constexpr double kTreePmNodeErrorFactor = 1.2e-3;

/// The octupole's pull in units of R^3 M / d^5 (shortRangeNodeTruncationSmallEnough), set where TreePM's steps meet
/// tree + Ewald's error at the fewest interactions. On the last of 4 classic steps from the evolved 64^3 LCDM box at
/// z = 0 (theta 0.5, alpha 0.002, the default split, 1024 targets against the Ewald sum; median / p99, interactions
/// per body) at 0 (no such bound) / 0.25 / 0.5 / 1 / 4: 6.18e-5 / 6.12e-4 at 2199, 5.51e-5 / 4.17e-4 at 2233, 4.88e-5
/// / 3.43e-4 at 2289, 4.20e-5 / 2.56e-4 at 2398, 2.76e-5 / 1.08e-4 at 2858; tree + Ewald's 6.11e-5 / 4.85e-4 at 4975,
/// theta 0.45 instead 5.08e-5 / 4.23e-4 at 2470. The evolved 32^3 box (8 steps) at 0 / 0.5 / 1: 2.66e-5 / 5.46e-4 at
/// 2307, 2.37e-5 / 2.19e-4 at 2354, 2.22e-5 / 1.62e-4 at 2377 (tree + Ewald 3.10e-5 / 5.71e-4 at 4560).
constexpr double kTreePmTruncationFactor = 0.5;

/// The long-range pull of a unit mass at distance r, the part the mesh carries: acceleration acc d (d the offset
/// to the mass) and potential -pot, acc = (erf(x) - (2x / sqrt(pi)) exp(-x^2)) / r^3 and pot = erf(x) / r with
/// x = r / (2 r_s). Both are smooth through r = 0 (k^3 (4 / 3 sqrt(pi)) and k (2 / sqrt(pi)), k = 1 / (2 r_s)).
template<class T>
struct LongRangePair
{
    T acc, pot;
};

namespace treepm_detail {

/// LongRangePair in its series in x^2, for small x, where the closed forms cancel: erf(x) / x = (2 / sqrt(pi))
/// sum (-1)^n x^2n / (n! (2n + 1)) and (erf(x) - (2x / sqrt(pi)) exp(-x^2)) / x^3 = (2 / sqrt(pi)) sum (-1)^(n+1)
/// 2n x^(2n-2) / (n! (2n + 1)), through x^12. At x = 1/2 the first terms left out are 2e-11 and 2e-9 of the values.
template<class T>
HOST_DEVICE inline LongRangePair<T> longRangePairSeries(T x2, T k)
{
    T pot     = T(1.0 / 9360);
    pot       = pot * x2 - T(1.0 / 1320);
    pot       = pot * x2 + T(1.0 / 216);
    pot       = pot * x2 - T(1.0 / 42);
    pot       = pot * x2 + T(1.0 / 10);
    pot       = pot * x2 - T(1.0 / 3);
    pot       = pot * x2 + T(1);
    T acc     = T(1.0 / 5400);
    acc       = acc * x2 - T(1.0 / 780);
    acc       = acc * x2 + T(1.0 / 132);
    acc       = acc * x2 - T(1.0 / 27);
    acc       = acc * x2 + T(1.0 / 7);
    acc       = acc * x2 - T(2.0 / 5);
    acc       = acc * x2 + T(2.0 / 3);
    const T c = T(kTwoOverSqrtPi);
    return {c * acc * k * k * k, c * pot * k};
}

/// Below this x, LongRangePair takes its series: the closed forms' rounding (about 1e-16 of erf(x)) is 1e-13 of the
/// acceleration's value at x = 0.1.
constexpr double kLongRangeSeriesBelow = 0.1;

} // namespace treepm_detail

/// LongRangePair at distance r = r2 invR (invR = 1 / r, or 0 with r2 = 0 for the limit at r = 0) for k = 1 / (2 r_s),
/// in double with the C library's erf.
HOST_DEVICE inline LongRangePair<double> longRangePair(double r2, double invR, double k)
{
    const double x = r2 * invR * k;
    if (x < treepm_detail::kLongRangeSeriesBelow) return treepm_detail::longRangePairSeries(x * x, k);
    const double erfX = erf(x), w = treepm_detail::kTwoOverSqrtPi * x * exp(-x * x);
    return {(erfX - w) * invR * invR * invR, erfX * invR};
}

namespace treepm_detail {

/// LongRangePair at r^2 = r2 in double, continued below r2 = 0 by its series (a function of r^2, smooth through 0):
/// the pair table's first interval reaches below the softening length, where S^2 - eps^2 < 0.
inline LongRangePair<double> longRangePairAtSquare(double r2, double k)
{
    if (r2 > 0.0) return longRangePair(r2, 1.0 / std::sqrt(r2), k);
    return longRangePairSeries(r2 * k * k, k);
}

/// The cubic c0 + c1 f + c2 f^2 + c3 f^3 on f in [0, 1] with value y0 and slope d0 at f = 0, y1 and d1 at f = 1
/// (Hermite's).
inline F4 hermiteCubic(double y0, double d0, double y1, double d1)
{
    return {float(y0), float(d0), float(3 * (y1 - y0) - 2 * d0 - d1), float(2 * (y0 - y1) + d0 + d1)};
}

/// A table word, through the read-only cache on the device.
HOST_DEVICE inline F4 readOnlyWord(const F4* p)
{
#ifdef __CUDA_ARCH__
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    return {v.x, v.y, v.z, v.w};
#else
    return *p;
#endif
}

} // namespace treepm_detail

/// Intervals of the pair table (ShortRangeView::pairTable) over the softened distance S in [0, sqrt(r_cut^2 + eps^2)],
/// one word each.
constexpr int32_t kShortRangePairIntervals = 1024;

/// A pair's short-range pull as factors of its softened Newtonian pull at the softened distance S = sqrt(r^2 + eps^2):
/// acc = 1 - S^3 L_acc(r^2) and pot = 1 - S L_pot(r^2) (L = longRangePair, k = 1 / (2 r_s)), so that m d acc / S^3
/// and -m pot / S are the softened Newtonian pull less the unsoftened long-range one (bodyBodyShortRange). Both are
/// smooth in S: L is a smooth function of r^2 = S^2 - eps^2. In double, where the difference keeps the factors to
/// 1e-12 of themselves also near the cutoff (acc is 4e-4 at 6 r_s). The potential's factor has the slope dpot/dS =
/// S^2 L_acc - L_pot (dL_pot / d(r^2) = -L_acc / 2), and acc = pot - S dpot/dS: the pull is the gradient of the
/// potential.
inline ShortRangeFactors<double> shortRangePairFactorsExact(double S, double k, double eps2)
{
    const LongRangePair<double> l = treepm_detail::longRangePairAtSquare(S * S - eps2, k);
    return {1.0 - S * S * S * l.acc, 1.0 - S * l.pot};
}

/// The potential's factor's slope in S (shortRangePairFactorsExact), in double.
inline double shortRangePairPotSlopeExact(double S, double k, double eps2)
{
    const LongRangePair<double> l = treepm_detail::longRangePairAtSquare(S * S - eps2, k);
    return S * S * l.acc - l.pot;
}

/// The pair table's intervals per unit of softened distance: kShortRangePairIntervals over [0, sqrt(r_cut^2 +
/// eps^2)], every pair within the cutoff (the rounding of S may put one a fraction of an ulp beyond, into the last
/// interval's cubic continued).
inline float shortRangePairPerLength(const ShortRangeView& s, float eps2)
{
    return float(double(kShortRangePairIntervals) / std::sqrt(double(s.cutoff2) + double(eps2)));
}

/// Fills the pair table of the split s and the softening eps2 (kShortRangePairTableWords words at out): interval i
/// covers S in [i h, (i + 1) h), h = 1 / shortRangePairPerLength, its word the Hermite cubic of the potential's factor
/// in the fraction f = S / h - i through the exact values and slopes at both ends (shortRangePairFactorsExact,
/// shortRangePairPotSlopeExact). shortRangePairFactors takes the acceleration's factor from the cubic's slope, so a
/// pair reads one word. At 1024 intervals (16 KB) both factors in float are within 3e-7 of the exact ones
/// (tests/unit/test_treepm.cpp), as the closed forms were in float.
inline void fillShortRangePairTable(const ShortRangeView& s, float eps2, F4* out)
{
    const double h = 1.0 / double(shortRangePairPerLength(s, eps2)), k = double(s.uPerLength), e2 = double(eps2);
    double pot0 = shortRangePairFactorsExact(0.0, k, e2).pot, slope0 = shortRangePairPotSlopeExact(0.0, k, e2);
    for (int32_t i = 0; i < kShortRangePairIntervals; ++i)
    {
        const double S1   = (i + 1) * h;
        const double pot1 = shortRangePairFactorsExact(S1, k, e2).pot, slope1 = shortRangePairPotSlopeExact(S1, k, e2);
        out[i] = treepm_detail::hermiteCubic(pot0, h * slope0, pot1, h * slope1);
        pot0   = pot1;
        slope0 = slope1;
    }
}

/// Words of a pair table (fillShortRangePairTable).
constexpr int32_t kShortRangePairTableWords = kShortRangePairIntervals;

/// s with a pair table attached: table holds fillShortRangePairTable's words for s and eps2, in the memory of the
/// backend that reads it.
inline ShortRangeView withShortRangePairTable(ShortRangeView s, float eps2, const F4* table)
{
    s.pairTable     = table;
    s.pairPerLength = shortRangePairPerLength(s, eps2);
    return s;
}

/// The pair's factors at softened distance S from the table attached to s (fillShortRangePairTable): the potential's
/// factor from its interval's cubic and the acceleration's as pot - S dpot/dS. One word and a cubic, since the
/// closed forms take an exponential, two reciprocals and a second square root, and the short-range kernels are bound
/// by their instructions. Near the cutoff the two terms add (pot is 2e-5 there, -S dpot/dS 4e-4): no cancellation.
HOST_DEVICE inline ShortRangeFactors<float> shortRangePairFactors(float S, const ShortRangeView& s)
{
    const float t   = S * s.pairPerLength;
    const auto last = kShortRangePairIntervals - 1;
    const int32_t i = int32_t(t) < last ? int32_t(t) : last;
    const float f   = t - float(i);
    const F4 c      = treepm_detail::readOnlyWord(s.pairTable + i);
    const float pot = ((c.w * f + c.z) * f + c.y) * f + c.x;
    // S dpot/dS = t dpot/df.
    const float slope = (3.0f * c.w * f + 2.0f * c.z) * f + c.y;
    return {pot - t * slope, pot};
}

/// bodyBodyShortRange's pull of a pair already known to lie within the cutoff, r2 = shortRangeDistance2(d) <
/// s.cutoff2: without the branch, so that the host's loop over such pairs (host/cpu/forces_cpu.cpp) vectorises with
/// the table's reads.
HOST_DEVICE inline void bodyBodyShortRangeWithinCutoff(Vec3f d, float r2, float m, float eps2, const ShortRangeView& s,
                                                       Vec3f& acc, float& pot)
{
    const float s2                   = r2 + eps2;
    const float invS                 = invSqrtOrZero(s2);
    const ShortRangeFactors<float> f = shortRangePairFactors(s2 * invS, s);
    const float mInvS = m * invS, mInvS3 = mInvS * invS * invS;
    const float a = mInvS3 * f.acc;
    acc.x += a * d.x;
    acc.y += a * d.y;
    acc.z += a * d.z;
    pot -= mInvS * f.pot;
}

/// Adds the short-range pull of a body of mass m at the nearest-image offset d (source - target): the softened
/// Newtonian pull less the unsoftened long-range pull that the mesh carries (LongRangePair), nothing at r >= r_cut
/// (as host/reference/short_range_direct.h sums it). With the mesh's part the pair's pull is then the softened
/// Newtonian one at every distance, as tree + Ewald's and an isolated run's: Plummer softening reaches beyond the
/// split scale (by 1.5 eps^2 / r^2 of the pull), and a short-range pair that kept only its share of it (the
/// Newtonian pull times the factors) differed from the Ewald sum by 1e-4 of a pair's force between r_s and 4 r_s.
///
/// The pull is m d / S^3 and the potential -m / S, S^2 = r^2 + eps^2, times the factors of the table attached to s
/// for this eps2 (shortRangePairFactors): one square root and a table's interval a pair. The factors hold the
/// difference of the two pulls without cancellation: near the cutoff, where the short-range pull is 4e-4 of
/// Newton's, the plain difference kept only float's 6e-8 of Newton's, which the device's and the host's roundings
/// moved apart by 2e-4 of a clustered box's short-range forces. A massless source (the target itself) adds exact
/// zeros; a pair whose r^2 + eps^2 is below float's normal range adds nothing, as bodyBody.
HOST_DEVICE inline void bodyBodyShortRange(Vec3f d, float m, float eps2, const ShortRangeView& s, Vec3f& acc,
                                           float& pot)
{
    const float r2 = shortRangeDistance2(d);
    if (r2 < s.cutoff2) bodyBodyShortRangeWithinCutoff(d, r2, m, eps2, s, acc, pot);
}

namespace treepm_detail {

/// erf(x) and w = (2x / sqrt(pi)) exp(-x^2) for x >= 0, sharing the exponential: in float through scaledErfc and
/// shortRangeGaussian, in double the C library's (the references of the tests).
HOST_DEVICE inline void erfAndGaussian(float x, float& erfX, float& w)
{
    const float gauss = shortRangeGaussian(x);
    w                 = float(kTwoOverSqrtPi) * x * gauss;
    erfX              = 1.0f - gauss * scaledErfc(x);
}

inline void erfAndGaussian(double x, double& erfX, double& w)
{
    w    = kTwoOverSqrtPi * x * exp(-x * x);
    erfX = erf(x);
}

} // namespace treepm_detail

/// The short-range pull of a node, bodyNodeShortRange's terms at r2 = |d|^2 > 0 with k = 1 / (2 r_s): the softened
/// Newtonian expansion of bodyNodePrepared less the unsoftened long-range one, psi(r) = -erf(k r) / r to second order.
/// For a radial kernel the second-order term is (1/6) (A(r) u.Q.u + S lap psi), A = psi'' - psi'/r, u = d / r; with
/// x = k r, erf(x) and w = (2x / sqrt(pi)) exp(-x^2):
///   pot_long = -M erf / r - gA u.Q.u / (2 r^3) + S x^2 w / (3 r^3)
///   acc_long = (M (erf - w) / r^2 + (3/2 gA' + gA) u.Q.u / r^4 - (2/3) S x^4 w / r^4) u - gA Q.u / r^4
/// gA = erf - w (1 + 2x^2/3), gA' = gA - (4/9) x^4 w: what the Newtonian expansion's factors 1 lose to the short
/// range. psi is smooth (its singularities are the Newtonian kernel's), so it needs no softening.
///
/// Both expansions are taken along one direction, the softened unit vector v = d / sqrt(r^2 + eps^2) of
/// bodyNodePrepared (u = c v, c = sqrt(r^2 + eps^2) / r), so that Q.v and v.Q.v are computed once and the two pulls
/// meet as acc = a v - b Q.v: the body-node kernel of a periodic box is bound by its instructions. The spread enters
/// the softened expansion as bodyNodePrepared's prepared diagonal (its S eps^2 terms, nothing without softening),
/// whose terms along v reduce to w_N = (v.Q.v - S eps^2 / (r^2 + eps^2)) / (r^2 + eps^2).
template<class T>
HOST_DEVICE inline void shortRangeNodeTerms(Vec3<T> d, T r2, T mass, const SymTensor<T>& q, T eps2, T k, Vec3<T>& acc,
                                            T& pot)
{
    const T eps2Floor = nodeSoftening(eps2);
    const T spread    = eps2 > T(0) ? q.spread : T(0);
    // r2 was rounded without fused multiply-adds, so both backends see the same s2.
    const T s2    = r2 + eps2Floor;
    const T invS  = invSqrtNormal(s2);
    const T invS2 = invS * invS;
    const Vec3<T> v{d.x * invS, d.y * invS, d.z * invS};
    const Vec3<T> qv{q.xx * v.x + q.xy * v.y + q.xz * v.z, q.xy * v.x + q.yy * v.y + q.yz * v.z,
                     q.xz * v.x + q.yz * v.y + q.zz * v.z};
    const T vqv = v.x * qv.x + v.y * qv.y + v.z * qv.z;
    // The softened Newtonian expansion (bodyNodePrepared): its spread's radial term cancels against Q'.v's.
    const T wN      = (vqv - spread * (eps2Floor * invS2)) * invS2;
    const T potN    = (mass + T(0.5) * wN) * invS;
    const T radialN = (mass + T(2.5) * wN) * invS2;
    // The long-range expansion along u = c v. A subnormal r^2 takes no long-range terms (invR 0).
    const T invR = invSqrtOrZero(r2);
    const T c    = invR * (s2 * invS);
    const T x    = r2 * invR * k;
    T erfX, w;
    treepm_detail::erfAndGaussian(x, erfX, w);
    const T x2 = x * x, w2 = x2 * w, w4 = x2 * w2, c2vqv = c * c * vqv;
    const T gA    = erfX - w - T(2) / T(3) * w2;
    const T gA1   = gA - T(4) / T(9) * w4;
    const T invR2 = invR * invR, invR3 = invR2 * invR, invR4 = invR2 * invR2;
    const T radialL = mass * (erfX - w) * invR2 + ((T(1.5) * gA1 + gA) * c2vqv - T(2) / T(3) * q.spread * w4) * invR4;
    const T potL    = mass * erfX * invR + (T(0.5) * gA * c2vqv - T(1) / T(3) * q.spread * w2) * invR3;
    const T a       = radialN - c * radialL;
    const T b       = invS2 * invS2 - c * gA * invR4;
    acc.x += a * v.x - b * qv.x;
    acc.y += a * v.y - b * qv.y;
    acc.z += a * v.z - b * qv.z;
    pot += potL - potN;
}

/// Adds the short-range pull of a node (mass, traceless quadrupole q and spread as packed) at the nearest-image
/// offset d = com - target, nothing at r >= r_cut: bodyNode's softened Newtonian expansion less the long-range
/// kernel's (shortRangeNodeTerms), the second-order expansion of the short-range kernel itself. A single body (q
/// zero) gets its pair's pull (bodyBodyShortRange) where r >> eps. Accurate while the node is small beside the
/// scale on which the split's factors vary, about r_s^2 / r beyond r_s (kTreePmNodeSizeDistance). Measured against
/// GADGET-2's monopole times the factors at the centre of mass (docs/periodic.md): a clustered box's tree error
/// at the 99th percentile 9.4e-4 instead of 6.5e-3 of the force, at the same interactions.
HOST_DEVICE inline void bodyNodeShortRange(Vec3f d, float mass, const SymTensor<float>& q, float eps2,
                                           const ShortRangeView& s, Vec3f& acc, float& pot)
{
    const float r2 = shortRangeDistance2(d);
    if (!(r2 < s.cutoff2) || !(r2 > 0.0f)) return;
    shortRangeNodeTerms(d, r2, mass, q, eps2, s.uPerLength, acc, pot);
}

/// A node's size against the split's scale in a group's box: its MAC word w (the MAC radius squared) times the
/// square of its com's farthest distance from the box, bounded by the distance from the box's centre (d2Centre,
/// nearest image) plus the box's half-diagonal. Rounded identically on both backends (IEEE sqrt, no FMA).
HOST_DEVICE inline float shortRangeNodeSize2(float nodeMacW, float d2Centre, F4 groupHalf)
{
    const float halfDiagonal2 =
        addNoFma(addNoFma(mulNoFma(groupHalf.x, groupHalf.x), mulNoFma(groupHalf.y, groupHalf.y)),
                 mulNoFma(groupHalf.z, groupHalf.z));
    const float far = addNoFma(sqrtf(d2Centre), sqrtf(halfDiagonal2));
    return mulNoFma(nodeMacW, mulNoFma(far, far));
}

/// Whether a node is small enough for its expansion everywhere in a group's box (kTreePmNodeSizeDistance), given
/// shortRangeNodeSize2.
HOST_DEVICE inline bool shortRangeNodeSmallEnough(float size2, const ShortRangeView& s)
{
    return size2 <= s.nodeSizeDistance2;
}

/// Whether a node too wide for shortRangeNodeSmallEnough may still be expanded for a group, GADGET-2's relative
/// criterion in the form of that bound: the expansion errs by about (size / r_s^2)^2 of the node's pull M / d^2
/// (d the distance from the group's box to the com, size2 = shortRangeNodeSize2) times kTreePmNodeErrorFactor,
/// which must stay below the group's tolerance, err_tol_force_acc times the smallest |a| of its bodies (groupHalf.w
/// under TreePM, G = 1; 0 before any acceleration is known). A node far from a dense group is then expanded where
/// the fixed bound would open it: in a clustered box the bound alone multiplies the leaf interactions. Rounded
/// identically on both backends (no FMA).
HOST_DEVICE inline bool shortRangeNodeErrorSmallEnough(float mass, float size2, float d2, float groupTolerance,
                                                       const ShortRangeView& s)
{
    return mulNoFma(mass, size2) <= mulNoFma(mulNoFma(groupTolerance, s.nodeErrorScale), d2);
}

/// Whether the truncation of a node's quadrupole expansion errs little beside a group's tolerance (groupHalf.w, G =
/// 1): the octupole left out pulls about R^3 M / d^5 for bodies within R of the com (R = nodeExtentFactor
/// sqrt(nodeMac.w)) at distance d from the group's box, times kTreePmTruncationFactor. GADGET's relative criterion for
/// an expansion to the quadrupole: theta bounds the truncation relative to each node's own pull, this bounds it
/// relative to the group's net force, which is what matters where many pulls cancel (the centres of haloes, where
/// the short range carries the force). Rounded identically on both backends (IEEE sqrt, no FMA).
HOST_DEVICE inline bool shortRangeNodeTruncationSmallEnough(float mass, float nodeMacW, float d2, float groupTolerance,
                                                            const ShortRangeView& s)
{
    const float lhs = mulNoFma(mulNoFma(mass, s.nodeTruncationScale), mulNoFma(nodeMacW, sqrtf(nodeMacW)));
    return lhs <= mulNoFma(groupTolerance, mulNoFma(mulNoFma(d2, d2), sqrtf(d2)));
}

/// TreePM's error control for one group (groupHalf.w): err_tol_force_acc (alpha) times the smallest |a| of its
/// bodies' previous accelerations (G = 1), previousOf(k) giving the k-th body of range in tree order; 0 (the fixed
/// bound alone) when none is finite. The classic solver and both refits of a kept topology compute it with this one
/// function, rounded alike (no FMA, IEEE sqrt).
template<class PreviousOf>
HOST_DEVICE inline float treePmGroupTolerance(I2 range, float alpha, PreviousOf previousOf)
{
    float smallest = HUGE_VALF;
    for (int32_t k = range.x; k < range.x + range.y; ++k)
    {
        const F4 a      = previousOf(k);
        const float abs = sqrtf(addNoFma(addNoFma(mulNoFma(a.x, a.x), mulNoFma(a.y, a.y)), mulNoFma(a.z, a.z)));
        if (abs < smallest) smallest = abs;
    }
    return smallest < HUGE_VALF ? mulNoFma(alpha, smallest) : 0.0f;
}

/// Whether every body of a node lies beyond the cutoff from every point of a group's box, given d2, the
/// squared nearest-image distance from the box to the node's com (boxPointDistance2Periodic), the node's
/// MAC word w (R = nodeExtentFactor sqrt(w)) and the box's side. The reach carries kShortRangeReachSlack box sides
/// more: float positions, boxes and coms near the box's far faces are rounded to about 2^-24 of its side, which
/// for a small node is more than nodeExtentFactor's relative margin. Rounded identically on both backends (IEEE
/// sqrt, no FMA).
constexpr float kShortRangeReachSlack = 0x1p-20f;

HOST_DEVICE inline bool shortRangeNodeOutOfReach(float d2, float nodeMacW, const ShortRangeView& s, float boxSize)
{
    const float reach = addNoFma(addNoFma(s.cutoff, mulNoFma(kShortRangeReachSlack, boxSize)),
                                 mulNoFma(s.nodeExtentFactor, sqrtf(nodeMacW)));
    return d2 > mulNoFma(reach, reach);
}

/// Whether a body pulls no point of a group's box within the cutoff, given d2, the squared nearest-image distance from
/// the box to the body (boxPointDistance2Periodic): d2 beyond the cutoff plus kShortRangeReachSlack box sides, which
/// covers the rounding of float positions and of the pair's own nearest-image distance (bodyBodyShortRange takes a
/// pair only at r^2 < cutoff^2). Every target of a group lies in its box, so such a body adds nothing to any of
/// them: the GPU's body-leaf kernels leave it out of the group's tiles before the pair loop (a leaf the walk keeps
/// because some of its bodies are within reach holds others beyond it). Rounded identically on both backends.
HOST_DEVICE inline bool shortRangeBodyOutOfReach(float d2, const ShortRangeView& s, float boxSize)
{
    const float reach = addNoFma(s.cutoff, mulNoFma(kShortRangeReachSlack, boxSize));
    return d2 > mulNoFma(reach, reach);
}

/// A body's own short-range term, lim_{r->0} (phi_short(r) + 1/r) = erf(u)/r -> 1 / (sqrt(pi) rs) per unit
/// mass: the Newtonian self-interaction is excluded, and the mesh's long-range potential of the body at
/// its own place, about -1 / (sqrt(pi) rs), must be cancelled by it.
template<class T>
HOST_DEVICE inline T shortRangeSelfPotential(T rs)
{
    return T(treepm_detail::kOneOverSqrtPi) / rs;
}

/// What the neutralising background adds to the short-range sum, per unit of the box's total mass:
/// phi_short integrated over all space is -4 pi rs^2, so subtracting the mean density adds
/// +4 pi rs^2 / L^3 (the mesh has no k = 0 mode, and Ewald's potential has zero mean).
template<class T>
HOST_DEVICE inline T shortRangeBackgroundPotential(T rs, T boxSize)
{
    return T(4.0 * treepm_detail::kPi) * rs * rs / (boxSize * boxSize * boxSize);
}

/// A tree's float result t (acc xyz, potential) plus the mesh's long-range acceleration a and potential pot in
/// double, in the units of t: one rounding to float per component, of the sum of the tree's float result and the
/// mesh's double one. The CPU and the device add the mesh with it, so that both give the same bits.
HOST_DEVICE inline F4 addMeshTerm(F4 t, Vec3d a, double pot)
{
    return {float(double(t.x) + a.x), float(double(t.y) + a.y), float(double(t.z) + a.z), float(double(t.w) + pot)};
}

} // namespace octwalk

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
/// erfc/exp are the C library's (erfcf/expf in float): nvcc provides the same names in device code.
///
/// The tree's short-range half (ShortRangeView, bodyNodeShortRange, bodyBodyShortRange and the walk's
/// classifyShortRangeEntry in common/walk.h) is here too, once for both backends: with TreePM on, the
/// periodic walk meets every source at its nearest image, multiplies the Newtonian pair (or node) by the
/// factors below at the unsoftened distance, leaves out whatever lies beyond the cutoff and adds no Ewald
/// correction: the mesh carries the rest.

#include <cstdint>

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
    float cutoff     = 0.0f; ///< r_cut: pairs, and nodes by their centre of mass, at r >= r_cut are left out
    float cutoff2    = 0.0f; ///< r_cut^2
    /// R / sqrt(nodeMac.w): every body of a node lies within R of its centre of mass. 1 under the Bonsai MAC
    /// (l / theta + delta >= sqrt(3)/2 l + delta for theta <= 1), sqrt(3) under Octgrav's (l / theta >= l and the
    /// com is inside the tight box, whose diagonal is at most sqrt(3) l).
    float nodeExtentFactor = 1.0f;
    /// A node whose squared MAC radius exceeds this is opened wherever it lies within the cutoff's reach
    /// (kTreePmNodeMaxRadius): the split factor varies over a node of a size comparable to r_s.
    float maxMacRadius2 = 0.0f;
};

/// Whether the periodic box takes the TreePM split (else Ewald's sum).
HOST_DEVICE inline bool shortRangeOn(const ShortRangeView& s) { return s.splitScale > 0.0f; }

/// |d|^2 rounded identically on both backends (no FMA), so that a pair at the cutoff is in or out on both.
HOST_DEVICE inline float shortRangeDistance2(Vec3f d)
{
    return addNoFma(addNoFma(mulNoFma(d.x, d.x), mulNoFma(d.y, d.y)), mulNoFma(d.z, d.z));
}

/// The largest MAC radius, in units of r_s, of a node that a group may take as a multipole under TreePM.
/// A node's pull is its Newtonian multipole times the split factors at its centre of mass (as GADGET-2
/// scales its monopoles), which errs by the factors' variation over the node, second order in its size over
/// r_s; the cap keeps accepted nodes small beside r_s. Measured in docs/periodic.md (TreePM, the tree's part).
constexpr double kTreePmNodeMaxRadius = 0.5;

/// Adds the short-range pull of a body of mass m at the nearest-image offset d (source - target): bodyBody's
/// softened Newtonian pull times the factors at the unsoftened distance r, nothing at r >= r_cut (as
/// host/reference/short_range_direct.h sums it). A massless source (the target itself) adds exact zeros.
HOST_DEVICE inline void bodyBodyShortRange(Vec3f d, float m, float eps2, const ShortRangeView& s, Vec3f& acc,
                                           float& pot)
{
    const float r2 = shortRangeDistance2(d);
    if (!(r2 < s.cutoff2)) return;
    Vec3f a{0.0f, 0.0f, 0.0f};
    float p                          = 0.0f;
    const ShortRangeFactors<float> f = shortRangeFactors(sqrtf(r2), s.splitScale);
    bodyBody(d, m, eps2, a, p);
    acc.x += f.acc * a.x;
    acc.y += f.acc * a.y;
    acc.z += f.acc * a.z;
    pot += f.pot * p;
}

/// Adds the short-range pull of a node (mass, traceless quadrupole q as packed) at the nearest-image offset d
/// = com - target: bodyNode's softened multipole pull, quadrupole included, times the factors at the unsoftened
/// distance of the centre of mass, nothing at r >= r_cut. Exact for the monopole of a point mass; for an
/// extended node the factors' variation over it is left out (kTreePmNodeMaxRadius bounds it).
HOST_DEVICE inline void bodyNodeShortRange(Vec3f d, float mass, const SymTensor<float>& q, float eps2,
                                           const ShortRangeView& s, Vec3f& acc, float& pot)
{
    const float r2 = shortRangeDistance2(d);
    if (!(r2 < s.cutoff2)) return;
    Vec3f a{0.0f, 0.0f, 0.0f};
    float p                          = 0.0f;
    const ShortRangeFactors<float> f = shortRangeFactors(sqrtf(r2), s.splitScale);
    bodyNode(d, mass, q, eps2, a, p);
    acc.x += f.acc * a.x;
    acc.y += f.acc * a.y;
    acc.z += f.acc * a.z;
    pot += f.pot * p;
}

/// Whether every body of a node lies beyond the cutoff from every point of a group's box, given d2, the
/// squared nearest-image distance from the box to the node's com (boxPointDistance2Periodic), and the node's
/// MAC word w (R = nodeExtentFactor sqrt(w)). Rounded identically on both backends (IEEE sqrt, no FMA).
HOST_DEVICE inline bool shortRangeNodeOutOfReach(float d2, float nodeMacW, const ShortRangeView& s)
{
    const float reach = addNoFma(s.cutoff, mulNoFma(s.nodeExtentFactor, sqrtf(nodeMacW)));
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

} // namespace octwalk

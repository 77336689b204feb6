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

#include "common/hostdevice.h"

namespace octwalk {

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

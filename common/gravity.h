#pragma once
/// @file gravity.h
/// The two force formulas of the code: softened body-body (P2P) and softened quadrupole
/// body-node (M2P). The CPU twin, the CUDA kernels and direct summation all call these.
///
/// Conventions: d = source - target; Plummer softening replaces r^2 by r^2 + eps^2 in every
/// power of r; G is applied by the caller once per body; pot accumulates -m/r (G = 1).

#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

/// Traceless quadrupole Q_ij = sum m (3 d_i d_j - |d|^2 delta_ij) about the centre of mass, and the
/// trace of the second moment, spread = sum m |d|^2, which the traceless part cannot carry: the
/// expansion of the *softened* potential needs it (bodyNode). 0 where it is not known (then bodyNode is
/// the plain traceless expansion, bit for bit).
template<class T>
struct SymTensor
{
    T xx, yy, zz, xy, xz, yz;
    T spread = T(0);
};

template<class T>
HOST_DEVICE inline T invSqrt(T x);

template<>
HOST_DEVICE inline float invSqrt<float>(float x)
{
    return rsqrtApprox(x);
}

template<>
HOST_DEVICE inline double invSqrt<double>(double x)
{
    return 1.0 / sqrt(x);
}

/// |d|^2 + eps^2 summed from eps^2 up, so that a fused multiply-add takes in every term (3
/// instructions on the device, where dot(d, d) + eps2 needs 4).
template<class T>
HOST_DEVICE inline T softenedDistance2(Vec3<T> d, T eps2)
{
    return d.x * d.x + (d.y * d.y + (d.z * d.z + eps2));
}

/// 1/sqrt(r2), and 0 for r2 == 0 (a coincident unsoftened pair contributes nothing instead of NaN).
/// Exact for r2 > 0 in both forms, so the twins agree: on the host written without a branch so the
/// loops over targets vectorise; on the device a select after the rsqrt (3 instructions, against 6
/// for the host form, in the inner loops of the force kernels).
template<class T>
HOST_DEVICE inline T safeInvSqrt(T r2)
{
#ifdef __CUDA_ARCH__
    T inv = invSqrt(r2); // unconditionally, so that nvcc selects instead of branching
    return r2 > T(0) ? inv : T(0);
#else
    T isZero = r2 > T(0) ? T(0) : T(1);
    return invSqrt(r2 + isZero) * (T(1) - isZero);
#endif
}

/// The smallest normal number of T (2^-126 for float): below it the hardware rsqrt needs its slow
/// subnormal path, and r^2 has lost precision anyway.
template<class T>
HOST_DEVICE constexpr T minNormal()
{
    return sizeof(T) == sizeof(float) ? T(0x1p-126) : T(0x1p-1022);
}

/// 1/sqrt(r2) for a normal r2 (>= minNormal), else 0: a pair so close (or coincident) that r^2 is
/// subnormal or zero contributes nothing instead of NaN. On the device the flush-to-zero rsqrt
/// (invSqrtNormal: the MUFU alone, without rsqrtf's test and rescaling of subnormal inputs) and a select;
/// for every normal r2 its value is rsqrtf's bit for bit. On the host without a branch (r2 + 1 is exactly
/// 1 for a subnormal r2), so the loops over targets vectorise; exact, as invSqrt.
template<class T>
HOST_DEVICE inline T invSqrtOrZero(T r2);

/// Adds the pull of a body of mass m at offset d (source - target).
/// A pair with r^2 + eps^2 below float's normal range (coincident and unsoftened, or closer than
/// 2^-63 ~ 1.1e-19) contributes nothing instead of NaN; excluding a body's interaction with itself is the
/// caller's job (it knows the indices). The solver refuses bodies that would form a distinct such pair
/// before the walk (host/solver/solver.cpp, checkResolvablePairs), so no branch is needed here.
///
/// Range: the acceleration is formed as (m/r^2) (d/r), never through m/r^3, which leaves float32's
/// range long before the acceleration does (it overflows for an unsoftened pair closer than ~1e-13 and
/// falls below the normal range for a body ~1e13 from the mass). So a pair is computed whenever r^2
/// is normal and m/r^2 representable (r from 2^-63 ~ 1.1e-19 to beyond the 1e15 coordinate limit).
template<class T>
HOST_DEVICE inline void bodyBody(Vec3<T> d, T m, T eps2, Vec3<T>& acc, T& pot)
{
    T r2     = softenedDistance2(d, eps2);
    T invR   = invSqrtOrZero(r2);
    T mInvR  = m * invR;
    T mInvR2 = mInvR * invR;
    pot -= mInvR;
    acc.x += mInvR2 * (d.x * invR);
    acc.y += mInvR2 * (d.y * invR);
    acc.z += mInvR2 * (d.z * invR);
}

/// 1/sqrt(x) for a normal x (>= 2^-126), as bodyBodySoftened guarantees: on the device the
/// flush-to-zero form of the hardware approximation (rsqrt.approx.ftz), which leaves out the plain
/// form's handling of denormal inputs, of no use here; on the host the exact one, as invSqrt.
template<class T>
HOST_DEVICE inline T invSqrtNormal(T x);

template<>
HOST_DEVICE inline float invSqrtNormal<float>(float x)
{
#ifdef __CUDA_ARCH__
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
#else
    return 1.0f / std::sqrt(x);
#endif
}

template<>
HOST_DEVICE inline double invSqrtNormal<double>(double x)
{
    return 1.0 / sqrt(x);
}

template<class T>
HOST_DEVICE inline T invSqrtOrZero(T r2)
{
#ifdef __CUDA_ARCH__
    T inv = invSqrtNormal(r2); // unconditionally, so that nvcc selects instead of branching
    return r2 >= minNormal<T>() ? inv : T(0);
#else
    T small = r2 >= minNormal<T>() ? T(0) : T(1);
    return invSqrt(r2 + small) * (T(1) - small);
#endif
}

/// bodyBody for softened sums, in the fewest operations (3 subtractions by the caller, 3 fused
/// multiply-adds for r^2, one rsqrt, 3 multiplies, 1 add, 3 fused multiply-adds): the acceleration
/// goes through m/r^3, so it trades bodyBody's range and its r^2 == 0 guard for speed. Preconditions,
/// which the caller checks once per tile of sources (softenedMassLimit): eps2 >= kMinSoftenedEps2 and
/// |m| <= softenedMassLimit(eps2), so r^2 >= eps2 > 0 and m/r^3 stays finite. A body meeting itself
/// (d = 0) adds exactly zero to acc but -m/eps to pot: excluding it stays the caller's job.
template<class T>
HOST_DEVICE inline void bodyBodySoftened(Vec3<T> d, T m, T eps2, Vec3<T>& acc, T& pot)
{
    T r2     = d.x * d.x + (d.y * d.y + (d.z * d.z + eps2));
    T invR   = invSqrtNormal(r2);
    T invR2  = invR * invR;
    T mInvR  = m * invR;
    T mInvR3 = mInvR * invR2;
    pot -= mInvR;
    acc.x += mInvR3 * d.x;
    acc.y += mInvR3 * d.y;
    acc.z += mInvR3 * d.z;
}

/// The smallest eps2 for which bodyBodySoftened is used: 1/eps2 and m/eps stay far inside float range.
constexpr float kMinSoftenedEps2 = 1e-30f;

/// The largest |m| for which bodyBodySoftened stays in float range at softening eps2: m/eps^3 at most
/// 2^-10 of the largest float (headroom for the approximate rsqrt and for summing many such pairs).
/// Negative when bodyBodySoftened must not be used at all (eps2 below kMinSoftenedEps2, or NaN).
HOST_DEVICE inline float softenedMassLimit(float eps2)
{
    if (!(eps2 >= kMinSoftenedEps2)) return -1.0f;
    const double maxFloat = 3.4028234663852886e38;
    double limit          = maxFloat / 1024.0 * (double(eps2) * sqrt(double(eps2)));
    return limit < maxFloat ? float(limit) : float(maxFloat);
}

/// The softening of bodyNodePrepared: eps^2 floored at float's smallest normal number (minNormal), so that
/// r^2 is always normal and the rsqrt needs neither its subnormal path nor a zero guard. Once per evaluation.
template<class T>
HOST_DEVICE inline T nodeSoftening(T eps2)
{
    return eps2 > minNormal<T>() ? eps2 : minNormal<T>();
}

/// A node's quadrupole as bodyNodePrepared takes it, once per node (the device kernel when it stages the
/// node, the CPU twin before its loop over targets): the diagonal raised by S' and spread = S', where
/// S' = q.spread when eps2 > 0, else 0 (so an unsoftened node is the traceless expansion bit for bit).
template<class T>
HOST_DEVICE inline SymTensor<T> prepareQuadrupole(const SymTensor<T>& q, T eps2)
{
    const T s = eps2 > T(0) ? q.spread : T(0);
    return {q.xx + s, q.yy + s, q.zz + s, q.xy, q.xz, q.yz, s};
}

/// Adds the pull of a node (mass, traceless quadrupole q about its centre of mass) at offset
/// d = com - target:
///   phi = -M/r - (d.Q.d - S eps^2)/(2 r^5)
///   a   =  M d/r^3 - Q.d/r^5 + (5/2)(d.Q.d - S eps^2) d/r^7
/// with r^2 = |d|^2 + eps^2 and S = q.spread (sum m |s|^2): the second-order Taylor expansion of the
/// Plummer-softened potential, whose Laplacian does not vanish, so the trace of the second moment
/// contributes the S eps^2 terms (Bonsai keeps the full second moment for the same reason; measured:
/// benchmarks/results/accuracy/mac_study.md section 7). Evaluated, for the range of float32 as in bodyBody,
/// with u = d/r (|u| <= 1) and, since u.u = 1 - eps^2/r^2, the spread folded into the quadrupole's
/// diagonal (Q' = Q + S I, prepareQuadrupole), which keeps eps^2 out of every product (S eps^2 itself
/// leaves float32 for nodes of ~1e9 with a softening to match) and costs no instruction per interaction:
///   w   = (u.Q.u - S eps^2/r^2)/r^2 = (u.Q'.u - S)/r^2
///   phi = -(M + w/2) / r
///   a   = ((M + 5/2 w + S/r^2) u - Q'.u/r^2) / r^2
/// (the d-form, with 1/r^5 and 1/r^7, would save two multiplies but leaves float32 for accepted inputs:
/// 1/r^5 is 0 beyond r ~ 1e9, and M d overflows for solar masses in SI units at 1 au).
///
/// No zero guard: eps2Floor = nodeSoftening(eps^2) >= 2^-126, so r^2 is normal and the rsqrt is the
/// flush-to-zero one (invSqrtNormal). The floor changes no result where eps^2 >= 2^-126, and none with
/// eps^2 = 0 while |d| >= 2^-51. Below that the node counts as softened by 2^-63 (a node that small has
/// no quadrupole left in float: its pull is finite up to masses of 2^-126 of the largest float, and NaN
/// never comes from r^2 = 0, where the old guard gave 0). d is never exactly 0 for a node the walk
/// accepts: acceptNode needs boxPointDistance2(group box, com) > radius^2 (1 + scale) >= 0, while each
/// target of the group has distance exactly 0 from the group's box (groupBox: |t - c| <= h holds in
/// float for every t between the box's extremes, rounding being monotone), so com differs from every
/// target of the group (Octgrav, Bonsai and relative MACs alike; in a periodic box the images are whole
/// boxes away).
/// @param[in] q          prepareQuadrupole(traceless quadrupole, eps^2)
/// @param[in] eps2Floor  nodeSoftening(eps^2)
template<class T>
HOST_DEVICE inline void bodyNodePrepared(Vec3<T> d, T mass, const SymTensor<T>& q, T eps2Floor, Vec3<T>& acc, T& pot)
{
    T r2    = softenedDistance2(d, eps2Floor);
    T invR  = invSqrtNormal(r2);
    T invR2 = invR * invR;
    Vec3<T> u{d.x * invR, d.y * invR, d.z * invR};

    Vec3<T> qu{q.xx * u.x + q.xy * u.y + q.xz * u.z, q.xy * u.x + q.yy * u.y + q.yz * u.z,
               q.xz * u.x + q.yz * u.y + q.zz * u.z};
    // One product w serves both terms: one multiply and one fused multiply-add each. S is subtracted
    // first, so every term of the dot product is a fused multiply-add.
    T w = (u.x * qu.x + (u.y * qu.y + (u.z * qu.z - q.spread))) * invR2;

    T radial = (mass + T(2.5) * w) + q.spread * invR2;
    pot -= (mass + T(0.5) * w) * invR;
    acc.x += (radial * u.x - invR2 * qu.x) * invR2;
    acc.y += (radial * u.y - invR2 * qu.y) * invR2;
    acc.z += (radial * u.z - invR2 * qu.z) * invR2;
}

/// bodyNodePrepared of a node as packed (traceless q with its spread) at softening eps2: for callers that
/// meet a node once (the periodic per-interaction path, tests).
template<class T>
HOST_DEVICE inline void bodyNode(Vec3<T> d, T mass, const SymTensor<T>& q, T eps2, Vec3<T>& acc, T& pot)
{
    bodyNodePrepared(d, mass, prepareQuadrupole(q, eps2), nodeSoftening(eps2), acc, pot);
}

/// Unpacks the two F4 words of a packed quadrupole: (xx, yy, zz, xy), (xz, yz, spread, -).
HOST_DEVICE inline SymTensor<float> unpackQuadrupole(F4 a, F4 b) { return {a.x, a.y, a.z, a.w, b.x, b.y, b.z}; }

} // namespace octwalk

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

/// Traceless quadrupole Q_ij = sum m (3 d_i d_j - |d|^2 delta_ij) about the centre of mass.
template<class T>
struct SymTensor
{
    T xx, yy, zz, xy, xz, yz;
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

/// 1/sqrt(r2), and 0 for r2 == 0 (a coincident unsoftened pair contributes nothing instead of NaN).
/// Written without a branch so the CPU loops over targets vectorise; exact for r2 > 0.
template<class T>
HOST_DEVICE inline T safeInvSqrt(T r2)
{
    T isZero = r2 > T(0) ? T(0) : T(1);
    return invSqrt(r2 + isZero) * (T(1) - isZero);
}

/// Adds the pull of a body of mass m at offset d (source - target).
/// A pair with r^2 + eps^2 == 0 (coincident, unsoftened) contributes nothing instead of NaN;
/// excluding a body's interaction with itself is the caller's job (it knows the indices).
template<class T>
HOST_DEVICE inline void bodyBody(Vec3<T> d, T m, T eps2, Vec3<T>& acc, T& pot)
{
    T r2     = dot(d, d) + eps2;
    T invR   = safeInvSqrt(r2);
    T mInvR  = m * invR;
    T mInvR3 = mInvR * invR * invR;
    pot -= mInvR;
    acc.x += mInvR3 * d.x;
    acc.y += mInvR3 * d.y;
    acc.z += mInvR3 * d.z;
}

/// Adds the pull of a node (mass, traceless quadrupole q about its centre of mass) at offset
/// d = com - target:
///   phi = -M/r - (d.Q.d)/(2 r^5)
///   a   =  M d/r^3 - Q.d/r^5 + (5/2)(d.Q.d) d/r^7
template<class T>
HOST_DEVICE inline void bodyNode(Vec3<T> d, T mass, const SymTensor<T>& q, T eps2, Vec3<T>& acc, T& pot)
{
    T r2    = dot(d, d) + eps2;
    T invR  = safeInvSqrt(r2);
    T invR2 = invR * invR;
    T invR3 = invR * invR2;
    T invR5 = invR3 * invR2;

    Vec3<T> qd{q.xx * d.x + q.xy * d.y + q.xz * d.z, q.xy * d.x + q.yy * d.y + q.yz * d.z,
               q.xz * d.x + q.yz * d.y + q.zz * d.z};
    T dqd = dot(d, qd);

    T radial = mass * invR3 + T(2.5) * dqd * invR5 * invR2;
    pot -= mass * invR + T(0.5) * dqd * invR5;
    acc.x += radial * d.x - invR5 * qd.x;
    acc.y += radial * d.y - invR5 * qd.y;
    acc.z += radial * d.z - invR5 * qd.z;
}

/// Unpacks the two F4 words of a packed quadrupole: (xx, yy, zz, xy), (xz, yz, -, -).
HOST_DEVICE inline SymTensor<float> unpackQuadrupole(F4 a, F4 b) { return {a.x, a.y, a.z, a.w, b.x, b.y}; }

} // namespace octwalk

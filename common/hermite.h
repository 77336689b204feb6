#pragma once
/// @file hermite.h
/// The physics of the GRAPE-6-compatible direct-summation library (host/g6/g6lib.h), once for the
/// CPU twin (host/cpu/g6_cpu.cpp) and the CUDA kernels (device/g6_gpu.cu):
///   - the j-particle predictor, in double, never fused into FMAs (host and device predict the same bits);
///   - the pair interaction: acceleration, jerk, potential and the unsoftened r^2 (neighbour and
///     nearest-neighbour tests), templated on the coordinate type: double, or double-single (DsCoord:
///     float hi + float lo as in Sapporo2, differences formed in float from the hi and the lo parts,
///     everything after the difference in float).
///
/// Conventions (GRAPE-6 user's guide): a j-particle carries a2 = a/2, j6 = jerk/6, k18 = snap/18;
/// G = 1; the potential is -sum m / sqrt(r^2 + eps2); an i-particle skips the j-particle with its own
/// index; d = x_j - x_i.

#include <cstdint>

#include "common/gravity.h"
#include "common/hostdevice.h"

namespace octwalk {

/// Kernel arithmetic of the device: double-single positions with float arithmetic, or all double.
/// The CPU twin always computes in double (it is the reference).
enum class G6Precision
{
    DoubleSingle,
    Double
};

/// One j-particle as g6_set_j_particle receives it.
struct G6JParticle
{
    double x[3], v[3], a2[3], j6[3], k18[3];
    double t, mass;
    int32_t index;
};

/// One block of i-particles (already predicted by the client) as g6calc_firsthalf receives it.
/// The pointers belong to the caller and are read during startForces only.
struct G6IBlock
{
    int nj = 0, ni = 0;
    const int* index     = nullptr;
    const double (*x)[3] = nullptr;
    const double (*v)[3] = nullptr;
    const double* h2     = nullptr;
    double eps2          = 0;
};

/// Where g6calc_lasthalf(2) writes; nearest may be null (only lasthalf2 asks for it).
struct G6Outputs
{
    double (*acc)[3]  = nullptr;
    double (*jerk)[3] = nullptr;
    double* pot       = nullptr;
    int* nearest      = nullptr;
};

/// Multiply and add in double, rounded separately on host and device alike.
HOST_DEVICE inline double mulNoFma(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

HOST_DEVICE inline double addNoFma(double a, double b)
{
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

/// The predicted position and velocity of one coordinate of a j-particle, dt after its time tj:
///   x_p = x + dt (v + dt (a2 + dt (j6 + dt 0.75 k18)))      (snap/24 = 0.75 k18)
///   v_p = v + dt (2 a2 + dt (3 j6 + dt 3 k18))              (a = 2 a2, jerk/2 = 3 j6, snap/6 = 3 k18)
/// the Taylor series of x and v through the snap term, written in Horner form without fused
/// multiply-adds so that the CPU twin and the device predict identical bits.
HOST_DEVICE inline void predictCoordinate(double dt, double x, double v, double a2, double j6, double k18, double& xp,
                                          double& vp)
{
    double k = mulNoFma(0.75, k18);
    xp =
        addNoFma(x, mulNoFma(dt, addNoFma(v, mulNoFma(dt, addNoFma(a2, mulNoFma(dt, addNoFma(j6, mulNoFma(dt, k))))))));
    double a = mulNoFma(2.0, a2);
    double j = mulNoFma(3.0, j6);
    double s = mulNoFma(3.0, k18);
    vp       = addNoFma(v, mulNoFma(dt, addNoFma(a, mulNoFma(dt, addNoFma(j, mulNoFma(dt, s))))));
}

/// Squared unsoftened distance of two double positions without fused multiply-adds: the neighbour
/// and nearest-neighbour decisions of the device's double path then equal the CPU twin's.
HOST_DEVICE inline double distance2NoFma(const double a[3], const double b[3])
{
    double dx = addNoFma(a[0], -b[0]);
    double dy = addNoFma(a[1], -b[1]);
    double dz = addNoFma(a[2], -b[2]);
    return addNoFma(addNoFma(mulNoFma(dx, dx), mulNoFma(dy, dy)), mulNoFma(dz, dz));
}

/// A coordinate as two floats, hi = float(x) and lo = float(x - hi): 48 bits of mantissa, enough
/// that the difference of two nearby positions keeps float's relative precision.
struct DsCoord
{
    float hi, lo;
};

HOST_DEVICE inline DsCoord splitDs(double x)
{
    float hi = float(x);
    return {hi, float(x - double(hi))};
}

/// x_j - x_i: the hi parts of nearby positions subtract exactly (Sterbenz), the lo parts add the rest.
HOST_DEVICE inline float coordDifference(DsCoord j, DsCoord i) { return (j.hi - i.hi) + (j.lo - i.lo); }

HOST_DEVICE inline double coordDifference(double j, double i) { return j - i; }

/// The arithmetic type that follows a coordinate difference.
template<class Coord>
struct HermiteReal;

template<>
struct HermiteReal<double>
{
    using type = double;
};

template<>
struct HermiteReal<DsCoord>
{
    using type = float;
};

/// Running sums of one i-particle.
template<class T>
struct HermiteSums
{
    T ax = 0, ay = 0, az = 0, jx = 0, jy = 0, jz = 0, pot = 0;
};

/// Adds the pull of mass m at offset d with relative velocity dv (both j - i) to s:
///   a    += m d / r^3
///   jerk += m (dv - 3 (d.dv) d / r^2) / r^3
///   pot  -= m / r
/// with r^2 = |d|^2 + eps2; returns the unsoftened |d|^2 (neighbour tests). A pair with r^2 == 0
/// contributes nothing instead of NaN; the caller excludes i's own j-particle (m = 0).
template<class T>
HOST_DEVICE inline T hermitePair(T dx, T dy, T dz, T dvx, T dvy, T dvz, T m, T eps2, HermiteSums<T>& s)
{
    T d2     = dx * dx + dy * dy + dz * dz;
    T invR   = safeInvSqrt(d2 + eps2);
    T invR2  = invR * invR;
    T mInvR  = m * invR;
    T mInvR3 = mInvR * invR2;
    T rv     = T(3) * (dx * dvx + dy * dvy + dz * dvz) * invR2;
    s.pot -= mInvR;
    s.ax += mInvR3 * dx;
    s.ay += mInvR3 * dy;
    s.az += mInvR3 * dz;
    s.jx += mInvR3 * (dvx - rv * dx);
    s.jy += mInvR3 * (dvy - rv * dy);
    s.jz += mInvR3 * (dvz - rv * dz);
    return d2;
}

/// The pair interaction from positions in Coord (double or DsCoord) and velocities in the
/// arithmetic type: the difference first (coordDifference), the rest in HermiteReal<Coord>.
template<class Coord, class T = typename HermiteReal<Coord>::type>
HOST_DEVICE inline T hermiteInteraction(const Coord xi[3], const T vi[3], const Coord xj[3], const T vj[3], T m, T eps2,
                                        HermiteSums<T>& s)
{
    T dx = coordDifference(xj[0], xi[0]);
    T dy = coordDifference(xj[1], xi[1]);
    T dz = coordDifference(xj[2], xi[2]);
    return hermitePair(dx, dy, dz, vj[0] - vi[0], vj[1] - vi[1], vj[2] - vi[2], m, eps2, s);
}

/// Flops per interaction by the customary convention of direct-summation codes (force, jerk and
/// potential), used for every GFLOP/s figure of the library.
constexpr double kHermiteFlopsPerInteraction = 60.0;

} // namespace octwalk

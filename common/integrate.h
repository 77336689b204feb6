#pragma once
/// @file integrate.h
/// The leapfrog's per-body arithmetic, once for the host state (host/sim/simulation.cpp) and the
/// device-resident state (device/resident_gpu.cu and its CPU twin host/cpu/resident_cpu.cpp): the
/// half kick, the drift with the periodic wrap, the range and finiteness checks of a drifted body,
/// the solver's G applied to a float result, the per-body terms of the diagnostics and a body's
/// radius about a centre. Each is the same sequence of double operations on both sides; the device
/// file is compiled without fused multiply-adds (-fmad=false), so the results agree bit for bit.

#include <cmath>
#include <cstdint>

#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

/// Largest coordinate magnitude accepted: squared distances, quadrupole terms and tree keys
/// stay finite and meaningful in float beyond any astrophysical set-up in N-body units.
constexpr double kMaxCoordinate = 1e15;

/// Whether a position passes validateBodies (every coordinate finite and within kMaxCoordinate;
/// NaN fails both comparisons).
HOST_DEVICE inline bool positionInRange(const Vec3d& x)
{
    return x.x >= -kMaxCoordinate && x.x <= kMaxCoordinate && x.y >= -kMaxCoordinate && x.y <= kMaxCoordinate &&
           x.z >= -kMaxCoordinate && x.z <= kMaxCoordinate;
}

HOST_DEVICE inline bool finiteValue(double x)
{
#ifdef __CUDA_ARCH__
    return isfinite(x);
#else
    return std::isfinite(x);
#endif
}

/// Whether a body's position and velocity are finite after a step.
HOST_DEVICE inline bool finiteBody(const Vec3d& x, const Vec3d& v)
{
    return finiteValue(x.x + x.y + x.z + v.x + v.y + v.z);
}

/// x wrapped into [0, boxSize).
HOST_DEVICE inline double wrapCoordinate(double x, double boxSize)
{
    x -= boxSize * floor(x / boxSize);
    // A tiny negative x rounds to boxSize above; the box is half-open.
    return x < boxSize ? x : x - boxSize;
}

/// Each coordinate of x wrapped into [0, boxSize).
HOST_DEVICE inline Vec3d wrapPosition(const Vec3d& x, double boxSize)
{
    return {wrapCoordinate(x.x, boxSize), wrapCoordinate(x.y, boxSize), wrapCoordinate(x.z, boxSize)};
}

/// The lattice shift that wraps a position of a periodic run into [0, boxSize), per axis: bits 0-1 for x, 2-3 for
/// y, 4-5 for z, each 1 for +L (the coordinate is below 0), 2 for -L (at or above L), 0 for none. The pipelined
/// step lets its bodies drift out of the box while a topology is kept (moving one across the box would stretch its
/// leaf over the box) and wraps them only when it adopts a topology built from their wrapped positions
/// (host/sim/pipeline.h), each by the shift its build position took: coordinates stay within a step's drift of the
/// box. Takes a position within one box length of the box.
HOST_DEVICE inline uint8_t wrapShiftCode(const Vec3d& x, double boxSize)
{
    auto axis = [boxSize](double c) { return c < 0 ? 1 : (c >= boxSize ? 2 : 0); };
    return uint8_t(axis(x.x) | (axis(x.y) << 2) | (axis(x.z) << 4));
}

/// x shifted by wrapShiftCode's code: one addition or subtraction of boxSize per shifted axis.
HOST_DEVICE inline Vec3d shiftedByCode(Vec3d x, uint8_t code, double boxSize)
{
    auto axis = [boxSize](double c, int bits) { return bits == 1 ? c + boxSize : (bits == 2 ? c - boxSize : c); };
    return {axis(x.x, code & 3), axis(x.y, (code >> 2) & 3), axis(x.z, (code >> 4) & 3)};
}

/// How the pipeline's resident state maps to the run's own (host/sim/pipeline.h): positions wrapped into a periodic
/// run's box (they drift out of it between adoptions), and a comoving run's momenta p = a v to its peculiar
/// velocities v = (1 / a) p, multiplied as the classic comoving step does. The default maps nothing.
struct StateScale
{
    double boxSize       = 0; ///< > 0: positions wrapped into [0, boxSize)
    double velocityScale = 1; ///< the velocity's factor (1 / a for a comoving run's momenta)

    HOST_DEVICE Vec3d position(const Vec3d& x) const { return boxSize > 0 ? wrapPosition(x, boxSize) : x; }
    HOST_DEVICE Vec3d velocity(const Vec3d& v) const { return velocityScale * v; }
};

/// Where a body at x moving at v will be `ahead` time later, to first order: the pipeline builds its
/// lagged topologies from these (host/sim/pipeline.h); host and device round it alike.
HOST_DEVICE inline Vec3d predictPosition(const Vec3d& x, const Vec3d& v, double ahead) { return x + ahead * v; }

/// The half kick of the kick-drift-kick leapfrog: v += halfStep a (halfStep = h / 2).
HOST_DEVICE inline void kickVelocity(Vec3d& v, const Vec3d& a, double halfStep) { v += halfStep * a; }

/// The drift: x += h v, then wrapped into [0, boxSize) when boxSize > 0 (a periodic run keeps its
/// bodies in the box: the solver refuses any outside).
HOST_DEVICE inline void driftPosition(Vec3d& x, const Vec3d& v, double h, double boxSize)
{
    x += h * v;
    if (boxSize > 0) x = wrapPosition(x, boxSize);
}

/// The acceleration of a walk's float result (acc xyz, potential; G = 1) in double with G applied.
HOST_DEVICE inline Vec3d accelerationOf(const F4& out, double G) { return {G * out.x, G * out.y, G * out.z}; }

/// The larger of largest and |G acc|^2 of one result (the step criterion's input). A NaN never wins, so the largest
/// of many results is the same bits whatever the order in which they are taken.
HOST_DEVICE inline double largerAccelerationSquared(double largest, const F4& out, double G)
{
    const Vec3d a = accelerationOf(out, G);
    return maxOf(largest, dot(a, a));
}

/// |x - centre|: a body's Lagrangian radius, on the host and in the device's order statistics of them.
HOST_DEVICE inline double radiusAbout(const Vec3d& x, const Vec3d& centre)
{
    const Vec3d d = x - centre;
#ifdef __CUDA_ARCH__
    return sqrt(dot(d, d));
#else
    return std::sqrt(dot(d, d));
#endif
}

/// The potential of a walk's float result with G applied.
HOST_DEVICE inline double potentialOf(const F4& out, double G) { return G * out.w; }

/// The sums behind the diagnostics (host/sim/simulation.h: Diagnostics), before the division by
/// the total mass.
struct DiagnosticSums
{
    double mass = 0, kinetic = 0, potential = 0;
    Vec3d comPos{0, 0, 0}, momentum{0, 0, 0}, angularMomentum{0, 0, 0};

    HOST_DEVICE DiagnosticSums& operator+=(const DiagnosticSums& o)
    {
        mass += o.mass;
        kinetic += o.kinetic;
        potential += o.potential;
        comPos += o.comPos;
        momentum += o.momentum;
        angularMomentum += o.angularMomentum;
        return *this;
    }
};

/// Threads of the device's block for one block of the diagnostics' sums, and so the interleaved lanes of every block
/// of 4096 bodies in which the host adds them too (host/core/parallel.h, interleavedSum): lane l adds its block's
/// bodies l, l + 256, ... in order, then the lanes are added in lane order.
constexpr int kDiagnosticLanes = 256;

/// One body's terms: mass, kinetic energy, half its potential energy (each pair counted twice),
/// mass-weighted position, momentum and angular momentum about the origin.
/// @param[in] mi  mass
/// @param[in] x   position
/// @param[in] v   velocity
/// @param[in] pot potential (G applied)
HOST_DEVICE inline DiagnosticSums diagnosticTerms(double mi, const Vec3d& x, const Vec3d& v, double pot)
{
    DiagnosticSums b;
    b.mass            = mi;
    b.kinetic         = 0.5 * mi * dot(v, v);
    b.potential       = 0.5 * mi * pot;
    b.comPos          = mi * x;
    b.momentum        = mi * v;
    b.angularMomentum = mi * Vec3d{x.y * v.z - x.z * v.y, x.z * v.x - x.x * v.z, x.x * v.y - x.y * v.x};
    return b;
}

} // namespace octwalk

#pragma once
/// @file multipole.h
/// P2M and M2M for the monopole + traceless quadrupole expansion, in double: the host build and the
/// refit of both backends (common/refit.h) call the same functions, so their results agree bit for bit.

#include "common/gravity.h"
#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

/// Adds m (3 s s^T - |s|^2 I) and its spread m |s|^2: the quadrupole of a point mass m at offset s from
/// the expansion centre. P2M uses it with s = body - com; M2M with s = child com - parent com on top of
/// the child's Q.
HOST_DEVICE inline void addPointQuadrupole(Vec3d s, double m, SymTensor<double>& q)
{
    double s2 = dot(s, s);
    q.spread += m * s2;
    q.xx += m * (3 * s.x * s.x - s2);
    q.yy += m * (3 * s.y * s.y - s2);
    q.zz += m * (3 * s.z * s.z - s2);
    q.xy += m * 3 * s.x * s.y;
    q.xz += m * 3 * s.x * s.z;
    q.yz += m * 3 * s.y * s.z;
}

/// M2M: adds a child's quadrupole (about its own com) shifted to the parent's com.
HOST_DEVICE inline void shiftQuadrupole(const SymTensor<double>& child, Vec3d childCom, double childMass,
                                        Vec3d parentCom, SymTensor<double>& parent)
{
    parent.xx += child.xx;
    parent.yy += child.yy;
    parent.zz += child.zz;
    parent.xy += child.xy;
    parent.xz += child.xz;
    parent.yz += child.yz;
    parent.spread += child.spread;
    addPointQuadrupole(childCom - parentCom, childMass, parent);
}

/// What a cell's multipole expansion holds, in double: mass, centre of mass, traceless quadrupole
/// about it, and the tight box of its bodies.
struct Moments
{
    double mass;
    Vec3d com;
    SymTensor<double> quad;
    Vec3d lo, hi;
};

/// The centre of mass, or the centre of the box for a cell of massless bodies.
HOST_DEVICE inline Vec3d centreOfMass(double m, Vec3d weighted, Vec3d lo, Vec3d hi)
{
    return m > 0 ? (1.0 / m) * weighted : 0.5 * (lo + hi);
}

HOST_DEVICE inline void includeInBox(Vec3d plo, Vec3d phi, Vec3d& lo, Vec3d& hi)
{
    lo = {minOf(lo.x, plo.x), minOf(lo.y, plo.y), minOf(lo.z, plo.z)};
    hi = {maxOf(hi.x, phi.x), maxOf(hi.y, phi.y), maxOf(hi.z, phi.z)};
}

/// P2M of a leaf: the moments of bodies [first, first + count), count >= 1, summed in body order.
/// @param[in] pos   positions (double)
/// @param[in] mass  masses
HOST_DEVICE inline Moments leafMoments(const Vec3d* pos, const double* mass, int32_t first, int32_t count)
{
    const int32_t last = first + count;
    Moments mo;
    mo.mass = 0;
    Vec3d weighted{0, 0, 0};
    for (int32_t i = first; i < last; ++i)
    {
        mo.mass += mass[i];
        weighted += mass[i] * pos[i];
    }
    mo.lo = pos[first];
    mo.hi = pos[first];
    for (int32_t i = first + 1; i < last; ++i) includeInBox(pos[i], pos[i], mo.lo, mo.hi);
    mo.com  = centreOfMass(mo.mass, weighted, mo.lo, mo.hi);
    mo.quad = {0, 0, 0, 0, 0, 0, 0};
    for (int32_t i = first; i < last; ++i) addPointQuadrupole(pos[i] - mo.com, mass[i], mo.quad);
    return mo;
}

/// M2M: the moments of a cell from those of its count (1 to 8) children, in the order given
/// (octant order in the tree): mass, centre of mass, shifted quadrupole, union of the boxes. The
/// children are passed by pointer so that the device reads them in place.
HOST_DEVICE inline Moments combineMoments(const Moments* const* children, int32_t count)
{
    Moments mo;
    mo.mass = 0;
    Vec3d weighted{0, 0, 0};
    mo.lo = {HUGE_VAL, HUGE_VAL, HUGE_VAL};
    mo.hi = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    for (int32_t k = 0; k < count; ++k)
    {
        const Moments& c = *children[k];
        mo.mass += c.mass;
        weighted += c.mass * c.com;
        includeInBox(c.lo, c.hi, mo.lo, mo.hi);
    }
    mo.com  = centreOfMass(mo.mass, weighted, mo.lo, mo.hi);
    mo.quad = {0, 0, 0, 0, 0, 0, 0};
    for (int32_t k = 0; k < count; ++k)
    {
        shiftQuadrupole(children[k]->quad, children[k]->com, children[k]->mass, mo.com, mo.quad);
    }
    return mo;
}

} // namespace octwalk

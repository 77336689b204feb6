#pragma once
/// @file multipole.h
/// P2M and M2M for the monopole + traceless quadrupole expansion, in double on the host.

#include "common/gravity.h"
#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

/// Adds m (3 s s^T - |s|^2 I): the quadrupole of a point mass m at offset s from the expansion centre.
/// P2M uses it with s = body - com; M2M with s = child com - parent com on top of the child's Q.
HOST_DEVICE inline void addPointQuadrupole(Vec3d s, double m, SymTensor<double>& q)
{
    double s2 = dot(s, s);
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
    addPointQuadrupole(childCom - parentCom, childMass, parent);
}

} // namespace octwalk

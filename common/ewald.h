#pragma once
/// @file ewald.h
/// Periodic boundaries, once for both backends: the nearest-image offset and the tabulated Ewald
/// correction (GADGET-2 style).
///
/// In a periodic cube of side L (bodies in [0, L)^3, a neutralising uniform background, the potential's
/// mean over the box zero) the pull of a body of mass m at offset d (source - target) is
///   nearest-image Newton(wrap(d)) + m * correction(wrap(d)),
/// where correction = (the exact Ewald sum of the mass, all its images and the background) minus the
/// Newtonian pull of the nearest image alone. The correction is smooth in [-L/2, L/2]^3 (the other
/// images are at least L/2 away), odd in each coordinate for the acceleration and even for the
/// potential, so one octant [0, L/2]^3 of it, tabulated for L = 1 on a grid and interpolated
/// trilinearly, serves every offset: the acceleration scales as 1/L^2, the potential as 1/L. At d = 0
/// it is the self term: acceleration 0 and potential xi = +2.8372975/L (pot accumulates -m/r here, so a
/// body's own images and the background add m * xi to its potential).
///
/// The table is computed in double by host/reference/ewald_table.h from the exact sum of
/// host/reference/ewald_direct.h; the walk gets it through TreeView::periodic.

#include <cstdint>

#include "common/gravity.h"
#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

/// The periodic box and its correction table as the walk and the force kernels read them.
/// boxSize == 0: isolated (open boundaries); nothing else is read.
struct PeriodicView
{
    /// (tableCells + 1)^3 grid points over [0, 1/2]^3 (L = 1), x slowest, z fastest:
    /// (correction acceleration xyz, correction potential) at offset (i, j, k) / (2 tableCells).
    const F4* table;
    int32_t tableCells;
    float boxSize;
    float invBoxSize;
};

/// Cells per axis of the correction table over one octant (GADGET-2's EN).
constexpr int32_t kEwaldTableCells = 64;

/// The image of an offset d in (-L, L) (a difference of two coordinates in [0, L)) nearest to 0, in
/// [-L/2, L/2]. Rounded identically on host and device (no contraction into an FMA), so the MAC that
/// uses it takes the same decisions on both backends.
HOST_DEVICE inline float nearestImage(float d, float boxSize, float invBoxSize)
{
    float images = floorf(addNoFma(mulNoFma(d, invBoxSize), 0.5f));
    return addNoFma(d, -mulNoFma(images, boxSize));
}

HOST_DEVICE inline Vec3f nearestImage(Vec3f d, const PeriodicView& box)
{
    return {nearestImage(d.x, box.boxSize, box.invBoxSize), nearestImage(d.y, box.boxSize, box.invBoxSize),
            nearestImage(d.z, box.boxSize, box.invBoxSize)};
}

/// Adds m * correction(d) for a nearest-image offset d (source - target, |d_k| <= L/2): trilinear
/// interpolation in the octant of |d|, the acceleration's signs those of d.
HOST_DEVICE inline void addEwaldCorrection(const PeriodicView& box, Vec3f d, float m, Vec3f& acc, float& pot)
{
    const int32_t n    = box.tableCells;
    const float toGrid = 2.0f * float(n) * box.invBoxSize;
    const float u[3]   = {fabsf(d.x) * toGrid, fabsf(d.y) * toGrid, fabsf(d.z) * toGrid};
    int32_t cell[3];
    float t[3];
    for (int a = 0; a < 3; ++a)
    {
        // |d_k| may round to just above L/2: the last cell then extrapolates by a hair.
        cell[a] = u[a] < float(n - 1) ? int32_t(u[a]) : n - 1;
        t[a]    = u[a] - float(cell[a]);
    }
    const int32_t row = n + 1;
    F4 sum{0.0f, 0.0f, 0.0f, 0.0f};
    for (int corner = 0; corner < 8; ++corner)
    {
        int32_t i = cell[0] + ((corner >> 2) & 1);
        int32_t j = cell[1] + ((corner >> 1) & 1);
        int32_t k = cell[2] + (corner & 1);
        float w   = ((corner >> 2) & 1 ? t[0] : 1.0f - t[0]) * ((corner >> 1) & 1 ? t[1] : 1.0f - t[1]) *
                  (corner & 1 ? t[2] : 1.0f - t[2]);
        F4 v = box.table[(i * row + j) * row + k];
        sum.x += w * v.x;
        sum.y += w * v.y;
        sum.z += w * v.z;
        sum.w += w * v.w;
    }
    const float mAcc = m * box.invBoxSize * box.invBoxSize;
    acc.x += mAcc * (d.x < 0.0f ? -sum.x : sum.x);
    acc.y += mAcc * (d.y < 0.0f ? -sum.y : sum.y);
    acc.z += mAcc * (d.z < 0.0f ? -sum.z : sum.z);
    pot += m * box.invBoxSize * sum.w;
}

/// The pull of a node in a periodic box, for both backends: its multipole at the image nearest to the
/// target, plus the Ewald correction of its mass at the centre of mass (d = com - target, unwrapped).
HOST_DEVICE inline void bodyNodePeriodic(Vec3f d, float mass, const SymTensor<float>& q, float eps2,
                                         const PeriodicView& box, Vec3f& acc, float& pot)
{
    d = nearestImage(d, box);
    bodyNode(d, mass, q, eps2, acc, pot);
    addEwaldCorrection(box, d, mass, acc, pot);
}

/// The pull of a body in a periodic box: the nearest image, softened, with mass newtonMass (0 for the
/// target itself), plus the Ewald correction of the body's mass (for the target itself its self term).
HOST_DEVICE inline void bodyBodyPeriodic(Vec3f d, float newtonMass, float mass, float eps2, const PeriodicView& box,
                                         Vec3f& acc, float& pot)
{
    d = nearestImage(d, box);
    bodyBody(d, newtonMass, eps2, acc, pot);
    addEwaldCorrection(box, d, mass, acc, pot);
}

} // namespace octwalk

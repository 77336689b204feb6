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
/// potential, so one octant [0, L/2]^3 of it, tabulated for L = 1 on a grid with its derivatives up to
/// third order and Taylor-expanded from the nearest point, serves every offset: the acceleration scales as 1/L^2, the potential as 1/L. At d = 0
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

/// Words (F4) per point of the correction table: the correction potential, its gradient (the
/// acceleration) and its second and third derivatives, for L = 1:
///   (pot, ax, ay, az) (hxx, hyy, hzz, hxy) (hxz, hyz, txxx, tyyy) (tzzz, txxy, txxz, txyy) (tyyz, txzz, tyzz, txyz)
constexpr int32_t kEwaldTableWords = 5;

/// The periodic box and its correction table as the walk and the force kernels read them.
/// boxSize == 0: isolated (open boundaries); nothing else is read.
struct PeriodicView
{
    /// (tableCells + 1)^3 points over [0, 1/2]^3 (L = 1), x slowest, z fastest, kEwaldTableWords words
    /// each: the correction and its derivatives at offset (i, j, k) / (2 tableCells).
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

/// sum_jk t_ijk q_jk for a symmetric q (xx, yy, zz, xy, xz, yz) and t in the table's order.
HOST_DEVICE inline Vec3f contractThird(const float* t, const float* q)
{
    // t: xxx yyy zzz xxy xxz xyy yyz xzz yzz xyz
    return {t[0] * q[0] + t[5] * q[1] + t[7] * q[2] + 2.0f * (t[3] * q[3] + t[4] * q[4] + t[9] * q[5]),
            t[3] * q[0] + t[1] * q[1] + t[8] * q[2] + 2.0f * (t[5] * q[3] + t[9] * q[4] + t[6] * q[5]),
            t[4] * q[0] + t[6] * q[1] + t[2] * q[2] + 2.0f * (t[9] * q[3] + t[7] * q[4] + t[8] * q[5])};
}

/// Adds the Ewald correction of a source of mass m with traceless quadrupole q (about the source; zero
/// for a body) at a nearest-image offset d (source - target, |d_k| <= L/2): a second-order Taylor
/// expansion of the correction's gradient from the nearest table point in the octant of |d| (its
/// signs restored afterwards), plus q contracted with the correction's third derivatives (the
/// correction's Laplacian is uniform, so the traceless q gives the whole quadrupole term of the
/// acceleration; the potential lacks the trace part, -2 pi/3 sum m s^2 / L^3 per node).
template<bool Quadrupole>
HOST_DEVICE inline void addEwaldCorrectionTerm(const PeriodicView& box, Vec3f d, float m, const SymTensor<float>& q,
                                               Vec3f& acc, float& pot)
{
    const int32_t n     = box.tableCells;
    const float toGrid  = 2.0f * float(n);
    const float invL    = box.invBoxSize;
    const float sign[3] = {d.x < 0.0f ? -1.0f : 1.0f, d.y < 0.0f ? -1.0f : 1.0f, d.z < 0.0f ? -1.0f : 1.0f};
    const float u[3]    = {fabsf(d.x) * invL, fabsf(d.y) * invL, fabsf(d.z) * invL};
    int32_t cell[3];
    float e[3];
    for (int a = 0; a < 3; ++a)
    {
        // |d_k| may round to just above L/2: the last point then extrapolates by a hair.
        cell[a] = int32_t(u[a] * toGrid + 0.5f);
        cell[a] = cell[a] < n ? cell[a] : n;
        e[a]    = u[a] - float(cell[a]) / toGrid;
    }
    const int32_t row = n + 1;
    const F4* point   = box.table + size_t((cell[0] * row + cell[1]) * row + cell[2]) * kEwaldTableWords;
    const F4 w0 = point[0], w1 = point[1], w2 = point[2], w3 = point[3], w4 = point[4];
    const float h[6]  = {w1.x, w1.y, w1.z, w1.w, w2.x, w2.y};
    const float t[10] = {w2.z, w2.w, w3.x, w3.y, w3.z, w3.w, w4.x, w4.y, w4.z, w4.w};
    const float ee[6] = {e[0] * e[0], e[1] * e[1], e[2] * e[2], e[0] * e[1], e[0] * e[2], e[1] * e[2]};
    const Vec3f tee   = contractThird(t, ee);
    const Vec3f he{h[0] * e[0] + h[3] * e[1] + h[4] * e[2], h[3] * e[0] + h[1] * e[1] + h[5] * e[2],
                   h[4] * e[0] + h[5] * e[1] + h[2] * e[2]};
    Vec3f a{w0.y + he.x + 0.5f * tee.x, w0.z + he.y + 0.5f * tee.y, w0.w + he.z + 0.5f * tee.z};
    float p = w0.x + e[0] * (w0.y + 0.5f * he.x + tee.x / 6.0f) + e[1] * (w0.z + 0.5f * he.y + tee.y / 6.0f) +
              e[2] * (w0.w + 0.5f * he.z + tee.z / 6.0f);
    a = m * a;
    p = m * p;
    if (Quadrupole)
    {
        // q in the octant's frame (q_ij times sign_i sign_j) and in units of L^2.
        const float invL2 = invL * invL;
        const float qq[6] = {q.xx * invL2,
                             q.yy * invL2,
                             q.zz * invL2,
                             q.xy * invL2 * sign[0] * sign[1],
                             q.xz * invL2 * sign[0] * sign[2],
                             q.yz * invL2 * sign[1] * sign[2]};
        const Vec3f tq    = contractThird(t, qq);
        const float hq =
            h[0] * qq[0] + h[1] * qq[1] + h[2] * qq[2] + 2.0f * (h[3] * qq[3] + h[4] * qq[4] + h[5] * qq[5]);
        a.x += tq.x / 6.0f;
        a.y += tq.y / 6.0f;
        a.z += tq.z / 6.0f;
        p += (hq + e[0] * tq.x + e[1] * tq.y + e[2] * tq.z) / 6.0f;
    }
    const float invL2 = invL * invL;
    acc.x += invL2 * sign[0] * a.x;
    acc.y += invL2 * sign[1] * a.y;
    acc.z += invL2 * sign[2] * a.z;
    pot += invL * p;
}

/// The correction of a body of mass m at a nearest-image offset d (see addEwaldCorrectionTerm).
HOST_DEVICE inline void addEwaldCorrection(const PeriodicView& box, Vec3f d, float m, Vec3f& acc, float& pot)
{
    const SymTensor<float> none{0, 0, 0, 0, 0, 0};
    addEwaldCorrectionTerm<false>(box, d, m, none, acc, pot);
}

/// The pull of a node in a periodic box, for both backends: its multipole at the image nearest to the
/// target, plus the Ewald correction of its mass and quadrupole at the centre of mass (d = com - target,
/// unwrapped).
HOST_DEVICE inline void bodyNodePeriodic(Vec3f d, float mass, const SymTensor<float>& q, float eps2,
                                         const PeriodicView& box, Vec3f& acc, float& pot)
{
    d = nearestImage(d, box);
    bodyNode(d, mass, q, eps2, acc, pot);
    addEwaldCorrectionTerm<true>(box, d, mass, q, acc, pot);
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

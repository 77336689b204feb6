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


// The correction per group (what the walks use): every body of a group takes, for each source, the image
// nearest to the group's centre c (the MAC accepted exactly that image for the whole group's box), so the
// Newtonian pull is the isolated formula on a shifted source, and the sum of all sources' corrections,
// psi_total(c - x) = sum_s m_s psi(d0_s + (c - x)) with d0_s = image - c, is smooth in x over the group
// (psi's singularities are at the non-zero lattice vectors, >= L/2 from any |d0_k| <= L/2): a Taylor
// expansion about c to third order in (c - x), accumulated once per (group, source) and evaluated once per
// body. Groups larger than kEwaldGroupMaxHalf * L keep the per-interaction correction above.

/// A group is expanded when its box's largest half-side is at most this fraction of L: the expansion's
/// truncation grows as (half / L)^3 (tests/unit/test_ewald.cpp, EwaldGroup*, measures it).
constexpr float kEwaldGroupMaxHalf = 0.125f;

/// The summed correction of a group's sources and its derivatives at the group's centre, for L = 1 (the
/// table's frame): pot, acc = grad pot, hess (xx yy zz xy xz yz), third (the table's order).
struct EwaldLocal
{
    float pot;
    float acc[3];
    float hess[6];
    float third[10];
};

HOST_DEVICE inline EwaldLocal zeroEwaldLocal()
{
    EwaldLocal z;
    z.pot = 0.0f;
    for (float& v : z.acc) v = 0.0f;
    for (float& v : z.hess) v = 0.0f;
    for (float& v : z.third) v = 0.0f;
    return z;
}

/// a += b, coefficient by coefficient (the GPU reduces the lanes' partial expansions with it).
HOST_DEVICE inline void addEwaldLocal(EwaldLocal& a, const EwaldLocal& b)
{
    a.pot += b.pot;
    for (int k = 0; k < 3; ++k) a.acc[k] += b.acc[k];
    for (int k = 0; k < 6; ++k) a.hess[k] += b.hess[k];
    for (int k = 0; k < 10; ++k) a.third[k] += b.third[k];
}

/// Whether a group of box half-sizes half takes the per-group expansion in this box.
HOST_DEVICE inline bool ewaldGroupExpands(F4 groupHalf, const PeriodicView& box)
{
    float h = fmaxf(fmaxf(groupHalf.x, groupHalf.y), groupHalf.z);
    return h <= kEwaldGroupMaxHalf * box.boxSize;
}

/// The image of p (a point in [0, L)^3) nearest to c, rounded identically on both backends.
HOST_DEVICE inline Vec3f imageNearest(Vec3f p, Vec3f c, const PeriodicView& box)
{
    const float L = box.boxSize, invL = box.invBoxSize;
    const float kx = floorf(addNoFma(mulNoFma(p.x - c.x, invL), 0.5f));
    const float ky = floorf(addNoFma(mulNoFma(p.y - c.y, invL), 0.5f));
    const float kz = floorf(addNoFma(mulNoFma(p.z - c.z, invL), 0.5f));
    return {addNoFma(p.x, -mulNoFma(kx, L)), addNoFma(p.y, -mulNoFma(ky, L)), addNoFma(p.z, -mulNoFma(kz, L))};
}

/// Adds to a group's expansion (about its centre) the correction of a source of mass m with traceless
/// quadrupole q at offset d0 = image - centre: the table's Taylor expansion from its nearest point gives
/// the derivatives at d0 (the third ones constant over the cell), the quadrupole adds its term to the
/// potential and the acceleration at the centre (its change across the group, a fourth derivative, is left
/// out: q / L^2 times (half / L) smaller than the monopole's).
template<bool Quadrupole>
HOST_DEVICE inline void addEwaldLocalTerm(const PeriodicView& box, Vec3f d0, float m, const SymTensor<float>& q,
                                          EwaldLocal& loc)
{
    const int32_t n     = box.tableCells;
    const float toGrid  = 2.0f * float(n);
    const float invL    = box.invBoxSize;
    const float sign[3] = {d0.x < 0.0f ? -1.0f : 1.0f, d0.y < 0.0f ? -1.0f : 1.0f, d0.z < 0.0f ? -1.0f : 1.0f};
    const float u[3]    = {fabsf(d0.x) * invL, fabsf(d0.y) * invL, fabsf(d0.z) * invL};
    int32_t cell[3];
    float e[3];
    for (int a = 0; a < 3; ++a)
    {
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
    float a[3] = {w0.y + he.x + 0.5f * tee.x, w0.z + he.y + 0.5f * tee.y, w0.w + he.z + 0.5f * tee.z};
    float p    = w0.x + e[0] * (w0.y + 0.5f * he.x + tee.x / 6.0f) + e[1] * (w0.z + 0.5f * he.y + tee.y / 6.0f) +
              e[2] * (w0.w + 0.5f * he.z + tee.z / 6.0f);
    // Hessian at d0: h + t.e (xx yy zz xy xz yz; t in the table's order xxx yyy zzz xxy xxz xyy yyz xzz yzz xyz).
    const float hd[6] = {h[0] + t[0] * e[0] + t[3] * e[1] + t[4] * e[2], h[1] + t[5] * e[0] + t[1] * e[1] + t[6] * e[2],
                         h[2] + t[7] * e[0] + t[8] * e[1] + t[2] * e[2], h[3] + t[3] * e[0] + t[5] * e[1] + t[9] * e[2],
                         h[4] + t[4] * e[0] + t[9] * e[1] + t[7] * e[2], h[5] + t[9] * e[0] + t[6] * e[1] + t[8] * e[2]};
    if (Quadrupole)
    {
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
        for (int k = 0; k < 3; ++k) a[k] *= m;
        p *= m;
        a[0] += tq.x / 6.0f;
        a[1] += tq.y / 6.0f;
        a[2] += tq.z / 6.0f;
        p += (hq + e[0] * tq.x + e[1] * tq.y + e[2] * tq.z) / 6.0f;
    }
    else
    {
        for (int k = 0; k < 3; ++k) a[k] *= m;
        p *= m;
    }
    // Back from the octant: a derivative of order k along axes i, j, .. changes sign with sign_i sign_j ..
    const float sxy = sign[0] * sign[1], sxz = sign[0] * sign[2], syz = sign[1] * sign[2];
    const float sxyz = sxy * sign[2];
    loc.pot += p;
    for (int k = 0; k < 3; ++k) loc.acc[k] += sign[k] * a[k];
    loc.hess[0] += m * hd[0];
    loc.hess[1] += m * hd[1];
    loc.hess[2] += m * hd[2];
    loc.hess[3] += m * sxy * hd[3];
    loc.hess[4] += m * sxz * hd[4];
    loc.hess[5] += m * syz * hd[5];
    // xxx yyy zzz: sign_i; xxy: sign_y; xxz: sign_z; xyy: sign_x; yyz: sign_z; xzz: sign_x; yzz: sign_y; xyz.
    const float tsign[10] = {sign[0], sign[1], sign[2], sign[1], sign[2], sign[0], sign[2], sign[0], sign[1], sxyz};
    for (int k = 0; k < 10; ++k) loc.third[k] += m * tsign[k] * t[k];
}

/// The expansion at a body y = centre - body from the centre: adds its correction (acc, pot) with the box's
/// scaling (acceleration 1/L^2, potential 1/L).
HOST_DEVICE inline void evalEwaldLocal(const PeriodicView& box, const EwaldLocal& loc, Vec3f y, Vec3f& acc, float& pot)
{
    const float invL  = box.invBoxSize;
    const float u[3]  = {y.x * invL, y.y * invL, y.z * invL};
    const float* h    = loc.hess;
    const float uu[6] = {u[0] * u[0], u[1] * u[1], u[2] * u[2], u[0] * u[1], u[0] * u[2], u[1] * u[2]};
    const Vec3f tuu   = contractThird(loc.third, uu);
    const float hu[3] = {h[0] * u[0] + h[3] * u[1] + h[4] * u[2], h[3] * u[0] + h[1] * u[1] + h[5] * u[2],
                         h[4] * u[0] + h[5] * u[1] + h[2] * u[2]};
    const float a[3]  = {loc.acc[0] + hu[0] + 0.5f * tuu.x, loc.acc[1] + hu[1] + 0.5f * tuu.y,
                         loc.acc[2] + hu[2] + 0.5f * tuu.z};
    const float p     = loc.pot + u[0] * (loc.acc[0] + 0.5f * hu[0] + tuu.x / 6.0f) +
                    u[1] * (loc.acc[1] + 0.5f * hu[1] + tuu.y / 6.0f) + u[2] * (loc.acc[2] + 0.5f * hu[2] + tuu.z / 6.0f);
    const float invL2 = invL * invL;
    acc.x += invL2 * a[0];
    acc.y += invL2 * a[1];
    acc.z += invL2 * a[2];
    pot += invL * p;
}

} // namespace octwalk

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
/// fourth order and Taylor-expanded from the nearest point, serves every offset: the acceleration scales
/// as 1/L^2, the potential as 1/L. At d = 0
/// it is the self term: acceleration 0 and potential xi = +2.8372975/L (pot accumulates -m/r here, so a
/// body's own images and the background add m * xi to its potential).
///
/// The walks apply it per group (below, "The correction per group"): the image of each source nearest to
/// the group's centre, and the sum of the sources' corrections as a Taylor expansion about that centre
/// (its sources: common/ewald_walk.h).
///
/// The table is computed in double by host/reference/ewald_table.h from the exact sum of
/// host/reference/ewald_direct.h; the walk gets it through TreeView::periodic.

#include <cstdint>

#include "common/gravity.h"
#include "common/hostdevice.h"
#include "common/treepm.h"
#include "common/vec.h"

namespace octwalk {

/// Derivatives of the correction kept per table point and per group expansion: up to fourth order,
/// component (nx, ny, nz) = d^(nx+ny+nz) psi / dx^nx dy^ny dz^nz at ewaldDerivIndex(nx, ny, nz), graded by
/// order: value; x y z; xx xy xz yy yz zz; xxx xxy xxz xyy xyz xzz yyy yyz yzz zzz; then the 15 of order 4.
constexpr int kEwaldDerivs = 35;

HOST_DEVICE constexpr int ewaldDerivIndex(int nx, int ny, int nz)
{
    return (nx + ny + nz) * (nx + ny + nz + 1) * (nx + ny + nz + 2) / 6 + (ny + nz) * (ny + nz + 1) / 2 + nz;
}

/// Words (F4) per point of the correction table: the kEwaldDerivs derivatives for L = 1 (the potential,
/// its gradient = the acceleration, and the second to fourth derivatives) and one word of padding.
constexpr int32_t kEwaldTableWords = (kEwaldDerivs + 3) / 4;

/// For the one-thread walk (EwaldWalkConfig::warp false): groups whose lists hold at least this many entries
/// (accepted nodes + opened leaves) take the correction's own walk (common/ewald_walk.h); shorter lists were
/// cheaper taken entry by entry by the lanes of a warp. Measured on the H200 at 2^22 (BM_GpuPeriodic from
/// previous accelerations, the leaf kernel and this pass): the walk for every group took the uniform box
/// (11900 accepted nodes per group) from 95.9 ms to 57.0 and the clustered one (3204) from 22.6 to 23.8.
constexpr int64_t kEwaldWalkMinEntries = 8192;

/// How the Ewald correction finds a group's sources (common/ewald_walk.h), a run-time setting so that one
/// binary measures the choices (benchmarks/bench_gpu.cpp, BM_GpuPeriodicEwald); both backends read it from
/// the tree's PeriodicView, so the CPU twin takes the same sources in the same order.
struct EwaldWalkConfig
{
    /// A group whose lists hold at least this many entries takes the correction's own walk (0: every group;
    /// INT64_MAX: none), the others their lists. Default 0 with the warp walk: on an H200
    /// (BM_GpuPeriodicEwald, 2^22 from previous accelerations, one binary) the clustered box took 44.3 ms
    /// (Ewald pass 5.8 ms) against 55.2 (16.8) with the one-thread walk from kEwaldWalkMinEntries and 49.7
    /// (11.2) with the lists only; the warp walk from 2048 entries 44.5, from 4096 50.0; the uniform box 171.0
    /// against 180.2 ms (benchmarks/results/periodic/bench_gpu_ewald_walk_sweep.txt).
    int64_t minEntries = 0;
    /// The walk by the 32 lanes of a warp together (ewaldWarpWalkExpansion: lanes over the children of the
    /// opened cells, lane l's sources summed in lane l, the lanes reduced by a fixed butterfly) instead of
    /// one thread per group (ewaldGroupExpansion).
    bool warp = true;
};

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
    EwaldWalkConfig walk{}; ///< how the per-group correction finds its sources
    /// TreePM's short-range split (common/treepm.h); when on, the pairs below take it instead of the Ewald
    /// correction, no group expands and the table is not read (it may be null).
    ShortRangeView shortRange{};
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

/// sign_x^nx sign_y^ny sign_z^nz: a derivative's sign change from the octant |d| back to d (psi is even
/// in each coordinate).
HOST_DEVICE inline float ewaldOctantSign(const float* sign, int nx, int ny, int nz)
{
    return (nx & 1 ? sign[0] : 1.0f) * (ny & 1 ? sign[1] : 1.0f) * (nz & 1 ? sign[2] : 1.0f);
}

/// e^i / i! for i = 0..4.
HOST_DEVICE inline void ewaldPowers(float e, float* p)
{
    p[0] = 1.0f;
    p[1] = e;
    p[2] = 0.5f * e * e;
    p[3] = p[2] * e * (1.0f / 3.0f);
    p[4] = p[3] * e * 0.25f;
}

/// The derivatives up to order MaxOrder at |d| (the octant's frame, L = 1) from the nearest table point, by
/// the multi-index Taylor series D_n(x + e) = sum_m D_(n+m)(x) e^m / m! through fourth order; sign gets
/// the signs of d's components.
template<int MaxOrder>
HOST_DEVICE inline void ewaldOctantDerivatives(const PeriodicView& box, Vec3f d, float* sign, float* at)
{
    const int32_t n    = box.tableCells;
    const float toGrid = 2.0f * float(n);
    const float invL   = box.invBoxSize;
    sign[0]            = d.x < 0.0f ? -1.0f : 1.0f;
    sign[1]            = d.y < 0.0f ? -1.0f : 1.0f;
    sign[2]            = d.z < 0.0f ? -1.0f : 1.0f;
    const float u[3]   = {fabsf(d.x) * invL, fabsf(d.y) * invL, fabsf(d.z) * invL};
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
    float g[4 * kEwaldTableWords];
    // (clang-format would read OCTWALK_UNROLL as the body of the loop before it)
    // clang-format off
    OCTWALK_UNROLL
    for (int w = 0; w < kEwaldTableWords; ++w)
    {
        const F4 v   = point[w];
        g[4 * w]     = v.x;
        g[4 * w + 1] = v.y;
        g[4 * w + 2] = v.z;
        g[4 * w + 3] = v.w;
    }
    float px[5], py[5], pz[5];
    ewaldPowers(e[0], px);
    ewaldPowers(e[1], py);
    ewaldPowers(e[2], pz);
    OCTWALK_UNROLL
    for (int k = 0; k <= MaxOrder; ++k)
        OCTWALK_UNROLL
        for (int j = 0; j <= k; ++j)
            OCTWALK_UNROLL
            for (int nz = 0; nz <= j; ++nz)
            {
                const int nx = k - j, ny = j - nz;
                float v = 0.0f;
                OCTWALK_UNROLL
                for (int mk = 0; mk <= 4 - k; ++mk)
                    OCTWALK_UNROLL
                    for (int mj = 0; mj <= mk; ++mj)
                        OCTWALK_UNROLL
                        for (int mz = 0; mz <= mj; ++mz)
                        {
                            const int mx = mk - mj, my = mj - mz;
                            v += g[ewaldDerivIndex(nx + mx, ny + my, nz + mz)] * (px[mx] * py[my] * pz[mz]);
                        }
                at[ewaldDerivIndex(nx, ny, nz)] = v;
            }
    // clang-format on
}

/// A traceless quadrupole q in the octant's frame (q_ij times sign_i sign_j) and in units of L^2
/// (order xx yy zz xy xz yz).
HOST_DEVICE inline void ewaldOctantQuadrupole(const PeriodicView& box, const SymTensor<float>& q, const float* sign,
                                              float* qq)
{
    const float invL2 = box.invBoxSize * box.invBoxSize;
    qq[0]             = q.xx * invL2;
    qq[1]             = q.yy * invL2;
    qq[2]             = q.zz * invL2;
    qq[3]             = q.xy * invL2 * sign[0] * sign[1];
    qq[4]             = q.xz * invL2 * sign[0] * sign[2];
    qq[5]             = q.yz * invL2 * sign[1] * sign[2];
}

/// The quadrupole's part of derivative (nx, ny, nz): (1/6) sum_ij qq_ij D_(n + e_i + e_j) (the correction's
/// Laplacian is uniform, so the traceless q gives the whole term but for a constant in the potential,
/// ewaldSpreadPotential's). Needs at up to order |n| + 2.
HOST_DEVICE inline float ewaldQuadrupoleTerm(const float* at, const float* qq, int nx, int ny, int nz)
{
    return (qq[0] * at[ewaldDerivIndex(nx + 2, ny, nz)] + qq[1] * at[ewaldDerivIndex(nx, ny + 2, nz)] +
            qq[2] * at[ewaldDerivIndex(nx, ny, nz + 2)] +
            2.0f * (qq[3] * at[ewaldDerivIndex(nx + 1, ny + 1, nz)] + qq[4] * at[ewaldDerivIndex(nx + 1, ny, nz + 1)] +
                    qq[5] * at[ewaldDerivIndex(nx, ny + 1, nz + 1)])) *
           (1.0f / 6.0f);
}

/// The part of a node's second moment that its traceless quadrupole cannot carry, in the correction's potential, in
/// units of 1/L: the second moment sum m s s = (Q + S I) / 3 (S = q.spread = sum m |s|^2) meets the correction's
/// Hessian, whose trace is the background's uniform Laplacian -4 pi / L^3, so the trace adds (S / 6)(-4 pi / L^3)
/// = -(2 pi / 3) S / L^3 to the potential at every offset, and nothing to the pull. Without it a clustered box's
/// potential energy under tree + Ewald erred by 4.1e-3 (the evolved 32^3 box at theta 0.5 against the Ewald sum),
/// and by more where wider nodes are accepted; it needs the packed spread (softened quadrupole, the default).
HOST_DEVICE inline float ewaldSpreadPotential(const PeriodicView& box, const SymTensor<float>& q)
{
    constexpr float twoPiOverThree = 2.0943951023931955f;
    return -twoPiOverThree * (q.spread * (box.invBoxSize * box.invBoxSize));
}

/// The potential and its gradient at offset u from a point with derivatives d (fourth-order Taylor series).
HOST_DEVICE inline void ewaldTaylorPotAcc(const float* d, Vec3f u, float& pot, float* acc)
{
    float px[5], py[5], pz[5];
    ewaldPowers(u.x, px);
    ewaldPowers(u.y, py);
    ewaldPowers(u.z, pz);
    pot    = 0.0f;
    acc[0] = acc[1] = acc[2] = 0.0f;
    // (clang-format would read OCTWALK_UNROLL as the body of the loop before it)
    // clang-format off
    OCTWALK_UNROLL
    for (int mk = 0; mk <= 4; ++mk)
        OCTWALK_UNROLL
        for (int mj = 0; mj <= mk; ++mj)
            OCTWALK_UNROLL
            for (int mz = 0; mz <= mj; ++mz)
            {
                const int mx = mk - mj, my = mj - mz;
                const float w = px[mx] * py[my] * pz[mz];
                pot += d[ewaldDerivIndex(mx, my, mz)] * w;
                if (mk == 4) continue;
                acc[0] += d[ewaldDerivIndex(mx + 1, my, mz)] * w;
                acc[1] += d[ewaldDerivIndex(mx, my + 1, mz)] * w;
                acc[2] += d[ewaldDerivIndex(mx, my, mz + 1)] * w;
            }
    // clang-format on
}

/// Adds the Ewald correction of a source of mass m with traceless quadrupole q (about the source; zero
/// for a body) at a nearest-image offset d (source - target, |d_k| <= L/2): the table's derivatives
/// Taylor-expanded from the nearest point in the octant of |d| (signs restored afterwards), plus the
/// quadrupole's term.
template<bool Quadrupole>
HOST_DEVICE inline void addEwaldCorrectionTerm(const PeriodicView& box, Vec3f d, float m, const SymTensor<float>& q,
                                               Vec3f& acc, float& pot)
{
    float sign[3], at[kEwaldDerivs];
    ewaldOctantDerivatives<Quadrupole ? 3 : 1>(box, d, sign, at);
    float p    = m * at[0];
    float a[3] = {m * at[ewaldDerivIndex(1, 0, 0)], m * at[ewaldDerivIndex(0, 1, 0)], m * at[ewaldDerivIndex(0, 0, 1)]};
    if (Quadrupole)
    {
        float qq[6];
        ewaldOctantQuadrupole(box, q, sign, qq);
        p += ewaldQuadrupoleTerm(at, qq, 0, 0, 0) + ewaldSpreadPotential(box, q);
        a[0] += ewaldQuadrupoleTerm(at, qq, 1, 0, 0);
        a[1] += ewaldQuadrupoleTerm(at, qq, 0, 1, 0);
        a[2] += ewaldQuadrupoleTerm(at, qq, 0, 0, 1);
    }
    const float invL = box.invBoxSize, invL2 = invL * invL;
    acc.x += invL2 * sign[0] * a[0];
    acc.y += invL2 * sign[1] * a[1];
    acc.z += invL2 * sign[2] * a[2];
    pot += invL * p;
}

/// The correction of a body of mass m at a nearest-image offset d (see addEwaldCorrectionTerm).
HOST_DEVICE inline void addEwaldCorrection(const PeriodicView& box, Vec3f d, float m, Vec3f& acc, float& pot)
{
    const SymTensor<float> none{0, 0, 0, 0, 0, 0};
    addEwaldCorrectionTerm<false>(box, d, m, none, acc, pot);
}

/// Whether a group of TreePM's (half-sides groupHalf) meets each of its sources at the source's image nearest to
/// the group's centre, shifted once when the source is staged (imageNearest), instead of at the image nearest to
/// each target, found for every pair (nearestImage: three floors and six products and sums, a fifth of a
/// short-range pair's instructions). Both images are the same for every pair within the cutoff when the group's
/// box reaches less than L/2 - r_cut from its centre along each axis: such a pair's source lies within r_cut of a
/// target, so within L/2 of the centre. The margin of 4 kShortRangeReachSlack box sides covers the rounding of
/// the box, the positions and imageShift's quotient (a few ulps of L each). The pairs beyond the cutoff whose
/// images differ are left out either way. False under Ewald's sum; rounded identically on both backends.
HOST_DEVICE inline bool shortRangeShiftsOnce(F4 groupHalf, const PeriodicView& box)
{
    if (!shortRangeOn(box.shortRange)) return false;
    const float h = fmaxf(fmaxf(groupHalf.x, groupHalf.y), groupHalf.z);
    const float reach =
        addNoFma(addNoFma(h, box.shortRange.cutoff), mulNoFma(4.0f * kShortRangeReachSlack, box.boxSize));
    return reach < mulNoFma(0.5f, box.boxSize);
}

/// A short-range pair's offset d = source - target: as staged when the group shifted its sources once
/// (shortRangeShiftsOnce), else the nearest image.
HOST_DEVICE inline Vec3f shortRangeOffset(Vec3f d, bool shiftedOnce, const PeriodicView& box)
{
    return shiftedOnce ? d : nearestImage(d, box);
}

/// bodyBodyPeriodic under TreePM: the short-range pull of the body's image nearest to the target (shiftedOnce:
/// shortRangeOffset). Its own function so that the GPU's body-leaf kernels built for TreePM alone carry none of
/// the Ewald correction's registers.
HOST_DEVICE inline void bodyBodyShortRangePeriodic(Vec3f d, float newtonMass, float eps2, const PeriodicView& box,
                                                   bool shiftedOnce, Vec3f& acc, float& pot)
{
    bodyBodyShortRange(shortRangeOffset(d, shiftedOnce, box), newtonMass, eps2, box.shortRange, acc, pot);
}

/// The pull of a node in a periodic box, for both backends: its multipole at the image nearest to the
/// target, plus the Ewald correction of its mass and quadrupole at the centre of mass (d = com - target,
/// unwrapped); under TreePM the short-range pull of that image alone (bodyNodeShortRange; shiftedOnce:
/// shortRangeOffset).
HOST_DEVICE inline void bodyNodePeriodic(Vec3f d, float mass, const SymTensor<float>& q, float eps2,
                                         const PeriodicView& box, bool shiftedOnce, Vec3f& acc, float& pot)
{
    if (shortRangeOn(box.shortRange))
    {
        bodyNodeShortRange(shortRangeOffset(d, shiftedOnce, box), mass, q, eps2, box.shortRange, acc, pot);
        return;
    }
    d = nearestImage(d, box);
    bodyNode(d, mass, q, eps2, acc, pot);
    addEwaldCorrectionTerm<true>(box, d, mass, q, acc, pot);
}

/// The pull of a body in a periodic box: the nearest image, softened, with mass newtonMass (0 for the
/// target itself), plus the Ewald correction of the body's mass (for the target itself its self term). Under
/// TreePM the short-range pull of the nearest image alone (bodyBodyShortRangePeriodic; the self term is the mesh's).
HOST_DEVICE inline void bodyBodyPeriodic(Vec3f d, float newtonMass, float mass, float eps2, const PeriodicView& box,
                                         Vec3f& acc, float& pot)
{
    if (shortRangeOn(box.shortRange))
    {
        bodyBodyShortRangePeriodic(d, newtonMass, eps2, box, false, acc, pot);
        return;
    }
    d = nearestImage(d, box);
    bodyBody(d, newtonMass, eps2, acc, pot);
    addEwaldCorrection(box, d, mass, acc, pot);
}

// The correction per group (what the walks use): every body of a group takes, for each source, the image
// nearest to the group's centre c (the MAC accepted exactly that image for the whole group's box), so the
// Newtonian pull is the isolated formula on a shifted source, and the sum of all sources' corrections,
// psi_total(c - x) = sum_s m_s psi(d0_s + (c - x)) with d0_s = image - c, is smooth in x over the group
// (psi's singularities are at the non-zero lattice vectors, >= L/2 from any |d0_k| <= L/2): a Taylor
// expansion about c to fourth order in (c - x), accumulated once per (group, source) and evaluated once per
// body. Its sources need not be the lists': common/ewald_walk.h finds coarser ones that carry the same
// images. Groups larger than kEwaldGroupMaxHalf * L keep the per-interaction correction above.

/// A group is expanded when its box's largest half-side is at most this fraction of L. The truncation grows as
/// (half / L)^4 to (half / L)^5 (tests/unit/test_ewald.cpp, EwaldGroup.*, measures it), and in an evolved box
/// the large groups are the sparse ones in voids, whose net force is a small fraction of the box's pull: there
/// L/8 let the expansion's error reach 5e-3 G M / L^2 (32^3 LCDM at z = 0, data/ics/lcdm32_z0.gadget: p99
/// 3.2e-3 against the Ewald sum), 3/32 leaves 4.6e-4 (the same as L/16 and within 1.3x of no expansion at all).
/// At 2^20 bodies a void group at a tenth of the mean density spans about L/23 (estimated from the mean spacing).
constexpr float kEwaldGroupMaxHalf = 0.09375f;

/// The summed correction of a group's sources and its derivatives up to fourth order at the group's
/// centre, for L = 1 (the table's frame), in ewaldDerivIndex order.
struct EwaldLocal
{
    float d[kEwaldDerivs];
};

HOST_DEVICE inline EwaldLocal zeroEwaldLocal()
{
    EwaldLocal z;
    for (float& v : z.d) v = 0.0f;
    return z;
}

/// a += b, coefficient by coefficient (the GPU reduces the lanes' partial expansions with it).
HOST_DEVICE inline void addEwaldLocal(EwaldLocal& a, const EwaldLocal& b)
{
    for (int k = 0; k < kEwaldDerivs; ++k) a.d[k] += b.d[k];
}

/// Whether a group of box half-sizes half takes the per-group expansion in this box. Never under TreePM: there
/// is no correction to expand, and every body takes each source's image nearest to itself (the short-range sum
/// is exact for nearest images while the cutoff is below L/2, whatever the group's size).
HOST_DEVICE inline bool ewaldGroupExpands(F4 groupHalf, const PeriodicView& box)
{
    if (shortRangeOn(box.shortRange)) return false;
    float h = fmaxf(fmaxf(groupHalf.x, groupHalf.y), groupHalf.z);
    return h <= kEwaldGroupMaxHalf * box.boxSize;
}

/// The lattice vector, in units of L per axis, from the image of p (a point in [0, L)^3) nearest to c
/// back to p: that image is shiftedImage(p, imageShift(p, c, box), box).
HOST_DEVICE inline Vec3f imageShift(Vec3f p, Vec3f c, const PeriodicView& box)
{
    const float invL = box.invBoxSize;
    return {floorf(addNoFma(mulNoFma(p.x - c.x, invL), 0.5f)), floorf(addNoFma(mulNoFma(p.y - c.y, invL), 0.5f)),
            floorf(addNoFma(mulNoFma(p.z - c.z, invL), 0.5f))};
}

/// p - shift L, rounded identically on both backends.
HOST_DEVICE inline Vec3f shiftedImage(Vec3f p, Vec3f shift, const PeriodicView& box)
{
    const float L = box.boxSize;
    return {addNoFma(p.x, -mulNoFma(shift.x, L)), addNoFma(p.y, -mulNoFma(shift.y, L)),
            addNoFma(p.z, -mulNoFma(shift.z, L))};
}

/// The image of p (a point in [0, L)^3) nearest to c, rounded identically on both backends.
HOST_DEVICE inline Vec3f imageNearest(Vec3f p, Vec3f c, const PeriodicView& box)
{
    return shiftedImage(p, imageShift(p, c, box), box);
}

/// Adds to a group's expansion (about its centre) the correction of a source of mass m with traceless
/// quadrupole q at offset d0 = image - centre: the derivatives at d0 from the table, the quadrupole's
/// (1/6) q_ij d_i d_j psi up to the Hessian, and its spread's constant (ewaldSpreadPotential).
template<bool Quadrupole>
HOST_DEVICE inline void addEwaldLocalTerm(const PeriodicView& box, Vec3f d0, float m, const SymTensor<float>& q,
                                          EwaldLocal& loc)
{
    float sign[3], at[kEwaldDerivs];
    ewaldOctantDerivatives<4>(box, d0, sign, at);
    float qq[6] = {0, 0, 0, 0, 0, 0};
    if (Quadrupole) ewaldOctantQuadrupole(box, q, sign, qq);
    // clang-format off
    OCTWALK_UNROLL
    for (int k = 0; k <= 4; ++k)
        OCTWALK_UNROLL
        for (int j = 0; j <= k; ++j)
            OCTWALK_UNROLL
            for (int nz = 0; nz <= j; ++nz)
            {
                const int nx = k - j, ny = j - nz;
                float v = m * at[ewaldDerivIndex(nx, ny, nz)];
                if (Quadrupole && k <= 2) v += ewaldQuadrupoleTerm(at, qq, nx, ny, nz);
                if (Quadrupole && k == 0) v += ewaldSpreadPotential(box, q);
                loc.d[ewaldDerivIndex(nx, ny, nz)] += ewaldOctantSign(sign, nx, ny, nz) * v;
            }
    // clang-format on
}

/// An expansion whose coefficients are in units of a length U (invU = 1 / U) at y = centre - body: adds its
/// pull (acc, pot), scaled back (acceleration 1/U^2, potential 1/U). The Ewald correction's unit is L, the far
/// field's the group radius (common/far_field.h).
HOST_DEVICE inline void evalScaledLocal(const EwaldLocal& loc, Vec3f y, float invU, Vec3f& acc, float& pot)
{
    float p, a[3];
    ewaldTaylorPotAcc(loc.d, {y.x * invU, y.y * invU, y.z * invU}, p, a);
    const float invU2 = invU * invU;
    acc.x += invU2 * a[0];
    acc.y += invU2 * a[1];
    acc.z += invU2 * a[2];
    pot += invU * p;
}

/// The expansion at y = centre - body: adds its correction (acc, pot) with the box's scaling.
HOST_DEVICE inline void evalEwaldLocal(const PeriodicView& box, const EwaldLocal& loc, Vec3f y, Vec3f& acc, float& pot)
{
    evalScaledLocal(loc, y, box.invBoxSize, acc, pot);
}

} // namespace octwalk

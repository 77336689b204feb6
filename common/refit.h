#pragma once
/// @file refit.h
/// The refit: a packed tree's topology kept (which bodies belong to which leaf, which nodes to which
/// cell), its moments recomputed bottom-up from the bodies' current positions. The per-node and
/// per-group functions here are what the packer (host/tree/packed_tree.cpp) and both refit twins
/// (host/cpu/refit_cpu.h, device/refit_gpu.h) call, so a refit on unchanged positions reproduces the
/// packed arrays bit for bit.
///
/// Order: every leaf from its bodies, then the internal nodes level by level from the deepest (the
/// children of a level's nodes are leaves or deeper internal nodes, already done), then the float
/// bodies and the group boxes. Each node sums in a fixed order, so the result does not depend on
/// how a level is split among threads.

#include <cstdint>

#include "common/hostdevice.h"
#include "common/mac.h"
#include "common/multipole.h"
#include "common/tree_view.h"
#include "common/treepm.h"
#include "common/vec.h"

namespace octwalk {

/// What a refit reads and writes, all in one memory space (host for refitCpu, device for refitGpu).
/// The topology arrays are packTree's (common/tree_view.h); the outputs have its sizes.
struct RefitView
{
    const U4* children;   ///< 2 per internal node
    const I2* leafRange;  ///< per leaf: first body, count
    const I2* groupRange; ///< per group: first body, count
    const Vec3d* pos;     ///< current positions, tree order
    const double* mass;   ///< masses, tree order
    Moments* moments;     ///< working memory: one per node
    F4* nodeMac;          ///< out: com, squared MAC radius
    F4* nodeCom;          ///< out: com, mass
    F4* nodeQuad;         ///< out: 2 per node
    F4* bodies;           ///< out: float position, mass
    F4* groupCenter;      ///< out: per group
    F4* groupHalf;        ///< out: per group
    int32_t numInternal, numLeaves, numGroups, numBodies;
    Mac mac;
    float invTheta;    ///< float(1 / theta), as the packer rounds it
    float quadScale;   ///< 1, or 0 for monopole-only trees
    float spreadScale; ///< 1 when the quadrupole's spread is packed (the softened expansion), else 0
    /// TreePM's error control: the previous evaluation's results (tree order, G = 1) from which refitGroup sets each
    /// group's tolerance (treePmGroupTolerance with groupTolerance as alpha); nullptr leaves groupHalf.w at 0.
    const F4* previous   = nullptr;
    float groupTolerance = 0.0f;
};

/// The internal nodes by level, in host memory (the twins loop over levels on the host):
/// level L's internal nodes are [internalFirst[L], internalFirst[L + 1]), L = 0 .. numLevels - 1.
struct RefitLevels
{
    const int32_t* internalFirst;
    int32_t numLevels;
};

HOST_DEVICE inline F4 toF4(Vec3d v, double w) { return {float(v.x), float(v.y), float(v.z), float(w)}; }

/// Squared MAC radius of a node from its tight box's largest side and its com's offset from the box
/// centre (common/mac.h).
HOST_DEVICE inline float nodeMacRadius2(const Moments& mo, Mac mac, float invTheta)
{
    Vec3d center = 0.5 * (mo.lo + mo.hi);
    Vec3d extent = mo.hi - mo.lo;
    double side  = maxOf(maxOf(extent.x, extent.y), extent.z);
    Vec3d offset = mo.com - center;
    float delta  = float(sqrt(dot(offset, offset)));
    return macRadius2(mac, float(side), delta, invTheta);
}

/// Packs one node's moments into its nodeCom, nodeMac (nodeMacRadius2) and two nodeQuad words
/// (common/tree_view.h); spreadScale 0 packs a zero spread (bodyNode's traceless expansion).
HOST_DEVICE inline void packNode(const Moments& mo, Mac mac, float invTheta, float quadScale, float spreadScale,
                                 F4& nodeCom, F4& nodeMac, F4* nodeQuad)
{
    nodeCom                    = toF4(mo.com, mo.mass);
    nodeMac                    = toF4(mo.com, nodeMacRadius2(mo, mac, invTheta));
    const SymTensor<double>& q = mo.quad;
    nodeQuad[0] = {quadScale * float(q.xx), quadScale * float(q.yy), quadScale * float(q.zz), quadScale * float(q.xy)};
    nodeQuad[1] = {quadScale * float(q.xz), quadScale * float(q.yz), spreadScale * float(q.spread), 0.0f};
}

/// Tight float box (centre, half-size) of bodies [range.x, range.x + range.y), range.y >= 1; the
/// half-size is rounded outward so the float box still contains every float position.
HOST_DEVICE inline void groupBox(const F4* bodies, I2 range, F4& center, F4& half)
{
    F4 lo = bodies[range.x], hi = bodies[range.x];
    for (int32_t i = range.x + 1; i < range.x + range.y; ++i)
    {
        const F4& p = bodies[i];
        lo          = {minOf(lo.x, p.x), minOf(lo.y, p.y), minOf(lo.z, p.z), lo.w};
        hi          = {maxOf(hi.x, p.x), maxOf(hi.y, p.y), maxOf(hi.z, p.z), hi.w};
    }
    Vec3f c{0.5f * (lo.x + hi.x), 0.5f * (lo.y + hi.y), 0.5f * (lo.z + hi.z)};
    auto halfWidth = [](float cc, float a, float b) {
        float h = maxOf(cc - a, b - cc);
#ifdef __CUDA_ARCH__
        return nextafterf(h, HUGE_VALF);
#else
        return std::nextafter(h, HUGE_VALF);
#endif
    };
    center = {c.x, c.y, c.z, 0.0f};
    half   = {halfWidth(c.x, lo.x, hi.x), halfWidth(c.y, lo.y, hi.y), halfWidth(c.z, lo.z, hi.z), 0.0f};
}

/// Node index of a non-empty child entry.
HOST_DEVICE inline int32_t childNode(uint32_t entry) { return int32_t(entry & ~kLeafBit); }

/// Refits leaf f (node numInternal + f) from its bodies' positions and masses at pos[first ...] and
/// mass[first ...]: the view's own arrays at the leaf's first body (refitLeaf), or a copy of them that the device
/// gathered into shared memory with first 0.
HOST_DEVICE inline void refitLeafFrom(const RefitView& v, int32_t f, const Vec3d* pos, const double* mass,
                                      int32_t first)
{
    const int32_t n = v.numInternal + f;
    v.moments[n]    = leafMoments(pos, mass, first, v.leafRange[f].y);
    packNode(v.moments[n], v.mac, v.invTheta, v.quadScale, v.spreadScale, v.nodeCom[n], v.nodeMac[n],
             v.nodeQuad + 2 * n);
}

/// Refits leaf f (node numInternal + f) from its bodies.
HOST_DEVICE inline void refitLeaf(const RefitView& v, int32_t f)
{
    refitLeafFrom(v, f, v.pos, v.mass, v.leafRange[f].x);
}

/// Refits internal node c from the moments of its count non-empty children in octant order, kids[k] the k-th:
/// the view's own moments (refitInternal) or copies that the device gathered into shared memory.
HOST_DEVICE inline void refitInternalFrom(const RefitView& v, int32_t c, const Moments* const* kids, int32_t count)
{
    v.moments[c] = combineMoments(kids, count);
    packNode(v.moments[c], v.mac, v.invTheta, v.quadScale, v.spreadScale, v.nodeCom[c], v.nodeMac[c],
             v.nodeQuad + 2 * c);
}

/// Refits internal node c from its children (refitted before it), in octant order.
HOST_DEVICE inline void refitInternal(const RefitView& v, int32_t c)
{
    const U4 a = v.children[2 * c], b = v.children[2 * c + 1];
    const uint32_t entries[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const Moments* kids[8];
    int32_t count = 0;
    for (uint32_t e : entries)
    {
        if (e != kEmptyChild) kids[count++] = v.moments + childNode(e);
    }
    refitInternalFrom(v, c, kids, count);
}

/// The float copy of body k (position, mass), as the packer writes it.
HOST_DEVICE inline void refitBody(const RefitView& v, int32_t k) { v.bodies[k] = toF4(v.pos[k], v.mass[k]); }

/// Group g's box from its float bodies at bodies[first ...]: the view's own (refitGroup, first the group's first
/// body) or a copy that the device gathered into shared memory with first 0.
HOST_DEVICE inline void refitGroupFrom(const RefitView& v, int32_t g, const F4* bodies, int32_t first)
{
    groupBox(bodies, {first, v.groupRange[g].y}, v.groupCenter[g], v.groupHalf[g]);
    if (v.previous)
    {
        const F4* previous = v.previous;
        v.groupHalf[g].w =
            treePmGroupTolerance(v.groupRange[g], v.groupTolerance, [=](int32_t k) { return previous[k]; });
    }
}

/// Group g's box from the float bodies (refitted before it).
HOST_DEVICE inline void refitGroup(const RefitView& v, int32_t g) { refitGroupFrom(v, g, v.bodies, v.groupRange[g].x); }

} // namespace octwalk

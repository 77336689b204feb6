// Body-node and body-leaf force kernels (twin: host/cpu/forces_cpu.cpp).
//
// Read-only path: the kernels load the views' arrays explicitly with __ldg (loadReadOnly), since the
// views' members cannot carry __restrict__ (checked in the PTX).
//
// Determinism: every result is written by exactly one thread and summed in list order; no atomics.
#include "device/forces_gpu.h"

#include <cuda_runtime.h>

#include <cub/warp/warp_scan.cuh>

#include <string>

#include "common/errors.h"
#include "common/ewald.h"
#include "common/gravity.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"
#include "device/ewald_gpu.h"

namespace octwalk {

namespace {

/// Force kernels run one warp per group (kForceWarps groups per block), each lane serving up to
/// TargetsPerLane targets (a template parameter, chosen at run time by the launchers); larger
/// groups take several passes. Groups average ~18 bodies at n_group = 64 (Plummer, 2^20), so one
/// block of n_group threads per group left most threads idle (measured 1.4x slower on an H200); a
/// warp serves groups of <= 32 bodies with one target per lane and larger ones with up to
/// TargetsPerLane, which share each staged node (its shared-memory loads and the loop overhead).
constexpr int kWarp       = 32;
constexpr int kForceWarps = 4;
constexpr int kForceBlock = kWarp * kForceWarps;
static_assert(kWarp == 32, "the tiles, __syncwarp and cub::WarpScan assume 32-lane warps");
static_assert(kForceWarps >= 1 && kForceBlock <= 1024, "a force block is whole warps, at most 1024 threads");

/// The targets one lane serves in one pass of its warp over the group's lists: base + lane + 32 s
/// for slot s. slots is warp-uniform; lanes without a target in a slot compute on a dummy target
/// at the origin (the kernels guard r = 0) and discard the result, so the inner loops do not
/// branch on which lanes have targets.
template<int TargetsPerLane>
struct LaneTargets
{
    static_assert(TargetsPerLane >= 1, "every lane serves at least one target per pass");
    static constexpr int kPerWarp = kWarp * TargetsPerLane;

    Vec3f pos[TargetsPerLane];
    int32_t index[TargetsPerLane];
    Vec3f acc[TargetsPerLane];
    float pot[TargetsPerLane];
    int32_t end;
    int slots;

    __device__ LaneTargets(const F4* targets, int32_t base, int32_t groupEnd, int lane) : end(groupEnd)
    {
        slots = min(TargetsPerLane, (groupEnd - base + kWarp - 1) / kWarp);
#pragma unroll
        for (int s = 0; s < TargetsPerLane; ++s)
        {
            index[s] = base + lane + s * kWarp;
            pos[s]   = index[s] < end ? xyz(loadReadOnly(targets + index[s])) : Vec3f{0, 0, 0};
            acc[s]   = {0, 0, 0};
            pot[s]   = 0;
        }
    }

    __device__ bool active(int s) const { return index[s] < end; }
};

/// What the body-node kernel needs of one list entry: centre of mass and mass, and the quadrupole's two
/// packed words (the second with the spread, common/tree_view.h).
struct NodeEntry
{
    F4 com;
    F4 quadA;
    F4 quadB;
};

/// One list entry's node, through __ldg or (Tex) the texture objects over the same arrays.
template<bool Tex>
__device__ inline NodeEntry loadNodeEntry(const TreeView& tree, const TreeTextures& tex, int32_t n)
{
    if (Tex)
    {
        float4 com = tex1Dfetch<float4>(cudaTextureObject_t(tex.nodeCom), n);
        float4 a   = tex1Dfetch<float4>(cudaTextureObject_t(tex.nodeQuad), 2 * n);
        float4 b   = tex1Dfetch<float4>(cudaTextureObject_t(tex.nodeQuad), 2 * n + 1);
        return {{com.x, com.y, com.z, com.w}, {a.x, a.y, a.z, a.w}, {b.x, b.y, b.z, b.w}};
    }
    return {loadReadOnly(tree.nodeCom + n), loadReadOnly(tree.nodeQuad + 2 * n),
            loadReadOnly(tree.nodeQuad + 2 * n + 1)};
}

/// Body-node forces: one warp per group (see LaneTargets for why). The group's node list is
/// staged through the warp's shared tile 32 entries at a time, and every target sums the whole
/// list in list order, like the CPU twin. Each lane fetches its entry of the next tile before the
/// warp computes on the current one, so the scattered node loads overlap the arithmetic.
/// Periodic: a group that ewaldGroupExpands takes each node's image nearest to its centre (shifted once,
/// when staged) with the isolated formula, its Ewald correction coming from the group's expansion
/// (device/ewald_gpu.h, after the leaf kernel); a larger group takes the per-interaction correction. As on
/// the CPU twin.
template<bool Periodic, bool Expand, int TargetsPerLane, bool Tex>
__global__ void __launch_bounds__(kForceBlock)
    bodyNodeKernel(TreeView tree, TreeTextures tex, GroupView groups, const int64_t* __restrict__ nodeOffset,
                   const int32_t* __restrict__ nodeList, const F4* __restrict__ targets, float eps2,
                   F4* __restrict__ nodeAcc)
{
    __shared__ NodeEntry sNode[kForceWarps][kWarp];

    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * kForceWarps + warp;
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const I2 range          = loadReadOnly(groups.range + g);
    const int64_t listBegin = nodeOffset[g], listEnd = nodeOffset[g + 1];
    NodeEntry* tileNodes = sNode[warp];
    // A periodic box takes two launches: the groups that expand, and the others (whole warps leave).
    if (Periodic && ewaldGroupExpands(loadReadOnly(groups.half + g), tree.periodic) != Expand) return;
    constexpr bool expand = Periodic && Expand;
    const Vec3f centre    = expand ? xyz(loadReadOnly(groups.center + g)) : Vec3f{0, 0, 0};

    for (int32_t base = range.x; base < range.x + range.y; base += LaneTargets<TargetsPerLane>::kPerWarp)
    {
        LaneTargets<TargetsPerLane> t(targets, base, range.x + range.y, lane);
        NodeEntry next{};
        if (listBegin + lane < listEnd) next = loadNodeEntry<Tex>(tree, tex, nodeList[listBegin + lane]);
        for (int64_t tile = listBegin; tile < listEnd; tile += kWarp)
        {
            const int count = int(min(int64_t(kWarp), listEnd - tile));
            if (expand)
            {
                const Vec3f image = imageNearest(xyz(next.com), centre, tree.periodic);
                next.com          = {image.x, image.y, image.z, next.com.w};
            }
            __syncwarp();
            tileNodes[lane] = next;
            __syncwarp();
            if (tile + kWarp + lane < listEnd) next = loadNodeEntry<Tex>(tree, tex, nodeList[tile + kWarp + lane]);
#pragma unroll 4
            for (int k = 0; k < count; ++k)
            {
                NodeEntry e        = tileNodes[k];
                SymTensor<float> q = unpackQuadrupole(e.quadA, e.quadB);
#pragma unroll
                for (int s = 0; s < TargetsPerLane; ++s)
                {
                    if (s >= t.slots) continue;
                    if (Periodic && !expand)
                    {
                        bodyNodePeriodic(xyz(e.com) - t.pos[s], e.com.w, q, eps2, tree.periodic, t.acc[s], t.pot[s]);
                    }
                    else bodyNode(xyz(e.com) - t.pos[s], e.com.w, q, eps2, t.acc[s], t.pot[s]);
                }
            }
        }
#pragma unroll
        for (int s = 0; s < TargetsPerLane; ++s)
        {
            if (t.active(s)) nodeAcc[t.index[s]] = {t.acc[s].x, t.acc[s].y, t.acc[s].z, t.pot[s]};
        }
    }
}

/// Index of the leaf holding flattened body f: the last l with leafStart[l] <= f (empty leaves,
/// which share their start with the next one, are skipped by taking the last).
__device__ inline int findLeaf(const int32_t* leafStart, int numLeaves, int32_t f)
{
    int lo = 0, hi = numLeaves - 1;
    while (lo < hi)
    {
        int mid = (lo + hi + 1) / 2;
        if (leafStart[mid] <= f) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/// Body-leaf forces, and the final sum: one warp per group. The leaf list is taken 32 leaves at a
/// time; a warp scan of their body counts flattens them into one sequence of bodies (list order,
/// then tree order within a leaf, like the CPU twin), staged through the warp's shared tile 32
/// bodies at a time. out[i] = nodeAcc[i] + leaf sum, as the CPU twin's bodyLeafForcesCpu.
/// Periodic: a group that ewaldGroupExpands takes each body's image nearest to its centre (shifted when
/// staged) with the isolated formula, its Ewald correction (the self term included) coming from the
/// group's expansion (device/ewald_gpu.h, launched after this kernel); a larger group takes the
/// per-interaction correction, which a body also applies to itself. As on the CPU twin.
template<bool Periodic, bool Expand, int TargetsPerLane>
__global__ void __launch_bounds__(kForceBlock)
    bodyLeafKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ leafOffset,
                   const int32_t* __restrict__ leafList, const F4* __restrict__ bodies, const F4* __restrict__ targets,
                   bool skipSelf, float eps2, const F4* __restrict__ nodeAcc, F4* __restrict__ out)
{
    using WarpScan = cub::WarpScan<int32_t>;
    __shared__ typename WarpScan::TempStorage scanStorage[kForceWarps];
    __shared__ int32_t sLeafFirst[kForceWarps][kWarp]; // first body (tree order) of each leaf of the chunk
    __shared__ int32_t sLeafStart[kForceWarps][kWarp]; // its position in the chunk's flattened sequence
    __shared__ F4 sBody[kForceWarps][kWarp];
    __shared__ int32_t sBodyIndex[kForceWarps][kWarp];

    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * kForceWarps + warp;
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const I2 range          = loadReadOnly(groups.range + g);
    const int64_t listBegin = leafOffset[g], listEnd = leafOffset[g + 1];
    int32_t* leafFirst = sLeafFirst[warp];
    int32_t* leafStart = sLeafStart[warp];
    F4* body           = sBody[warp];
    int32_t* bodyIndex = sBodyIndex[warp];
    // A periodic box takes two launches: the groups that expand, and the others (whole warps leave).
    if (Periodic && ewaldGroupExpands(loadReadOnly(groups.half + g), tree.periodic) != Expand) return;
    constexpr bool expand = Periodic && Expand;
    const Vec3f centre    = expand ? xyz(loadReadOnly(groups.center + g)) : Vec3f{0, 0, 0};

    for (int32_t base = range.x; base < range.x + range.y; base += LaneTargets<TargetsPerLane>::kPerWarp)
    {
        LaneTargets<TargetsPerLane> t(targets, base, range.x + range.y, lane);
        for (int64_t chunk = listBegin; chunk < listEnd; chunk += kWarp)
        {
            const int numLeaves = int(min(int64_t(kWarp), listEnd - chunk));
            I2 leaf{0, 0};
            if (lane < numLeaves) leaf = loadReadOnly(tree.leafRange + (leafList[chunk + lane] - tree.numInternal));
            int32_t start = 0, chunkBodies = 0;
            __syncwarp();
            WarpScan(scanStorage[warp]).ExclusiveSum(leaf.y, start, chunkBodies);
            leafFirst[lane] = leaf.x;
            leafStart[lane] = start;
            __syncwarp();
            for (int32_t tile = 0; tile < chunkBodies; tile += kWarp)
            {
                const int count = min(kWarp, chunkBodies - tile);
                if (lane < count)
                {
                    int32_t f = tile + lane;
                    int l     = findLeaf(leafStart, numLeaves, f);
                    int32_t j = leafFirst[l] + (f - leafStart[l]);
                    F4 b      = loadReadOnly(bodies + j);
                    if (expand)
                    {
                        const Vec3f image = imageNearest(xyz(b), centre, tree.periodic);
                        b                 = {image.x, image.y, image.z, b.w};
                    }
                    body[lane]      = b;
                    bodyIndex[lane] = j;
                }
                __syncwarp();
                for (int k = 0; k < count; ++k)
                {
                    F4 b      = body[k];
                    int32_t j = bodyIndex[k];
#pragma unroll
                    for (int s = 0; s < TargetsPerLane; ++s)
                    {
                        if (s >= t.slots) continue;
                        const bool self = skipSelf && j == t.index[s];
                        if (Periodic && !expand)
                        {
                            bodyBodyPeriodic(xyz(b) - t.pos[s], self ? 0.0f : b.w, b.w, eps2, tree.periodic, t.acc[s],
                                             t.pot[s]);
                        }
                        // The body itself adds exact zeros (massless, at a guarded r), without the
                        // divergent branch of skipping it.
                        else bodyBody(xyz(b) - t.pos[s], self ? 0.0f : b.w, eps2, t.acc[s], t.pot[s]);
                    }
                }
                __syncwarp();
            }
        }
#pragma unroll
        for (int s = 0; s < TargetsPerLane; ++s)
        {
            if (!t.active(s)) continue;
            F4 node         = loadReadOnly(nodeAcc + t.index[s]);
            out[t.index[s]] = {node.x + t.acc[s].x, node.y + t.acc[s].y, node.z + t.acc[s].z, node.w + t.pot[s]};
        }
    }
}

static_assert(sizeof(NodeEntry) * kWarp * kForceWarps <= 48 * 1024,
              "the body-node kernel's tiles fit in static shared memory");

/// The kernel of one (periodic, targets per lane, textures) choice; the launchers pick it at run time.
/// expand: in a periodic box, the kernel for the groups whose Ewald correction is their expansion.
template<template<bool, int, bool> class Pick>
auto pickKernel(bool periodic, int targetsPerLane, bool textures, bool expand)
{
    switch (targetsPerLane)
    {
    case 2:
        if (periodic) return textures ? Pick<true, 2, true>::kernel(expand) : Pick<true, 2, false>::kernel(expand);
        return textures ? Pick<false, 2, true>::kernel(expand) : Pick<false, 2, false>::kernel(expand);
    case 4:
        if (periodic) return textures ? Pick<true, 4, true>::kernel(expand) : Pick<true, 4, false>::kernel(expand);
        return textures ? Pick<false, 4, true>::kernel(expand) : Pick<false, 4, false>::kernel(expand);
    default:
        throw ParameterError("force kernels: targets per lane " + std::to_string(targetsPerLane) +
                             " is not built (2 or 4)");
    }
}

template<bool Periodic, int TargetsPerLane, bool Tex>
struct PickNode
{
    static auto kernel(bool expand)
    {
        if constexpr (Periodic)
        {
            return expand ? bodyNodeKernel<true, true, TargetsPerLane, Tex>
                          : bodyNodeKernel<true, false, TargetsPerLane, Tex>;
        }
        else return bodyNodeKernel<false, false, TargetsPerLane, Tex>;
    }
};

/// The body-leaf kernel reads bodies and leaf ranges only: no texture variant.
template<bool Periodic, int TargetsPerLane, bool>
struct PickLeaf
{
    static auto kernel(bool expand)
    {
        if constexpr (Periodic)
        {
            return expand ? bodyLeafKernel<true, true, TargetsPerLane> : bodyLeafKernel<true, false, TargetsPerLane>;
        }
        else return bodyLeafKernel<false, false, TargetsPerLane>;
    }
};

} // namespace

void bodyNodeForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const TargetView& targets,
                       float eps2, F4* nodeAcc, GpuStream stream, int targetsPerLane, const TreeTextures& textures)
{
    const bool periodic = tree.periodic.boxSize > 0.0f;
    // The periodic groups that expand get a kernel of their own, free of the per-interaction correction's
    // registers; the others take the second launch.
    auto expanding = pickKernel<PickNode>(periodic, targetsPerLane, textures.present(), true);
    auto perPair   = pickKernel<PickNode>(periodic, targetsPerLane, textures.present(), false);
    if (groups.numGroups == 0) return;
    for (auto kernel : {expanding, periodic ? perPair : nullptr})
    {
        if (kernel == nullptr) continue;
        kernel<<<blocksFor(groups.numGroups, kForceWarps), kForceBlock, 0, cudaStreamOf(stream)>>>(
            tree, textures, groups, lists.nodeOffset, lists.nodeList, targets.pos, eps2, nodeAcc);
        CUDA_CHECK_LAUNCH();
    }
}

void bodyLeafForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       const TargetView& targets, float eps2, const F4* nodeAcc, F4* acc, GpuStream stream,
                       int targetsPerLane)
{
    const bool periodic = tree.periodic.boxSize > 0.0f;
    auto expanding      = pickKernel<PickLeaf>(periodic, targetsPerLane, false, true);
    auto perPair        = pickKernel<PickLeaf>(periodic, targetsPerLane, false, false);
    if (groups.numGroups == 0) return;
    for (auto kernel : {expanding, periodic ? perPair : nullptr})
    {
        if (kernel == nullptr) continue;
        kernel<<<blocksFor(groups.numGroups, kForceWarps), kForceBlock, 0, cudaStreamOf(stream)>>>(
            tree, groups, lists.leafOffset, lists.leafList, bodies.posMass, targets.pos, targets.areBodies, eps2,
            nodeAcc, acc);
        CUDA_CHECK_LAUNCH();
    }
    if (periodic) ewaldGroupCorrectionGpu(tree, groups, lists, bodies, targets, acc, stream);
}

} // namespace octwalk

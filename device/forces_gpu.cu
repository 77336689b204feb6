// Body-node and body-leaf force kernels (twin: host/cpu/forces_cpu.cpp).
//
// Read-only path: the kernels load the views' arrays explicitly with __ldg (loadReadOnly), since the
// views' members cannot carry __restrict__ (checked in the PTX).
//
// Determinism: every result is written by exactly one thread and summed in list order, or (a split tail
// target of the body-node kernel) in shares of the list added in a fixed order by warp shuffles; no atomics.
#include "device/forces_gpu.h"

#include <cuda_runtime.h>

#include <cub/warp/warp_scan.cuh>

#include <string>
#include <type_traits>

#include "common/errors.h"
#include "common/ewald.h"
#include "common/far_field.h"
#include "common/gravity.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"
#include "device/ewald_gpu.h"
#include "device/lane_reduce.cuh"

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
/// Warps that share one long-listed group in the body-leaf split kernel (LeafKernelShape), and the warps of its
/// blocks: two groups a block, so that the launch, whose warps mostly leave at once, has few blocks (at 2^22 its
/// 4-warp blocks cost 0.12 ms on an H200).
constexpr int kLeafSplitWarps      = 8;
constexpr int kLeafSplitBlockWarps = 2 * kLeafSplitWarps;
static_assert(kForceWarps >= 1 && kForceBlock <= 1024, "a force block is whole warps, at most 1024 threads");

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

/// The targets one lane serves in one pass of a force kernel over a group's list (tailPlan, forces_gpu.h;
/// the body-node kernel's, and the body-leaf kernel's). Split (SplitTail): slots 0..plain-1 hold
/// base + lane + 32 s (or a dummy) and take every staged source; the tail targets, if any, sit in the last
/// slot, lane l holding target l % tail on the staged sources k with k % ways == l / tail (part), and lanes
/// l >= tail * ways none (they idle through the tail loop). Not split: every slot a plain one, the first
/// ceil(m / 32) of them in use; lanes without a target in a slot compute on a dummy target at the origin
/// and discard the result, so the inner loops do not branch on which lanes have targets.
template<int TargetsPerLane, bool SplitTail>
struct NodeLaneTargets
{
    static_assert(TargetsPerLane >= 1, "every lane serves at least one target per pass");
    static constexpr int kPerWarp = kWarp * TargetsPerLane;
    static constexpr int kTail    = TargetsPerLane - 1;

    Vec3f pos[TargetsPerLane];
    Vec3f acc[TargetsPerLane];
    float pot[TargetsPerLane];
    int plain; ///< warp-uniform
    int ways;  ///< lanes per tail target, 0 without a tail; warp-uniform
    int part;  ///< the lane's share of the tail target's nodes; kWarp for a lane without one

    /// m: the pass's targets, from base on.
    __device__ NodeLaneTargets(const F4* targets, int32_t base, int m, int lane)
    {
        const TailPlan plan = SplitTail ? tailPlan(m, TargetsPerLane) : TailPlan{(m + kWarp - 1) / kWarp, 0, 0};
        plain               = plan.plainSlots;
        ways                = plan.ways;
        part                = ways > 0 && lane < plan.tail * ways ? lane / plan.tail : kWarp;
#pragma unroll
        for (int s = 0; s < TargetsPerLane; ++s)
        {
            const int32_t i = index(s, m, lane);
            pos[s]          = i >= 0 ? xyz(loadReadOnly(targets + base + i)) : Vec3f{0, 0, 0};
            acc[s]          = {0, 0, 0};
            pot[s]          = 0;
        }
    }

    /// The target of slot s, from the pass's base: -1 for a dummy slot. Recomputed where needed rather
    /// than kept in registers.
    __device__ int32_t index(int s, int m, int lane) const
    {
        if (s < plain) return lane + s * kWarp < m ? lane + s * kWarp : -1;
        if (s != kTail || part == kWarp) return -1;
        return kWarp * plain + lane % (m - kWarp * plain);
    }

    /// The target whose sum slot s of this lane writes (from the pass's base), or -1: a plain slot's real
    /// target, or the tail target's first part (after reduceTail).
    __device__ int32_t writes(int s, int m, int lane) const
    {
        if (s >= plain && part != 0) return -1;
        return index(s, m, lane);
    }

    /// Adds the tail's partial sums into the lanes of part 0, in the order of the parts (a fixed order,
    /// so repeated runs agree bit for bit). Warp-uniform: every lane takes part in each shuffle.
    __device__ void reduceTail(int m, int lane)
    {
        const int tail = m - kWarp * plain;
        for (int p = 1; p < ways; ++p)
        {
            const int from = (lane + p * tail) % kWarp;
            const float ax = __shfl_sync(0xffffffffu, acc[kTail].x, from);
            const float ay = __shfl_sync(0xffffffffu, acc[kTail].y, from);
            const float az = __shfl_sync(0xffffffffu, acc[kTail].z, from);
            const float ph = __shfl_sync(0xffffffffu, pot[kTail], from);
            if (part == 0)
            {
                acc[kTail].x += ax;
                acc[kTail].y += ay;
                acc[kTail].z += az;
                pot[kTail] += ph;
            }
        }
    }
};

/// A node entry as the warp's tile holds it: for the isolated formula its quadrupole prepared once here
/// (prepareQuadrupole), not once per interaction; the periodic per-interaction formula takes it as packed.
template<bool PerPair>
__device__ inline NodeEntry stagedEntry(NodeEntry e, float eps2)
{
    if (PerPair) return e;
    const SymTensor<float> q = prepareQuadrupole(unpackQuadrupole(e.quadA, e.quadB), eps2);
    return {e.com, {q.xx, q.yy, q.zz, q.xy}, {q.xz, q.yz, q.spread, e.quadB.w}};
}

/// One body-node interaction of target slot s with a staged node: the isolated formula (eps2: its
/// nodeSoftening), or in a periodic box that does not expand the per-interaction Ewald correction (eps2
/// as given; shiftedOnce: TreePM's node staged at its image nearest to the group's centre). TreePM takes the latter
/// kernel too: one of its own, free of the Ewald correction's registers (80-96 instead of 124-128), was slower (an
/// H200, 128^3 LCDM, z = 0: 25.6 against 21.1 ms).
template<bool PerPair, class Targets>
__device__ inline void nodeInteraction(const NodeEntry& e, const SymTensor<float>& q, float eps2,
                                       const PeriodicView& box, bool shiftedOnce, Targets& t, int s)
{
    if (PerPair) bodyNodePeriodic(xyz(e.com) - t.pos[s], e.com.w, q, eps2, box, shiftedOnce, t.acc[s], t.pot[s]);
    else bodyNodePrepared(xyz(e.com) - t.pos[s], e.com.w, q, eps2, t.acc[s], t.pot[s]);
}

/// Body-node forces of one warp's group: one warp per group (see kForceWarps for why). The group's node
/// list is staged through the warp's shared tile 32 entries at a time. Each lane fetches its entry of the
/// next tile before the warp computes on the current one, so the scattered node loads overlap the
/// arithmetic. A plain slot's target sums the whole list in list order, like the CPU twin; a split tail
/// target's lanes each sum their share in list order, and reduceTail adds the shares (NodeLaneTargets).
/// Periodic: a group that ewaldGroupExpands takes each node's image nearest to its centre (shifted once,
/// when staged, so plain and tail slots see the same images) with the isolated formula, its Ewald
/// correction coming from the group's expansion (device/ewald_gpu.h, after the leaf kernel); a larger
/// group takes the per-interaction correction. Under TreePM a group that shortRangeShiftsOnce has its nodes
/// shifted the same way, the others take the nearest image per interaction. As on the CPU twin.
template<bool Periodic, bool Expand, int TargetsPerLane, bool Tex, bool SplitTail, int Warps = kForceWarps>
__device__ __forceinline__ void bodyNodeWarp(const TreeView& tree, const TreeTextures& tex, const GroupView& groups,
                                             const int64_t* __restrict__ nodeOffset,
                                             const int32_t* __restrict__ nodeList, const F4* __restrict__ targets,
                                             float eps2, F4* __restrict__ nodeAcc)
{
    __shared__ NodeEntry sNode[Warps][kWarp];
    using Targets = NodeLaneTargets<TargetsPerLane, SplitTail>;

    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * Warps + warp;
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const I2 range          = loadReadOnly(groups.range + g);
    const int64_t listBegin = nodeOffset[g], listEnd = nodeOffset[g + 1];
    NodeEntry* tileNodes = sNode[warp];
    // A periodic box takes two launches: the groups that expand, and the others (whole warps leave).
    if (Periodic && ewaldGroupExpands(loadReadOnly(groups.half + g), tree.periodic) != Expand) return;
    constexpr bool expand       = Periodic && Expand;
    constexpr bool perPair      = Periodic && !Expand;
    const bool shiftedOnce      = perPair && shortRangeShiftsOnce(loadReadOnly(groups.half + g), tree.periodic);
    const Vec3f centre          = expand || shiftedOnce ? xyz(loadReadOnly(groups.center + g)) : Vec3f{0, 0, 0};
    const int32_t groupEnd      = range.x + range.y;
    const float interactionEps2 = perPair ? eps2 : nodeSoftening(eps2);
    // Far nodes go to the group's expansion (farFieldKernel), not to the tile; the others keep list order.
    const F4 groupHalf    = tree.farField2 > 0.0f ? loadReadOnly(groups.half + g) : F4{};
    const float farField2 = groupFarField2(tree.farField2, Periodic, expand || shiftedOnce, groupHalf, tree.periodic);
    const float farSize2  = Periodic ? farSizeDistance2(tree.periodic) : HUGE_VALF;
    const F4 groupCenter  = farField2 > 0.0f ? loadReadOnly(groups.center + g) : F4{};
    const unsigned below  = (1u << lane) - 1u;

    for (int32_t base = range.x; base < groupEnd; base += Targets::kPerWarp)
    {
        const int m = min(Targets::kPerWarp, groupEnd - base);
        Targets t(targets, base, m, lane);
        NodeEntry next{};
        if (listBegin + lane < listEnd) next = loadNodeEntry<Tex>(tree, tex, nodeList[listBegin + lane]);
        for (int64_t tile = listBegin; tile < listEnd; tile += kWarp)
        {
            int count = int(min(int64_t(kWarp), listEnd - tile));
            if (expand || shiftedOnce)
            {
                const Vec3f image = imageNearest(xyz(next.com), centre, tree.periodic);
                next.com          = {image.x, image.y, image.z, next.com.w};
            }
            __syncwarp();
            if (farField2 > 0.0f) // warp-uniform; without a far field the tile is staged as it always was
            {
                const bool near =
                    lane < count && !farFromGroup(next.com, groupCenter, groupHalf, farField2, eps2, farSize2);
                const unsigned nearLanes = __ballot_sync(0xffffffffu, near);
                if (near) tileNodes[__popc(nearLanes & below)] = stagedEntry<perPair>(next, eps2);
                count = __popc(nearLanes);
            }
            else tileNodes[lane] = stagedEntry<perPair>(next, eps2);
            __syncwarp();
            if (tile + kWarp + lane < listEnd) next = loadNodeEntry<Tex>(tree, tex, nodeList[tile + kWarp + lane]);
            // The plain slots: every slot (no test in the loop), or fewer (the first t.plain).
            auto plainSlots = [&](auto slots) {
                constexpr int n = decltype(slots)::value;
#pragma unroll 4
                for (int k = 0; k < count; ++k)
                {
                    NodeEntry e        = tileNodes[k];
                    SymTensor<float> q = unpackQuadrupole(e.quadA, e.quadB);
#pragma unroll
                    for (int s = 0; s < n; ++s)
                    {
                        if (n == TargetsPerLane || s < t.plain)
                            nodeInteraction<perPair>(e, q, interactionEps2, tree.periodic, shiftedOnce, t, s);
                    }
                }
            };
            if (t.plain == TargetsPerLane) plainSlots(std::integral_constant<int, TargetsPerLane>{});
            else if (t.plain > 0) plainSlots(std::integral_constant<int, TargetsPerLane - 1>{});
            if (SplitTail && t.ways > 0)
            {
#pragma unroll 1
                for (int k = t.part; k < count; k += t.ways)
                {
                    NodeEntry e = tileNodes[k];
                    nodeInteraction<perPair>(e, unpackQuadrupole(e.quadA, e.quadB), interactionEps2, tree.periodic,
                                             shiftedOnce, t, Targets::kTail);
                }
            }
        }
        if (SplitTail) t.reduceTail(m, lane);
#pragma unroll
        for (int s = 0; s < TargetsPerLane; ++s)
        {
            const int32_t i = t.writes(s, m, lane);
            if (i >= 0) nodeAcc[base + i] = {t.acc[s].x, t.acc[s].y, t.acc[s].z, t.pot[s]};
        }
    }
}

template<bool Periodic, bool Expand, int TargetsPerLane, bool Tex, bool SplitTail>
__global__ void __launch_bounds__(kForceBlock)
    bodyNodeKernel(TreeView tree, TreeTextures tex, GroupView groups, const int64_t* __restrict__ nodeOffset,
                   const int32_t* __restrict__ nodeList, const F4* __restrict__ targets, float eps2,
                   F4* __restrict__ nodeAcc)
{
    bodyNodeWarp<Periodic, Expand, TargetsPerLane, Tex, SplitTail>(tree, tex, groups, nodeOffset, nodeList, targets,
                                                                   eps2, nodeAcc);
}

/// The isolated 2-per-lane bodyNodeKernel with one warp a block (NodeKernelShape::warpsPerBlock = 1): an SM
/// starts the next group as soon as one warp's group is done, not when the slowest of a block's four is.
/// At least 28 blocks an SM caps its registers at 73, as many as the 4-warp kernel takes (72): the same 28
/// warps an SM (an SM holds at most 32 blocks).
template<bool Tex, bool SplitTail>
__global__ void __launch_bounds__(kWarp, 28)
    bodyNodeKernelSingle(TreeView tree, TreeTextures tex, GroupView groups, const int64_t* __restrict__ nodeOffset,
                         const int32_t* __restrict__ nodeList, const F4* __restrict__ targets, float eps2,
                         F4* __restrict__ nodeAcc)
{
    bodyNodeWarp<false, false, 2, Tex, SplitTail, 1>(tree, tex, groups, nodeOffset, nodeList, targets, eps2, nodeAcc);
}

/// bodyNodeKernel with at least MinBlocks blocks an SM (NodeKernelShape::minBlocks), which caps its
/// registers at 65536 / (MinBlocks 128) (benchmarks/results/gpu_forces/kernel_sass.md). Its own kernel, since a
/// minimum of 1 block is not the same as none (ptxas then takes 96 registers instead of 72).
template<int MinBlocks, bool Tex, bool SplitTail>
__global__ void __launch_bounds__(kForceBlock, MinBlocks)
    bodyNodeKernelCapped(TreeView tree, TreeTextures tex, GroupView groups, const int64_t* __restrict__ nodeOffset,
                         const int32_t* __restrict__ nodeList, const F4* __restrict__ targets, float eps2,
                         F4* __restrict__ nodeAcc)
{
    bodyNodeWarp<false, false, 2, Tex, SplitTail>(tree, tex, groups, nodeOffset, nodeList, targets, eps2, nodeAcc);
}

/// The far field of each group (common/far_field.h; CPU twin: bodyNodeForcesCpu): one warp a group, lane l
/// adding the far nodes among entries l, l + 32, .. of the group's node list to its partial expansion; the
/// butterfly of device/lane_reduce.cuh sums them and the lanes add the expansion to the group's targets'
/// body-node sums (the body-node kernel, which skipped those nodes, ran before on the same stream). In a
/// periodic box only the groups that take each node at its image nearest the centre have a far field
/// (groupFarField2: those that expand their Ewald correction, or under TreePM that shortRangeShiftsOnce), each node
/// taken at that image, as the body-node kernel takes it.
__global__ void __launch_bounds__(kForceBlock)
    farFieldKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ nodeOffset,
                   const int32_t* __restrict__ nodeList, const F4* __restrict__ targets, float eps2,
                   F4* __restrict__ nodeAcc)
{
    const int lane  = int(threadIdx.x) % kWarp;
    const int32_t g = int32_t(blockIdx.x) * kForceWarps + int(threadIdx.x) / kWarp;
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const F4 center = loadReadOnly(groups.center + g), half = loadReadOnly(groups.half + g);
    const bool periodic = tree.periodic.boxSize > 0.0f;
    const bool shiftedOnce =
        periodic && (ewaldGroupExpands(half, tree.periodic) || shortRangeShiftsOnce(half, tree.periodic));
    const float farField2 = groupFarField2(tree.farField2, periodic, shiftedOnce, half, tree.periodic);
    const float farSize2  = farSizeDistance2(tree.periodic);
    if (!(farField2 > 0.0f)) return; // the whole warp
    const float invR = 1.0f / farFieldScale(half), eps2R = eps2 * invR * invR;
    FarLocal partial = zeroEwaldLocal();
    bool any         = false;
    for (int64_t k = nodeOffset[g] + lane; k < nodeOffset[g + 1]; k += kWarp)
    {
        const int32_t n = nodeList[k];
        F4 com          = loadReadOnly(tree.nodeCom + n);
        if (periodic)
        {
            const Vec3f image = imageNearest(xyz(com), xyz(center), tree.periodic);
            com               = {image.x, image.y, image.z, com.w};
        }
        if (!farFromGroup(com, center, half, farField2, eps2, farSize2)) continue;
        const SymTensor<float> q =
            unpackQuadrupole(loadReadOnly(tree.nodeQuad + 2 * n), loadReadOnly(tree.nodeQuad + 2 * n + 1));
        addNodeToFarField(xyz(com) - xyz(center), com.w, q, eps2, invR, eps2R, tree.periodic, partial);
        any = true;
    }
    if (!__any_sync(0xffffffffu, any)) return;
    reduceEwaldLocal(partial);
    const I2 range = loadReadOnly(groups.range + g);
    for (int32_t i = range.x + lane; i < range.x + range.y; i += kWarp)
    {
        Vec3f a{0.0f, 0.0f, 0.0f};
        float pot = 0.0f;
        evalFarField(partial, xyz(center) - xyz(loadReadOnly(targets + i)), invR, a, pot);
        const F4 o = nodeAcc[i];
        nodeAcc[i] = {o.x + a.x, o.y + a.y, o.z + a.z, o.w + pot};
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

/// A warp's shared arrays in the body-leaf kernels: a chunk of up to 32 leaves of the list flattened by a warp
/// scan of their body counts, and a tile of up to 32 of their bodies.
template<int Warps>
struct LeafTiles
{
    using WarpScan = cub::WarpScan<int32_t>;
    typename WarpScan::TempStorage scan[Warps];
    int32_t leafFirst[Warps][kWarp]; ///< first body (tree order) of each leaf of the chunk
    int32_t leafStart[Warps][kWarp]; ///< its position in the chunk's flattened sequence
    F4 body[Warps][kWarp];
    int32_t bodyIndex[Warps][kWarp];
};

/// Stages the bodies of leaf list [listBegin, listEnd) through the warp's tile, 32 at a time, in list order and
/// tree order within a leaf (as the CPU twin sums them), and calls consume(count) on each staged tile (bodies
/// t.body[warp][0..count), their indices t.bodyIndex[warp][...]). Expand: each body's image nearest to centre.
/// Cull (TreePM): a tile keeps only the bodies within reach of the group's box (groupCenter, groupHalf;
/// shortRangeBodyOutOfReach), in their order; the others would add nothing to any target. A tile left empty is not
/// consumed. shiftedOnce (TreePM, shortRangeShiftsOnce): each kept body at its image nearest to groupCenter.
/// Without Cull the staging is the plain one, so the other kernels' code is as it was.
template<bool Expand, bool Cull, int Warps, class Consume>
__device__ inline void forEachLeafBodyTile(const TreeView& tree, const int32_t* __restrict__ leafList,
                                           int64_t listBegin, int64_t listEnd, const F4* __restrict__ bodies,
                                           Vec3f centre, F4 groupCenter, F4 groupHalf, bool shiftedOnce,
                                           LeafTiles<Warps>& t, int warp, int lane, Consume consume)
{
    int32_t* leafFirst = t.leafFirst[warp];
    int32_t* leafStart = t.leafStart[warp];
    F4* body           = t.body[warp];
    int32_t* bodyIndex = t.bodyIndex[warp];
    for (int64_t chunk = listBegin; chunk < listEnd; chunk += kWarp)
    {
        const int numLeaves = int(min(int64_t(kWarp), listEnd - chunk));
        I2 leaf{0, 0};
        if (lane < numLeaves) leaf = loadReadOnly(tree.leafRange + (leafList[chunk + lane] - tree.numInternal));
        int32_t start = 0, chunkBodies = 0;
        __syncwarp();
        typename LeafTiles<Warps>::WarpScan(t.scan[warp]).ExclusiveSum(leaf.y, start, chunkBodies);
        leafFirst[lane] = leaf.x;
        leafStart[lane] = start;
        __syncwarp();
        for (int32_t tile = 0; tile < chunkBodies; tile += kWarp)
        {
            const int count = min(kWarp, chunkBodies - tile);
            F4 b{};
            int32_t j = -1;
            if (lane < count)
            {
                int32_t f = tile + lane;
                int l     = findLeaf(leafStart, numLeaves, f);
                j         = leafFirst[l] + (f - leafStart[l]);
                b         = loadReadOnly(bodies + j);
                if (Expand)
                {
                    const Vec3f image = imageNearest(xyz(b), centre, tree.periodic);
                    b                 = {image.x, image.y, image.z, b.w};
                }
                if (!Cull)
                {
                    body[lane]      = b;
                    bodyIndex[lane] = j;
                }
            }
            if constexpr (Cull)
            {
                const bool keep = lane < count &&
                                  !shortRangeBodyOutOfReach(boxPointDistance2Periodic(xyz(groupCenter), xyz(groupHalf),
                                                                                      xyz(b), tree.periodic),
                                                            tree.periodic.shortRange, tree.periodic.boxSize);
                const unsigned kept = __ballot_sync(0xffffffffu, keep);
                if (keep)
                {
                    if (shiftedOnce)
                    {
                        const Vec3f image = imageNearest(xyz(b), xyz(groupCenter), tree.periodic);
                        b                 = {image.x, image.y, image.z, b.w};
                    }
                    const int slot  = __popc(kept & ((1u << lane) - 1u));
                    body[slot]      = b;
                    bodyIndex[slot] = j;
                }
                __syncwarp();
                if (kept != 0u) consume(__popc(kept));
            }
            else
            {
                __syncwarp();
                consume(count);
            }
            __syncwarp();
        }
    }
}

/// Whether every pair of a staged tile may take bodyBodySoftened (bodyBody by the shorter route, 14 instructions
/// a pair as in the direct kernel): the launch's formula is the isolated one (not the per-interaction periodic
/// one), no staged body is one of the targets [first, last) when the targets are the bodies (skipSelf: the
/// target's own body, which that formula cannot leave out without a select), and every staged mass is within
/// massLimit (softenedMassLimit; negative: none is). Warp-uniform: every lane takes part.
template<bool Periodic, bool Expand, int Warps>
__device__ inline bool tileTakesSoftened(const LeafTiles<Warps>& t, int warp, int lane, int count, bool skipSelf,
                                         int32_t first, int32_t last, float massLimit)
{
    if (Periodic && !Expand) return false;
    bool general = false;
    if (lane < count)
    {
        const int32_t j = t.bodyIndex[warp][lane];
        general         = !(fabsf(t.body[warp][lane].w) <= massLimit) || (skipSelf && j >= first && j < last);
    }
    return !__any_sync(0xffffffffu, general);
}

/// One body-body interaction of a target (index `index`, slot sums acc, pot) with staged body b of index j
/// (ShortRange: TreePM's short range, in a kernel of its own; shiftedOnce: b staged at its image nearest to the
/// group's centre).
template<bool Periodic, bool Expand, bool ShortRange = false>
__device__ inline void leafInteraction(F4 b, int32_t j, Vec3f pos, int32_t index, bool skipSelf, float eps2,
                                       const PeriodicView& box, bool shiftedOnce, Vec3f& acc, float& pot)
{
    const bool self = skipSelf && j == index;
    // The body itself adds exact zeros (massless, at a guarded r), without the divergent branch of skipping it.
    if (ShortRange) bodyBodyShortRangePeriodic(xyz(b) - pos, self ? 0.0f : b.w, eps2, box, shiftedOnce, acc, pot);
    else if (Periodic && !Expand) bodyBodyPeriodic(xyz(b) - pos, self ? 0.0f : b.w, b.w, eps2, box, acc, pot);
    else bodyBody(xyz(b) - pos, self ? 0.0f : b.w, eps2, acc, pot);
}

/// Whether the body-leaf kernels' launch for (periodic, expand) serves group g: a periodic box takes two
/// launches, the groups that expand and the others.
template<bool Periodic, bool Expand>
__device__ inline bool leafLaunchServes(const GroupView& groups, const TreeView& tree, int32_t g)
{
    return !Periodic || ewaldGroupExpands(loadReadOnly(groups.half + g), tree.periodic) == Expand;
}

/// Body-leaf forces, and the final sum: one warp per group. The leaf list is taken 32 leaves at a
/// time; a warp scan of their body counts flattens them into one sequence of bodies (list order,
/// then tree order within a leaf, like the CPU twin), staged through the warp's shared tile 32
/// bodies at a time. out[i] = nodeAcc[i] + leaf sum, as the CPU twin's bodyLeafForcesCpu. A tile without the
/// pass's own bodies and with masses in range takes bodyBodySoftened (tileTakesSoftened), the others bodyBody
/// with the target's own body massless; the twin takes bodyBody throughout (equal to rounding, as the direct
/// kernel and its twin).
/// Periodic: a group that ewaldGroupExpands takes each body's image nearest to its centre (shifted when
/// staged) with the isolated formula, its Ewald correction (the self term included) coming from the
/// group's expansion (device/ewald_gpu.h, launched after this kernel); a larger group takes the
/// per-interaction correction, which a body also applies to itself. As on the CPU twin.
/// SplitTail: a pass's targets spread over the lanes as in the body-node kernel (NodeLaneTargets: the r <= 16
/// targets of the last slot each on 32 / r lanes, on interleaved shares of every staged tile, added by warp
/// shuffles in a fixed order) instead of a dummy target on every lane without one (LeafKernelShape).
/// A group whose list is longer than splitAbove entries (> 0) is left to bodyLeafSplitKernel.
template<bool Periodic, bool Expand, int TargetsPerLane, bool SplitTail, int Warps, bool ShortRange = false>
__device__ __forceinline__ void
bodyLeafWarp(const TreeView& tree, const GroupView& groups, const int64_t* __restrict__ leafOffset,
             const int32_t* __restrict__ leafList, const F4* __restrict__ bodies, const F4* __restrict__ targets,
             bool skipSelf, float eps2, const F4* __restrict__ nodeAcc, F4* __restrict__ out, int splitAbove)
{
    __shared__ LeafTiles<Warps> tiles;
    using Targets = NodeLaneTargets<TargetsPerLane, SplitTail>;

    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * Warps + warp;
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const I2 range          = loadReadOnly(groups.range + g);
    const int64_t listBegin = leafOffset[g], listEnd = leafOffset[g + 1];
    if (!leafLaunchServes<Periodic, Expand>(groups, tree, g)) return;
    if (splitAbove > 0 && listEnd - listBegin > splitAbove) return;
    constexpr bool expand  = Periodic && Expand;
    const Vec3f centre     = expand ? xyz(loadReadOnly(groups.center + g)) : Vec3f{0, 0, 0};
    const F4 groupCenter   = ShortRange ? loadReadOnly(groups.center + g) : F4{};
    const F4 groupHalf     = ShortRange ? loadReadOnly(groups.half + g) : F4{};
    const bool shiftedOnce = ShortRange && shortRangeShiftsOnce(groupHalf, tree.periodic);
    const int32_t groupEnd = range.x + range.y;
    const float massLimit  = softenedMassLimit(eps2);

    for (int32_t base = range.x; base < groupEnd; base += Targets::kPerWarp)
    {
        const int m = min(Targets::kPerWarp, groupEnd - base);
        Targets t(targets, base, m, lane);
        // Each slot's target as an index a body can have, -1 (no body) for a dummy.
        int32_t self[TargetsPerLane];
#pragma unroll
        for (int s = 0; s < TargetsPerLane; ++s)
        {
            const int32_t i = t.index(s, m, lane);
            self[s]         = i >= 0 ? base + i : -1;
        }
        forEachLeafBodyTile<expand, ShortRange>(
            tree, leafList, listBegin, listEnd, bodies, centre, groupCenter, groupHalf, shiftedOnce, tiles, warp, lane,
            [&](int count) {
                const bool softened =
                    tileTakesSoftened<Periodic, Expand>(tiles, warp, lane, count, skipSelf, base, base + m, massLimit);
                // The plain slots: every slot (no test in the loop), or fewer (the first t.plain), as in the
                // body-node kernel (a per-slot test in the loop costs a branch a slot in the SASS).
                auto plainSlots = [&](auto slots, auto soft) {
                    constexpr int n = decltype(slots)::value;
                    for (int k = 0; k < count; ++k)
                    {
                        F4 b = tiles.body[warp][k];
                        if constexpr (decltype(soft)::value)
                        {
#pragma unroll
                            for (int s = 0; s < n; ++s)
                            {
                                if (n == TargetsPerLane || s < t.plain)
                                    bodyBodySoftened(xyz(b) - t.pos[s], b.w, eps2, t.acc[s], t.pot[s]);
                            }
                        }
                        else
                        {
                            int32_t j = tiles.bodyIndex[warp][k];
#pragma unroll
                            for (int s = 0; s < n; ++s)
                            {
                                if (n == TargetsPerLane || s < t.plain)
                                    leafInteraction<Periodic, expand, ShortRange>(b, j, t.pos[s], self[s], skipSelf,
                                                                                  eps2, tree.periodic, shiftedOnce,
                                                                                  t.acc[s], t.pot[s]);
                            }
                        }
                    }
                };
                auto slotsOf = [&](auto soft) {
                    if (t.plain == TargetsPerLane) plainSlots(std::integral_constant<int, TargetsPerLane>{}, soft);
                    else if (t.plain > 0) plainSlots(std::integral_constant<int, TargetsPerLane - 1>{}, soft);
                };
                if (softened) slotsOf(std::true_type{});
                else slotsOf(std::false_type{});
                if (SplitTail && t.ways > 0)
                {
                    constexpr int tail = Targets::kTail;
#pragma unroll 1
                    for (int k = t.part; k < count; k += t.ways)
                    {
                        if (softened)
                            bodyBodySoftened(xyz(tiles.body[warp][k]) - t.pos[tail], tiles.body[warp][k].w, eps2,
                                             t.acc[tail], t.pot[tail]);
                        else
                            leafInteraction<Periodic, expand, ShortRange>(
                                tiles.body[warp][k], tiles.bodyIndex[warp][k], t.pos[tail], self[tail], skipSelf, eps2,
                                tree.periodic, shiftedOnce, t.acc[tail], t.pot[tail]);
                    }
                }
            });
        if (SplitTail) t.reduceTail(m, lane);
#pragma unroll
        for (int s = 0; s < TargetsPerLane; ++s)
        {
            const int32_t i = t.writes(s, m, lane);
            if (i < 0) continue;
            const F4 node = loadReadOnly(nodeAcc + base + i);
            out[base + i] = {node.x + t.acc[s].x, node.y + t.acc[s].y, node.z + t.acc[s].z, node.w + t.pot[s]};
        }
    }
}

template<bool Periodic, bool Expand, int TargetsPerLane, bool SplitTail, bool ShortRange = false>
__global__ void __launch_bounds__(kForceBlock)
    bodyLeafKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ leafOffset,
                   const int32_t* __restrict__ leafList, const F4* __restrict__ bodies, const F4* __restrict__ targets,
                   bool skipSelf, float eps2, const F4* __restrict__ nodeAcc, F4* __restrict__ out, int splitAbove)
{
    bodyLeafWarp<Periodic, Expand, TargetsPerLane, SplitTail, kForceWarps, ShortRange>(
        tree, groups, leafOffset, leafList, bodies, targets, skipSelf, eps2, nodeAcc, out, splitAbove);
}

/// The isolated bodyLeafKernel with one warp a block (LeafKernelShape::warpsPerBlock = 1), as
/// bodyNodeKernelSingle; at least 32 blocks an SM (the most an SM holds) caps its registers at 64.
template<int TargetsPerLane, bool SplitTail>
__global__ void __launch_bounds__(kWarp, 32)
    bodyLeafKernelSingle(TreeView tree, GroupView groups, const int64_t* __restrict__ leafOffset,
                         const int32_t* __restrict__ leafList, const F4* __restrict__ bodies,
                         const F4* __restrict__ targets, bool skipSelf, float eps2, const F4* __restrict__ nodeAcc,
                         F4* __restrict__ out, int splitAbove)
{
    bodyLeafWarp<false, false, TargetsPerLane, SplitTail, 1>(tree, groups, leafOffset, leafList, bodies, targets,
                                                             skipSelf, eps2, nodeAcc, out, splitAbove);
}

/// The groups whose leaf lists are longer than splitAbove entries (LeafKernelShape), kLeafSplitWarps warps each:
/// warp w serves share w % kLeafSplitWarps of group w / kLeafSplitWarps's targets, in passes of c <= 32 of them,
/// each target on 32 / c lanes that take interleaved shares of every staged tile, their partial sums added by
/// warp shuffles in a fixed order (as the body-node kernel's split tail; deterministic). One warp per such group
/// was the kernel's critical path: at 2^20 (merged, n_group 64) one group of 58 bodies whose box spans the
/// Plummer core sums 24128 bodies, 25x the mean group's work (benchmarks/results/gpu_forces/kernel_sass.md).
template<bool Periodic, bool Expand, bool ShortRange = false>
__global__ void __launch_bounds__(kWarp* kLeafSplitBlockWarps)
    bodyLeafSplitKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ leafOffset,
                        const int32_t* __restrict__ leafList, const F4* __restrict__ bodies,
                        const F4* __restrict__ targets, bool skipSelf, float eps2, const F4* __restrict__ nodeAcc,
                        F4* __restrict__ out, int splitAbove)
{
    __shared__ LeafTiles<kLeafSplitBlockWarps> tiles;

    const int lane      = int(threadIdx.x) % kWarp;
    const int warp      = int(threadIdx.x) / kWarp;
    const int64_t w     = int64_t(blockIdx.x) * kLeafSplitBlockWarps + warp;
    const int32_t g     = int32_t(w / kLeafSplitWarps);
    const int32_t share = int32_t(w % kLeafSplitWarps);
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const int64_t listBegin = leafOffset[g], listEnd = leafOffset[g + 1];
    if (listEnd - listBegin <= splitAbove || !leafLaunchServes<Periodic, Expand>(groups, tree, g)) return;
    const I2 range         = loadReadOnly(groups.range + g);
    constexpr bool expand  = Periodic && Expand;
    const Vec3f centre     = expand ? xyz(loadReadOnly(groups.center + g)) : Vec3f{0, 0, 0};
    const F4 groupCenter   = ShortRange ? loadReadOnly(groups.center + g) : F4{};
    const F4 groupHalf     = ShortRange ? loadReadOnly(groups.half + g) : F4{};
    const bool shiftedOnce = ShortRange && shortRangeShiftsOnce(groupHalf, tree.periodic);
    const int32_t per      = (range.y + kLeafSplitWarps - 1) / kLeafSplitWarps;
    const int32_t first = range.x + min(range.y, share * per), last = range.x + min(range.y, (share + 1) * per);
    const float massLimit = softenedMassLimit(eps2);

    for (int32_t base = first; base < last; base += kWarp)
    {
        const int c         = min(kWarp, last - base);
        const int ways      = kWarp / c;
        const int part      = lane < c * ways ? lane / c : kWarp; // kWarp: no share (idles)
        const int32_t index = base + lane % c;
        const Vec3f pos     = xyz(loadReadOnly(targets + index));
        Vec3f acc{0, 0, 0};
        float pot = 0;
        forEachLeafBodyTile<expand, ShortRange>(
            tree, leafList, listBegin, listEnd, bodies, centre, groupCenter, groupHalf, shiftedOnce, tiles, warp, lane,
            [&](int count) {
                const bool softened =
                    tileTakesSoftened<Periodic, Expand>(tiles, warp, lane, count, skipSelf, base, base + c, massLimit);
#pragma unroll 1
                for (int k = part; k < count; k += ways)
                {
                    if (softened)
                        bodyBodySoftened(xyz(tiles.body[warp][k]) - pos, tiles.body[warp][k].w, eps2, acc, pot);
                    else
                        leafInteraction<Periodic, expand, ShortRange>(tiles.body[warp][k], tiles.bodyIndex[warp][k],
                                                                      pos, index, skipSelf, eps2, tree.periodic,
                                                                      shiftedOnce, acc, pot);
                }
            });
        for (int p = 1; p < ways; ++p)
        {
            const int from = (lane + p * c) % kWarp;
            const float ax = __shfl_sync(0xffffffffu, acc.x, from);
            const float ay = __shfl_sync(0xffffffffu, acc.y, from);
            const float az = __shfl_sync(0xffffffffu, acc.z, from);
            const float ph = __shfl_sync(0xffffffffu, pot, from);
            if (part == 0)
            {
                acc.x += ax;
                acc.y += ay;
                acc.z += az;
                pot += ph;
            }
        }
        if (part == 0)
        {
            const F4 node = loadReadOnly(nodeAcc + index);
            out[index]    = {node.x + acc.x, node.y + acc.y, node.z + acc.z, node.w + pot};
        }
    }
}

static_assert(sizeof(NodeEntry) * kWarp * kForceWarps <= 48 * 1024,
              "the body-node kernel's tiles fit in static shared memory");

/// The body-leaf kernel of one (periodic, targets per lane) choice; the launcher picks it at run time.
/// expand: in a periodic box, the kernel for the groups whose Ewald correction is their expansion.
template<template<bool, int, bool> class Pick, class... Args>
auto pickKernel(bool periodic, int targetsPerLane, bool flag, Args... args)
{
    switch (targetsPerLane)
    {
    case 2:
        if (periodic) return flag ? Pick<true, 2, true>::kernel(args...) : Pick<true, 2, false>::kernel(args...);
        return flag ? Pick<false, 2, true>::kernel(args...) : Pick<false, 2, false>::kernel(args...);
    case 4:
        if (periodic) return flag ? Pick<true, 4, true>::kernel(args...) : Pick<true, 4, false>::kernel(args...);
        return flag ? Pick<false, 4, true>::kernel(args...) : Pick<false, 4, false>::kernel(args...);
    default:
        throw ParameterError("force kernels: targets per lane " + std::to_string(targetsPerLane) +
                             " is not built (2 or 4)");
    }
}

using NodeKernel = void (*)(TreeView, TreeTextures, GroupView, const int64_t*, const int32_t*, const F4*, float, F4*);

template<int MinBlocks, bool Tex>
NodeKernel cappedNodeKernel(bool splitTail)
{
    return splitTail ? bodyNodeKernelCapped<MinBlocks, Tex, true> : bodyNodeKernelCapped<MinBlocks, Tex, false>;
}

/// A body-node kernel and the warps of its blocks.
struct NodeLaunch
{
    NodeKernel kernel;
    int warps;
};

template<bool Periodic, bool Expand, int TargetsPerLane, bool Tex>
NodeLaunch nodeKernelOf(const NodeKernelShape& shape)
{
    if constexpr (!Periodic && TargetsPerLane == 2)
    {
        if (shape.warpsPerBlock == 1)
            return {shape.splitTail ? bodyNodeKernelSingle<Tex, true> : bodyNodeKernelSingle<Tex, false>, 1};
        switch (shape.minBlocks)
        {
        case 0: break;
        case 8: return {cappedNodeKernel<8, Tex>(shape.splitTail), kForceWarps};
        default: throw ParameterError(nodeKernelShapeError(shape));
        }
    }
    return {shape.splitTail ? bodyNodeKernel<Periodic, Expand, TargetsPerLane, Tex, true>
                            : bodyNodeKernel<Periodic, Expand, TargetsPerLane, Tex, false>,
            kForceWarps};
}

/// The body-node kernel of one (periodic, expand, targets per lane, textures, shape) choice.
template<bool Periodic, bool Expand>
NodeLaunch pickNodeKernel(int targetsPerLane, bool textures, const NodeKernelShape& shape)
{
    switch (targetsPerLane)
    {
    case 2:
        return textures ? nodeKernelOf<Periodic, Expand, 2, true>(shape)
                        : nodeKernelOf<Periodic, Expand, 2, false>(shape);
    case 4:
        return textures ? nodeKernelOf<Periodic, Expand, 4, true>(shape)
                        : nodeKernelOf<Periodic, Expand, 4, false>(shape);
    default:
        throw ParameterError("force kernels: targets per lane " + std::to_string(targetsPerLane) +
                             " is not built (2 or 4)");
    }
}

/// The body-leaf kernel reads bodies and leaf ranges only: no texture variant; pickKernel's flag is its
/// split tail (LeafKernelShape::splitTail).
template<bool Periodic, int TargetsPerLane, bool SplitTail>
struct PickLeaf
{
    /// single: one warp a block (isolated kernels only; LeafKernelShape::warpsPerBlock). shortRange: TreePM's
    /// (whose groups never expand).
    static auto kernel(bool expand, bool single, bool shortRange)
    {
        if constexpr (Periodic)
        {
            if (shortRange) return bodyLeafKernel<true, false, TargetsPerLane, SplitTail, true>;
            return expand ? bodyLeafKernel<true, true, TargetsPerLane, SplitTail>
                          : bodyLeafKernel<true, false, TargetsPerLane, SplitTail>;
        }
        else
        {
            return single ? bodyLeafKernelSingle<TargetsPerLane, SplitTail>
                          : bodyLeafKernel<false, false, TargetsPerLane, SplitTail>;
        }
    }
};

} // namespace

void bodyNodeForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const TargetView& targets,
                       float eps2, F4* nodeAcc, GpuStream stream, int targetsPerLane, const TreeTextures& textures,
                       NodeKernelShape shape)
{
    const bool periodic = tree.periodic.boxSize > 0.0f;
    // The periodic groups that expand get a kernel of their own, free of the per-interaction correction's
    // registers; the others take the second launch.
    if (!nodeKernelShapeError(shape).empty()) throw ParameterError(nodeKernelShapeError(shape));
    const NodeLaunch first = periodic ? pickNodeKernel<true, true>(targetsPerLane, textures.present(), shape)
                                      : pickNodeKernel<false, false>(targetsPerLane, textures.present(), shape);
    const NodeLaunch second =
        periodic ? pickNodeKernel<true, false>(targetsPerLane, textures.present(), shape) : NodeLaunch{nullptr, 0};
    if (groups.numGroups == 0) return;
    for (const NodeLaunch& launch : {first, second})
    {
        if (launch.kernel == nullptr) continue;
        launch.kernel<<<blocksFor(groups.numGroups, launch.warps), kWarp * launch.warps, 0, cudaStreamOf(stream)>>>(
            tree, textures, groups, lists.nodeOffset, lists.nodeList, targets.pos, eps2, nodeAcc);
        CUDA_CHECK_LAUNCH();
    }
    if (tree.farField2 > 0.0f)
    {
        farFieldKernel<<<blocksFor(groups.numGroups, kForceWarps), kForceBlock, 0, cudaStreamOf(stream)>>>(
            tree, groups, lists.nodeOffset, lists.nodeList, targets.pos, eps2, nodeAcc);
        CUDA_CHECK_LAUNCH();
    }
}

void bodyLeafForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       const TargetView& targets, float eps2, const F4* nodeAcc, F4* acc, GpuStream stream,
                       int targetsPerLane, LeafKernelShape shape, bool withEwald)
{
    const bool periodic   = tree.periodic.boxSize > 0.0f;
    const bool shortRange = periodic && shortRangeOn(tree.periodic.shortRange);
    if (!leafKernelShapeError(shape).empty()) throw ParameterError(leafKernelShapeError(shape));
    const int splitAbove = leafSplitAbove(shape, shortRange);
    const bool single    = !periodic && shape.warpsPerBlock == 1;
    const int warps      = single ? 1 : kForceWarps;
    auto expanding       = pickKernel<PickLeaf>(periodic, targetsPerLane, shape.splitTail, true, single, false);
    auto perPair         = pickKernel<PickLeaf>(periodic, targetsPerLane, shape.splitTail, false, single, shortRange);
    if (groups.numGroups == 0) return;
    // Under TreePM no group expands: the per-pair launch alone.
    for (auto kernel : {shortRange ? nullptr : expanding, periodic ? perPair : nullptr})
    {
        if (kernel == nullptr) continue;
        kernel<<<blocksFor(groups.numGroups, warps), kWarp * warps, 0, cudaStreamOf(stream)>>>(
            tree, groups, lists.leafOffset, lists.leafList, bodies.posMass, targets.pos, targets.areBodies, eps2,
            nodeAcc, acc, splitAbove);
        CUDA_CHECK_LAUNCH();
    }
    if (splitAbove > 0)
    {
        // Every group's kLeafSplitWarps warps; those of the groups that are not split leave at once.
        const int64_t warps = int64_t(groups.numGroups) * kLeafSplitWarps;
        using SplitKernel   = decltype(&bodyLeafSplitKernel<false, false>);
        const SplitKernel perPairSplit =
            shortRange ? bodyLeafSplitKernel<true, false, true> : bodyLeafSplitKernel<true, false>;
        for (SplitKernel kernel : {shortRange ? nullptr
                                   : periodic ? bodyLeafSplitKernel<true, true>
                                              : bodyLeafSplitKernel<false, false>,
                                   periodic ? perPairSplit : nullptr})
        {
            if (kernel == nullptr) continue;
            kernel<<<blocksFor(warps, kLeafSplitBlockWarps), kWarp * kLeafSplitBlockWarps, 0, cudaStreamOf(stream)>>>(
                tree, groups, lists.leafOffset, lists.leafList, bodies.posMass, targets.pos, targets.areBodies, eps2,
                nodeAcc, acc, splitAbove);
            CUDA_CHECK_LAUNCH();
        }
    }
    if (periodic && withEwald) ewaldGroupCorrectionGpu(tree, groups, lists, bodies, targets, acc, stream);
}

} // namespace octwalk

// The per-group Ewald correction (twin: host/cpu/ewald_cpu.cpp), two kernels for two kinds of group
// (ewaldGroupWalks): a group with short lists is one warp whose lane l adds entries l, l + 32, .. of the
// lists (addEwaldListEntry), the 32 partial expansions reduced by a fixed butterfly; a group with long lists
// is one thread that walks the tree for the group's coarser sources (common/ewald_walk.h) and sums their
// terms in the walk's order, or (EwaldWalkConfig::warp) one warp whose lanes share that walk's cells, each
// summing its own sources, reduced by the same butterfly. Every target is written by one thread; no atomics:
// repeated runs are bit-identical.
#include "device/ewald_gpu.h"

#include <cuda_runtime.h>

#include "common/ewald.h"
#include "common/ewald_walk.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"
#include "device/lane_reduce.cuh"

namespace octwalk {

namespace {

constexpr int kWarp       = 32;
constexpr int kEwaldWarps = 4;
constexpr int kEwaldBlock = kWarp * kEwaldWarps;
static_assert(kWarp == 32, "the butterfly and the CPU twin's lane order assume 32-lane warps");

/// Adds the expansion loc about centre to the targets of range, targets first + step, first + 2 step, ..
__device__ inline void addExpansionToTargets(const PeriodicView& box, const EwaldLocal& loc, Vec3f centre, I2 range,
                                             int first, int step, const F4* __restrict__ targets, F4* __restrict__ acc)
{
    for (int32_t i = range.x + first; i < range.x + range.y; i += step)
    {
        Vec3f a{0, 0, 0};
        float pot = 0;
        evalEwaldLocal(box, loc, centre - xyz(loadReadOnly(targets + i)), a, pot);
        const F4 o = acc[i];
        acc[i]     = {o.x + a.x, o.y + a.y, o.z + a.z, o.w + pot};
    }
}

/// The groups that do not walk: one warp each, lanes over the list entries.
__global__ void __launch_bounds__(kEwaldBlock)
    ewaldListKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ nodeOffset,
                    const int32_t* __restrict__ nodeList, const int64_t* __restrict__ leafOffset,
                    const int32_t* __restrict__ leafList, const F4* __restrict__ bodies, const F4* __restrict__ targets,
                    F4* __restrict__ acc)
{
    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * kEwaldWarps + warp;
    // Whole warps leave: the kernel has no block-wide barrier.
    if (g >= groups.numGroups || !ewaldGroupExpands(loadReadOnly(groups.half + g), tree.periodic)) return;
    const int64_t nodeBegin = nodeOffset[g], numNodes = nodeOffset[g + 1] - nodeBegin;
    const int64_t leafBegin = leafOffset[g], numEntries = numNodes + leafOffset[g + 1] - leafBegin;
    if (ewaldGroupWalks(numEntries, tree.periodic)) return;
    const PeriodicView& box = tree.periodic;
    const Vec3f centre      = xyz(loadReadOnly(groups.center + g));
    const auto loadBody     = [bodies](int32_t j) { return loadReadOnly(bodies + j); };
    EwaldLocal partial      = zeroEwaldLocal();
    for (int64_t k = lane; k < numEntries; k += kWarp)
    {
        const int32_t n = k < numNodes ? nodeList[nodeBegin + k] : leafList[leafBegin + (k - numNodes)];
        const F4 com    = loadReadOnly(tree.nodeCom + n);
        const SymTensor<float> q =
            unpackQuadrupole(loadReadOnly(tree.nodeQuad + 2 * n), loadReadOnly(tree.nodeQuad + 2 * n + 1));
        const bool leaf = k >= numNodes;
        const I2 range  = leaf ? loadReadOnly(tree.leafRange + (n - tree.numInternal)) : I2{0, 0};
        addEwaldListEntry(box, com, q, leaf, range, centre, loadBody, partial);
    }
    reduceEwaldLocal(partial);
    addExpansionToTargets(box, partial, centre, loadReadOnly(groups.range + g), lane, kWarp, targets, acc);
}

/// The groups that walk: one thread each.
__global__ void __launch_bounds__(kEwaldBlock)
    ewaldWalkKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ nodeOffset,
                    const int64_t* __restrict__ leafOffset, const F4* __restrict__ bodies,
                    const F4* __restrict__ targets, F4* __restrict__ acc)
{
    const int32_t g = int32_t(blockIdx.x) * kEwaldBlock + int32_t(threadIdx.x);
    if (g >= groups.numGroups) return;
    const F4 half = loadReadOnly(groups.half + g);
    if (!ewaldGroupExpands(half, tree.periodic)) return;
    if (!ewaldGroupWalks(nodeOffset[g + 1] - nodeOffset[g] + leafOffset[g + 1] - leafOffset[g], tree.periodic)) return;
    const F4 center     = loadReadOnly(groups.center + g);
    const auto loadBody = [bodies](int32_t j) { return loadReadOnly(bodies + j); };
    EwaldCell stack[kEwaldWalkStackCapacity];
    const EwaldLocal loc = ewaldGroupExpansion(tree, center, half, loadBody, stack);
    addExpansionToTargets(tree.periodic, loc, xyz(center), loadReadOnly(groups.range + g), 0, 1, targets, acc);
}

/// Warps a block of the warp walk: each keeps its stack in shared memory (kEwaldWarpStackCapacity cells).
constexpr int kEwaldWalkWarps = 2;
constexpr int kEwaldWalkBlock = kWarp * kEwaldWalkWarps;
static_assert(kWarp == kEwaldWarpLanes, "the warp walk's lanes are a warp's");

/// The groups that walk, with the warp walk (common/ewald_walk.h): one warp each.
__global__ void __launch_bounds__(kEwaldWalkBlock)
    ewaldWarpWalkKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ nodeOffset,
                        const int64_t* __restrict__ leafOffset, const F4* __restrict__ bodies,
                        const F4* __restrict__ targets, F4* __restrict__ acc)
{
    __shared__ EwaldCell stacks[kEwaldWalkWarps][kEwaldWarpStackCapacity];
    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * kEwaldWalkWarps + warp;
    // Whole warps leave: the kernel has no block-wide barrier.
    if (g >= groups.numGroups) return;
    const F4 half = loadReadOnly(groups.half + g);
    if (!ewaldGroupExpands(half, tree.periodic)) return;
    if (!ewaldGroupWalks(nodeOffset[g + 1] - nodeOffset[g] + leafOffset[g + 1] - leafOffset[g], tree.periodic)) return;
    EwaldCell* stack    = stacks[warp];
    const F4 center     = loadReadOnly(groups.center + g);
    const Vec3f centreU = ewaldCentreInBoxUnits(center, tree.periodic);
    const float boxMass = loadReadOnly(tree.nodeCom + (tree.rootEntry & ~kLeafBit)).w;
    const auto loadBody = [bodies](int32_t j) { return loadReadOnly(bodies + j); };
    EwaldLocal partial  = zeroEwaldLocal();
    const EwaldCell root{tree.rootEntry, 1.0f, {0.0f, 0.0f, 0.0f}};
    bool rootOpens = false;
    if (lane == 0) rootOpens = ewaldWarpLaneStep(tree, root, center, half, centreU, boxMass, loadBody, partial);
    rootOpens = __shfl_sync(0xffffffffu, rootOpens, 0);
    if (rootOpens && lane == 0) stack[0] = root;
    int32_t top = rootOpens ? 1 : 0;
    __syncwarp();
    while (top > 0)
    {
        const int32_t b    = top < kEwaldWarpParents ? top : kEwaldWarpParents;
        const int32_t base = top - b;
        const int q        = lane / 8;
        EwaldCell child;
        bool opens = false;
        if (q < b && ewaldWarpChild(tree, stack[base + q], lane % 8, child))
        {
            opens = ewaldWarpLaneStep(tree, child, center, half, centreU, boxMass, loadBody, partial);
        }
        // Every lane has read its batch cell before the pushes overwrite it.
        __syncwarp();
        const unsigned pushed = __ballot_sync(0xffffffffu, opens);
        if (opens) stack[base + __popc(pushed & ((1u << lane) - 1u))] = child;
        top = base + __popc(pushed);
        __syncwarp();
    }
    reduceEwaldLocal(partial);
    addExpansionToTargets(tree.periodic, partial, xyz(center), loadReadOnly(groups.range + g), lane, kWarp, targets,
                          acc);
}

} // namespace

void ewaldGroupCorrectionGpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc, GpuStream stream)
{
    if (groups.numGroups == 0 || !(tree.periodic.boxSize > 0.0f) || shortRangeOn(tree.periodic.shortRange)) return;
    // With a threshold of 0 (the default) every group walks: the lists' kernel would only return.
    if (tree.periodic.walk.minEntries > 0)
    {
        ewaldListKernel<<<blocksFor(groups.numGroups, kEwaldWarps), kEwaldBlock, 0, cudaStreamOf(stream)>>>(
            tree, groups, lists.nodeOffset, lists.nodeList, lists.leafOffset, lists.leafList, bodies.posMass,
            targets.pos, acc);
        CUDA_CHECK_LAUNCH();
    }
    if (tree.periodic.walk.warp)
    {
        ewaldWarpWalkKernel<<<blocksFor(groups.numGroups, kEwaldWalkWarps), kEwaldWalkBlock, 0, cudaStreamOf(stream)>>>(
            tree, groups, lists.nodeOffset, lists.leafOffset, bodies.posMass, targets.pos, acc);
    }
    else
    {
        ewaldWalkKernel<<<blocksFor(groups.numGroups, kEwaldBlock), kEwaldBlock, 0, cudaStreamOf(stream)>>>(
            tree, groups, lists.nodeOffset, lists.leafOffset, bodies.posMass, targets.pos, acc);
    }
    CUDA_CHECK_LAUNCH();
}

} // namespace octwalk

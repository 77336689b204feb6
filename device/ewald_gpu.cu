// The per-group Ewald correction (twin: host/cpu/ewald_cpu.cpp).
//
// Determinism: every lane adds its source entries in order, the warp reduces the 32 partial
// expansions in a fixed butterfly, and every target is written by one thread; no atomics.
#include "device/ewald_gpu.h"

#include <cuda_runtime.h>

#include "common/ewald.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"

namespace octwalk {

namespace {

constexpr int kWarp       = 32;
constexpr int kEwaldWarps = 4;
constexpr int kEwaldBlock = kWarp * kEwaldWarps;
static_assert(kWarp == 32, "the butterfly and the CPU twin's lane order assume 32-lane warps");

/// The group's expansion from the lanes' partial ones: lane l adds lane l ^ 16, then ^ 8, .. ^ 1, so every
/// lane ends with the same sum, rounded in the order of the CPU twin (ewald_cpu.cpp).
__device__ inline void reduceEwaldLocal(EwaldLocal& loc)
{
#pragma unroll
    for (int stride = kWarp / 2; stride >= 1; stride /= 2)
    {
#pragma unroll
        for (int k = 0; k < kEwaldDerivs; ++k) loc.d[k] += __shfl_xor_sync(0xffffffffu, loc.d[k], stride);
    }
}

__global__ void __launch_bounds__(kEwaldBlock)
    ewaldGroupKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ nodeOffset,
                     const int32_t* __restrict__ nodeList, const int64_t* __restrict__ leafOffset,
                     const int32_t* __restrict__ leafList, const F4* __restrict__ bodies,
                     const F4* __restrict__ targets, F4* __restrict__ acc)
{
    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * kEwaldWarps + warp;
    // Whole warps leave: the kernel has no block-wide barrier.
    if (g >= groups.numGroups || !ewaldGroupExpands(loadReadOnly(groups.half + g), tree.periodic)) return;
    const PeriodicView& box = tree.periodic;
    const Vec3f centre      = xyz(loadReadOnly(groups.center + g));
    EwaldLocal partial      = zeroEwaldLocal();
    const int64_t nodeBegin = nodeOffset[g], numNodes = nodeOffset[g + 1] - nodeBegin;
    const int64_t leafBegin = leafOffset[g], numSources = numNodes + leafOffset[g + 1] - leafBegin;
    const auto loadBody = [bodies](int32_t j) { return loadReadOnly(bodies + j); };
    for (int64_t k = lane; k < numSources; k += kWarp)
    {
        const int32_t n = k < numNodes ? nodeList[nodeBegin + k] : leafList[leafBegin + (k - numNodes)];
        const F4 com    = loadReadOnly(tree.nodeCom + n);
        const SymTensor<float> q =
            unpackQuadrupole(loadReadOnly(tree.nodeQuad + 2 * n), loadReadOnly(tree.nodeQuad + 2 * n + 1));
        const bool leaf = k >= numNodes;
        const I2 range  = leaf ? loadReadOnly(tree.leafRange + (n - tree.numInternal)) : I2{0, 0};
        addEwaldSource(box, com, q, leaf, range, centre, loadBody, partial);
    }
    reduceEwaldLocal(partial);
    const I2 range = loadReadOnly(groups.range + g);
    for (int32_t i = range.x + lane; i < range.x + range.y; i += kWarp)
    {
        Vec3f a{0, 0, 0};
        float pot = 0;
        evalEwaldLocal(box, partial, centre - xyz(loadReadOnly(targets + i)), a, pot);
        const F4 o = acc[i];
        acc[i]     = {o.x + a.x, o.y + a.y, o.z + a.z, o.w + pot};
    }
}

} // namespace

void ewaldGroupCorrectionGpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc, GpuStream stream)
{
    if (groups.numGroups == 0 || !(tree.periodic.boxSize > 0.0f)) return;
    ewaldGroupKernel<<<blocksFor(groups.numGroups, kEwaldWarps), kEwaldBlock, 0, cudaStreamOf(stream)>>>(
        tree, groups, lists.nodeOffset, lists.nodeList, lists.leafOffset, lists.leafList, bodies.posMass, targets.pos,
        acc);
    CUDA_CHECK_LAUNCH();
}

} // namespace octwalk

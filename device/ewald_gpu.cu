// The per-group Ewald correction (twin: host/cpu/ewald_cpu.cpp).
//
// One thread per group: it walks the tree for the group's sources (common/ewald_walk.h), sums their terms in
// the walk's order, and adds the expansion to its group's bodies. Neighbouring groups (consecutive in the
// tree's Morton order) walk alike, so a warp's lanes mostly compute their terms together. Every target is
// written by one thread; no atomics: repeated runs are bit-identical.
#include "device/ewald_gpu.h"

#include <cuda_runtime.h>

#include "common/ewald.h"
#include "common/ewald_walk.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"

namespace octwalk {

namespace {

constexpr int kEwaldBlock = 128;

__global__ void __launch_bounds__(kEwaldBlock)
    ewaldGroupKernel(TreeView tree, GroupView groups, const F4* __restrict__ bodies, const F4* __restrict__ targets,
                     F4* __restrict__ acc)
{
    const int32_t g = int32_t(blockIdx.x) * kEwaldBlock + int32_t(threadIdx.x);
    if (g >= groups.numGroups) return;
    const F4 half = loadReadOnly(groups.half + g);
    if (!ewaldGroupExpands(half, tree.periodic)) return;
    const F4 center     = loadReadOnly(groups.center + g);
    const auto loadBody = [bodies](int32_t j) { return loadReadOnly(bodies + j); };
    EwaldCell stack[kEwaldWalkStackCapacity];
    const EwaldLocal loc = ewaldGroupExpansion(tree, center, half, loadBody, stack);
    const I2 range       = loadReadOnly(groups.range + g);
    for (int32_t i = range.x; i < range.x + range.y; ++i)
    {
        Vec3f a{0, 0, 0};
        float pot = 0;
        evalEwaldLocal(tree.periodic, loc, xyz(center) - xyz(loadReadOnly(targets + i)), a, pot);
        const F4 o = acc[i];
        acc[i]     = {o.x + a.x, o.y + a.y, o.z + a.z, o.w + pot};
    }
}

} // namespace

void ewaldGroupCorrectionGpu(const TreeView& tree, const GroupView& groups, const ListView& /*lists*/,
                             const BodyView& bodies, const TargetView& targets, F4* acc, GpuStream stream)
{
    if (groups.numGroups == 0 || !(tree.periodic.boxSize > 0.0f)) return;
    ewaldGroupKernel<<<blocksFor(groups.numGroups, kEwaldBlock), kEwaldBlock, 0, cudaStreamOf(stream)>>>(
        tree, groups, bodies.posMass, targets.pos, acc);
    CUDA_CHECK_LAUNCH();
}

} // namespace octwalk

#pragma once
// The lanes' partial expansions of a group summed by a fixed butterfly (the Ewald correction, device/ewald_gpu.cu,
// and the far field, device/forces_gpu.cu); the CPU twin rounds the same sums in the same order
// (host/cpu/lane_expansions.h).
#include "common/ewald.h"
#include "common/ewald_walk.h"

namespace octwalk {

static_assert(kEwaldWarpLanes == 32, "a lane's partial expansion a lane of a 32-lane warp");

/// The group's expansion from the lanes' partial ones: lane l adds lane l ^ 16, then ^ 8, .. ^ 1, so every
/// lane ends with the same sum, rounded in the order of the CPU twin.
__device__ inline void reduceEwaldLocal(EwaldLocal& loc)
{
#pragma unroll
    for (int stride = kEwaldWarpLanes / 2; stride >= 1; stride /= 2)
    {
#pragma unroll
        for (int k = 0; k < kEwaldDerivs; ++k) loc.d[k] += __shfl_xor_sync(0xffffffffu, loc.d[k], stride);
    }
}

} // namespace octwalk

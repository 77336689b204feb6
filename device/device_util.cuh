#pragma once
/// @file device_util.cuh
/// Small helpers of the launchers and kernels. Include from .cu files only.

#include <cuda_runtime.h>

#include <cstdint>

#include "common/vec.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// Explicit read-only loads (ld.global.nc) for the force and direct kernels, where nvcc does not
/// always prove the views' arrays unchanged on its own.
__device__ inline F4 loadReadOnly(const F4* p)
{
    float4 v = __ldg(reinterpret_cast<const float4*>(p));
    return {v.x, v.y, v.z, v.w};
}

__device__ inline I2 loadReadOnly(const I2* p)
{
    int2 v = __ldg(reinterpret_cast<const int2*>(p));
    return {v.x, v.y};
}

/// The stream behind an opaque handle.
inline cudaStream_t cudaStreamOf(GpuStream stream) { return static_cast<cudaStream_t>(stream.handle); }

/// Blocks of blockSize threads that cover items.
inline int blocksFor(int64_t items, int blockSize) { return int((items + blockSize - 1) / blockSize); }

} // namespace octwalk

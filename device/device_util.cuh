#pragma once
/// @file device_util.cuh
/// Small helpers of the launchers and kernels. Include from .cu files only.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/vec.h"
#include "device/cuda_check.cuh"
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

/// A texture object over a linear device array (RAII): 1D fetches by element, no filtering, no
/// normalisation, so a fetch returns the stored element unchanged. Rebinding or destruction must
/// wait until no kernel in flight reads it (the owner synchronises its stream first).
class LinearTexture
{
public:
    LinearTexture() = default;
    ~LinearTexture() { release(); }
    LinearTexture(const LinearTexture&)            = delete;
    LinearTexture& operator=(const LinearTexture&) = delete;

    /// Binds count elements of T (float4 or 32-bit unsigned) at data.
    template<class T>
    void bind(const void* data, size_t count)
    {
        release();
        cudaResourceDesc res{};
        res.resType                = cudaResourceTypeLinear;
        res.res.linear.devPtr      = const_cast<void*>(data);
        res.res.linear.desc        = cudaCreateChannelDesc<T>();
        res.res.linear.sizeInBytes = count * sizeof(T);
        cudaTextureDesc desc{};
        desc.readMode = cudaReadModeElementType;
        CUDA_CHECK(cudaCreateTextureObject(&tex_, &res, &desc, nullptr));
    }

    void release()
    {
        if (tex_ != 0) cudaDestroyTextureObject(tex_);
        tex_ = 0;
    }

    uint64_t handle() const { return uint64_t(tex_); }

private:
    cudaTextureObject_t tex_ = 0;
};

/// The stream behind an opaque handle.
inline cudaStream_t cudaStreamOf(GpuStream stream) { return static_cast<cudaStream_t>(stream.handle); }

/// Blocks of blockSize threads that cover items.
inline int blocksFor(int64_t items, int blockSize) { return int((items + blockSize - 1) / blockSize); }

} // namespace octwalk

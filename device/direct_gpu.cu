// Tiled direct summation on the device (twin: host/cpu/direct_cpu.cpp).
#include "device/direct_gpu.h"

#include <cuda_runtime.h>

#include "common/gravity.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"

namespace octwalk {

namespace {

/// Threads per block of the direct kernel, and bodies per shared tile.
constexpr int kDirectBlock = 128;
static_assert(kDirectBlock % 32 == 0 && kDirectBlock <= 1024, "the direct block is whole warps, at most 1024 threads");

/// All-pairs forces on the listed bodies, tiled through shared memory, accumulated in T.
template<class T>
__global__ void __launch_bounds__(kDirectBlock)
    directKernel(const F4* __restrict__ bodies, int32_t numBodies, const int32_t* __restrict__ targetIndex,
                 int32_t numTargets, float eps2, F4* __restrict__ out)
{
    __shared__ F4 sBody[kDirectBlock];
    const int tid      = int(threadIdx.x);
    const int32_t t    = int32_t(blockIdx.x) * kDirectBlock + tid;
    const bool active  = t < numTargets;
    const int32_t self = active ? targetIndex[t] : -1;
    const F4 p         = active ? loadReadOnly(bodies + self) : F4{0, 0, 0, 0};
    const Vec3<T> target{T(p.x), T(p.y), T(p.z)};
    Vec3<T> acc{0, 0, 0};
    T pot = 0;
    for (int32_t tile = 0; tile < numBodies; tile += kDirectBlock)
    {
        const int count = min(kDirectBlock, numBodies - tile);
        if (tid < count) sBody[tid] = loadReadOnly(bodies + tile + tid);
        __syncthreads();
        if (active)
        {
            for (int k = 0; k < count; ++k)
            {
                if (tile + k == self) continue;
                F4 s = sBody[k];
                bodyBody(Vec3<T>{T(s.x), T(s.y), T(s.z)} - target, T(s.w), T(eps2), acc, pot);
            }
        }
        __syncthreads();
    }
    if (active) out[t] = {float(acc.x), float(acc.y), float(acc.z), float(pot)};
}

} // namespace

void directGpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out, GpuStream stream)
{
    if (numTargets == 0) return;
    auto kernel = doubleAccumulate ? directKernel<double> : directKernel<float>;
    kernel<<<blocksFor(numTargets, kDirectBlock), kDirectBlock, 0, cudaStreamOf(stream)>>>(
        bodies.posMass, bodies.numBodies, targetIndex, numTargets, eps2, out);
    CUDA_CHECK_LAUNCH();
}

} // namespace octwalk

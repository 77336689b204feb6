#pragma once
/// @file hostdevice.h
/// HOST_DEVICE marks functions that both the CPU twin and the CUDA kernels call.

#if defined(__CUDACC__)
#define HOST_DEVICE __host__ __device__
#else
#define HOST_DEVICE
#endif

#include <cmath>

namespace octwalk {

/// 1/sqrt(x): the hardware approximation on the device, the exact one on the host.
/// Both are compared by relative tolerance (see README, floating-point policy).
HOST_DEVICE inline float rsqrtApprox(float x)
{
#ifdef __CUDA_ARCH__
    return rsqrtf(x);
#else
    return 1.0f / std::sqrt(x);
#endif
}

} // namespace octwalk

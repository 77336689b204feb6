#pragma once
/// @file hostdevice.h
/// HOST_DEVICE marks functions that both the CPU twin and the CUDA kernels call.

#if defined(__CUDACC__)
#define HOST_DEVICE __host__ __device__
#else
#define HOST_DEVICE
#endif

#include <cmath>

/// Unrolls the loop that follows completely where its trip count is a constant: nvcc and clang read "unroll",
/// GCC its own spelling (it ignores the other), so the CPU twin's loops over derivative indices fold to
/// straight-line code as the device's do (the far field's expansion on 2 cores: 1.75 s against 1.33 s at 2^18).
#if defined(__CUDACC__) || defined(__clang__) || !defined(__GNUC__)
#define OCTWALK_UNROLL _Pragma("unroll")
#else
#define OCTWALK_UNROLL _Pragma("GCC unroll 64")
#endif

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

/// Multiply and add rounded separately, never fused into an FMA: the device would otherwise
/// contract a*b + c, and a decision taken on the result (the MAC) could differ from the CPU twin's.
HOST_DEVICE inline float mulNoFma(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

HOST_DEVICE inline float addNoFma(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

} // namespace octwalk

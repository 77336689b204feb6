// Direct summation on the device (twin: host/cpu/direct_cpu.cpp).
//
// A warp is the unit of work: it owns 32 * I targets (I per lane, in registers) and one slice of the
// source range, and owes nothing to the other warps of its block. It stages its sources through its
// own part of shared memory, kTile at a time, one coalesced load per lane, ordered by __syncwarp (no
// reliance on implicit lock-step); each source is then read by all lanes at once (a broadcast) and
// used against the lane's I targets. The lanes sum whole targets, so no lane sums are needed; a warp
// writes its slice's partial sums and directReduceKernel adds them in a fixed order (Miki et al.
// 2012's j-split, deterministic: no atomics). The slice count fills the device (device/j_split.h).
//
// Most tiles take bodyBodySoftened (14 instructions a pair, benchmarks/results/direct_kernel.md); a
// tile holding one of the warp's own targets, or a mass beyond softenedMassLimit, or any tile when
// eps2 is too small for it or the sums are in double, takes bodyBody with the mass of a target's own
// body set to zero (which adds exactly nothing: the skip of the CPU twin without a branch).
#include "device/direct_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "common/gravity.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"
#include "device/j_split.h"

namespace octwalk {

namespace {

/// Threads per block: whole warps, each an independent unit of work.
constexpr int kDirectBlock   = 128;
constexpr int kWarpsPerBlock = kDirectBlock / 32;
/// Sources a warp stages in shared memory at a time (kTile / 32 per lane).
constexpr int kTile = 64;
/// The shortest source slice worth a warp of its own.
constexpr int kMinSliceLength = 256;
static_assert(kDirectBlock % 32 == 0 && kDirectBlock <= 1024, "the direct block is whole warps, at most 1024 threads");
static_assert(kTile % 32 == 0 && kMinSliceLength % kTile == 0, "tiles are whole warps' loads, slices whole tiles");

/// Targets per lane: registers hold I targets' sums, so each source read from shared memory serves I pairs.
template<class T>
constexpr int kTargetsPerLane = sizeof(T) == 4 ? 4 : 2;

/// Blocks per SM the kernel is compiled for: in float, 64 registers a thread (32 warps an SM, 8 a
/// scheduler, enough to hide the latencies of a loop with 4 independent targets); in double, no bound.
template<class T>
constexpr int kMinBlocksPerSm = sizeof(T) == 4 ? 8 : 1;

constexpr unsigned kFullMask = 0xffffffffu;

/// One target's sums over one slice.
template<class T>
struct alignas(4 * sizeof(T)) DirectSum
{
    T ax, ay, az, pot;
};

template<class T>
struct DirectArgs
{
    const F4* bodies;
    int32_t numBodies;
    const int32_t* targetIndex;
    int32_t numTargets;
    float eps2;
    float massLimit; ///< sources with |m| above it take bodyBody; negative: every source does
    int32_t chunks;  ///< groups of 32 * I targets
    int32_t slices;
    int32_t units; ///< chunks * slices
    int32_t sliceLength;
    DirectSum<T>* partial; ///< [target][slice]; unused with one slice
    F4* out;               ///< written directly with one slice
};

/// The pairs of one staged tile with bodyBodySoftened (no own body, every mass within range).
template<class T, int I>
__device__ inline void sumTileSoftened(const F4* tile, const Vec3<T> (&target)[I], T eps2, Vec3<T> (&acc)[I],
                                       T (&pot)[I])
{
#pragma unroll 16
    for (int k = 0; k < kTile; ++k)
    {
        const F4 s = tile[k];
#pragma unroll
        for (int i = 0; i < I; ++i)
        {
            bodyBodySoftened(Vec3<T>{T(s.x), T(s.y), T(s.z)} - target[i], T(s.w), eps2, acc[i], pot[i]);
        }
    }
}

/// The pairs of one staged tile with bodyBody, each target's own body massless.
template<class T, int I>
__device__ inline void sumTileGeneral(const F4* tile, int32_t tileBegin, const int32_t (&self)[I],
                                      const Vec3<T> (&target)[I], T eps2, Vec3<T> (&acc)[I], T (&pot)[I])
{
#pragma unroll 4
    for (int k = 0; k < kTile; ++k)
    {
        const F4 s = tile[k];
#pragma unroll
        for (int i = 0; i < I; ++i)
        {
            const T m = tileBegin + k == self[i] ? T(0) : T(s.w);
            bodyBody(Vec3<T>{T(s.x), T(s.y), T(s.z)} - target[i], m, eps2, acc[i], pot[i]);
        }
    }
}

/// Partial sums of the 32 * I targets of one chunk over one source slice, per warp (see top of file).
template<class T, int I>
__global__ void __launch_bounds__(kDirectBlock, kMinBlocksPerSm<T>) directSliceKernel(DirectArgs<T> a)
{
    __shared__ F4 sTile[kWarpsPerBlock][kTile];
    const int warp     = int(threadIdx.x) / 32;
    const int lane     = int(threadIdx.x) % 32;
    const int32_t unit = int32_t(blockIdx.x) * kWarpsPerBlock + warp;
    if (unit >= a.units) return; // a whole warp: nothing below waits for it
    const int32_t chunk = unit % a.chunks;
    const int32_t slice = unit / a.chunks;

    int32_t self[I];
    Vec3<T> target[I], acc[I];
    T pot[I];
#pragma unroll
    for (int i = 0; i < I; ++i)
    {
        const int32_t t = chunk * 32 * I + i * 32 + lane;
        self[i]         = t < a.numTargets ? a.targetIndex[t] : -1;
        const F4 p      = self[i] >= 0 ? loadReadOnly(a.bodies + self[i]) : F4{0, 0, 0, 0};
        target[i]       = {T(p.x), T(p.y), T(p.z)};
        acc[i]          = {0, 0, 0};
        pot[i]          = 0;
    }

    const T eps2         = T(a.eps2);
    const int32_t jBegin = slice * a.sliceLength;
    const int32_t jEnd   = min(a.numBodies, jBegin + a.sliceLength);
    F4* tile             = sTile[warp];
    for (int32_t tileBegin = jBegin; tileBegin < jEnd; tileBegin += kTile)
    {
        // Sources past the slice are massless at the origin: they add exactly zero in either formula.
        F4 s[kTile / 32];
        bool general = false;
#pragma unroll
        for (int q = 0; q < kTile / 32; ++q)
        {
            const int32_t j = tileBegin + q * 32 + lane;
            s[q]            = j < jEnd ? loadReadOnly(a.bodies + j) : F4{0, 0, 0, 0};
            general         = general || !(fabsf(s[q].w) <= a.massLimit);
        }
#pragma unroll
        for (int i = 0; i < I; ++i) general = general || (self[i] >= tileBegin && self[i] < tileBegin + kTile);
        general = __any_sync(kFullMask, general);
        __syncwarp(); // every lane is done reading the previous tile
#pragma unroll
        for (int q = 0; q < kTile / 32; ++q) tile[q * 32 + lane] = s[q];
        __syncwarp();
        if (general) sumTileGeneral<T, I>(tile, tileBegin, self, target, eps2, acc, pot);
        else sumTileSoftened<T, I>(tile, target, eps2, acc, pot);
    }

#pragma unroll
    for (int i = 0; i < I; ++i)
    {
        const int32_t t = chunk * 32 * I + i * 32 + lane;
        if (t >= a.numTargets) continue;
        // int32 suffices: the range splits only while the targets' warps fill less than one wave
        // (t * slices < 32 * I * resident warps), and the 64-bit form costs a spill.
        if (a.partial) a.partial[t * a.slices + slice] = {acc[i].x, acc[i].y, acc[i].z, pot[i]};
        else a.out[t] = {float(acc[i].x), float(acc[i].y), float(acc[i].z), float(pot[i])};
    }
}

/// Adds each target's slice sums and rounds them to float, a warp per target (a few hundred targets
/// come with thousands of slices): lane l adds slices l, l + 32, ... in order, then the lanes' sums
/// meet in a butterfly of shuffles. The order is fixed, and a + b == b + a, so every lane ends with
/// the same bits and every run with the same result.
template<class T>
__global__ void __launch_bounds__(kDirectBlock)
    directReduceKernel(const DirectSum<T>* __restrict__ partial, int32_t slices, int32_t numTargets,
                       F4* __restrict__ out)
{
    const int64_t t = (int64_t(blockIdx.x) * kDirectBlock + int64_t(threadIdx.x)) / 32;
    const int lane  = int(threadIdx.x) % 32;
    if (t >= numTargets) return; // a whole warp
    const DirectSum<T>* own = partial + t * slices;
    DirectSum<T> sum{0, 0, 0, 0};
    for (int32_t s = lane; s < slices; s += 32)
    {
        const DirectSum<T> p = own[s];
        sum.ax += p.ax;
        sum.ay += p.ay;
        sum.az += p.az;
        sum.pot += p.pot;
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
    {
        sum.ax += __shfl_xor_sync(kFullMask, sum.ax, offset);
        sum.ay += __shfl_xor_sync(kFullMask, sum.ay, offset);
        sum.az += __shfl_xor_sync(kFullMask, sum.az, offset);
        sum.pot += __shfl_xor_sync(kFullMask, sum.pot, offset);
    }
    if (lane == 0) out[t] = {float(sum.ax), float(sum.ay), float(sum.az), float(sum.pot)};
}

/// The launch shape of one direct sum: it depends on the sizes and the device alone.
struct DirectPlan
{
    int32_t chunks;
    int32_t slices;
    int32_t sliceLength;
};

/// Warps of directSliceKernel<T, I> resident on the whole current device.
template<class T, int I>
int64_t residentWarps()
{
    int device = 0, sms = 0, blocks = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, directSliceKernel<T, I>, kDirectBlock, 0));
    return int64_t(std::max(blocks, 1)) * kWarpsPerBlock * sms;
}

template<class T>
DirectPlan planDirect(int32_t numBodies, int32_t numTargets)
{
    constexpr int I      = kTargetsPerLane<T>;
    const int32_t chunks = int32_t((int64_t(numTargets) + 32 * I - 1) / (32 * I));
    const int slices     = sliceCount(chunks, residentWarps<T, I>(), numBodies, kMinSliceLength);
    // Whole tiles per slice, so that only the last slice ends in a part tile.
    const int64_t length      = (int64_t(numBodies) + slices - 1) / slices;
    const int32_t sliceLength = int32_t(std::max<int64_t>(kTile, (length + kTile - 1) / kTile * kTile));
    return {chunks, int32_t((int64_t(numBodies) + sliceLength - 1) / sliceLength), sliceLength};
}

template<class T>
size_t scratchBytes(const DirectPlan& plan, int32_t numTargets)
{
    return plan.slices > 1 ? size_t(plan.slices) * size_t(numTargets) * sizeof(DirectSum<T>) : 0;
}

template<class T>
void launchDirect(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2, float massLimit,
                  F4* out, void* scratch, cudaStream_t stream)
{
    constexpr int I       = kTargetsPerLane<T>;
    const DirectPlan plan = planDirect<T>(bodies.numBodies, numTargets);
    const bool split      = plan.slices > 1;
    DirectArgs<T> args{bodies.posMass,
                       bodies.numBodies,
                       targetIndex,
                       numTargets,
                       eps2,
                       massLimit,
                       plan.chunks,
                       plan.slices,
                       plan.chunks * plan.slices,
                       plan.sliceLength,
                       split ? static_cast<DirectSum<T>*>(scratch) : nullptr,
                       out};
    directSliceKernel<T, I><<<blocksFor(args.units, kWarpsPerBlock), kDirectBlock, 0, stream>>>(args);
    CUDA_CHECK_LAUNCH();
    if (!split) return;
    directReduceKernel<T><<<blocksFor(int64_t(numTargets) * 32, kDirectBlock), kDirectBlock, 0, stream>>>(
        args.partial, plan.slices, numTargets, out);
    CUDA_CHECK_LAUNCH();
}

} // namespace

size_t directScratchBytes(int32_t numBodies, int32_t numTargets, bool doubleAccumulate)
{
    if (numTargets <= 0 || numBodies <= 0) return 0;
    return doubleAccumulate ? scratchBytes<double>(planDirect<double>(numBodies, numTargets), numTargets)
                            : scratchBytes<float>(planDirect<float>(numBodies, numTargets), numTargets);
}

void directGpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out, void* scratch, GpuStream stream)
{
    if (numTargets <= 0) return; // a target is a body: numBodies > 0 from here on
    cudaStream_t s = cudaStreamOf(stream);
    // The double sums are the accuracy reference: bodyBody throughout, as before the fast path.
    if (doubleAccumulate) launchDirect<double>(bodies, targetIndex, numTargets, eps2, -1.0f, out, scratch, s);
    else launchDirect<float>(bodies, targetIndex, numTargets, eps2, softenedMassLimit(eps2), out, scratch, s);
}

} // namespace octwalk

// Direct summation on the device (twin: host/cpu/direct_cpu.cpp).
//
// A warp is the unit of work: it owns 32 * I targets (I per lane, in registers) and one slice of the
// source range, and owes nothing to the other warps of its block. It stages its sources through its
// own part of shared memory, Tile at a time, one coalesced load per lane, ordered by __syncwarp (no
// reliance on implicit lock-step); each source is then read by all lanes at once (a broadcast) and
// used against the lane's I targets. The lanes sum whole targets, so no lane sums are needed; a warp
// writes its slice's partial sums and directReduceKernel adds them in a fixed order (Miki et al.
// 2012's j-split, deterministic: no floating-point atomics). The slice count fills the device (device/j_split.h).
// I, Tile, the split (OneWave; Balanced, in which a warp's run of work may span the targets of two or three
// chunks; Dynamic, OneWave's units taken by persistent warps from an integer counter) and the reduction's
// batching are run-time variants (DirectKernelConfig).
//
// Most tiles take bodyBodySoftened (14 instructions a pair, benchmarks/results/direct/kernel_notes.md); a
// tile holding one of the warp's own targets, or a mass beyond softenedMassLimit, or any tile when
// eps2 is too small for it or the sums are in double, takes bodyBody with the mass of a target's own
// body set to zero (which adds exactly nothing: the skip of the CPU twin without a branch).
#include "device/direct_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "common/gravity.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"
#include "device/j_split.h"

namespace octwalk {

namespace {

/// Threads per block: whole warps, each an independent unit of work.
constexpr int kDirectBlock   = 128;
constexpr int kWarpsPerBlock = kDirectBlock / 32;
/// The shortest source slice worth a warp of its own (OneWave), the fewest sources a Balanced unit takes.
constexpr int kMinSliceLength = 256;
/// Units of the Dynamic split for every resident warp: enough that the warps the scheduler favours take the
/// slack of the others, few enough that a unit's target loads and partial sums stay a small part of it.
constexpr int kDynamicUnitsPerWarp = 8;
/// Pairs one iteration of the softened inner loop evaluates (sources unrolled x targets per lane): the
/// loop's own instructions (4) come to 1/16 a pair at every I.
constexpr int kPairsPerIteration = 64;
static_assert(kDirectBlock % 32 == 0 && kDirectBlock <= 1024, "the direct block is whole warps, at most 1024 threads");

/// Targets per lane in double: registers hold I targets' sums, so each source read from shared memory
/// serves I pairs.
constexpr int kDoubleTargetsPerLane = 2;
constexpr int kDoubleTile           = 64;

/// Blocks per SM each variant is compiled for (registers a thread: 65536 / (128 * blocks), rounded down
/// to a multiple of 8). In float: I = 4 at 64 registers (32 warps an SM, 8 a scheduler, enough to hide
/// the latencies of a loop with 4 independent targets); I = 2 at 40 (48 warps); I = 8 at 80 (24 warps,
/// fewer needed with 8 independent targets). In double, no bound.
template<class T, int I>
constexpr int minBlocksPerSm()
{
    if (sizeof(T) != 4) return 1;
    return I == 2 ? 10 : I == 4 ? 8 : 5;
}

constexpr unsigned kFullMask = 0xffffffffu;

/// One target's sums over one slice.
template<class T>
struct alignas(4 * sizeof(T)) DirectSum
{
    T ax, ay, az, pot;
};

/// The Balanced layout: work item L (a tile of sources for one chunk of 32 * I targets) is chunk
/// L / tilesPerChunk, tile L % tilesPerChunk; unit p takes items [p * work / units, (p + 1) * work / units).
/// Unit p's part of chunk c writes its sums to slot p + c (unique: see pieceOf), slots of 32 * I targets.
struct BalancedLayout
{
    int64_t tilesPerChunk;
    int64_t work; ///< chunks * tilesPerChunk; work * units < 2^63 (checked on the host)

    __host__ __device__ int64_t begin(int64_t unit, int64_t units) const { return unit * work / units; }
    /// The unit holding item L: the largest p with p * work / units <= L. Two units p < p' meet two
    /// chunks c > c' with p + c == p' + c' only if unit p' began before chunk c' ended, that is before
    /// chunk c began, when unit p (before p') holds nothing of chunk c: so the slots are unique.
    __host__ __device__ int64_t pieceOf(int64_t item, int64_t units) const { return ((item + 1) * units - 1) / work; }
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
    int32_t slices;  ///< OneWave: the source slices; Balanced: unused
    int32_t units;   ///< warps of work: OneWave chunks * slices, Balanced the units of the layout
    int32_t sliceLength;
    BalancedLayout layout;
    DirectSum<T>* partial; ///< OneWave: [target][slice], unused with one slice; Balanced: [slot][32 * I]
    F4* out;               ///< written directly with one slice
};

/// The pairs of one staged tile with bodyBodySoftened (no own body, every mass within range).
template<class T, int I, int Tile>
__device__ inline void sumTileSoftened(const F4* tile, const Vec3<T> (&target)[I], T eps2, Vec3<T> (&acc)[I],
                                       T (&pot)[I])
{
#pragma unroll kPairsPerIteration / I
    for (int k = 0; k < Tile; ++k)
    {
        const F4 s = tile[k];
#pragma unroll
        for (int i = 0; i < I; ++i)
        {
            bodyBodySoftened(Vec3<T>{T(s.x), T(s.y), T(s.z)} - target[i], T(s.w), eps2, acc[i], pot[i]);
        }
    }
}

/// The pairs of one staged tile with bodyBody, each target's own body massless (16 pairs an iteration:
/// a few tiles per warp take it, so its loop is short to spare registers).
template<class T, int I, int Tile>
__device__ inline void sumTileGeneral(const F4* tile, int32_t tileBegin, const int32_t (&self)[I],
                                      const Vec3<T> (&target)[I], T eps2, Vec3<T> (&acc)[I], T (&pot)[I])
{
#pragma unroll 16 / I
    for (int k = 0; k < Tile; ++k)
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

/// The I targets of this lane in chunk (index -1 and the origin past the last target).
template<class T, int I>
__device__ inline void loadTargets(const DirectArgs<T>& a, int32_t chunk, int lane, int32_t (&self)[I],
                                   Vec3<T> (&target)[I])
{
#pragma unroll
    for (int i = 0; i < I; ++i)
    {
        const int32_t t = chunk * 32 * I + i * 32 + lane;
        self[i]         = t < a.numTargets ? a.targetIndex[t] : -1;
        const F4 p      = self[i] >= 0 ? loadReadOnly(a.bodies + self[i]) : F4{0, 0, 0, 0};
        target[i]       = {T(p.x), T(p.y), T(p.z)};
    }
}

/// Adds the sources [jBegin, jEnd) (jBegin a multiple of Tile) to the lane's I targets, staging them
/// through this warp's tile in shared memory.
template<class T, int I, int Tile>
__device__ inline void sumSources(const DirectArgs<T>& a, F4* tile, int lane, int32_t jBegin, int32_t jEnd,
                                  const int32_t (&self)[I], const Vec3<T> (&target)[I], Vec3<T> (&acc)[I], T (&pot)[I])
{
    const T eps2 = T(a.eps2);
    for (int32_t tileBegin = jBegin; tileBegin < jEnd; tileBegin += Tile)
    {
        // Sources past the slice are massless at the origin: they add exactly zero in either formula.
        F4 s[Tile / 32];
        bool general = false;
#pragma unroll
        for (int q = 0; q < Tile / 32; ++q)
        {
            const int32_t j = tileBegin + q * 32 + lane;
            s[q]            = j < jEnd ? loadReadOnly(a.bodies + j) : F4{0, 0, 0, 0};
            general         = general || !(fabsf(s[q].w) <= a.massLimit);
        }
#pragma unroll
        for (int i = 0; i < I; ++i) general = general || (self[i] >= tileBegin && self[i] < tileBegin + Tile);
        general = __any_sync(kFullMask, general);
        __syncwarp(); // every lane is done reading the previous tile
#pragma unroll
        for (int q = 0; q < Tile / 32; ++q) tile[q * 32 + lane] = s[q];
        __syncwarp();
        if (general) sumTileGeneral<T, I, Tile>(tile, tileBegin, self, target, eps2, acc, pot);
        else sumTileSoftened<T, I, Tile>(tile, target, eps2, acc, pot);
    }
}

/// One OneWave unit: the 32 * I targets of chunk unit % chunks against source slice unit / chunks (consecutive
/// units share a slice, so their sources stay in L2), written to the unit's partial sums (or straight out with
/// one slice).
template<class T, int I, int Tile>
__device__ inline void sumUnit(const DirectArgs<T>& a, F4* tile, int lane, int32_t unit)
{
    const int32_t chunk = unit % a.chunks;
    const int32_t slice = unit / a.chunks;

    int32_t self[I];
    Vec3<T> target[I], acc[I];
    T pot[I];
    loadTargets<T, I>(a, chunk, lane, self, target);
#pragma unroll
    for (int i = 0; i < I; ++i)
    {
        acc[i] = {0, 0, 0};
        pot[i] = 0;
    }
    const int32_t jBegin = slice * a.sliceLength;
    const int32_t jEnd   = min(a.numBodies, jBegin + a.sliceLength);
    sumSources<T, I, Tile>(a, tile, lane, jBegin, jEnd, self, target, acc, pot);

#pragma unroll
    for (int i = 0; i < I; ++i)
    {
        const int32_t t = chunk * 32 * I + i * 32 + lane;
        if (t >= a.numTargets) continue;
        // int32 suffices: the range splits only while the targets' warps fill fewer than kDynamicUnitsPerWarp
        // waves (t * slices < 32 * I * kDynamicUnitsPerWarp * resident warps), and the 64-bit form costs a spill.
        if (a.partial) a.partial[t * a.slices + slice] = {acc[i].x, acc[i].y, acc[i].z, pot[i]};
        else a.out[t] = {float(acc[i].x), float(acc[i].y), float(acc[i].z), float(pot[i])};
    }
}

/// Partial sums of the 32 * I targets of one chunk over one source slice, per warp (OneWave; see top
/// of file).
template<class T, int I, int Tile>
__global__ void __launch_bounds__(kDirectBlock, minBlocksPerSm<T, I>()) directSliceKernel(DirectArgs<T> a)
{
    __shared__ F4 sTile[kWarpsPerBlock][Tile];
    const int warp     = int(threadIdx.x) / 32;
    const int lane     = int(threadIdx.x) % 32;
    const int32_t unit = int32_t(blockIdx.x) * kWarpsPerBlock + warp;
    if (unit >= a.units) return; // a whole warp: nothing below waits for it
    sumUnit<T, I, Tile>(a, sTile[warp], lane, unit);
}

/// The Dynamic form: one wave of persistent warps, each taking the next unit from *next (an integer counter
/// set to zero before the launch) until none is left.
template<class T, int I, int Tile>
__global__ void __launch_bounds__(kDirectBlock, minBlocksPerSm<T, I>())
    directDynamicKernel(DirectArgs<T> a, int32_t* __restrict__ next)
{
    __shared__ F4 sTile[kWarpsPerBlock][Tile];
    const int warp = int(threadIdx.x) / 32;
    const int lane = int(threadIdx.x) % 32;
    for (;;)
    {
        int32_t unit = 0;
        if (lane == 0) unit = atomicAdd(next, 1);
        unit = __shfl_sync(kFullMask, unit, 0);
        if (unit >= a.units) return; // a whole warp
        sumUnit<T, I, Tile>(a, sTile[warp], lane, unit);
    }
}

/// The Balanced form: each warp takes its run of work items (BalancedLayout), one chunk's part at a
/// time, and writes each part's sums to its slot.
template<class T, int I, int Tile>
__global__ void __launch_bounds__(kDirectBlock, minBlocksPerSm<T, I>()) directBalancedKernel(DirectArgs<T> a)
{
    __shared__ F4 sTile[kWarpsPerBlock][Tile];
    const int warp     = int(threadIdx.x) / 32;
    const int lane     = int(threadIdx.x) % 32;
    const int32_t unit = int32_t(blockIdx.x) * kWarpsPerBlock + warp;
    if (unit >= a.units) return; // a whole warp
    const BalancedLayout& w = a.layout;
    const int64_t end       = w.begin(unit + 1, a.units);
    for (int64_t item = w.begin(unit, a.units); item < end;)
    {
        const int32_t chunk    = int32_t(item / w.tilesPerChunk);
        const int64_t chunkEnd = (int64_t(chunk) + 1) * w.tilesPerChunk;
        const int64_t partEnd  = min(end, chunkEnd);
        int32_t self[I];
        Vec3<T> target[I], acc[I];
        T pot[I];
        loadTargets<T, I>(a, chunk, lane, self, target);
#pragma unroll
        for (int i = 0; i < I; ++i)
        {
            acc[i] = {0, 0, 0};
            pot[i] = 0;
        }
        const int64_t firstTile = int64_t(chunk) * w.tilesPerChunk;
        const int32_t jBegin    = int32_t((item - firstTile) * Tile);
        const int32_t jEnd      = int32_t(min(int64_t(a.numBodies), (partEnd - firstTile) * Tile));
        sumSources<T, I, Tile>(a, sTile[warp], lane, jBegin, jEnd, self, target, acc, pot);
        DirectSum<T>* slot = a.partial + (int64_t(unit) + chunk) * (32 * I);
#pragma unroll
        for (int i = 0; i < I; ++i) slot[i * 32 + lane] = {acc[i].x, acc[i].y, acc[i].z, pot[i]};
        item = partEnd;
    }
}

/// Adds each target's partial sums and rounds them to float, a warp per target (a few hundred targets
/// come with thousands of partial sums): lane l adds partial sums l, l + 32, ... in order (Batch of them
/// loaded before they are added, which changes nothing in the order), then the lanes' sums meet in a
/// butterfly of shuffles. The order is fixed, and a + b == b + a, so every lane ends with the same
/// bits and every run with the same result. Balanced: the partial sums of target t in chunk c are
/// slots pieceOf(first item of c) + c .. pieceOf(last item of c) + c; OneWave: partial[t][0 .. slices).
template<class T, int Batch, bool Balanced>
__global__ void __launch_bounds__(kDirectBlock)
    directReduceKernel(const DirectSum<T>* __restrict__ partial, int32_t slices, int32_t numTargets,
                       int32_t targetsPerChunk, BalancedLayout layout, int32_t units, F4* __restrict__ out)
{
    const int64_t t = (int64_t(blockIdx.x) * kDirectBlock + int64_t(threadIdx.x)) / 32;
    const int lane  = int(threadIdx.x) % 32;
    if (t >= numTargets) return; // a whole warp
    const DirectSum<T>* own = partial + t * slices;
    int64_t stride          = 1;
    int64_t count           = slices;
    if (Balanced)
    {
        const int64_t chunk = t / targetsPerChunk;
        const int64_t first = layout.pieceOf(chunk * layout.tilesPerChunk, units);
        const int64_t last  = layout.pieceOf((chunk + 1) * layout.tilesPerChunk - 1, units);
        own                 = partial + (first + chunk) * targetsPerChunk + t % targetsPerChunk;
        stride              = targetsPerChunk;
        count               = last - first + 1;
    }
    DirectSum<T> sum{0, 0, 0, 0};
    for (int64_t k0 = lane; k0 < count; k0 += 32 * Batch)
    {
        DirectSum<T> p[Batch];
#pragma unroll
        for (int b = 0; b < Batch; ++b)
        {
            const int64_t k = k0 + 32 * b;
            if (k < count) p[b] = own[k * stride];
        }
#pragma unroll
        for (int b = 0; b < Batch; ++b)
        {
            if (k0 + 32 * b < count)
            {
                sum.ax += p[b].ax;
                sum.ay += p[b].ay;
                sum.az += p[b].az;
                sum.pot += p[b].pot;
            }
        }
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

/// The launch shape of one direct sum: it depends on the sizes, the variant and the device alone.
struct DirectPlan
{
    int32_t chunks;
    int32_t slices; ///< OneWave and Dynamic
    int32_t sliceLength;
    int32_t units;
    DirectSplit split;
    BalancedLayout layout;
    int32_t warps; ///< Dynamic: the persistent warps launched (one wave); else units

    bool balanced() const { return split == DirectSplit::Balanced; }
    /// Slices' partial sums to add (the reduction kernel runs).
    bool reduces() const { return balanced() || slices > 1; }
};

/// Warps of kernel resident on the whole current device.
int64_t residentWarps(const void* kernel)
{
    int device = 0, sms = 0, blocks = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kDirectBlock, 0));
    return int64_t(std::max(blocks, 1)) * kWarpsPerBlock * sms;
}

/// OneWave's units (as many as `resident` warps, or more when the targets alone need more) or Dynamic's (about
/// kDynamicUnitsPerWarp for each of `resident` warps).
template<int I, int Tile>
DirectPlan planSlices(int32_t numBodies, int32_t numTargets, int64_t resident, DirectSplit split)
{
    const int32_t chunks = int32_t((int64_t(numTargets) + 32 * I - 1) / (32 * I));
    const bool dynamic   = split == DirectSplit::Dynamic;
    const int64_t wanted = dynamic ? resident * kDynamicUnitsPerWarp : resident;
    const int slices     = sliceCount(chunks, wanted, numBodies, std::max(kMinSliceLength, Tile));
    // Whole tiles per slice, so that only the last slice ends in a part tile.
    const int64_t length      = (int64_t(numBodies) + slices - 1) / slices;
    const int32_t sliceLength = int32_t(std::max<int64_t>(Tile, (length + Tile - 1) / Tile * Tile));
    const int32_t used        = int32_t((int64_t(numBodies) + sliceLength - 1) / sliceLength);
    const int32_t units       = chunks * used;
    const int32_t warps       = dynamic ? int32_t(std::min<int64_t>(units, resident)) : units;
    return {chunks, used, sliceLength, units, split, {0, 0}, warps};
}

template<class T, int I, int Tile>
DirectPlan planOneWave(int32_t numBodies, int32_t numTargets)
{
    return planSlices<I, Tile>(numBodies, numTargets, residentWarps((const void*)directSliceKernel<T, I, Tile>),
                               DirectSplit::OneWave);
}

template<class T, int I, int Tile>
DirectPlan planDynamic(int32_t numBodies, int32_t numTargets)
{
    return planSlices<I, Tile>(numBodies, numTargets, residentWarps((const void*)directDynamicKernel<T, I, Tile>),
                               DirectSplit::Dynamic);
}

/// Balanced: one unit per resident warp, none under kMinSliceLength sources, and OneWave where the
/// layout's products would leave int64 (beyond any practical size).
template<class T, int I, int Tile>
DirectPlan planBalanced(int32_t numBodies, int32_t numTargets)
{
    const int64_t chunks   = (int64_t(numTargets) + 32 * I - 1) / (32 * I);
    const int64_t tiles    = (int64_t(numBodies) + Tile - 1) / Tile;
    const int64_t work     = chunks * tiles;
    const int64_t minTiles = std::max(1, kMinSliceLength / Tile);
    const int64_t units =
        std::clamp<int64_t>(work / minTiles, 1, residentWarps((const void*)directBalancedKernel<T, I, Tile>));
    if (work > (int64_t(1) << 62) / (units + 1)) return planOneWave<T, I, Tile>(numBodies, numTargets);
    return {int32_t(chunks), 0, 0, int32_t(units), DirectSplit::Balanced, {tiles, work}, int32_t(units)};
}

/// Where the Dynamic split's unit counter lies in the scratch: after the partial sums, on its own 256 bytes.
template<class T>
size_t partialBytes(const DirectPlan& plan, int32_t numTargets, int targetsPerLane)
{
    if (plan.balanced()) return (size_t(plan.units) + size_t(plan.chunks)) * 32 * targetsPerLane * sizeof(DirectSum<T>);
    return plan.slices > 1 ? size_t(plan.slices) * size_t(numTargets) * sizeof(DirectSum<T>) : 0;
}

constexpr size_t kCounterAlign = 256;

template<class T>
size_t scratchBytes(const DirectPlan& plan, int32_t numTargets, int targetsPerLane)
{
    const size_t partial = partialBytes<T>(plan, numTargets, targetsPerLane);
    if (plan.split != DirectSplit::Dynamic) return partial;
    return (partial + kCounterAlign - 1) / kCounterAlign * kCounterAlign + kCounterAlign;
}

template<class T, int Batch>
void launchReduce(const DirectArgs<T>& a, const DirectPlan& plan, int targetsPerChunk, cudaStream_t stream)
{
    const int blocks = blocksFor(int64_t(a.numTargets) * 32, kDirectBlock);
    if (plan.balanced())
    {
        directReduceKernel<T, Batch, true><<<blocks, kDirectBlock, 0, stream>>>(
            a.partial, 0, a.numTargets, targetsPerChunk, plan.layout, plan.units, a.out);
    }
    else
    {
        directReduceKernel<T, Batch, false><<<blocks, kDirectBlock, 0, stream>>>(
            a.partial, plan.slices, a.numTargets, targetsPerChunk, plan.layout, plan.units, a.out);
    }
    CUDA_CHECK_LAUNCH();
}

/// One variant's plan and launches: the plan alone when scratchOnly (for directScratchBytes).
template<class T, int I, int Tile>
size_t runDirect(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2, float massLimit,
                 F4* out, void* scratch, cudaStream_t stream, const DirectKernelConfig& config, bool scratchOnly)
{
    const DirectPlan plan =
        config.split == DirectSplit::Balanced  ? planBalanced<T, I, Tile>(bodies.numBodies, numTargets)
        : config.split == DirectSplit::Dynamic ? planDynamic<T, I, Tile>(bodies.numBodies, numTargets)
                                               : planOneWave<T, I, Tile>(bodies.numBodies, numTargets);
    if (scratchOnly) return scratchBytes<T>(plan, numTargets, I);
    const bool reduce = plan.reduces();
    DirectArgs<T> args{bodies.posMass,
                       bodies.numBodies,
                       targetIndex,
                       numTargets,
                       eps2,
                       massLimit,
                       plan.chunks,
                       plan.slices,
                       plan.units,
                       plan.sliceLength,
                       plan.layout,
                       reduce ? static_cast<DirectSum<T>*>(scratch) : nullptr,
                       out};
    const int blocks = blocksFor(plan.warps, kWarpsPerBlock);
    if (plan.balanced()) directBalancedKernel<T, I, Tile><<<blocks, kDirectBlock, 0, stream>>>(args);
    else if (plan.split == DirectSplit::Dynamic)
    {
        const size_t counterAt =
            (partialBytes<T>(plan, numTargets, I) + kCounterAlign - 1) / kCounterAlign * kCounterAlign;
        int32_t* next = reinterpret_cast<int32_t*>(static_cast<char*>(scratch) + counterAt);
        CUDA_CHECK(cudaMemsetAsync(next, 0, sizeof(int32_t), stream));
        directDynamicKernel<T, I, Tile><<<blocks, kDirectBlock, 0, stream>>>(args, next);
    }
    else directSliceKernel<T, I, Tile><<<blocks, kDirectBlock, 0, stream>>>(args);
    CUDA_CHECK_LAUNCH();
    if (!reduce) return 0;
    // 8 float or 4 double sums in flight a lane: 128 bytes, under 64 registers of the reduction.
    if (config.batchedReduce) launchReduce<T, sizeof(T) == 4 ? 8 : 4>(args, plan, 32 * I, stream);
    else launchReduce<T, 1>(args, plan, 32 * I, stream);
    return 0;
}

/// Dispatches a variant to its instantiation: double sums always take kDoubleTargetsPerLane and
/// kDoubleTile (the reference path), float ones the configured shape.
size_t dispatchDirect(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
                      bool doubleAccumulate, F4* out, void* scratch, cudaStream_t stream,
                      const DirectKernelConfig& config, bool scratchOnly)
{
    checkDirectConfig(config);
    // The double sums are the accuracy reference: bodyBody throughout, without the float path's softened tiles.
    if (doubleAccumulate)
    {
        return runDirect<double, kDoubleTargetsPerLane, kDoubleTile>(bodies, targetIndex, numTargets, eps2, -1.0f, out,
                                                                     scratch, stream, config, scratchOnly);
    }
    const float limit = softenedMassLimit(eps2);
    auto run          = [&](auto i, auto tile) {
        return runDirect<float, decltype(i)::value, decltype(tile)::value>(bodies, targetIndex, numTargets, eps2, limit,
                                                                           out, scratch, stream, config, scratchOnly);
    };
    using Lanes2    = std::integral_constant<int, 2>;
    using Lanes4    = std::integral_constant<int, 4>;
    using Lanes8    = std::integral_constant<int, 8>;
    using Tile64    = std::integral_constant<int, 64>;
    using Tile128   = std::integral_constant<int, 128>;
    const bool wide = config.tileSources == 128;
    switch (config.targetsPerLane)
    {
    case 2: return wide ? run(Lanes2{}, Tile128{}) : run(Lanes2{}, Tile64{});
    case 8: return wide ? run(Lanes8{}, Tile128{}) : run(Lanes8{}, Tile64{});
    default: return wide ? run(Lanes4{}, Tile128{}) : run(Lanes4{}, Tile64{});
    }
}

} // namespace

size_t directScratchBytes(int32_t numBodies, int32_t numTargets, bool doubleAccumulate,
                          const DirectKernelConfig& config)
{
    if (numTargets <= 0 || numBodies <= 0) return 0;
    return dispatchDirect({nullptr, numBodies}, nullptr, numTargets, 0.0f, doubleAccumulate, nullptr, nullptr, nullptr,
                          config, true);
}

void directGpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out, void* scratch, GpuStream stream, const DirectKernelConfig& config)
{
    if (numTargets <= 0) return; // a target is a body: numBodies > 0 from here on
    dispatchDirect(bodies, targetIndex, numTargets, eps2, doubleAccumulate, out, scratch, cudaStreamOf(stream), config,
                   false);
}

} // namespace octwalk

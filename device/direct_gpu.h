#pragma once
/// @file direct_gpu.h
/// All-pairs forces on the device. Twin of host/cpu/direct_cpu.h: the same arguments (pointing at
/// device memory) plus scratch and a stream, the same pair formulas (bodyBodySoftened where its range
/// allows, bodyBody elsewhere and in double), float32 inputs, accumulation in float or double, a body
/// skipping itself by index. The source range is split into slices over warps when the targets alone
/// do not fill the device; each slice's partial sums go to scratch and a second kernel adds them in a
/// fixed order, so a result is bit-identical for given bodies, targets and device (SM count), and
/// differs from the CPU twin's index-order sum by rounding only. Asynchronous on the stream; built
/// from direct_gpu.cu with CUDA, from gpu_none.cpp without (then it throws BackendError).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/tree_view.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// How the work (warps of targets x tiles of sources) is cut into the units of one launch.
enum class DirectSplit
{
    /// A unit is one warp's targets against one slice of the sources, as many slices as fill one wave
    /// (device/j_split.h); with more warps of targets than the device holds, no split and several waves.
    OneWave,
    /// As many units as the device holds warps, each the same number of source tiles (give or take one)
    /// of the work laid out warp of targets after warp of targets, so that a unit may end one warp's
    /// targets and begin the next (stream-K): no partly filled last wave at any size.
    Balanced,
    /// OneWave's units (one warp's targets against one slice), about eight of them for every
    /// warp the device holds, taken in order by one wave of persistent warps from an integer counter: a warp
    /// that the scheduler favours takes more units instead of leaving the others to finish alone (Nsight
    /// Compute on an H200: Balanced's equal shares kept 27 of the 40 resident warps an SM active on average).
    /// Each unit's sums are still one warp's, in slice order, so the result does not depend on which warp
    /// took which unit.
    Dynamic,
};

/// The variants of directGpu, chosen at run time so that one binary measures them side by side
/// (BM_GpuDirectTuning in benchmarks/bench_gpu.cpp) and the twin tests cover each. Every variant is
/// deterministic; they differ from each other by rounding (other slices, other sums).
struct DirectKernelConfig
{
    // Defaults: the Dynamic split with 4 targets a lane, the fastest variant at N >= 2^16 on the H200
    // (benchmarks/results/direct/bench_gpu_direct_variants.md: 1.866e12 interactions/s at 2^18 x 2^18 and
    // 1.870e12 at 2^20 x 2^20 against 1.729e12 and 1.738e12 for Balanced with 2 targets a lane; 1.530e12 for
    // 256 targets against 2^20 sources, 1.553e12 with 2 targets a lane dynamic, 1.541e12 balanced).
    int targetsPerLane = 4;  ///< in float: 2, 4 or 8 (double sums always take 2)
    int tileSources    = 64; ///< sources a warp stages per __syncwarp: 64 or 128
    DirectSplit split  = DirectSplit::Dynamic;
    /// The reduction of the slices' sums reads 8 of a lane's slices before adding them (in the same
    /// order, so the same bits), instead of one at a time.
    bool batchedReduce = true;
};

/// Throws ParameterError for a variant that is not built.
inline void checkDirectConfig(const DirectKernelConfig& c)
{
    if (c.targetsPerLane != 2 && c.targetsPerLane != 4 && c.targetsPerLane != 8)
    {
        throw ParameterError("DirectKernelConfig: targets per lane " + std::to_string(c.targetsPerLane) +
                             " is not built (2, 4 or 8)");
    }
    if (c.tileSources != 64 && c.tileSources != 128)
    {
        throw ParameterError("DirectKernelConfig: tile of " + std::to_string(c.tileSources) +
                             " sources is not built (64 or 128)");
    }
}

/// "i4_t64_onewave" and the like: the name of a variant in test and benchmark labels.
inline std::string directVariantName(const DirectKernelConfig& c)
{
    return "i" + std::to_string(c.targetsPerLane) + "_t" + std::to_string(c.tileSources) +
           (c.split == DirectSplit::Balanced  ? "_balanced"
            : c.split == DirectSplit::Dynamic ? "_dynamic"
                                              : "_onewave") +
           (c.batchedReduce ? "_batched" : "");
}

/// The variants the tuning benchmark measures and the twin tests cover, the default first (the index
/// is BM_GpuDirectTuning's variant argument).
inline std::vector<DirectKernelConfig> directTuningVariants()
{
    using S = DirectSplit;
    return {{4, 64, S::Dynamic, true},   {2, 64, S::Balanced, true}, {4, 64, S::OneWave, false},
            {4, 64, S::OneWave, true},   {4, 128, S::OneWave, true}, {8, 64, S::OneWave, true},
            {8, 128, S::OneWave, true},  {2, 64, S::OneWave, true},  {4, 64, S::Balanced, true},
            {4, 128, S::Balanced, true}, {8, 64, S::Balanced, true}, {8, 128, S::Balanced, true},
            {2, 64, S::Dynamic, true},   {4, 128, S::Dynamic, true}};
}

/// Bytes of device scratch directGpu needs for these sizes on the current device (0 when the source
/// range is not split and the split is not Dynamic, whose unit counter lies there).
/// @param[in] numBodies         sources
/// @param[in] numTargets        targets
/// @param[in] doubleAccumulate  accumulate in double
/// @param[in] config            the kernel variant (checkDirectConfig)
size_t directScratchBytes(int32_t numBodies, int32_t numTargets, bool doubleAccumulate,
                          const DirectKernelConfig& config = {});

/// Forces on bodies[targetIndex[t]] from all bodies, G = 1.
/// @param[in]  targetIndex       numTargets body indices, each in [0, bodies.numBodies) (device memory)
/// @param[in]  doubleAccumulate  accumulate (and evaluate) in double instead of float
/// @param[out] out               (acc xyz, potential) per target, rounded to float (device memory)
/// @param[out] scratch           at least directScratchBytes(bodies.numBodies, numTargets,
///                               doubleAccumulate, config) bytes of device memory, 256-byte aligned
/// @param[in]  config            the kernel variant; throws ParameterError for one not built
void directGpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out, void* scratch, GpuStream stream, const DirectKernelConfig& config = {});

} // namespace octwalk

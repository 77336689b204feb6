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

#include "common/tree_view.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// Bytes of device scratch directGpu needs for these sizes on the current device (0 when the source
/// range is not split).
/// @param[in] numBodies         sources
/// @param[in] numTargets        targets
/// @param[in] doubleAccumulate  accumulate in double
size_t directScratchBytes(int32_t numBodies, int32_t numTargets, bool doubleAccumulate);

/// Forces on bodies[targetIndex[t]] from all bodies, G = 1.
/// @param[in]  targetIndex       numTargets body indices, each in [0, bodies.numBodies) (device memory)
/// @param[in]  doubleAccumulate  accumulate (and evaluate) in double instead of float
/// @param[out] out               (acc xyz, potential) per target, rounded to float (device memory)
/// @param[out] scratch           at least directScratchBytes(bodies.numBodies, numTargets,
///                               doubleAccumulate) bytes of device memory, 256-byte aligned
void directGpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out, void* scratch, GpuStream stream);

} // namespace octwalk

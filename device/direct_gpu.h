#pragma once
/// @file direct_gpu.h
/// Tiled all-pairs forces on the device. Twin of host/cpu/direct_cpu.h: the same arguments (pointing
/// at device memory) plus a stream, the same bodyBody, float32 inputs, accumulation in float or double,
/// a body skipping itself by index, each target summing the bodies in index order. Asynchronous on the
/// stream; built from direct_gpu.cu with CUDA, from gpu_none.cpp without (then it throws BackendError).

#include <cstdint>

#include "common/tree_view.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// Forces on bodies[targetIndex[t]] from all bodies, G = 1.
/// @param[in]  targetIndex       numTargets body indices, each in [0, bodies.numBodies) (device memory)
/// @param[in]  doubleAccumulate  accumulate (and evaluate) in double instead of float
/// @param[out] out               (acc xyz, potential) per target, rounded to float (device memory)
void directGpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out, GpuStream stream);

} // namespace octwalk

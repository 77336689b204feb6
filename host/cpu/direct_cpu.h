#pragma once
/// @file direct_cpu.h
/// The CPU twin of device/direct_gpu.h: all-pairs forces on listed bodies from float32 bodies, with
/// common/gravity.h's pair formulas (in float, bodyBodySoftened for masses within softenedMassLimit
/// and bodyBody for the rest; in double, bodyBody), accumulated in float or double, a body skipping
/// itself by index, each target summing the bodies in index order. The device sums the same pairs in
/// source slices and chooses the formula per tile of sources, so the two differ by rounding only. It
/// is not the yardstick of accuracy: that is host/reference/direct.h (double inputs, double throughout).

#include <cstdint>

#include "common/tree_view.h"

namespace octwalk {

/// Forces on bodies[targetIndex[t]] from all bodies, G = 1.
/// @param[in]  targetIndex       numTargets body indices, each in [0, bodies.numBodies)
/// @param[in]  doubleAccumulate  accumulate (and evaluate) in double instead of float
/// @param[out] out               (acc xyz, potential) per target, rounded to float
void directCpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out);

} // namespace octwalk

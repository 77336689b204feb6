#pragma once
/// @file refit_cpu.h
/// The CPU twin of device/refit_gpu.h: a packed tree's moments, float bodies and group boxes
/// recomputed from the bodies' current positions on a kept topology (common/refit.h), OpenMP within
/// each step of the order. Deterministic: each node, body and group is computed by one thread in a
/// fixed order, so the result is bit-identical for any thread count.

#include "common/refit.h"

namespace octwalk {

/// Refits: every leaf from its bodies, the internal nodes level by level from the deepest, the float
/// bodies, then the group boxes.
/// @param[in,out] view    topology and positions in, nodeMac/nodeCom/nodeQuad/bodies/group boxes out
///                        (host memory); view.moments is working memory, one entry per node
/// @param[in]     levels  the internal nodes by level (host/tree/packed_tree.h: refitLevels)
void refitCpu(const RefitView& view, const RefitLevels& levels);

} // namespace octwalk

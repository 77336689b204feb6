#pragma once
/// @file ewald_gpu.h
/// The Ewald correction of periodic groups as expansions about their centres (common/ewald.h, EwaldLocal)
/// on the device, from the group's lists or the correction's own walk (common/ewald_walk.h). Twin of
/// host/cpu/ewald_cpu.h: the same arguments (views pointing at device memory) plus a stream.
/// bodyLeafForcesGpu launches it after its kernel in a periodic box; built from ewald_gpu.cu with CUDA only.

#include "common/tree_view.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// Adds to acc the Ewald correction of every group that ewaldGroupExpands (none under TreePM): a group with short lists is one
/// warp whose lanes take entries l, l + 32, .. of its lists (addEwaldListEntry), the partial expansions
/// reduced by a butterfly; a group with long lists (ewaldGroupWalks) is one thread that walks the tree for
/// coarser sources (common/ewald_walk.h). No atomics.
/// @param[in,out] acc  forces with G = 1, indexed like targets (device memory)
void ewaldGroupCorrectionGpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc, GpuStream stream);

} // namespace octwalk

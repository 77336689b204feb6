#pragma once
/// @file ewald_cpu.h
/// The CPU twin of device/ewald_gpu.h: the Ewald correction of periodic groups as expansions about their
/// centres (common/ewald.h, EwaldLocal) from the sources of the correction's own walk (common/ewald_walk.h),
/// added in the walk's order as on the device. bodyLeafForcesCpu calls it after the leaf sums in a periodic
/// box.

#include "common/tree_view.h"

namespace octwalk {

/// Adds to acc the Ewald correction of every group that ewaldGroupExpands (ewaldGroupExpansion per group).
/// The lists are not read: the correction's walk finds coarser sources than the group's lists (ewald_walk.h).
/// @param[in,out] acc  forces with G = 1, indexed like targets
void ewaldGroupCorrectionCpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc);

} // namespace octwalk

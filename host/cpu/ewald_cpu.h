#pragma once
/// @file ewald_cpu.h
/// The CPU twin of device/ewald_gpu.h: the Ewald correction of periodic groups as expansions about their
/// centres (common/ewald.h, EwaldLocal), from the group's lists in the device's lane order, or from the
/// correction's own walk (common/ewald_walk.h, ewaldGroupWalks) in the walk's order: one thread's, or the
/// warp walk's lanes one after another (EwaldWalkConfig::warp). bodyLeafForcesCpu calls
/// it after the leaf sums in a periodic box.

#include "common/tree_view.h"

namespace octwalk {

/// Adds to acc the Ewald correction of every group that ewaldGroupExpands (none under TreePM).
/// @param[in,out] acc  forces with G = 1, indexed like targets
void ewaldGroupCorrectionCpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc);

} // namespace octwalk

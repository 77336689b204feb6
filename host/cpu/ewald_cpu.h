#pragma once
/// @file ewald_cpu.h
/// The CPU twin of device/ewald_gpu.h: the Ewald correction of periodic groups as expansions about their
/// centres (common/ewald.h, EwaldLocal), summed in the device's lane order. bodyLeafForcesCpu calls it
/// after the leaf sums in a periodic box.

#include "common/tree_view.h"

namespace octwalk {

/// Adds to acc the Ewald correction of every group that ewaldGroupExpands, from its node and leaf lists.
/// @param[in,out] acc  forces with G = 1, indexed like targets
void ewaldGroupCorrectionCpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc);

} // namespace octwalk

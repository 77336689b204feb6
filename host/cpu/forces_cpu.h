#pragma once
/// @file forces_cpu.h
/// The CPU twin of device/forces_gpu.h: body-node and body-leaf forces from the interaction lists,
/// OpenMP over groups, every target summing its lists in list order as the device does.

#include <cstdint>

#include "common/tree_view.h"

namespace octwalk {

/// Body-node (quadrupole) forces from the node lists: the accepted nodes near the group body by body (in
/// list order), the far ones (tree.farField2; in a periodic box for the groups that expand their Ewald
/// correction, each node's image nearest the centre) through the group's expansion, added last.
/// @param[out] nodeAcc  (acc xyz, potential) with G = 1, indexed like targets
void bodyNodeForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const TargetView& targets,
                       float eps2, F4* nodeAcc);

/// How much of the node lists the far field takes (common/far_field.h, farFromGroup; 0 without one).
struct FarFieldCounts
{
    int64_t entries      = 0; ///< (group, node) pairs summed into the groups' expansions
    int64_t interactions = 0; ///< the body-node interactions they stand for: entries times group size
};

/// Counts the node-list entries that go to the far field (both backends take the same ones).
FarFieldCounts farFieldCountsCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, float eps2);

/// Body-leaf (softened body-body) forces from the leaf lists, added to the body-node ones: the total.
/// A target that is a body skips itself by index. In a periodic box the groups' Ewald expansions
/// (ewald_cpu.h) are added last.
/// @param[in]  nodeAcc  bodyNodeForcesCpu's output
/// @param[out] acc      nodeAcc + the leaf sum, G = 1, indexed like targets (must not alias nodeAcc)
void bodyLeafForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       const TargetView& targets, float eps2, const F4* nodeAcc, F4* acc);

} // namespace octwalk

#pragma once
/// @file walk_cpu.h
/// The CPU twin of the device walk and force kernels: the same packed arrays, the same
/// common/ functions, the same two passes, OpenMP over groups.

#include <cstdint>
#include <vector>

#include "common/tree_view.h"

namespace octwalk {

/// Pass-1 output: per group, list lengths and the body-body interactions per body its leaves imply.
struct WalkCounts
{
    std::vector<int32_t> nodes, leaves;
    std::vector<int64_t> leafBodies;
};

/// Lists of all groups at their offsets (offset arrays have numGroups + 1 entries).
struct InteractionLists
{
    std::vector<int32_t> nodeOffset, leafOffset, nodeList, leafList;

    ListView view() const;
};

/// Pass 1: walk every group and count. Throws std::logic_error on stack overflow (cannot happen
/// with walkStackCapacity(depth); the check keeps it from ever being silent).
void countInteractionsCpu(const TreeView& tree, const GroupView& groups, WalkCounts& counts);

/// Exclusive scan of the counts into offsets; sizes the lists.
void scanCountsCpu(const WalkCounts& counts, InteractionLists& lists);

/// Pass 2: walk again and write each group's lists at its offsets. written (optional) receives
/// the lengths actually written per group (nodes, leaves), for checking against pass 1.
void writeInteractionsCpu(const TreeView& tree, const GroupView& groups, InteractionLists& lists,
                          std::vector<I2>* written = nullptr);


/// Body-node forces from the node lists: out[i] = (acc xyz, potential), G = 1, indexed like targets.
void bodyNodeForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, TargetView targets,
                       float eps2, F4* out);

/// Body-leaf (softened direct) forces from the leaf lists, indexed like targets.
void bodyLeafForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       TargetView targets, float eps2, F4* out);

} // namespace octwalk

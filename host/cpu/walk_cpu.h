#pragma once
/// @file walk_cpu.h
/// The CPU twin of device/walk_gpu.h: pass 1 (count), the scan, pass 2 (write), OpenMP over groups.
/// The same views as the device launchers (common/tree_view.h), pointing at host memory, and the
/// same common/walk.h walk, so the lists of the two backends are bit-identical.

#include <cstdint>
#include <vector>

#include "common/tree_view.h"

namespace octwalk {

/// Host storage of pass 1's output (one entry per group).
struct WalkCounts
{
    std::vector<int32_t> nodes, leaves;
    std::vector<int64_t> leafBodies;

    /// Sizes for numGroups groups (contents unspecified until pass 1 writes them).
    void resize(int32_t numGroups);
    CountsView view();
};

/// Host storage of the lists of all groups (offset arrays have numGroups + 1 entries).
struct InteractionLists
{
    std::vector<int64_t> nodeOffset, leafOffset;
    std::vector<int32_t> nodeList, leafList;

    /// Sizes the offsets for numGroups groups, before the scan.
    void resizeOffsets(int32_t numGroups);
    /// Sizes the lists to the totals in the last offsets, after the scan.
    void resizeLists();
    ListView view();
};

/// Pass 1: walks every group and writes counts.nodes/leaves/leafBodies[g].
/// @param[out] overflowGroup  1 + the highest group whose walk overflowed its stack, 0 when none did
///                            (never with the tree's true depth); the caller checks it after each pass
void countInteractionsCpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                          int32_t* overflowGroup);

/// Exclusive scan of the counts into lists.nodeOffset and lists.leafOffset (numGroups + 1 entries,
/// the last the total), in 64 bits; the list pointers are not read.
void scanCountsCpu(const CountsView& counts, const ListView& lists);

/// Pass 2: walks again and writes each group's entries at its offsets.
/// @param[in,out] overflowGroup  raised as in countInteractionsCpu
void writeInteractionsCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, int32_t* overflowGroup);

/// Throws std::logic_error naming the pass and the group when overflowGroup is not 0: the capacity
/// bound walkStackCapacity(depth) was wrong, or the tree's recorded depth was.
void checkWalkOverflow(const char* pass, int32_t overflowGroup);

} // namespace octwalk

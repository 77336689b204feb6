#pragma once
/// @file tree_walk.h
/// The CPU twin's evaluation of a packed tree that GravitySolver did not build (an essential tree from
/// another rank) for groups and targets that are not its own: the same steps as GravitySolver's CPU path
/// (host/cpu/walk_cpu.h: pass 1, the scan, pass 2; host/cpu/forces_cpu.h: body-node, body-leaf), so a
/// group meets exactly what it would meet in the solver.

#include <cstdint>
#include <vector>

#include "common/tree_view.h"
#include "host/cpu/walk_cpu.h"

namespace octwalk::mpi {

/// Working memory and results of evaluateTreeCpu, kept from call to call.
struct TreeWalkScratch
{
    WalkCounts counts;
    InteractionLists lists;
    std::vector<F4> nodeAcc, out;
};

/// Walks tree for every group and sums the forces on the targets.
/// @param[in]  tree     an isolated packed tree (its farField2 is used)
/// @param[in]  groups   the targets' groups: ranges into targets and boxes
/// @param[in]  bodies   the tree's bodies
/// @param[in]  targets  the points feeling the tree (areBodies only when they are the tree's own bodies)
/// @param[in]  eps2     squared softening
/// @param[out] s        s.out: (acc xyz, potential) with G = 1, indexed like targets; s.counts: pass 1's
///                      per-group counts; s.lists: the lists
/// @return the interaction totals (self included for bodies)
InteractionTotals evaluateTreeCpu(const TreeView& tree, const GroupView& groups, const BodyView& bodies,
                                  const TargetView& targets, float eps2, TreeWalkScratch& s);

} // namespace octwalk::mpi

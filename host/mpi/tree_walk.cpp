#include "host/mpi/tree_walk.h"

#include "host/cpu/forces_cpu.h"

namespace octwalk::mpi {

InteractionTotals evaluateTreeCpu(const TreeView& tree, const GroupView& groups, const BodyView& bodies,
                                  const TargetView& targets, float eps2, TreeWalkScratch& s)
{
    int32_t overflowGroup = 0;
    s.counts.resize(groups.numGroups);
    countInteractionsCpu(tree, groups, s.counts.view(), &overflowGroup);
    checkWalkOverflow("pass 1", overflowGroup);
    s.lists.resizeOffsets(groups.numGroups);
    scanCountsCpu(s.counts.view(), s.lists.view());
    s.lists.resizeLists();
    writeInteractionsCpu(tree, groups, s.lists.view(), &overflowGroup);
    checkWalkOverflow("pass 2", overflowGroup);
    s.nodeAcc.resize(size_t(targets.numTargets));
    s.out.resize(size_t(targets.numTargets));
    bodyNodeForcesCpu(tree, groups, s.lists.view(), targets, eps2, s.nodeAcc.data());
    bodyLeafForcesCpu(tree, groups, s.lists.view(), bodies, targets, eps2, s.nodeAcc.data(), s.out.data());
    return interactionTotals(groups, s.counts.view());
}

} // namespace octwalk::mpi

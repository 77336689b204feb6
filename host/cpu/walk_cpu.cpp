#include "host/cpu/walk_cpu.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/walk.h"

namespace octwalk {

void WalkCounts::resize(int32_t numGroups)
{
    nodes.resize(size_t(numGroups));
    leaves.resize(size_t(numGroups));
    leafBodies.resize(size_t(numGroups));
}

CountsView WalkCounts::view() { return {nodes.data(), leaves.data(), leafBodies.data(), int32_t(nodes.size())}; }

void InteractionLists::resizeOffsets(int32_t numGroups)
{
    nodeOffset.assign(size_t(numGroups) + 1, 0);
    leafOffset.assign(size_t(numGroups) + 1, 0);
    nodeList.clear();
    leafList.clear();
}

void InteractionLists::resizeLists()
{
    nodeList.resize(size_t(nodeOffset.back()));
    leafList.resize(size_t(leafOffset.back()));
}

ListView InteractionLists::view()
{
    return {nodeOffset.data(), leafOffset.data(), nodeList.data(), leafList.data(), int32_t(nodeOffset.size()) - 1};
}

void countInteractionsCpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                          int32_t* overflowGroup)
{
    int32_t numGroups = groups.numGroups;
    int32_t capacity  = walkStackCapacity(tree.depth);
    int32_t overflow  = 0;
#pragma omp parallel
    {
        std::vector<uint32_t> stack(capacity);
#pragma omp for schedule(dynamic, 16)
        for (int32_t g = 0; g < numGroups; ++g)
        {
            CountSink sink{tree.leafRange, tree.numInternal};
            if (walkGroup(tree, groups.center[g], groups.half[g], stack.data(), capacity, sink) != WalkStatus::Ok)
            {
#pragma omp critical
                overflow = std::max(overflow, g + 1);
            }
            counts.nodes[g]      = sink.nodes;
            counts.leaves[g]     = sink.leaves;
            counts.leafBodies[g] = sink.leafBodies;
        }
    }
    *overflowGroup = overflow;
}

void scanCountsCpu(const CountsView& counts, const ListView& lists)
{
    int64_t nodes = 0, leaves = 0;
    lists.nodeOffset[0] = 0;
    lists.leafOffset[0] = 0;
    for (int32_t g = 0; g < counts.numGroups; ++g)
    {
        nodes += counts.nodes[g];
        leaves += counts.leaves[g];
        lists.nodeOffset[g + 1] = nodes;
        lists.leafOffset[g + 1] = leaves;
    }
}

void writeInteractionsCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, int32_t* overflowGroup)
{
    int32_t numGroups = groups.numGroups;
    int32_t capacity  = walkStackCapacity(tree.depth);
    int32_t overflow  = 0;
#pragma omp parallel
    {
        std::vector<uint32_t> stack(capacity);
#pragma omp for schedule(dynamic, 16)
        for (int32_t g = 0; g < numGroups; ++g)
        {
            WriteSink sink{lists.nodeList + lists.nodeOffset[g], lists.leafList + lists.leafOffset[g]};
            if (walkGroup(tree, groups.center[g], groups.half[g], stack.data(), capacity, sink) != WalkStatus::Ok)
            {
#pragma omp critical
                overflow = std::max(overflow, g + 1);
            }
        }
    }
    *overflowGroup = std::max(*overflowGroup, overflow);
}

void checkWalkOverflow(const char* pass, int32_t overflowGroup)
{
    if (overflowGroup == 0) return;
    throw std::logic_error(std::string("walk stack overflow in ") + pass + " (group " +
                           std::to_string(overflowGroup - 1) + "): the tree is deeper than its recorded depth allows");
}

} // namespace octwalk

#include "host/walk_cpu.h"

#include <numeric>
#include <stdexcept>
#include <string>

#include "common/gravity.h"
#include "common/walk.h"

namespace octwalk {

ListView InteractionLists::view() const
{
    return {nodeOffset.data(), leafOffset.data(), nodeList.data(), leafList.data(), int32_t(nodeOffset.size()) - 1};
}

namespace {

void throwOverflow(int32_t group)
{
    throw std::logic_error("walk stack overflow in group " + std::to_string(group));
}

} // namespace

void countInteractionsCpu(const TreeView& tree, const GroupView& groups, WalkCounts& counts)
{
    int32_t numGroups = groups.numGroups;
    counts.nodes.assign(numGroups, 0);
    counts.leaves.assign(numGroups, 0);
    counts.leafBodies.assign(numGroups, 0);
    int32_t capacity = walkStackCapacity(tree.depth);
    int32_t overflowGroup = -1;
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
                overflowGroup = g;
            }
            counts.nodes[g]      = sink.nodes;
            counts.leaves[g]     = sink.leaves;
            counts.leafBodies[g] = sink.leafBodies;
        }
    }
    if (overflowGroup >= 0) throwOverflow(overflowGroup);
}

void scanCountsCpu(const WalkCounts& counts, InteractionLists& lists)
{
    size_t numGroups = counts.nodes.size();
    lists.nodeOffset.assign(numGroups + 1, 0);
    lists.leafOffset.assign(numGroups + 1, 0);
    std::inclusive_scan(counts.nodes.begin(), counts.nodes.end(), lists.nodeOffset.begin() + 1);
    std::inclusive_scan(counts.leaves.begin(), counts.leaves.end(), lists.leafOffset.begin() + 1);
    lists.nodeList.resize(lists.nodeOffset.back());
    lists.leafList.resize(lists.leafOffset.back());
}

void writeInteractionsCpu(const TreeView& tree, const GroupView& groups, InteractionLists& lists,
                          std::vector<I2>* written)
{
    int32_t numGroups = groups.numGroups;
    if (written) written->assign(numGroups, I2{0, 0});
    int32_t capacity = walkStackCapacity(tree.depth);
    int32_t overflowGroup = -1;
#pragma omp parallel
    {
        std::vector<uint32_t> stack(capacity);
#pragma omp for schedule(dynamic, 16)
        for (int32_t g = 0; g < numGroups; ++g)
        {
            int32_t* nodeBegin = lists.nodeList.data() + lists.nodeOffset[g];
            int32_t* leafBegin = lists.leafList.data() + lists.leafOffset[g];
            WriteSink sink{nodeBegin, leafBegin};
            if (walkGroup(tree, groups.center[g], groups.half[g], stack.data(), capacity, sink) != WalkStatus::Ok)
            {
#pragma omp critical
                overflowGroup = g;
            }
            if (written) (*written)[g] = {int32_t(sink.nodeOut - nodeBegin), int32_t(sink.leafOut - leafBegin)};
        }
    }
    if (overflowGroup >= 0) throwOverflow(overflowGroup);
}

void bodyNodeForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, TargetView targets,
                       float eps2, F4* out)
{
#pragma omp parallel for schedule(dynamic, 4)
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        int32_t first = groups.range[g].x, last = first + groups.range[g].y;
        for (int32_t i = first; i < last; ++i)
        {
            Vec3f target = xyz(targets.pos[i]);
            Vec3f acc{0, 0, 0};
            float pot = 0;
            for (int32_t k = lists.nodeOffset[g]; k < lists.nodeOffset[g + 1]; ++k)
            {
                int32_t n = lists.nodeList[k];
                F4 com    = tree.nodeCom[n];
                bodyNode(xyz(com) - target, com.w, unpackQuadrupole(tree.nodeQuad[2 * n], tree.nodeQuad[2 * n + 1]),
                         eps2, acc, pot);
            }
            out[i] = {acc.x, acc.y, acc.z, pot};
        }
    }
}

void bodyLeafForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       TargetView targets, float eps2, F4* out)
{
#pragma omp parallel for schedule(dynamic, 4)
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        int32_t first = groups.range[g].x, last = first + groups.range[g].y;
        for (int32_t i = first; i < last; ++i)
        {
            Vec3f target = xyz(targets.pos[i]);
            Vec3f acc{0, 0, 0};
            float pot = 0;
            for (int32_t k = lists.leafOffset[g]; k < lists.leafOffset[g + 1]; ++k)
            {
                I2 r = tree.leafRange[lists.leafList[k] - tree.numInternal];
                for (int32_t j = r.x; j < r.x + r.y; ++j)
                {
                    if (targets.areBodies && j == i) continue;
                    F4 s = bodies.posMass[j];
                    bodyBody(xyz(s) - target, s.w, eps2, acc, pot);
                }
            }
            out[i] = {acc.x, acc.y, acc.z, pot};
        }
    }
}

} // namespace octwalk

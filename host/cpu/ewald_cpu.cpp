#include "host/cpu/ewald_cpu.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "common/ewald.h"
#include "common/ewald_walk.h"
#include "host/cpu/lane_expansions.h"

namespace octwalk {

namespace {

/// A group's expansion by the warp walk (common/ewald_walk.h): the device's lanes stepped one after another,
/// each round's children pushed in lane order.
template<class LoadBody>
EwaldLocal warpWalkExpansion(const TreeView& tree, F4 groupCenter, F4 groupHalf, LoadBody loadBody,
                             LaneExpansions& lanes, std::vector<EwaldCell>& stack)
{
    constexpr int kLanes = LaneExpansions::kLanes;
    static_assert(kLanes == kEwaldWarpLanes, "one partial expansion a lane");
    lanes.clear();
    const Vec3f centreU  = ewaldCentreInBoxUnits(groupCenter, tree.periodic);
    const float boxMass  = tree.nodeCom[tree.rootEntry & ~kLeafBit].w;
    const EwaldCell root = {tree.rootEntry, 1.0f, {0.0f, 0.0f, 0.0f}};
    int32_t top          = 0;
    if (ewaldWarpLaneStep(tree, root, groupCenter, groupHalf, centreU, boxMass, loadBody, lanes.lane[0]))
    {
        stack[size_t(top++)] = root;
    }
    EwaldCell child[kLanes];
    bool opens[kLanes];
    while (top > 0)
    {
        const int32_t b    = top < kEwaldWarpParents ? top : kEwaldWarpParents;
        const int32_t base = top - b;
        for (int l = 0; l < kLanes; ++l)
        {
            const int q = l / 8;
            opens[l] =
                q < b && ewaldWarpChild(tree, stack[size_t(base + q)], l % 8, child[l]) &&
                ewaldWarpLaneStep(tree, child[l], groupCenter, groupHalf, centreU, boxMass, loadBody, lanes.lane[l]);
        }
        top = base;
        for (int l = 0; l < kLanes; ++l)
        {
            if (!opens[l]) continue;
            if (top >= kEwaldWarpStackCapacity) throw std::logic_error("Ewald warp walk: stack overflow");
            stack[size_t(top++)] = child[l];
        }
    }
    return lanes.reduce();
}

} // namespace

void ewaldGroupCorrectionCpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc)
{
    const PeriodicView& box = tree.periodic;
    if (!(box.boxSize > 0.0f) || shortRangeOn(box.shortRange)) return;
    const auto loadBody = [&bodies](int32_t j) { return bodies.posMass[j]; };
#pragma omp parallel
    {
        LaneExpansions lanes;
        std::vector<EwaldCell> stack(static_cast<size_t>(std::max(kEwaldWalkStackCapacity, kEwaldWarpStackCapacity)));
#pragma omp for schedule(dynamic, 4)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            if (!ewaldGroupExpands(groups.half[g], box)) continue;
            const Vec3f centre      = xyz(groups.center[g]);
            const int64_t nodeBegin = lists.nodeOffset[g], numNodes = lists.nodeOffset[g + 1] - nodeBegin;
            const int64_t leafBegin = lists.leafOffset[g], numEntries = numNodes + lists.leafOffset[g + 1] - leafBegin;
            EwaldLocal loc;
            if (ewaldGroupWalks(numEntries, box))
            {
                loc = box.walk.warp
                          ? warpWalkExpansion(tree, groups.center[g], groups.half[g], loadBody, lanes, stack)
                          : ewaldGroupExpansion(tree, groups.center[g], groups.half[g], loadBody, stack.data());
            }
            else
            {
                lanes.clear();
                for (int64_t k = 0; k < numEntries; ++k)
                {
                    const int32_t n =
                        k < numNodes ? lists.nodeList[nodeBegin + k] : lists.leafList[leafBegin + (k - numNodes)];
                    const bool leaf = k >= numNodes;
                    const I2 range  = leaf ? tree.leafRange[n - tree.numInternal] : I2{0, 0};
                    addEwaldListEntry(box, tree.nodeCom[n],
                                      unpackQuadrupole(tree.nodeQuad[2 * n], tree.nodeQuad[2 * n + 1]), leaf, range,
                                      centre, loadBody, lanes.lane[k % LaneExpansions::kLanes]);
                }
                loc = lanes.reduce();
            }
            const I2 range = groups.range[g];
            for (int32_t i = range.x; i < range.x + range.y; ++i)
            {
                Vec3f a{0, 0, 0};
                float pot = 0;
                evalEwaldLocal(box, loc, centre - xyz(targets.pos[i]), a, pot);
                const F4 o = acc[i];
                acc[i]     = {o.x + a.x, o.y + a.y, o.z + a.z, o.w + pot};
            }
        }
    }
}

} // namespace octwalk

#include "host/cpu/ewald_cpu.h"

#include "common/ewald.h"

namespace octwalk {

namespace {

/// The device's order of a group's expansion sum (device/ewald_gpu.cu): lane l of a warp adds the node
/// list's entries l, l + 32, .. and then the leaf list's leaves l, l + 32, .. (bodies in tree order); the
/// 32 partial expansions are reduced by a butterfly (l with l ^ 16, then ^ 8, .. ^ 1), so both backends
/// round the same sums.
struct LaneExpansions
{
    static constexpr int kLanes = 32;
    EwaldLocal lane[kLanes];

    void clear()
    {
        for (EwaldLocal& l : lane) l = zeroEwaldLocal();
    }

    EwaldLocal reduce() const
    {
        EwaldLocal v[kLanes], next[kLanes];
        for (int l = 0; l < kLanes; ++l) v[l] = lane[l];
        for (int stride = kLanes / 2; stride >= 1; stride /= 2)
        {
            for (int l = 0; l < kLanes; ++l)
            {
                next[l] = v[l];
                addEwaldLocal(next[l], v[l ^ stride]);
            }
            for (int l = 0; l < kLanes; ++l) v[l] = next[l];
        }
        return v[0];
    }
};

} // namespace

void ewaldGroupCorrectionCpu(const TreeView& tree, const GroupView& groups, const ListView& lists,
                             const BodyView& bodies, const TargetView& targets, F4* acc)
{
    const PeriodicView& box = tree.periodic;
    if (!(box.boxSize > 0.0f)) return;
    const SymTensor<float> none{0, 0, 0, 0, 0, 0};
#pragma omp parallel
    {
        LaneExpansions lanes;
#pragma omp for schedule(dynamic, 4)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            if (!ewaldGroupExpands(groups.half[g], box)) continue;
            const Vec3f centre = xyz(groups.center[g]);
            lanes.clear();
            const int64_t nodeBegin = lists.nodeOffset[g], leafBegin = lists.leafOffset[g];
            for (int64_t k = nodeBegin; k < lists.nodeOffset[g + 1]; ++k)
            {
                const int32_t n          = lists.nodeList[k];
                const F4 com             = tree.nodeCom[n];
                const SymTensor<float> q = unpackQuadrupole(tree.nodeQuad[2 * n], tree.nodeQuad[2 * n + 1]);
                addEwaldLocalTerm<true>(box, imageNearest(xyz(com), centre, box) - centre, com.w, q,
                                        lanes.lane[(k - nodeBegin) % LaneExpansions::kLanes]);
            }
            for (int64_t k = leafBegin; k < lists.leafOffset[g + 1]; ++k)
            {
                const I2 leaf = tree.leafRange[lists.leafList[k] - tree.numInternal];
                EwaldLocal& l = lanes.lane[(k - leafBegin) % LaneExpansions::kLanes];
                for (int32_t j = leaf.x; j < leaf.x + leaf.y; ++j)
                {
                    const F4 b = bodies.posMass[j];
                    addEwaldLocalTerm<false>(box, imageNearest(xyz(b), centre, box) - centre, b.w, none, l);
                }
            }
            const EwaldLocal loc = lanes.reduce();
            const I2 range       = groups.range[g];
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

#include "host/cpu/forces_cpu.h"

#include <vector>

#include "common/ewald.h"
#include "common/gravity.h"

namespace octwalk {

namespace {

/// One group's targets as structure-of-arrays, so the force loops run over targets in the inner
/// loop (vectorisable) while every target still sums its list in list order, as the GPU does.
struct GroupAccumulator
{
    std::vector<float> x, y, z, ax, ay, az, pot;

    void load(const TargetView& targets, I2 range)
    {
        for (auto* v : {&x, &y, &z, &ax, &ay, &az, &pot}) v->assign(range.y, 0.0f);
        for (int32_t k = 0; k < range.y; ++k)
        {
            F4 t = targets.pos[range.x + k];
            x[k] = t.x;
            y[k] = t.y;
            z[k] = t.z;
        }
    }

    void store(I2 range, F4* out) const
    {
        for (int32_t k = 0; k < range.y; ++k) out[range.x + k] = {ax[k], ay[k], az[k], pot[k]};
    }

    /// out = base + this group's sums (the device's bodyLeafKernel ends the same way).
    void storeSum(I2 range, const F4* base, F4* out) const
    {
        for (int32_t k = 0; k < range.y; ++k)
        {
            F4 b             = base[range.x + k];
            out[range.x + k] = {b.x + ax[k], b.y + ay[k], b.z + az[k], b.w + pot[k]};
        }
    }
};

/// Adds one source (a node when Node, else a body) to every target of the group. Periodic: the
/// source's image nearest to each target, plus the Ewald correction of the source's whole mass (for the
/// target itself, too: that is its self term, while the Newtonian pull is skipped by a zero mass).
template<bool Node, bool Periodic>
inline void addSource(GroupAccumulator& a, int32_t n, F4 src, const SymTensor<float>& q, float eps2, int32_t skip,
                      const PeriodicView& box)
{
    const float* __restrict__ x = a.x.data();
    const float* __restrict__ y = a.y.data();
    const float* __restrict__ z = a.z.data();
    float* __restrict__ ax      = a.ax.data();
    float* __restrict__ ay      = a.ay.data();
    float* __restrict__ az      = a.az.data();
    float* __restrict__ phi     = a.pot.data();
    const float sx = src.x, sy = src.y, sz = src.z, sm = src.w;
    const SymTensor<float> qq = q;
    // The target arrays never overlap; without this GCC needs too many run-time alias checks.
#pragma GCC ivdep
    for (int32_t k = 0; k < n; ++k)
    {
        // The term is formed from zero and then added: bit-identical to accumulating in place
        // (0 + t == t, p + (0 - t) == p - t), and it lets the compiler vectorise over targets.
        Vec3f acc{0.0f, 0.0f, 0.0f};
        float pot = 0.0f;
        Vec3f d{sx - x[k], sy - y[k], sz - z[k]};
        // Skipping itself by a zero mass keeps the loop branch-free; the sum is unchanged.
        if (Node && Periodic) bodyNodePeriodic(d, sm, qq, eps2, box, acc, pot);
        else if (Node) bodyNode(d, sm, qq, eps2, acc, pot);
        else if (Periodic) bodyBodyPeriodic(d, k == skip ? 0.0f : sm, sm, eps2, box, acc, pot);
        else bodyBody(d, k == skip ? 0.0f : sm, eps2, acc, pot);
        ax[k] += acc.x;
        ay[k] += acc.y;
        az[k] += acc.z;
        phi[k] += pot;
    }
}

template<bool Node>
inline void addSource(GroupAccumulator& a, int32_t n, F4 src, const SymTensor<float>& q, float eps2, int32_t skip,
                      const PeriodicView& box)
{
    if (box.boxSize > 0.0f) addSource<Node, true>(a, n, src, q, eps2, skip, box);
    else addSource<Node, false>(a, n, src, q, eps2, skip, box);
}

/// Adds a group's Ewald expansion (about centre c) to every target of the group.
inline void addEwaldLocalToTargets(GroupAccumulator& a, int32_t n, const EwaldLocal& loc, Vec3f c,
                                   const PeriodicView& box)
{
    for (int32_t k = 0; k < n; ++k)
    {
        Vec3f acc{0.0f, 0.0f, 0.0f};
        float pot = 0.0f;
        evalEwaldLocal(box, loc, {c.x - a.x[k], c.y - a.y[k], c.z - a.z[k]}, acc, pot);
        a.ax[k] += acc.x;
        a.ay[k] += acc.y;
        a.az[k] += acc.z;
        a.pot[k] += pot;
    }
}

/// The device's order of a group's expansion sum (device/forces_gpu.cu): lane l of a warp adds the terms
/// l, l + 32, l + 64, .. of the list in order, and the 32 partial expansions are reduced pairwise by a
/// butterfly (l with l ^ 16, then ^ 8, .. ^ 1), so both backends round the same sums.
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
        EwaldLocal v[kLanes];
        for (int l = 0; l < kLanes; ++l) v[l] = lane[l];
        for (int stride = kLanes / 2; stride >= 1; stride /= 2)
        {
            EwaldLocal next[kLanes];
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

void bodyNodeForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const TargetView& targets,
                       float eps2, F4* nodeAcc)
{
#pragma omp parallel
    {
        GroupAccumulator a;
        LaneExpansions lanes;
        const PeriodicView& box = tree.periodic;
#pragma omp for schedule(dynamic, 4)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            I2 range = groups.range[g];
            a.load(targets, range);
            if (box.boxSize > 0.0f && ewaldGroupExpands(groups.half[g], box))
            {
                // The image of each node nearest to the group's centre for every body; its correction in
                // the group's expansion (common/ewald.h).
                const Vec3f c = xyz(groups.center[g]);
                lanes.clear();
                for (int64_t k = lists.nodeOffset[g]; k < lists.nodeOffset[g + 1]; ++k)
                {
                    int32_t n                 = lists.nodeList[k];
                    F4 com                    = tree.nodeCom[n];
                    const SymTensor<float> q  = unpackQuadrupole(tree.nodeQuad[2 * n], tree.nodeQuad[2 * n + 1]);
                    Vec3f image               = imageNearest(xyz(com), c, box);
                    addSource<true, false>(a, range.y, {image.x, image.y, image.z, com.w}, q, eps2, -1, box);
                    addEwaldLocalTerm<true>(box, image - c, com.w, q,
                                            lanes.lane[(k - lists.nodeOffset[g]) % LaneExpansions::kLanes]);
                }
                addEwaldLocalToTargets(a, range.y, lanes.reduce(), c, box);
                a.store(range, nodeAcc);
                continue;
            }
            for (int64_t k = lists.nodeOffset[g]; k < lists.nodeOffset[g + 1]; ++k)
            {
                int32_t n = lists.nodeList[k];
                addSource<true>(a, range.y, tree.nodeCom[n],
                                unpackQuadrupole(tree.nodeQuad[2 * n], tree.nodeQuad[2 * n + 1]), eps2, -1,
                                tree.periodic);
            }
            a.store(range, nodeAcc);
        }
    }
}

void bodyLeafForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       const TargetView& targets, float eps2, const F4* nodeAcc, F4* acc)
{
    const SymTensor<float> none{0, 0, 0, 0, 0, 0};
#pragma omp parallel
    {
        GroupAccumulator a;
        LaneExpansions lanes;
        const PeriodicView& box = tree.periodic;
#pragma omp for schedule(dynamic, 4)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            I2 range = groups.range[g];
            a.load(targets, range);
            if (box.boxSize > 0.0f && ewaldGroupExpands(groups.half[g], box))
            {
                // Each body's image nearest to the group's centre, its correction in the group's expansion
                // (a target's own term there is its self term); the bodies in the device's order: list
                // order, tree order within a leaf, lane = position in that sequence mod 32.
                const Vec3f c = xyz(groups.center[g]);
                lanes.clear();
                int64_t f = 0;
                for (int64_t k = lists.leafOffset[g]; k < lists.leafOffset[g + 1]; ++k)
                {
                    // The device flattens the list 32 leaves at a time, counting bodies from 0 in each chunk.
                    if ((k - lists.leafOffset[g]) % LaneExpansions::kLanes == 0) f = 0;
                    I2 r = tree.leafRange[lists.leafList[k] - tree.numInternal];
                    for (int32_t j = r.x; j < r.x + r.y; ++j, ++f)
                    {
                        int32_t skip = targets.areBodies ? j - range.x : -1;
                        F4 b         = bodies.posMass[j];
                        Vec3f image  = imageNearest(xyz(b), c, box);
                        addSource<false, false>(a, range.y, {image.x, image.y, image.z, b.w}, none, eps2, skip, box);
                        addEwaldLocalTerm<false>(box, image - c, b.w, none, lanes.lane[f % LaneExpansions::kLanes]);
                    }
                }
                addEwaldLocalToTargets(a, range.y, lanes.reduce(), c, box);
                a.storeSum(range, nodeAcc, acc);
                continue;
            }
            for (int64_t k = lists.leafOffset[g]; k < lists.leafOffset[g + 1]; ++k)
            {
                I2 r = tree.leafRange[lists.leafList[k] - tree.numInternal];
                for (int32_t j = r.x; j < r.x + r.y; ++j)
                {
                    // A body skips itself by index; probes skip nothing.
                    int32_t skip = targets.areBodies ? j - range.x : -1;
                    addSource<false>(a, range.y, bodies.posMass[j], none, eps2, skip, tree.periodic);
                }
            }
            a.storeSum(range, nodeAcc, acc);
        }
    }
}

} // namespace octwalk

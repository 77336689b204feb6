#include "host/cpu/forces_cpu.h"

#include <cmath>
#include <vector>

#include "common/ewald.h"
#include "common/far_field.h"
#include "common/gravity.h"
#include "host/cpu/ewald_cpu.h"
#include "host/cpu/lane_expansions.h"

namespace octwalk {

namespace {

/// One group's targets as structure-of-arrays, so the force loops run over targets in the inner
/// loop (vectorisable) while every target still sums its list in list order, as the GPU does.
struct GroupAccumulator
{
    std::vector<float> x, y, z, ax, ay, az, pot;
    /// TreePM's pairs (addShortRangeSource): each target's offset from the source, the targets within the cutoff
    /// with their offsets packed, and their pairs' pulls; sized with the group's targets (load).
    std::vector<float> dx, dy, dz, nearDx, nearDy, nearDz, pairAx, pairAy, pairAz, pairPot;
    std::vector<int32_t> near;

    void load(const TargetView& targets, I2 range)
    {
        for (auto* v : {&x, &y, &z, &ax, &ay, &az, &pot}) v->assign(range.y, 0.0f);
        for (auto* v : {&dx, &dy, &dz, &nearDx, &nearDy, &nearDz, &pairAx, &pairAy, &pairAz, &pairPot})
            v->resize(size_t(range.y));
        near.resize(size_t(range.y));
        for (int32_t k = 0; k < range.y; ++k)
        {
            F4 t = targets.pos[range.x + k];
            x[k] = t.x;
            y[k] = t.y;
            z[k] = t.z;
        }
    }

    /// Adds a far-field expansion about centre (group radius 1 / invR) to every target.
    void addFarField(const FarLocal& loc, Vec3f centre, float invR)
    {
        for (size_t k = 0; k < x.size(); ++k)
        {
            Vec3f acc{0.0f, 0.0f, 0.0f};
            float phi = 0.0f;
            evalFarField(loc, centre - Vec3f{x[k], y[k], z[k]}, invR, acc, phi);
            ax[k] += acc.x;
            ay[k] += acc.y;
            az[k] += acc.z;
            pot[k] += phi;
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
    // An isolated node once per node as bodyNodePrepared takes it (the device kernel does the same when
    // it stages the node); the periodic formula prepares its own.
    const SymTensor<float> qq = Node && !Periodic ? prepareQuadrupole(q, eps2) : q;
    const float eps2Floor     = nodeSoftening(eps2);
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
        if (Node && Periodic) bodyNodePeriodic(d, sm, qq, eps2, box, false, acc, pot);
        else if (Node) bodyNodePrepared(d, sm, qq, eps2Floor, acc, pot);
        else if (Periodic) bodyBodyPeriodic(d, k == skip ? 0.0f : sm, sm, eps2, box, acc, pot);
        else bodyBody(d, k == skip ? 0.0f : sm, eps2, acc, pot);
        ax[k] += acc.x;
        ay[k] += acc.y;
        az[k] += acc.z;
        phi[k] += pot;
    }
}

/// The image offset of d in (-L, L) nearest to 0 for |d| below L/2, branch-free so that the loop over targets
/// vectorises: the image nearestImage takes for every offset within TreePM's cutoff (below L/2), bit for bit (the
/// same single subtraction); it may take the other image at |d| = L/2, where no pair is within the cutoff.
inline float wrapBelowHalf(float d, float boxSize, float halfBox)
{
    const float up   = d < -halfBox ? boxSize : 0.0f;
    const float down = d > halfBox ? boxSize : 0.0f;
    return d + up - down;
}

/// TreePM's pull of one source (a node when Node, else a body) on every target of the group (a body skips itself):
/// a vectorised pass finds each target's offset (as staged when the group shifted its sources once, else the
/// nearest image: shortRangeOffset) and the targets within the cutoff, then bodyNodeShortRange or
/// bodyBodyShortRange adds each of those. The same pairs and terms as addSource through bodyNodePeriodic and
/// bodyBodyPeriodic, without the branch and the three floors per target that most pairs of a short-range list,
/// beyond the cutoff, would pay for nothing.
template<bool Node>
inline void addShortRangeSource(GroupAccumulator& a, int32_t n, F4 src, const SymTensor<float>& q, float eps2,
                                int32_t skip, const PeriodicView& box, bool shiftedOnce)
{
    const ShortRangeView& s     = box.shortRange;
    const float* __restrict__ x = a.x.data();
    const float* __restrict__ y = a.y.data();
    const float* __restrict__ z = a.z.data();
    float* __restrict__ dx      = a.dx.data();
    float* __restrict__ dy      = a.dy.data();
    float* __restrict__ dz      = a.dz.data();
    // Shifted once, the offsets stand as they are: no pair within the cutoff wraps (shortRangeShiftsOnce).
    const float L = shiftedOnce ? 0.0f : box.boxSize, half = shiftedOnce ? HUGE_VALF : 0.5f * box.boxSize;
#pragma GCC ivdep
    for (int32_t k = 0; k < n; ++k)
    {
        dx[k] = wrapBelowHalf(src.x - x[k], L, half);
        dy[k] = wrapBelowHalf(src.y - y[k], L, half);
        dz[k] = wrapBelowHalf(src.z - z[k], L, half);
    }
    // The targets within the cutoff, their offsets packed side by side: the pairs' loop then reads plain arrays,
    // and the compiler vectorises it (a pair's arithmetic is a long chain; one at a time, each waits on the last).
    int32_t count              = 0;
    int32_t* __restrict__ near = a.near.data();
    float* __restrict__ nx     = a.nearDx.data();
    float* __restrict__ ny     = a.nearDy.data();
    float* __restrict__ nz     = a.nearDz.data();
    for (int32_t k = 0; k < n; ++k)
    {
        near[count] = k;
        nx[count]   = dx[k];
        ny[count]   = dy[k];
        nz[count]   = dz[k];
        count += shortRangeDistance2({dx[k], dy[k], dz[k]}) < s.cutoff2 ? 1 : 0;
    }
    float* __restrict__ px = a.pairAx.data();
    float* __restrict__ py = a.pairAy.data();
    float* __restrict__ pz = a.pairAz.data();
    float* __restrict__ pp = a.pairPot.data();
    const float mass       = src.w;
#pragma GCC ivdep
    for (int32_t j = 0; j < count; ++j)
    {
        Vec3f acc{0.0f, 0.0f, 0.0f};
        float pot = 0.0f;
        if (Node) bodyNodeShortRange({nx[j], ny[j], nz[j]}, mass, q, eps2, s, acc, pot);
        else
        {
            const Vec3f d{nx[j], ny[j], nz[j]};
            bodyBodyShortRangeWithinCutoff(d, shortRangeDistance2(d), near[j] == skip ? 0.0f : mass, eps2, s, acc, pot);
        }
        px[j] = acc.x;
        py[j] = acc.y;
        pz[j] = acc.z;
        pp[j] = pot;
    }
    for (int32_t j = 0; j < count; ++j)
    {
        const size_t k = size_t(near[j]);
        a.ax[k] += px[j];
        a.ay[k] += py[j];
        a.az[k] += pz[j];
        a.pot[k] += pp[j];
    }
}

template<bool Node>
inline void addSource(GroupAccumulator& a, int32_t n, F4 src, const SymTensor<float>& q, float eps2, int32_t skip,
                      const PeriodicView& box, bool shiftedOnce)
{
    if (box.boxSize > 0.0f && shortRangeOn(box.shortRange))
        addShortRangeSource<Node>(a, n, src, q, eps2, skip, box, shiftedOnce);
    else if (box.boxSize > 0.0f) addSource<Node, true>(a, n, src, q, eps2, skip, box);
    else addSource<Node, false>(a, n, src, q, eps2, skip, box);
}

/// How a group meets its sources in a periodic box: a group that ewaldGroupExpands takes each source's
/// image nearest to its centre with the isolated formula (its correction comes from the group's expansion,
/// ewald_cpu.h); a larger one the nearest image per target and the per-interaction correction. Under TreePM a
/// group that shortRangeShiftsOnce takes the image nearest to its centre too, others the nearest image per pair.
struct GroupImages
{
    bool expand;
    bool shiftedOnce; ///< each source taken at its image nearest to centre (expand, or shortRangeShiftsOnce)
    Vec3f centre;
    PeriodicView box; ///< what the force formulas get: isolated when expand

    GroupImages(const GroupView& groups, int32_t g, const PeriodicView& periodic)
        : expand(periodic.boxSize > 0.0f && ewaldGroupExpands(groups.half[g], periodic)),
          shiftedOnce(expand || (periodic.boxSize > 0.0f && shortRangeShiftsOnce(groups.half[g], periodic))),
          centre(xyz(groups.center[g])), box(expand ? PeriodicView{nullptr, 0, 0.0f, 0.0f} : periodic)
    {}

    F4 source(F4 p, const PeriodicView& periodic) const
    {
        if (!shiftedOnce) return p;
        Vec3f image = imageNearest(xyz(p), centre, periodic);
        return {image.x, image.y, image.z, p.w};
    }
};

} // namespace

void bodyNodeForcesCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const TargetView& targets,
                       float eps2, F4* nodeAcc)
{
    const bool periodic = tree.periodic.boxSize > 0.0f;
#pragma omp parallel
    {
        GroupAccumulator a;
        LaneExpansions far;
#pragma omp for schedule(dynamic, 4)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            I2 range = groups.range[g];
            a.load(targets, range);
            const GroupImages images(groups, g, tree.periodic);
            const F4 center = groups.center[g], half = groups.half[g];
            const float invR = 1.0f / farFieldScale(half), eps2R = eps2 * invR * invR;
            const float farField2 = groupFarField2(tree.farField2, periodic, images.shiftedOnce, half, tree.periodic);
            const float farSize2  = farSizeDistance2(tree.periodic);
            bool anyFar           = false;
            if (farField2 > 0.0f) far.clear();
            const int64_t begin = lists.nodeOffset[g];
            for (int64_t k = begin; k < lists.nodeOffset[g + 1]; ++k)
            {
                int32_t n                = lists.nodeList[k];
                const F4 com             = images.source(tree.nodeCom[n], tree.periodic);
                const SymTensor<float> q = unpackQuadrupole(tree.nodeQuad[2 * n], tree.nodeQuad[2 * n + 1]);
                // The device's lane l takes entries l, l + 32, .. of the list (device/forces_gpu.cu).
                if (farFromGroup(com, center, half, farField2, eps2, farSize2))
                {
                    addNodeToFarField(xyz(com) - xyz(center), com.w, q, eps2, invR, eps2R, tree.periodic,
                                      far.lane[(k - begin) % LaneExpansions::kLanes]);
                    anyFar = true;
                    continue;
                }
                addSource<true>(a, range.y, com, q, eps2, -1, images.box, images.shiftedOnce);
            }
            if (anyFar) a.addFarField(far.reduce(), xyz(center), invR);
            a.store(range, nodeAcc);
        }
    }
}

FarFieldCounts farFieldCountsCpu(const TreeView& tree, const GroupView& groups, const ListView& lists, float eps2)
{
    FarFieldCounts c;
    if (!(tree.farField2 > 0.0f)) return c;
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        const GroupImages images(groups, g, tree.periodic);
        const float farField2 = groupFarField2(tree.farField2, tree.periodic.boxSize > 0.0f, images.shiftedOnce,
                                               groups.half[g], tree.periodic);
        const float farSize2  = farSizeDistance2(tree.periodic);
        int64_t far           = 0;
        for (int64_t k = lists.nodeOffset[g]; k < lists.nodeOffset[g + 1]; ++k)
        {
            const F4 com = images.source(tree.nodeCom[lists.nodeList[k]], tree.periodic);
            far += farFromGroup(com, groups.center[g], groups.half[g], farField2, eps2, farSize2);
        }
        c.entries += far;
        c.interactions += far * groups.range[g].y;
    }
    return c;
}

void bodyLeafForcesCpu(const TreeView& givenTree, const GroupView& groups, const ListView& lists,
                       const BodyView& bodies, const TargetView& targets, float eps2, const F4* nodeAcc, F4* acc)
{
    const SymTensor<float> none{0, 0, 0, 0, 0, 0};
    // TreePM's pairs read the pair table of this eps2.
    TreeView tree = givenTree;
    std::vector<F4> pairTable;
    if (tree.periodic.boxSize > 0.0f && shortRangeOn(tree.periodic.shortRange))
    {
        pairTable.resize(kShortRangePairTableWords);
        fillShortRangePairTable(tree.periodic.shortRange, eps2, pairTable.data());
        tree.periodic.shortRange = withShortRangePairTable(tree.periodic.shortRange, eps2, pairTable.data());
    }
#pragma omp parallel
    {
        GroupAccumulator a;
#pragma omp for schedule(dynamic, 4)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            I2 range = groups.range[g];
            a.load(targets, range);
            const GroupImages images(groups, g, tree.periodic);
            // TreePM: a body beyond reach of the group's box adds nothing to any target, as the device's tiles
            // leave it out (shortRangeBodyOutOfReach).
            const bool cull = tree.periodic.boxSize > 0.0f && shortRangeOn(tree.periodic.shortRange);
            for (int64_t k = lists.leafOffset[g]; k < lists.leafOffset[g + 1]; ++k)
            {
                I2 r = tree.leafRange[lists.leafList[k] - tree.numInternal];
                for (int32_t j = r.x; j < r.x + r.y; ++j)
                {
                    if (cull &&
                        shortRangeBodyOutOfReach(boxPointDistance2Periodic(xyz(groups.center[g]), xyz(groups.half[g]),
                                                                           xyz(bodies.posMass[j]), tree.periodic),
                                                 tree.periodic.shortRange, tree.periodic.boxSize))
                        continue;
                    // A body skips itself by index; probes skip nothing.
                    int32_t skip = targets.areBodies ? j - range.x : -1;
                    addSource<false>(a, range.y, images.source(bodies.posMass[j], tree.periodic), none, eps2, skip,
                                     images.box, images.shiftedOnce);
                }
            }
            a.storeSum(range, nodeAcc, acc);
        }
    }
    ewaldGroupCorrectionCpu(tree, groups, lists, bodies, targets, acc);
}

} // namespace octwalk

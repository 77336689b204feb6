#include "host/tree/packed_tree.h"

#include <algorithm>
#include <cmath>

#include "common/mac.h"
#include "host/core/parallel.h"
#include "host/tree/bounds.h"

namespace octwalk {

TreeView PackedTree::treeView() const
{
    return {children.data(), nodeMac.data(), nodeCom.data(), nodeQuad.data(), leafRange.data(),
            numInternal,     numLeaves,      rootEntry,      depth,           periodic};
}

GroupView PackedTree::groupView() const
{
    return {groupRange.data(), groupCenter.data(), groupHalf.data(), int32_t(groupRange.size())};
}

BodyView PackedTree::bodyView() const { return {bodies.data(), int32_t(bodies.size())}; }

namespace {

/// Packed index of every host cell: internal cells first, then leaves, both breadth-first. Counted
/// per static chunk of cells in parallel, then offset chunk by chunk (integers: exact for any split).
void packedIndices(const OctreeCells& c, std::vector<int32_t>& index, int32_t& numInternal)
{
    const int32_t n = c.size();
    index.resize(n);
    std::vector<int32_t> internalBefore(size_t(maxThreads()) + 1, 0);
    int numChunks = 1;
#pragma omp parallel
    {
        const int t = threadIndex();
#pragma omp single
        numChunks     = threadCount();
        const Chunk r = chunkOf(n, t, numChunks);
        int32_t count = 0;
        for (int64_t i = r.begin; i < r.end; ++i) count += !c.isLeaf[i];
        internalBefore[t + 1] = count;
#pragma omp barrier
#pragma omp single
        for (int u = 0; u < numChunks; ++u) internalBefore[u + 1] += internalBefore[u];
        const int32_t totalInternal = internalBefore[numChunks];
        int32_t internal            = internalBefore[t];
        int32_t leaf                = totalInternal + int32_t(r.begin) - internal;
        for (int64_t i = r.begin; i < r.end; ++i) index[i] = c.isLeaf[i] ? leaf++ : internal++;
    }
    numInternal = internalBefore[numChunks];
}

uint32_t childEntry(const OctreeCells& c, const std::vector<int32_t>& index, int32_t cell)
{
    if (cell < 0) return kEmptyChild;
    return c.isLeaf[cell] ? (kLeafBit | uint32_t(index[cell])) : uint32_t(index[cell]);
}

F4 toF4(Vec3d v, double w) { return {float(v.x), float(v.y), float(v.z), float(w)}; }

/// Squared MAC radius of host cell i from its tight box and centre of mass.
float cellMacRadius2(const Multipoles& mp, int32_t i, Mac mac, float invTheta)
{
    Vec3d center = 0.5 * (mp.boxMin[i] + mp.boxMax[i]);
    Vec3d extent = mp.boxMax[i] - mp.boxMin[i];
    double side  = std::max({extent.x, extent.y, extent.z});
    Vec3d offset = mp.com[i] - center;
    float delta  = float(std::sqrt(dot(offset, offset)));
    return macRadius2(mac, float(side), delta, invTheta);
}

} // namespace

void packTree(const HostTree& t, const Parameters& p, PackedTree& out)
{
    const OctreeCells& c        = t.cells;
    const Multipoles& mp        = t.poles;
    int32_t numCells            = c.size();
    std::vector<int32_t>& index = out.cellIndex;
    packedIndices(c, index, out.numInternal);
    out.numLeaves = numCells - out.numInternal;
    out.depth     = c.depth;
    out.rootEntry = childEntry(c, index, 0);

    out.children.resize(2 * size_t(out.numInternal));
    out.nodeMac.resize(numCells);
    out.nodeCom.resize(numCells);
    out.nodeQuad.resize(2 * size_t(numCells));
    out.leafRange.resize(out.numLeaves);

    float invTheta  = float(1.0 / p.opening_angle);
    float quadScale = p.use_quadrupole ? 1.0f : 0.0f;
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < numCells; ++i)
    {
        int32_t n = index[i];
        if (c.isLeaf[i])
        {
            out.leafRange[n - out.numInternal] = {c.first[i], c.count[i]};
        }
        else
        {
            const auto& ch          = c.child[i];
            out.children[2 * n]     = {childEntry(c, index, ch[0]), childEntry(c, index, ch[1]),
                                       childEntry(c, index, ch[2]), childEntry(c, index, ch[3])};
            out.children[2 * n + 1] = {childEntry(c, index, ch[4]), childEntry(c, index, ch[5]),
                                       childEntry(c, index, ch[6]), childEntry(c, index, ch[7])};
        }
        out.nodeCom[n]             = toF4(mp.com[i], mp.mass[i]);
        out.nodeMac[n]             = toF4(mp.com[i], cellMacRadius2(mp, i, p.mac, invTheta));
        const SymTensor<double>& q = mp.quad[i];
        out.nodeQuad[2 * n]        = {quadScale * float(q.xx), quadScale * float(q.yy), quadScale * float(q.zz),
                                      quadScale * float(q.xy)};
        out.nodeQuad[2 * n + 1]    = {quadScale * float(q.xz), quadScale * float(q.yz), 0.0f, 0.0f};
    }

    size_t n = t.pos.size();
    out.bodies.resize(n);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < int64_t(n); ++k)
    {
        out.bodies[k] = toF4(t.pos[k], t.mass[k]);
    }
    out.groupRange.assign(t.groups.begin(), t.groups.end());
    out.groupCenter.resize(t.groups.size());
    out.groupHalf.resize(t.groups.size());
    groupBoxes(out.bodies.data(), out.groupRange.data(), int64_t(t.groups.size()), out.groupCenter.data(),
               out.groupHalf.data());
}

void groupBoxes(const F4* bodies, const I2* ranges, int64_t numGroups, F4* center, F4* half)
{
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g)
    {
        const Box<F4> box = boundingBox(bodies + ranges[g].x, ranges[g].y);
        const F4& lo      = box.lo;
        const F4& hi      = box.hi;
        // Centre and half-size are rounded outward so the float box still contains every body.
        Vec3f c{0.5f * (lo.x + hi.x), 0.5f * (lo.y + hi.y), 0.5f * (lo.z + hi.z)};
        auto halfWidth = [](float cc, float a, float b) {
            float h = std::max(cc - a, b - cc);
            return std::nextafter(h, HUGE_VALF);
        };
        center[g] = {c.x, c.y, c.z, 0.0f};
        half[g]   = {halfWidth(c.x, lo.x, hi.x), halfWidth(c.y, lo.y, hi.y), halfWidth(c.z, lo.z, hi.z), 0.0f};
    }
}

void packMacRadii(const HostTree& t, Mac mac, double theta, PackedTree& out)
{
    const int32_t numCells = t.cells.size();
    const float invTheta   = float(1.0 / theta);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < numCells; ++i)
    {
        out.nodeMac[out.cellIndex[i]].w = cellMacRadius2(t.poles, i, mac, invTheta);
    }
}

void relativeProbes(const PackedTree& packed, std::vector<F4>& probes, std::vector<I2>& ranges)
{
    const int64_t numGroups = int64_t(packed.groupRange.size());
    probes.resize(size_t(numGroups));
    ranges.resize(size_t(numGroups));
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g)
    {
        const F4 c = packed.groupCenter[g];
        probes[g]  = {c.x, c.y, c.z, 0.0f};
        ranges[g]  = {int32_t(g), 1};
    }
}

void setRelativeGroupScales(const F4* accPot, const I2* ranges, PackedTree& packed)
{
    const int64_t numGroups = int64_t(packed.groupRange.size());
    if (numGroups == 0) return;
    std::vector<float> worst(size_t(numGroups), 0.0f);
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g)
    {
        const I2 r = ranges[g];
        for (int32_t k = r.x; k < r.x + r.y; ++k) worst[g] = std::max(worst[g], cancellation(accPot[k]));
    }
    std::vector<float> sorted = worst;
    auto middle               = sorted.begin() + numGroups / 2;
    std::nth_element(sorted.begin(), middle, sorted.end());
    const float ref = *middle;
    if (!(ref > 0.0f) || !std::isfinite(ref)) return; // nothing to compare with: theta everywhere
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g)
    {
        packed.groupHalf[g].w = relativeGroupScale(worst[g], ref);
    }
}

} // namespace octwalk

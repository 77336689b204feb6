#include "host/tree/packed_tree.h"
#include "host/tree/room.h"

#include <algorithm>
#include <cmath>

#include "common/mac.h"
#include "common/refit.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/tree/bounds.h"

namespace octwalk {

TreeView PackedTree::treeView() const
{
    return {children.data(), nodeMac.data(), nodeCom.data(), nodeQuad.data(), leafRange.data(), numInternal,
            numLeaves,       rootEntry,      depth,          periodic,        farField2};
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
    sizeForOverwrite(index, size_t(n));
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

/// internalLevelFirst[L]: internal nodes at levels below L (cells are breadth-first, so levels are
/// sorted, and packed internal indices follow the cell order).
void internalLevels(const OctreeCells& c, const std::vector<int32_t>& index, int32_t numInternal,
                    std::vector<int32_t>& internalLevelFirst)
{
    internalLevelFirst.resize(size_t(c.depth) + 2);
    for (int32_t level = 0; level <= c.depth + 1; ++level)
    {
        const int32_t cell = int32_t(std::lower_bound(c.level.begin(), c.level.end(), level) - c.level.begin());
        if (cell == c.size()) internalLevelFirst[level] = numInternal;
        else internalLevelFirst[level] = c.isLeaf[cell] ? cell - (index[cell] - numInternal) : index[cell];
    }
}

/// The moments of host cell i, as packNode and nodeMacRadius2 take them.
Moments cellMoments(const Multipoles& mp, int32_t i)
{
    return {mp.mass[i], mp.com[i], mp.quad[i], mp.boxMin[i], mp.boxMax[i]};
}

/// Whether groups, in order, cover the bodies [0, n) exactly (as makeGroups leaves them).
bool groupsTileBodies(const std::vector<I2>& groups, int64_t n)
{
    const int64_t numGroups = int64_t(groups.size());
    if (numGroups == 0) return n == 0;
    const int64_t gap = firstIndexWhere(numGroups, [&groups](int64_t g) {
        return groups[g].y < 0 || groups[g].x != (g == 0 ? 0 : groups[g - 1].x + groups[g - 1].y);
    });
    return gap == numGroups && int64_t(groups.back().x) + groups.back().y == n;
}

/// The float bodies, the group ranges and the groups' boxes. When the groups tile the bodies, one pass
/// over the groups converts each group's bodies and boxes them while they are in cache.
void packBodiesAndGroups(const HostTree& t, PackedTree& out)
{
    const int64_t n         = int64_t(t.pos.size());
    const int64_t numGroups = int64_t(t.groups.size());
    out.bodies.resize(size_t(n));
    sizeForOverwrite(out.groupRange, size_t(numGroups));
    sizeForOverwrite(out.groupCenter, size_t(numGroups));
    sizeForOverwrite(out.groupHalf, size_t(numGroups));
    F4* bodies = out.bodies.data();
    if (groupsTileBodies(t.groups, n))
    {
#pragma omp parallel for schedule(static)
        for (int64_t g = 0; g < numGroups; ++g)
        {
            const I2 r = t.groups[g];
            for (int32_t k = r.x; k < r.x + r.y; ++k) bodies[k] = toF4(t.pos[k], t.mass[k]);
            out.groupRange[g] = r;
            groupBox(bodies, r, out.groupCenter[g], out.groupHalf[g]);
        }
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) bodies[k] = toF4(t.pos[k], t.mass[k]);
    std::copy(t.groups.begin(), t.groups.end(), out.groupRange.begin());
    groupBoxes(bodies, out.groupRange.data(), numGroups, out.groupCenter.data(), out.groupHalf.data());
}

} // namespace

void packTree(const HostTree& t, const Parameters& p, PackedTree& out, PackContent content)
{
    const OctreeCells& c        = t.cells;
    const Multipoles& mp        = t.poles;
    int32_t numCells            = c.size();
    std::vector<int32_t>& index = out.cellIndex;
    Stopwatch clock;
    packedIndices(c, index, out.numInternal);
    out.numLeaves = numCells - out.numInternal;
    out.depth     = c.depth;
    out.rootEntry = childEntry(c, index, 0);
    out.farField2 = packedFarField2(p);

    sizeForOverwrite(out.children, 2 * size_t(out.numInternal));
    sizeForOverwrite(out.nodeMac, size_t(numCells));
    sizeForOverwrite(out.nodeCom, size_t(numCells));
    sizeForOverwrite(out.nodeQuad, 2 * size_t(numCells));
    sizeForOverwrite(out.leafRange, size_t(out.numLeaves));
    internalLevels(c, index, out.numInternal, out.internalLevelFirst);

    const float invTheta    = packedInvTheta(p);
    const float quadScale   = packedQuadScale(p);
    const float spreadScale = packedSpreadScale(p);
    const bool moments      = content == PackContent::Everything;
    out.packIndicesSeconds  = clock.lap();
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
        if (moments)
        {
            packNode(cellMoments(mp, i), p.mac, invTheta, quadScale, spreadScale, out.nodeCom[n], out.nodeMac[n],
                     out.nodeQuad.data() + 2 * n);
        }
    }

    out.packNodesSeconds = clock.lap();
    if (moments)
    {
        packBodiesAndGroups(t, out);
        out.packBodiesSeconds = clock.lap();
        return;
    }
    const size_t numGroups = t.groups.size();
    // A topology's tree may hold no positions, nor masses (adoptSortedKeys): its bodies are counted by its order.
    out.bodies.resize(t.order.size());
    sizeForOverwrite(out.groupRange, numGroups);
    std::copy(t.groups.begin(), t.groups.end(), out.groupRange.begin());
    sizeForOverwrite(out.groupCenter, numGroups);
    sizeForOverwrite(out.groupHalf, numGroups);
    out.packBodiesSeconds = clock.lap();
}

void groupBoxes(const F4* bodies, const I2* ranges, int64_t numGroups, F4* center, F4* half)
{
#pragma omp parallel for schedule(static)
    for (int64_t g = 0; g < numGroups; ++g) groupBox(bodies, ranges[g], center[g], half[g]);
}

float packedInvTheta(const Parameters& p) { return float(1.0 / p.opening_angle); }

float packedFarField2(const Parameters& p) { return float(p.far_field_ratio * p.far_field_ratio); }

float packedQuadScale(const Parameters& p) { return p.use_quadrupole ? 1.0f : 0.0f; }

float packedSpreadScale(const Parameters& p) { return p.use_quadrupole && p.softened_quadrupole ? 1.0f : 0.0f; }

RefitView refitView(PackedTree& packed, const Vec3d* pos, const double* mass, Moments* moments, const Parameters& p)
{
    return {packed.children.data(),
            packed.leafRange.data(),
            packed.groupRange.data(),
            pos,
            mass,
            moments,
            packed.nodeMac.data(),
            packed.nodeCom.data(),
            packed.nodeQuad.data(),
            packed.bodies.data(),
            packed.groupCenter.data(),
            packed.groupHalf.data(),
            packed.numInternal,
            packed.numLeaves,
            int32_t(packed.groupRange.size()),
            int32_t(packed.bodies.size()),
            p.mac,
            packedInvTheta(p),
            packedQuadScale(p),
            packedSpreadScale(p)};
}

RefitLevels refitLevels(const PackedTree& packed)
{
    return {packed.internalLevelFirst.data(), int32_t(packed.internalLevelFirst.size()) - 1};
}

void packMacRadii(const HostTree& t, Mac mac, double theta, PackedTree& out)
{
    const int32_t numCells = t.cells.size();
    const float invTheta   = float(1.0 / theta);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < numCells; ++i)
    {
        out.nodeMac[out.cellIndex[i]].w = nodeMacRadius2(cellMoments(t.poles, i), mac, invTheta);
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

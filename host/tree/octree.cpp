#include "host/tree/octree.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/errors.h"
#include "common/multipole.h"
#include "common/sfc.h"
#include "host/core/parallel.h"
#include "host/tree/bounds.h"

namespace octwalk {

namespace {

std::string bodyMessage(int64_t i, const char* field, double value, const char* rule)
{
    std::ostringstream s;
    s.precision(17);
    s << "body " << i << ": " << field << " = " << value << " " << rule;
    return s.str();
}

constexpr int kRadixBits = 8;
constexpr int kRadixSize = 1 << kRadixBits;

/// Stable least-significant-digit radix sort of keys, 8-bit digits, carrying the caller's indices
/// (order, identity at the start): equal keys keep ascending caller's indices. Digits on which all
/// keys agree are skipped. Each thread histograms and scatters one static chunk; the offsets are
/// taken bucket by bucket, chunk by chunk, so the result is the one stable order for any thread
/// count. The scratch buffers are the ping-pong partners (swapped in when they hold the result).
void radixSortWithIndex(std::vector<uint64_t>& keys, std::vector<int32_t>& order, BuildScratch& s)
{
    const int64_t n = int64_t(keys.size());
    order.resize(n);
    s.keys.resize(n);
    s.order.resize(n);
    const uint64_t first = keys[0];
    uint64_t varying     = 0;
#pragma omp parallel for schedule(static) reduction(| : varying)
    for (int64_t i = 0; i < n; ++i) varying |= keys[i] ^ first;
    int shifts[(64 + kRadixBits - 1) / kRadixBits], numPasses = 0;
    for (int shift = 0; shift < 64; shift += kRadixBits)
    {
        if ((varying >> shift) & (kRadixSize - 1)) shifts[numPasses++] = shift;
    }
    s.histograms.resize(size_t(maxThreads()) * kRadixSize);
    int64_t* hist = s.histograms.data();
#pragma omp parallel
    {
        const int t = threadIndex(), numThreads = threadCount();
        const Chunk c = chunkOf(n, t, numThreads);
        int64_t* h    = hist + size_t(t) * kRadixSize;
        int64_t offset[kRadixSize];
        uint64_t *srcKeys = keys.data(), *dstKeys = s.keys.data();
        int32_t *srcOrder = nullptr, *dstOrder = s.order.data(); // no source order: the identity
        for (int pass = 0; pass < numPasses; ++pass)
        {
            const int shift = shifts[pass];
            std::fill(h, h + kRadixSize, int64_t(0));
            for (int64_t i = c.begin; i < c.end; ++i) h[(srcKeys[i] >> shift) & (kRadixSize - 1)]++;
#pragma omp barrier
            // Every thread finds its own offsets from all histograms (no further barrier): the
            // bodies with a smaller digit, then those with this digit in earlier chunks.
            int64_t below = 0;
            for (int d = 0; d < kRadixSize; ++d)
            {
                int64_t before = 0, all = 0;
                for (int u = 0; u < numThreads; ++u)
                {
                    const int64_t count = hist[size_t(u) * kRadixSize + d];
                    before += u < t ? count : 0;
                    all += count;
                }
                offset[d] = below + before;
                below += all;
            }
            for (int64_t i = c.begin; i < c.end; ++i)
            {
                const uint64_t k = srcKeys[i];
                const int64_t at = offset[(k >> shift) & (kRadixSize - 1)]++;
                dstKeys[at]      = k;
                dstOrder[at]     = srcOrder ? srcOrder[i] : int32_t(i);
            }
#pragma omp barrier
            std::swap(srcKeys, dstKeys);
            srcOrder = dstOrder;
            dstOrder = (dstOrder == order.data()) ? s.order.data() : order.data();
        }
    }
    if (numPasses == 0)
    {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i) order[i] = int32_t(i);
    }
    else if (numPasses % 2 == 1)
    {
        keys.swap(s.keys);
        order.swap(s.order);
    }
}

/// Within every run of equal keys, orders the caller's indices by (id, index): the radix sort left
/// them by index, which is the same whenever ids do not decrease with the index.
void breakTiesById(const std::vector<uint64_t>& keys, const uint64_t* id, std::vector<int32_t>& order)
{
    if (!id) return;
    const int64_t n         = int64_t(keys.size());
    constexpr int64_t block = 8192;
    const int64_t numBlocks = (n + block - 1) / block;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t b = 0; b < numBlocks; ++b)
    {
        // Each run is handled by the block holding its first body.
        for (int64_t i = b * block, end = std::min(n, i + block); i < end; ++i)
        {
            if (i > 0 && keys[i] == keys[i - 1]) continue;
            int64_t j = i + 1;
            while (j < n && keys[j] == keys[i]) ++j;
            if (j - i > 1)
            {
                std::sort(order.begin() + i, order.begin() + j,
                          [id](int32_t a, int32_t c) { return id[a] != id[c] ? id[a] < id[c] : a < c; });
            }
            i = j - 1;
        }
    }
}

/// The tight box of points[0, n), n >= 1, in parallel (min and max do not depend on the order).
Box<Vec3d> parallelBoundingBox(const Vec3d* points, int64_t n)
{
    std::vector<Box<Vec3d>> part(size_t(maxThreads()), Box<Vec3d>{points[0], points[0]});
#pragma omp parallel
    {
        const Chunk c = chunkOf(n, threadIndex(), threadCount());
        if (c.end > c.begin) part[threadIndex()] = boundingBox(points + c.begin, c.end - c.begin);
    }
    Box<Vec3d> box = part[0];
    for (const Box<Vec3d>& b : part) includeBox(box, b);
    return box;
}

/// Splits the body range of a cell at `level` into its 8 octant ranges (binary search on keys).
std::array<int32_t, 9> octantBounds(const uint64_t* keys, int32_t first, int32_t count, int level)
{
    std::array<int32_t, 9> bounds;
    bounds[0]          = first;
    bounds[8]          = first + count;
    const uint64_t* lo = keys + first;
    const uint64_t* hi = keys + first + count;
    for (int oct = 1; oct < 8; ++oct)
    {
        const uint64_t* p =
            std::partition_point(lo, hi, [level, oct](uint64_t k) { return octantAtLevel(k, level + 1) < oct; });
        bounds[oct] = int32_t(p - keys);
    }
    return bounds;
}

/// The centre of mass, or the centre of the box for a cell of massless bodies.
Vec3d centreOf(double m, const Vec3d& weighted, const Box<Vec3d>& box)
{
    return m > 0 ? (1.0 / m) * weighted : 0.5 * (box.lo + box.hi);
}

void storeMultipole(Multipoles& mp, int32_t c, double m, const Vec3d& com, const SymTensor<double>& q,
                    const Box<Vec3d>& box)
{
    mp.mass[c]   = m;
    mp.com[c]    = com;
    mp.quad[c]   = q;
    mp.boxMin[c] = box.lo;
    mp.boxMax[c] = box.hi;
}

void leafMultipole(const HostTree& t, int32_t c, Multipoles& mp)
{
    int32_t first = t.cells.first[c], last = first + t.cells.count[c];
    double m = 0;
    Vec3d weighted{0, 0, 0};
    for (int32_t i = first; i < last; ++i)
    {
        m += t.mass[i];
        weighted += t.mass[i] * t.pos[i];
    }
    Box<Vec3d> box = boundingBox(t.pos.data() + first, last - first);
    Vec3d com      = centreOf(m, weighted, box);
    SymTensor<double> q{0, 0, 0, 0, 0, 0};
    for (int32_t i = first; i < last; ++i) addPointQuadrupole(t.pos[i] - com, t.mass[i], q);
    storeMultipole(mp, c, m, com, q, box);
}

void internalMultipole(const HostTree& t, int32_t c, Multipoles& mp)
{
    double m = 0;
    Vec3d weighted{0, 0, 0};
    Box<Vec3d> box{{HUGE_VAL, HUGE_VAL, HUGE_VAL}, {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL}};
    for (int32_t k : t.cells.child[c])
    {
        if (k < 0) continue;
        m += mp.mass[k];
        weighted += mp.mass[k] * mp.com[k];
        includeBox(box, {mp.boxMin[k], mp.boxMax[k]});
    }
    Vec3d com = centreOf(m, weighted, box);
    SymTensor<double> q{0, 0, 0, 0, 0, 0};
    for (int32_t k : t.cells.child[c])
    {
        if (k >= 0) shiftQuadrupole(mp.quad[k], mp.com[k], mp.mass[k], com, q);
    }
    storeMultipole(mp, c, m, com, q, box);
}

} // namespace

namespace {

bool badCoordinate(double x) { return !std::isfinite(x) || std::fabs(x) > kMaxCoordinate; }

bool badBody(const BodySpan& b, int64_t i)
{
    return badCoordinate(b.pos[i].x) || badCoordinate(b.pos[i].y) || badCoordinate(b.pos[i].z) ||
           !std::isfinite(b.mass[i]) || b.mass[i] < 0;
}

} // namespace

void validateBodies(const BodySpan& b)
{
    if (b.n < 2)
    {
        throw InputError("at least 2 bodies are needed for a force evaluation, got N = " + std::to_string(b.n));
    }
    if (b.n > kMaxBodies)
    {
        throw InputError("N = " + std::to_string(b.n) + " exceeds the supported maximum of 2^30 - 1 bodies");
    }
    // The first bad body, found in parallel; the message names its first bad field.
    const int64_t i = firstIndexWhere(b.n, [&b](int64_t k) { return badBody(b, k); });
    if (i == b.n) return;
    const double c[3]    = {b.pos[i].x, b.pos[i].y, b.pos[i].z};
    const char* names[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d)
    {
        if (!std::isfinite(c[d])) throw InputError(bodyMessage(i, names[d], c[d], "is not finite"));
        if (std::fabs(c[d]) > kMaxCoordinate)
        {
            throw InputError(bodyMessage(i, names[d], c[d], "exceeds the coordinate limit |x| <= 1e15"));
        }
    }
    if (!std::isfinite(b.mass[i])) throw InputError(bodyMessage(i, "mass", b.mass[i], "is not finite"));
    throw InputError(bodyMessage(i, "mass", b.mass[i], "is negative"));
}

void mortonKeysInBoundingCube(const Vec3d* points, int64_t n, std::vector<uint64_t>& keys)
{
    Box<Vec3d> box = parallelBoundingBox(points, n);
    double size    = largestExtent(box);
    if (!(size > 0)) size = 1.0;
    double cellsPerUnit = double(kKeyGridSize) / size;
    keys.resize(static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        keys[i] = mortonKey(gridCoordinate(points[i].x, box.lo.x, cellsPerUnit),
                            gridCoordinate(points[i].y, box.lo.y, cellsPerUnit),
                            gridCoordinate(points[i].z, box.lo.z, cellsPerUnit));
    }
}

std::vector<uint64_t> mortonKeysInBoundingCube(const Vec3d* points, int64_t n)
{
    std::vector<uint64_t> keys;
    mortonKeysInBoundingCube(points, n, keys);
    return keys;
}

/// How far ahead the gather into tree order prefetches the caller's bodies.
constexpr int64_t kGatherPrefetch = 16;

void sortBodies(const BodySpan& b, HostTree& t)
{
    mortonKeysInBoundingCube(b.pos, b.n, t.keys);
    radixSortWithIndex(t.keys, t.order, t.scratch);
    breakTiesById(t.keys, b.id, t.order);
    t.pos.resize(size_t(b.n));
    t.mass.resize(size_t(b.n));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < b.n; ++k)
    {
        if (k + kGatherPrefetch < b.n)
        {
            __builtin_prefetch(&b.pos[t.order[k + kGatherPrefetch]]);
            __builtin_prefetch(&b.mass[t.order[k + kGatherPrefetch]]);
        }
        t.pos[k]  = b.pos[t.order[k]];
        t.mass[k] = b.mass[t.order[k]];
    }
}

void buildCells(int nLeaf, HostTree& t)
{
    OctreeCells& c  = t.cells;
    BuildScratch& s = t.scratch;
    constexpr std::array<int32_t, 8> kNoChildren{-1, -1, -1, -1, -1, -1, -1, -1};
    // clear() keeps the capacity of the last build.
    c.first.assign(1, 0);
    c.count.assign(1, int32_t(t.keys.size()));
    c.level.assign(1, 0);
    c.child.assign(1, kNoChildren);

    int32_t levelBegin = 0, levelEnd = 1;
    while (levelBegin < levelEnd)
    {
        int32_t width = levelEnd - levelBegin;
        s.bounds.resize(width);
        s.numChildren.assign(width + 1, 0);
        std::array<int32_t, 9>* bounds = s.bounds.data();
        int32_t* numChildren           = s.numChildren.data();
#pragma omp parallel for schedule(dynamic, 64)
        for (int32_t j = 0; j < width; ++j)
        {
            int32_t cell = levelBegin + j;
            if (c.count[cell] <= nLeaf || c.level[cell] >= kMaxTreeLevel) continue;
            bounds[j] = octantBounds(t.keys.data(), c.first[cell], c.count[cell], c.level[cell]);
            for (int o = 0; o < 8; ++o) numChildren[j] += bounds[j][o + 1] > bounds[j][o];
        }
        std::exclusive_scan(numChildren, numChildren + width + 1, numChildren, 0);
        int32_t next  = levelEnd;
        int32_t total = numChildren[width];
        c.first.resize(next + total);
        c.count.resize(next + total);
        c.level.resize(next + total);
        c.child.resize(next + total, kNoChildren);
#pragma omp parallel for schedule(dynamic, 64)
        for (int32_t j = 0; j < width; ++j)
        {
            if (numChildren[j + 1] == numChildren[j]) continue;
            int32_t cell = levelBegin + j;
            int32_t out  = next + numChildren[j];
            for (int o = 0; o < 8; ++o)
            {
                if (bounds[j][o + 1] == bounds[j][o]) continue;
                c.first[out]     = bounds[j][o];
                c.count[out]     = bounds[j][o + 1] - bounds[j][o];
                c.level[out]     = c.level[cell] + 1;
                c.child[cell][o] = out++;
            }
        }
        levelBegin = levelEnd;
        levelEnd   = next + total;
    }
    const int32_t numCells = c.size();
    c.isLeaf.resize(numCells);
#pragma omp parallel for schedule(static)
    for (int32_t i = 0; i < numCells; ++i) c.isLeaf[i] = c.child[i] == kNoChildren;
    c.depth = c.level[numCells - 1]; // breadth-first: the last cell is one of the deepest
}

void computeMultipoles(HostTree& t)
{
    const OctreeCells& c = t.cells;
    Multipoles& mp       = t.poles;
    int32_t n            = c.size();
    mp.mass.resize(n);
    mp.com.resize(n);
    mp.quad.resize(n);
    mp.boxMin.resize(n);
    mp.boxMax.resize(n);

    // Every leaf at once (they need only their bodies), then the internal cells from the deepest
    // level up: cells are breadth-first, so each level's children are done before it. Each cell
    // sums in the same order as ever, whatever the schedule.
#pragma omp parallel for schedule(dynamic, 256)
    for (int32_t i = 0; i < n; ++i)
    {
        if (c.isLeaf[i]) leafMultipole(t, i, mp);
    }
    std::vector<int32_t>& internal = t.scratch.internal;
    internal.clear();
    for (int32_t i = 0; i < n; ++i)
    {
        if (!c.isLeaf[i]) internal.push_back(i);
    }
    int64_t end = int64_t(internal.size());
    while (end > 0)
    {
        const int32_t lvl = c.level[internal[end - 1]];
        int64_t begin     = end;
        while (begin > 0 && c.level[internal[begin - 1]] == lvl) --begin;
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t k = begin; k < end; ++k) internalMultipole(t, internal[k], mp);
        end = begin;
    }
}

namespace {

/// Emits the groups below a cell with more than nGroup bodies, in Morton order: children small
/// enough become groups (with merge, a run of such siblings is joined while together they hold at
/// most nGroup bodies, so a merged group stays inside its parent's box); bigger children recurse
/// (depth <= kMaxTreeLevel). A maximum-depth leaf of coincident bodies is cut into chunks.
void collectGroups(const OctreeCells& c, int32_t cell, int nGroup, bool merge, std::vector<I2>& groups)
{
    if (c.isLeaf[cell])
    {
        for (int32_t f = c.first[cell], end = f + c.count[cell]; f < end; f += nGroup)
        {
            groups.push_back({f, std::min(nGroup, end - f)});
        }
        return;
    }
    bool previousSiblingIsGroup = false;
    for (int32_t k : c.child[cell])
    {
        if (k < 0) continue;
        if (c.count[k] > nGroup)
        {
            collectGroups(c, k, nGroup, merge, groups);
            previousSiblingIsGroup = false;
            continue;
        }
        if (merge && previousSiblingIsGroup && groups.back().y + c.count[k] <= nGroup) groups.back().y += c.count[k];
        else groups.push_back({c.first[k], c.count[k]});
        previousSiblingIsGroup = true;
    }
}

} // namespace

void makeGroups(int nGroup, HostTree& t, bool merge)
{
    t.groups.clear();
    if (t.cells.count[0] <= nGroup) t.groups.push_back({0, t.cells.count[0]});
    else collectGroups(t.cells, 0, nGroup, merge, t.groups);
}

} // namespace octwalk

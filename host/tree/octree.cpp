#include "host/tree/octree.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/errors.h"
#include "common/multipole.h"
#include "common/sfc.h"
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

struct KeyIndex
{
    uint64_t key;
    int64_t index;
};

/// The total order of bodies: Morton key, then id, then caller's index.
struct KeyIdOrder
{
    const uint64_t* id;
    bool operator()(const KeyIndex& a, const KeyIndex& b) const
    {
        if (a.key != b.key) return a.key < b.key;
        return id[a.index] != id[b.index] ? id[a.index] < id[b.index] : a.index < b.index;
    }
};

constexpr int kDigitBits = 11;

/// Counting sort of a[0, n) into out by the digit of kDigitBits ending at bit `shift` (exclusive
/// top); start receives the 2^kDigitBits + 1 bucket boundaries.
void scatterByDigit(const KeyIndex* a, KeyIndex* out, size_t n, int shift, std::vector<size_t>& start)
{
    const int bits      = std::min(kDigitBits, shift);
    const uint64_t mask = (uint64_t(1) << bits) - 1;
    start.assign((size_t(1) << bits) + 1, 0);
    for (size_t i = 0; i < n; ++i) start[((a[i].key >> (shift - bits)) & mask) + 1]++;
    std::partial_sum(start.begin(), start.end(), start.begin());
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    for (size_t i = 0; i < n; ++i) out[fill[(a[i].key >> (shift - bits)) & mask]++] = a[i];
}

/// Most-significant-digit radix sort: buckets of the next key digit until they are small, then a
/// comparison sort in the total order (which also settles equal keys).
void msdSort(KeyIndex* a, KeyIndex* tmp, size_t n, int shift, const KeyIdOrder& order)
{
    if (n <= 2048 || shift <= 0) // below this a comparison sort beats another 2^11-bucket pass
    {
        std::sort(a, a + n, order);
        return;
    }
    std::vector<size_t> start;
    scatterByDigit(a, tmp, n, shift, start);
    std::copy(tmp, tmp + n, a);
    int next = shift - std::min(kDigitBits, shift);
    for (size_t d = 0; d + 1 < start.size(); ++d)
    {
        msdSort(a + start[d], tmp + start[d], start[d + 1] - start[d], next, order);
    }
}

/// Sorts body indices by (key, id, caller's index), a total order, so the result is the same for
/// any thread count and any input order (with unique ids). The first digit splits the bodies into
/// buckets that threads then sort independently.
void sortByKeyThenId(std::vector<uint64_t>& keys, const uint64_t* id, std::vector<int32_t>& index)
{
    size_t n = keys.size();
    std::vector<KeyIndex> pairs(n), tmp(n);
    for (size_t i = 0; i < n; ++i) tmp[i] = {keys[i], int64_t(i)};
    std::vector<size_t> start;
    scatterByDigit(tmp.data(), pairs.data(), n, 63, start);
    KeyIdOrder order{id};
    int next = 63 - kDigitBits;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t d = 0; d < int64_t(start.size()) - 1; ++d)
    {
        msdSort(pairs.data() + start[d], tmp.data() + start[d], start[d + 1] - start[d], next, order);
    }
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(n); ++i)
    {
        keys[i]  = pairs[i].key;
        index[i] = int32_t(pairs[i].index);
    }
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

void validateBodies(const BodySpan& b)
{
    if (b.n < 2)
    {
        throw InputError("at least 2 bodies are needed for a force evaluation, got N = " + std::to_string(b.n));
    }
    if (b.n > int64_t(INT32_MAX / 2))
    {
        throw InputError("N = " + std::to_string(b.n) + " exceeds the supported maximum of 2^30 bodies");
    }
    for (int64_t i = 0; i < b.n; ++i)
    {
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
        if (b.mass[i] < 0) throw InputError(bodyMessage(i, "mass", b.mass[i], "is negative"));
    }
}

std::vector<uint64_t> mortonKeysInBoundingCube(const Vec3d* points, int64_t n)
{
    Box<Vec3d> box = boundingBox(points, n);
    double size    = largestExtent(box);
    if (!(size > 0)) size = 1.0;
    double cellsPerUnit = double(kKeyGridSize) / size;
    std::vector<uint64_t> keys(static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
    {
        keys[i] = mortonKey(gridCoordinate(points[i].x, box.lo.x, cellsPerUnit),
                            gridCoordinate(points[i].y, box.lo.y, cellsPerUnit),
                            gridCoordinate(points[i].z, box.lo.z, cellsPerUnit));
    }
    return keys;
}

void sortBodies(const BodySpan& b, HostTree& t)
{
    size_t n                   = size_t(b.n);
    std::vector<uint64_t> keys = mortonKeysInBoundingCube(b.pos, b.n);
    std::vector<int32_t> index(n);
    sortByKeyThenId(keys, b.id, index);

    t.keys  = std::move(keys);
    t.order = std::move(index);
    t.pos.resize(n);
    t.mass.resize(n);
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < b.n; ++k)
    {
        t.pos[k]  = b.pos[t.order[k]];
        t.mass[k] = b.mass[t.order[k]];
    }
}

void buildCells(int nLeaf, HostTree& t)
{
    OctreeCells& c = t.cells;
    c              = OctreeCells{};
    c.first.push_back(0);
    c.count.push_back(int32_t(t.keys.size()));
    c.level.push_back(0);
    c.child.push_back({-1, -1, -1, -1, -1, -1, -1, -1});

    int32_t levelBegin = 0, levelEnd = 1;
    while (levelBegin < levelEnd)
    {
        int32_t width = levelEnd - levelBegin;
        std::vector<std::array<int32_t, 9>> bounds(width);
        std::vector<int32_t> numChildren(width + 1, 0);
#pragma omp parallel for schedule(dynamic, 64)
        for (int32_t j = 0; j < width; ++j)
        {
            int32_t cell = levelBegin + j;
            if (c.count[cell] <= nLeaf || c.level[cell] >= kMaxTreeLevel) continue;
            bounds[j] = octantBounds(t.keys.data(), c.first[cell], c.count[cell], c.level[cell]);
            for (int o = 0; o < 8; ++o) numChildren[j] += bounds[j][o + 1] > bounds[j][o];
        }
        std::exclusive_scan(numChildren.begin(), numChildren.end(), numChildren.begin(), 0);
        int32_t next  = levelEnd;
        int32_t total = numChildren[width];
        c.first.resize(next + total);
        c.count.resize(next + total);
        c.level.resize(next + total);
        c.child.resize(next + total, {-1, -1, -1, -1, -1, -1, -1, -1});
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
    c.isLeaf.resize(c.size());
    for (int32_t i = 0; i < c.size(); ++i)
    {
        c.isLeaf[i] = c.child[i] == std::array<int32_t, 8>{-1, -1, -1, -1, -1, -1, -1, -1};
        c.depth     = std::max(c.depth, c.level[i]);
    }
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

    // Cells are breadth-first, so walking levels from the deepest up finds every child done.
    std::vector<int32_t> levelStart(c.depth + 2, n);
    for (int32_t i = n - 1; i >= 0; --i) levelStart[c.level[i]] = i;
    for (int lvl = c.depth; lvl >= 0; --lvl)
    {
        int32_t begin = levelStart[lvl], end = levelStart[lvl + 1];
#pragma omp parallel for schedule(dynamic, 256)
        for (int32_t i = begin; i < end; ++i)
        {
            if (c.isLeaf[i]) leafMultipole(t, i, mp);
            else internalMultipole(t, i, mp);
        }
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

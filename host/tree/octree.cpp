#include "host/tree/octree.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "common/errors.h"
#include "common/multipole.h"
#include "common/sfc.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
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

/// Runs at most this long are sorted by insertion.
constexpr int64_t kInsertionSortMax = 32;

/// Runs up to this long are sorted by least-significant-digit passes in cache; a longer run on one
/// thread is first split by a most-significant-digit pass.
constexpr int64_t kLocalSortMin = int64_t(1) << 15;

/// How many low bits keys between lo and hi may differ in: all keys of a run agree above them.
int varyingBits(uint64_t lo, uint64_t hi) { return lo == hi ? 0 : 64 - __builtin_clzll(lo ^ hi); }

/// Stable insertion sort of keys[0, n) carrying index.
void insertionSort(uint64_t* keys, int32_t* index, int64_t n)
{
    for (int64_t i = 1; i < n; ++i)
    {
        const uint64_t k = keys[i];
        const int32_t x  = index[i];
        int64_t j        = i;
        for (; j > 0 && keys[j - 1] > k; --j)
        {
            keys[j]  = keys[j - 1];
            index[j] = index[j - 1];
        }
        keys[j]  = k;
        index[j] = x;
    }
}

/// The two buffers of the sort: the result's (keys, order) and the scratch partners.
struct SortBuffers
{
    uint64_t *keys, *scratchKeys;
    int32_t *order, *scratchOrder;

    uint64_t* keysOf(bool scratch) const { return scratch ? scratchKeys : keys; }
    int32_t* orderOf(bool scratch) const { return scratch ? scratchOrder : order; }
};

/// Digit width of the sort of one run on one thread (least significant digit first).
constexpr int kLocalBits      = 8;
constexpr int kLocalSize      = 1 << kLocalBits;
constexpr int kMaxLocalDigits = (64 + kLocalBits - 1) / kLocalBits;

/// Widest and narrowest digit of the least-significant-digit passes over one run: wider digits mean
/// fewer passes, but the histograms (2^bits counters per digit) must stay small beside the run.
constexpr int kLsdMaxBits   = 11;
constexpr int kLsdMinBits   = 8;
constexpr int kLsdMaxSize   = 1 << kLsdMaxBits;
constexpr int kMaxLsdDigits = (64 + kLsdMinBits - 1) / kLsdMinBits;

/// The digit width of the passes over a run of n keys that vary in their low `bits`: as few passes as
/// digits of at most min(log2 n, kLsdMaxBits) bits allow, split evenly.
int lsdDigitBits(int bits, int64_t n)
{
    const int widest    = std::clamp(63 - __builtin_clzll(uint64_t(n)), kLsdMinBits, kLsdMaxBits);
    const int numDigits = (bits + widest - 1) / widest;
    return (bits + numDigits - 1) / numDigits;
}

/// Sorts one run on this thread, stably, by least-significant-digit radix passes over the digits below
/// r.bits (the run's keys agree above): one counting pass gives every digit's histogram, and a digit
/// on which all keys agree is skipped without moving the run. The result lands in the result buffers.
void sortRun(const SortBuffers& buf, const SortRange& r);

/// A run too long for the cache, on one thread: one stable most-significant-digit pass on the top
/// kLocalBits of its varying bits into the other buffer, then each digit's run by sortRun.
void splitRun(const SortBuffers& buf, const SortRange& r)
{
    const int shift           = r.bits - kLocalBits;
    const uint64_t mask       = kLocalSize - 1;
    const uint64_t* src       = buf.keysOf(r.inScratch);
    const int32_t* srcIx      = buf.orderOf(r.inScratch);
    int64_t count[kLocalSize] = {};
    for (int64_t i = r.begin; i < r.end; ++i) count[(src[i] >> shift) & mask]++;
    int64_t offset[kLocalSize];
    std::exclusive_scan(count, count + kLocalSize, offset, r.begin);
    uint64_t* dst  = buf.keysOf(!r.inScratch);
    int32_t* dstIx = buf.orderOf(!r.inScratch);
    for (int64_t i = r.begin; i < r.end; ++i)
    {
        const uint64_t k = src[i];
        const int64_t to = offset[(k >> shift) & mask]++;
        dst[to]          = k;
        dstIx[to]        = srcIx[i];
    }
    int64_t begin = r.begin;
    for (int d = 0; d < kLocalSize; begin += count[d], ++d)
    {
        if (count[d] > 0) sortRun(buf, {begin, begin + count[d], shift, !r.inScratch});
    }
}

void sortRun(const SortBuffers& buf, const SortRange& r)
{
    const int64_t n = r.end - r.begin;
    if (n > kLocalSortMin && r.bits > kLocalBits)
    {
        splitRun(buf, r);
        return;
    }
    bool inScratch = r.inScratch;
    if (r.bits > 0 && n <= kInsertionSortMax)
    {
        insertionSort(buf.keysOf(inScratch) + r.begin, buf.orderOf(inScratch) + r.begin, n);
    }
    else if (r.bits > 0)
    {
        const int width     = lsdDigitBits(r.bits, n);
        const int numDigits = (r.bits + width - 1) / width;
        const int32_t size  = int32_t(1) << width;
        const uint64_t mask = uint64_t(size) - 1;
        int32_t count[kMaxLsdDigits][kLsdMaxSize];
        for (int d = 0; d < numDigits; ++d) std::fill(count[d], count[d] + size, 0);
        const uint64_t* keys = buf.keysOf(inScratch) + r.begin;
        for (int64_t i = 0; i < n; ++i)
        {
            const uint64_t k = keys[i];
            for (int d = 0; d < numDigits; ++d) count[d][(k >> (d * width)) & mask]++;
        }
        for (int d = 0; d < numDigits; ++d)
        {
            const int shift      = d * width;
            const uint64_t* src  = buf.keysOf(inScratch) + r.begin;
            const int32_t* srcIx = buf.orderOf(inScratch) + r.begin;
            if (count[d][(src[0] >> shift) & mask] == n) continue;
            int32_t offset[kLsdMaxSize];
            std::exclusive_scan(count[d], count[d] + size, offset, 0);
            uint64_t* dst  = buf.keysOf(!inScratch) + r.begin;
            int32_t* dstIx = buf.orderOf(!inScratch) + r.begin;
            for (int64_t i = 0; i < n; ++i)
            {
                const uint64_t k = src[i];
                const int32_t to = offset[(k >> shift) & mask]++;
                dst[to]          = k;
                dstIx[to]        = srcIx[i];
            }
            inScratch = !inScratch;
        }
    }
    if (inScratch)
    {
        std::copy(buf.scratchKeys + r.begin, buf.scratchKeys + r.end, buf.keys + r.begin);
        std::copy(buf.scratchOrder + r.begin, buf.scratchOrder + r.end, buf.order + r.begin);
    }
}

/// One most-significant-digit pass over a long run by all threads: each thread histograms and
/// scatters one static chunk (offsets bucket by bucket, chunk by chunk: stable); the digit's runs
/// are appended to `large` or `small` by length.
void splitRunInParallel(const SortBuffers& buf, const SortRange& r, int64_t largeMin, BuildScratch& s)
{
    const int shift = std::max(0, r.bits - kRadixBits);
    s.histograms.resize(size_t(maxThreads()) * kRadixSize);
    s.digitLo.resize(size_t(maxThreads()) * kRadixSize);
    s.digitHi.resize(size_t(maxThreads()) * kRadixSize);
    int64_t* hist  = s.histograms.data();
    int numThreads = 1;
#pragma omp parallel
    {
        const int t = threadIndex();
#pragma omp single
        numThreads            = threadCount();
        const Chunk c         = chunkOf(r.end - r.begin, t, numThreads);
        int64_t* h            = hist + size_t(t) * kRadixSize;
        uint64_t* lo          = s.digitLo.data() + size_t(t) * kRadixSize;
        uint64_t* hi          = s.digitHi.data() + size_t(t) * kRadixSize;
        const uint64_t* src   = buf.keysOf(r.inScratch) + r.begin;
        const int32_t* srcIdx = buf.orderOf(r.inScratch) + r.begin;
        uint64_t* dst         = buf.keysOf(!r.inScratch) + r.begin;
        int32_t* dstIdx       = buf.orderOf(!r.inScratch) + r.begin;
        std::fill(h, h + kRadixSize, int64_t(0));
        std::fill(lo, lo + kRadixSize, ~uint64_t(0));
        std::fill(hi, hi + kRadixSize, uint64_t(0));
        for (int64_t i = c.begin; i < c.end; ++i)
        {
            const uint64_t k = src[i];
            const int d      = int((k >> shift) & (kRadixSize - 1));
            h[d]++;
            lo[d] = std::min(lo[d], k);
            hi[d] = std::max(hi[d], k);
        }
#pragma omp barrier
        int64_t offset[kRadixSize];
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
            const uint64_t k = src[i];
            const int64_t to = offset[(k >> shift) & (kRadixSize - 1)]++;
            dst[to]          = k;
            dstIdx[to]       = srcIdx[i];
        }
    }
    int64_t begin = r.begin;
    for (int d = 0; d < kRadixSize; ++d)
    {
        int64_t count = 0;
        uint64_t lo = ~uint64_t(0), hi = 0;
        for (int u = 0; u < numThreads; ++u)
        {
            const size_t at = size_t(u) * kRadixSize + d;
            count += hist[at];
            if (hist[at] == 0) continue;
            lo = std::min(lo, s.digitLo[at]);
            hi = std::max(hi, s.digitHi[at]);
        }
        if (count == 0) continue;
        const SortRange sub{begin, begin + count, varyingBits(lo, hi), !r.inScratch};
        (count > largeMin && sub.bits > 0 ? s.large : s.small).push_back(sub);
        begin += count;
    }
}

/// Within a run of equal keys, orders the indices by (id, name): the sort left them by index, which
/// is already that order when the bodies carry no ranks.
void breakTiesById(const uint64_t* keys, const BodySpan& b, int32_t* order, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end;)
    {
        int64_t j = i + 1;
        while (j < end && keys[j] == keys[i]) ++j;
        if (j - i > 1)
        {
            std::sort(order + i, order + j, [&b](int32_t a, int32_t c) {
                const uint64_t idA = b.id ? b.id[a] : 0, idC = b.id ? b.id[c] : 0;
                return idA != idC ? idA < idC : b.nameOf(a) < b.nameOf(c);
            });
        }
        i = j;
    }
}

/// The tight box of points[0, n), n >= 1, in parallel (min and max do not depend on the order);
/// part holds one box per thread.
Box<Vec3d> parallelBoundingBox(const Vec3d* points, int64_t n, std::vector<Box<Vec3d>>& part)
{
    part.assign(size_t(maxThreads()), Box<Vec3d>{points[0], points[0]});
#pragma omp parallel
    {
        const Chunk c = chunkOf(n, threadIndex(), threadCount());
        if (c.end > c.begin) part[threadIndex()] = boundingBox(points + c.begin, c.end - c.begin);
    }
    Box<Vec3d> box = part[0];
    for (const Box<Vec3d>& b : part) includeBox(box, b);
    return box;
}

/// The key grid of the bounding cube of points (mortonKeysInBoundingCube).
struct KeyGrid
{
    Vec3d lo;
    double cellsPerUnit;

    uint64_t key(const Vec3d& p) const
    {
        return mortonKey(gridCoordinate(p.x, lo.x, cellsPerUnit), gridCoordinate(p.y, lo.y, cellsPerUnit),
                         gridCoordinate(p.z, lo.z, cellsPerUnit));
    }
};

KeyGrid keyGrid(const Vec3d* points, int64_t n, std::vector<Box<Vec3d>>& part)
{
    Box<Vec3d> box = parallelBoundingBox(points, n, part);
    double size    = largestExtent(box);
    if (!(size > 0)) size = 1.0;
    return {box.lo, double(kKeyGridSize) / size};
}

/// Cells of at most this many bodies are split by counting the octants of all their keys, bigger ones
/// by binary searches. Measured with one thread on the 2-core development machine (thread CPU time of
/// buildCells, Plummer 2^20 / 2^22): binary searches only 7.6 / 34.6 ms, counting up to 512 bodies
/// 5.0 / 23.0, up to 4096 4.7 / 17.3, up to 16384 - / 18.3, always 6.7 / 27.0.
constexpr int32_t kLinearSplitMax = 4096;

/// Splits the body range of a cell at `level` into its 8 octant ranges.
std::array<int32_t, 9> octantBounds(const uint64_t* keys, int32_t first, int32_t count, int level)
{
    std::array<int32_t, 9> bounds;
    bounds[0]          = first;
    bounds[8]          = first + count;
    const uint64_t* lo = keys + first;
    const uint64_t* hi = keys + first + count;
    if (count <= kLinearSplitMax)
    {
        int32_t n[8] = {};
        for (const uint64_t* k = lo; k < hi; ++k) n[octantAtLevel(*k, level + 1)]++;
        for (int oct = 0; oct < 7; ++oct) bounds[oct + 1] = bounds[oct] + n[oct];
        return bounds;
    }
    for (int oct = 1; oct < 8; ++oct)
    {
        const uint64_t* p =
            std::partition_point(lo, hi, [level, oct](uint64_t k) { return octantAtLevel(k, level + 1) < oct; });
        bounds[oct] = int32_t(p - keys);
    }
    return bounds;
}

void storeMultipole(Multipoles& mp, int32_t c, const Moments& mo)
{
    mp.mass[c]   = mo.mass;
    mp.com[c]    = mo.com;
    mp.quad[c]   = mo.quad;
    mp.boxMin[c] = mo.lo;
    mp.boxMax[c] = mo.hi;
}

void leafMultipole(const HostTree& t, int32_t c, Multipoles& mp)
{
    storeMultipole(mp, c, leafMoments(t.pos.data(), t.mass.data(), t.cells.first[c], t.cells.count[c]));
}

void internalMultipole(const HostTree& t, int32_t c, Multipoles& mp)
{
    Moments kids[8];
    const Moments* kidPointers[8];
    int32_t count = 0;
    for (int32_t k : t.cells.child[c])
    {
        if (k < 0) continue;
        kids[count]        = {mp.mass[k], mp.com[k], mp.quad[k], mp.boxMin[k], mp.boxMax[k]};
        kidPointers[count] = kids + count;
        ++count;
    }
    storeMultipole(mp, c, combineMoments(kidPointers, count));
}

} // namespace

namespace {

bool badCoordinate(double x) { return !std::isfinite(x) || std::fabs(x) > kMaxCoordinate; }

bool badBody(const BodySpan& b, int64_t i)
{
    return badCoordinate(b.pos[i].x) || badCoordinate(b.pos[i].y) || badCoordinate(b.pos[i].z) ||
           !std::isfinite(b.mass[i]) || b.mass[i] < 0;
}

/// The body with bad(k) and the smallest name (BodySpan::nameOf), or b.n when there is none.
template<class Bad>
int64_t firstBadBody(const BodySpan& b, Bad&& bad)
{
    if (!b.rank) return firstIndexWhere(b.n, bad);
    constexpr int64_t kNone = INT64_MAX;
    int64_t firstName = kNone, first = b.n;
#pragma omp parallel for schedule(static) reduction(min : firstName)
    for (int64_t k = 0; k < b.n; ++k)
    {
        if (b.rank[k] < firstName && bad(k)) firstName = b.rank[k];
    }
    if (firstName == kNone) return b.n;
    for (int64_t k = 0; k < b.n && first == b.n; ++k) first = b.rank[k] == firstName ? k : first;
    return first;
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
    const int64_t k = firstBadBody(b, [&b](int64_t j) { return badBody(b, j); });
    if (k == b.n) return;
    const int64_t i      = b.nameOf(k);
    const double c[3]    = {b.pos[k].x, b.pos[k].y, b.pos[k].z};
    const char* names[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d)
    {
        if (!std::isfinite(c[d])) throw InputError(bodyMessage(i, names[d], c[d], "is not finite"));
        if (std::fabs(c[d]) > kMaxCoordinate)
        {
            throw InputError(bodyMessage(i, names[d], c[d], "exceeds the coordinate limit |x| <= 1e15"));
        }
    }
    if (!std::isfinite(b.mass[k])) throw InputError(bodyMessage(i, "mass", b.mass[k], "is not finite"));
    throw InputError(bodyMessage(i, "mass", b.mass[k], "is negative"));
}

void mortonKeysInBoundingCube(const Vec3d* points, int64_t n, std::vector<uint64_t>& keys)
{
    std::vector<Box<Vec3d>> part;
    const KeyGrid grid = keyGrid(points, n, part);
    keys.resize(static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) keys[i] = grid.key(points[i]);
}

std::vector<uint64_t> mortonKeysInBoundingCube(const Vec3d* points, int64_t n)
{
    std::vector<uint64_t> keys;
    mortonKeysInBoundingCube(points, n, keys);
    return keys;
}

/// How far ahead the gather into tree order prefetches the caller's bodies.
constexpr int64_t kGatherPrefetch = 16;

void validateInBox(const BodySpan& b, double boxSize)
{
    auto outside = [boxSize](double x) { return !(x >= 0.0 && x < boxSize); };
    const int64_t k =
        firstBadBody(b, [&](int64_t j) { return outside(b.pos[j].x) || outside(b.pos[j].y) || outside(b.pos[j].z); });
    if (k == b.n) return;
    const int64_t i      = b.nameOf(k);
    const double c[3]    = {b.pos[k].x, b.pos[k].y, b.pos[k].z};
    const char* names[3] = {"x", "y", "z"};
    std::ostringstream rule;
    rule.precision(17);
    rule << "is outside the periodic box [0, " << boxSize << ") (box_size)";
    for (int d = 0; d < 3; ++d)
    {
        if (outside(c[d])) throw InputError(bodyMessage(i, names[d], c[d], rule.str().c_str()));
    }
}

void sortBodies(const BodySpan& b, HostTree& t, double boxSize)
{
    const int64_t n = b.n;
    BuildScratch& s = t.scratch;
    Stopwatch clock;
    if (boxSize > 0) validateInBox(b, boxSize);
    const KeyGrid grid =
        boxSize > 0 ? KeyGrid{{0.0, 0.0, 0.0}, double(kKeyGridSize) / boxSize} : keyGrid(b.pos, n, s.boxes);
    t.keys.resize(size_t(n));
    t.order.resize(size_t(n));
    s.keys.resize(size_t(n));
    s.order.resize(size_t(n));
    uint64_t* keys = t.keys.data();
    int32_t* order = t.order.data();
    uint64_t lo = ~uint64_t(0), hi = 0;
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
    for (int64_t i = 0; i < n; ++i)
    {
        const uint64_t k = grid.key(b.pos[i]);
        keys[i]          = k;
        order[i]         = int32_t(i);
        lo               = std::min(lo, k);
        hi               = std::max(hi, k);
    }

    // Most-significant-digit radix passes by all threads split the keys into runs of at most
    // largeMin (half a thread's share: a parallel pass over less costs more in start-up than it saves);
    // each run is then sorted, its ties broken and its bodies gathered by one thread, longest first.
    // Every pass is stable, so the order is (key, caller's index) for any thread count.
    t.partTimes.sortKeys = clock.lap();
    const SortBuffers buf{keys, s.keys.data(), order, s.order.data()};
    const int64_t largeMin = std::max(kLocalSortMin, n / (2 * int64_t(maxThreads())));
    s.large.clear();
    s.small.clear();
    const SortRange all{0, n, varyingBits(lo, hi), false};
    (n > largeMin && all.bits > 0 ? s.large : s.small).push_back(all);
    while (!s.large.empty())
    {
        const SortRange r = s.large.back();
        s.large.pop_back();
        splitRunInParallel(buf, r, largeMin, s);
    }
    t.partTimes.sortSplit = clock.lap();

    // Longest first, so that no long run starts last (the order of the runs does not change the result).
    std::sort(s.small.begin(), s.small.end(), [](const SortRange& a, const SortRange& c) {
        return a.end - a.begin != c.end - c.begin ? a.end - a.begin > c.end - c.begin : a.begin < c.begin;
    });
    t.pos.resize(size_t(n));
    t.mass.resize(size_t(n));
    const int64_t numRuns = int64_t(s.small.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t j = 0; j < numRuns; ++j)
    {
        const SortRange& r = s.small[j];
        sortRun(buf, r);
        if (b.id || b.rank) breakTiesById(keys, b, order, r.begin, r.end);
        for (int64_t k = r.begin; k < r.end; ++k)
        {
            if (k + kGatherPrefetch < r.end)
            {
                __builtin_prefetch(&b.pos[order[k + kGatherPrefetch]]);
                __builtin_prefetch(&b.mass[order[k + kGatherPrefetch]]);
            }
            t.pos[k]  = b.pos[order[k]];
            t.mass[k] = b.mass[order[k]];
        }
    }
    t.partTimes.sortRuns = clock.lap();
}

namespace {

/// A thread builds subtrees of at most about n / (kSubtreesPerThread * threads) bodies: enough of them
/// that the dynamic schedule evens out their sizes, few enough that the top (splitTop) stays small.
/// Measured on Plummer 2^22 for 16 threads: 155 top cells split in 0.3 ms (development machine), the
/// biggest of 1086 subtrees holds 16221 bodies (6% of a thread's share).
constexpr int64_t kSubtreesPerThread = 16;

/// Whether buildCells splits a cell.
bool splits(int32_t count, int level, int nLeaf) { return count > nLeaf && level < kMaxTreeLevel; }

/// The unit of the cell (first, count, level): a top cell when it splits with more than topMin bodies.
CellUnit unitOf(int32_t first, int32_t count, int level, int nLeaf, int64_t topMin)
{
    return {first, count, level, splits(count, level, nLeaf) && count > topMin, {-1, -1, -1, -1, -1, -1, -1, -1},
            -1,    0};
}

/// The top of the tree into split, breadth-first (childUnit: indices in split), level by level: the
/// octant bounds of a level's top cells in parallel (binary searches over all keys, which take most
/// of the time), then their children appended in order.
void splitTop(const uint64_t* keys, int32_t n, int nLeaf, int64_t topMin, CellScratch& s)
{
    std::vector<CellUnit>& split = s.topSplit;
    split.assign(1, unitOf(0, n, 0, nLeaf, topMin));
    for (size_t begin = 0, end = 1; begin < end; begin = end, end = split.size())
    {
        s.topBounds.resize(end - begin);
        const int64_t numCells = int64_t(end - begin);
#pragma omp parallel for schedule(dynamic, 1) if (numCells > 1)
        for (int64_t i = 0; i < numCells; ++i)
        {
            const CellUnit& cell = split[begin + size_t(i)];
            if (cell.top) s.topBounds[size_t(i)] = octantBounds(keys, cell.first, cell.count, cell.level);
        }
        for (size_t i = begin; i < end; ++i)
        {
            if (!split[i].top) continue;
            const std::array<int32_t, 9>& b = s.topBounds[i - begin];
            const int level                 = split[i].level;
            for (int o = 0; o < 8; ++o)
            {
                if (b[o + 1] == b[o]) continue;
                split[i].childUnit[o] = int32_t(split.size());
                split.push_back(unitOf(b[o], b[o + 1] - b[o], level + 1, nLeaf, topMin));
            }
        }
    }
}

/// Appends cell i of the split top (splitTop) and the cells below it to units, in pre-order; returns
/// its unit.
int32_t addUnits(const std::vector<CellUnit>& split, int32_t i, std::vector<CellUnit>& units)
{
    const int32_t u = int32_t(units.size());
    units.push_back(split[i]);
    for (int o = 0; o < 8; ++o)
    {
        const int32_t child = split[i].childUnit[o];
        if (child >= 0) units[u].childUnit[o] = addUnits(split, child, units);
    }
    return u;
}

/// Builds the subtree of unit u breadth-first at the end of arena, counting its cells per level. The
/// counts are summed locally and stored once: rows of neighbouring units share cache lines while other
/// threads build those units.
void buildSubtree(const uint64_t* keys, int nLeaf, CellUnit& unit, std::vector<SubtreeCell>& arena, int32_t* levelCount)
{
    const int32_t begin = int32_t(arena.size());
    unit.arenaBegin     = begin;
    std::array<int32_t, kNumTreeLevels> count{};
    arena.push_back({unit.first, unit.count, -1, uint8_t(unit.level), 0});
    for (size_t i = size_t(begin); i < arena.size(); ++i)
    {
        const SubtreeCell cell = arena[i];
        count[cell.level]++;
        if (!splits(cell.count, cell.level, nLeaf)) continue;
        const std::array<int32_t, 9> b = octantBounds(keys, cell.first, cell.count, cell.level);
        const int32_t firstChild       = int32_t(arena.size()) - begin;
        uint8_t mask                   = 0;
        for (int o = 0; o < 8; ++o)
        {
            if (b[o + 1] == b[o]) continue;
            mask |= uint8_t(1u << o);
            arena.push_back({b[o], b[o + 1] - b[o], -1, uint8_t(cell.level + 1), 0});
        }
        arena[i].firstChild = firstChild;
        arena[i].childMask  = mask;
    }
    std::copy(count.begin(), count.end(), levelCount);
}

/// The children of a split cell whose first child is cell firstChild (breadth-first children of one
/// cell are consecutive), one per set bit of mask.
std::array<int32_t, 8> childrenFrom(int32_t firstChild, unsigned mask)
{
    std::array<int32_t, 8> child;
    for (int o = 0; o < 8; ++o) child[o] = (mask >> o) & 1u ? firstChild++ : -1;
    return child;
}

/// The first cell of unit u at every level (breadth-first numbering).
std::array<int32_t, kNumTreeLevels> unitLevelStarts(const CellScratch& s, const std::vector<int32_t>& levelFirst,
                                                    int32_t u)
{
    std::array<int32_t, kNumTreeLevels> start;
    const int32_t* base = s.levelBase.data() + size_t(u) * kNumTreeLevels;
    const int numLevels = int(levelFirst.size()) - 1;
    for (int l = 0; l < kNumTreeLevels; ++l) start[l] = l < numLevels ? levelFirst[l] + base[l] : 0;
    return start;
}

/// Writes the cells of subtree unit u at their breadth-first numbers.
void numberSubtree(const CellScratch& s, const std::vector<int32_t>& levelFirst, int32_t u, OctreeCells& c)
{
    const CellUnit& unit                             = s.units[u];
    const SubtreeCell* cells                         = s.arenas[unit.arena].data() + unit.arenaBegin;
    const int32_t* count                             = s.levelCount.data() + size_t(u) * kNumTreeLevels;
    const std::array<int32_t, kNumTreeLevels> global = unitLevelStarts(s, levelFirst, u);
    std::array<int32_t, kNumTreeLevels + 1> local;
    local[unit.level] = 0;
    for (int l = unit.level; l < kNumTreeLevels; ++l) local[l + 1] = local[l] + count[l];
    for (int32_t i = 0; i < local[kNumTreeLevels]; ++i)
    {
        const SubtreeCell& cell = cells[i];
        const int l             = cell.level;
        const int32_t g         = global[l] + i - local[l];
        c.first[g]              = cell.first;
        c.count[g]              = cell.count;
        c.level[g]              = l;
        c.isLeaf[g]             = cell.childMask == 0;
        c.child[g] = childrenFrom(cell.childMask ? global[l + 1] + cell.firstChild - local[l + 1] : 0, cell.childMask);
    }
}

/// The units thread `part` of `parts` writes: a run of units in pre-order holding about a part's share of
/// the cells. Neighbouring units' cells of a level are neighbours in the arrays, so a thread that writes
/// a run of units writes both sides of most unit boundaries: few cache lines pass between threads.
std::pair<int32_t, int32_t> unitsOfPart(const CellScratch& s, int part, int parts)
{
    const int64_t numCells = s.cellsBefore.back();
    auto unitAt            = [&s, numCells, parts](int p) {
        const int64_t cell = numCells * p / parts;
        return int32_t(std::lower_bound(s.cellsBefore.begin(), s.cellsBefore.end() - 1, cell) - s.cellsBefore.begin());
    };
    return {unitAt(part), part + 1 == parts ? int32_t(s.units.size()) : unitAt(part + 1)};
}

/// Writes top cell u at its breadth-first number (its units' first cells are their roots).
void numberTopCell(const CellScratch& s, const std::vector<int32_t>& levelFirst, int32_t u, OctreeCells& c)
{
    const CellUnit& unit = s.units[u];
    const int32_t g      = unitLevelStarts(s, levelFirst, u)[unit.level];
    c.first[g]           = unit.first;
    c.count[g]           = unit.count;
    c.level[g]           = unit.level;
    c.isLeaf[g]          = 0;
    for (int o = 0; o < 8; ++o)
    {
        const int32_t v = unit.childUnit[o];
        c.child[g][o]   = v < 0 ? -1 : unitLevelStarts(s, levelFirst, v)[unit.level + 1];
    }
}

/// levelBase (every unit's cells of each level before it), cellsBefore and levelFirst from levelCount;
/// returns the number of cells.
int32_t numberUnits(CellScratch& s, std::vector<int32_t>& levelFirst)
{
    const size_t numUnits = s.units.size();
    s.levelBase.resize(numUnits * kNumTreeLevels);
    s.cellsBefore.resize(numUnits + 1);
    s.cellsBefore[0] = 0;
    std::array<int32_t, kNumTreeLevels> total{};
    for (size_t u = 0; u < numUnits; ++u)
    {
        int32_t cells = 0;
        for (int l = 0; l < kNumTreeLevels; ++l)
        {
            s.levelBase[u * kNumTreeLevels + l] = total[l];
            total[l] += s.levelCount[u * kNumTreeLevels + l];
            cells += s.levelCount[u * kNumTreeLevels + l];
        }
        s.cellsBefore[u + 1] = s.cellsBefore[u] + cells;
    }
    levelFirst.assign(1, 0);
    for (int l = 0; l < kNumTreeLevels && total[l] > 0; ++l) levelFirst.push_back(levelFirst.back() + total[l]);
    return levelFirst.back();
}

} // namespace

void buildCells(int nLeaf, HostTree& t)
{
    OctreeCells& c       = t.cells;
    CellScratch& s       = t.cellScratch;
    const uint64_t* keys = t.keys.data();
    const int32_t n      = int32_t(t.keys.size());
    const int numArenas  = maxThreads();
    const int64_t topMin = std::max<int64_t>(nLeaf, n / (kSubtreesPerThread * numArenas));
    Stopwatch clock;

    // The top of the tree, down to cells of at most topMin bodies: the subtrees.
    splitTop(keys, n, nLeaf, topMin, s);
    s.units.clear();
    addUnits(s.topSplit, 0, s.units);
    const int32_t numUnits = int32_t(s.units.size());
    s.levelCount.assign(size_t(numUnits) * kNumTreeLevels, 0);
    s.subtrees.clear();
    for (int32_t u = 0; u < numUnits; ++u)
    {
        if (s.units[u].top) s.levelCount[size_t(u) * kNumTreeLevels + s.units[u].level] = 1;
        else s.subtrees.push_back(u);
    }
    std::stable_sort(s.subtrees.begin(), s.subtrees.end(),
                     [&s](int32_t a, int32_t b) { return s.units[a].count > s.units[b].count; });

    // Every subtree by one thread, into that thread's arena; then all are numbered breadth-first
    // from the counts per unit and level, and written by runs of units in pre-order (unitsOfPart).
    t.partTimes.cellsTop = clock.lap();
    s.arenas.resize(size_t(numArenas));
    for (std::vector<SubtreeCell>& arena : s.arenas) arena.clear();
    const int32_t numSubtrees = int32_t(s.subtrees.size());
#pragma omp parallel num_threads(numArenas)
    {
        // The arena is grown through a vector on this thread's stack: the headers in s.arenas lie side by
        // side, and every push_back of a cell would write a line other threads read.
        const int a = threadIndex();
        std::vector<SubtreeCell> arena(std::move(s.arenas[a]));
#pragma omp for schedule(dynamic, 1) nowait
        for (int32_t j = 0; j < numSubtrees; ++j)
        {
            const int32_t u  = s.subtrees[j];
            s.units[u].arena = a;
            buildSubtree(keys, nLeaf, s.units[u], arena, s.levelCount.data() + size_t(u) * kNumTreeLevels);
        }
        s.arenas[a] = std::move(arena);
    }
    t.partTimes.cellsBuild = clock.lap();
    const int32_t numCells = numberUnits(s, t.scratch.levelFirst);
    c.first.resize(numCells);
    c.count.resize(numCells);
    c.level.resize(numCells);
    c.child.resize(numCells);
    c.isLeaf.resize(numCells);
    t.partTimes.cellsCount = clock.lap();
#pragma omp parallel
    {
        const auto [begin, end] = unitsOfPart(s, threadIndex(), threadCount());
        for (int32_t u = begin; u < end; ++u)
        {
            if (s.units[u].top) numberTopCell(s, t.scratch.levelFirst, u, c);
            else numberSubtree(s, t.scratch.levelFirst, u, c);
        }
    }
    c.depth                = int32_t(t.scratch.levelFirst.size()) - 2;
    s.numCells             = numCells;
    t.partTimes.cellsWrite = clock.lap();
}

namespace {

/// The multipoles of a cell and all cells below it, children before parents (depth <= kMaxTreeLevel).
void multipolesBelow(const HostTree& t, int32_t cell, Multipoles& mp)
{
    if (t.cells.isLeaf[cell])
    {
        leafMultipole(t, cell, mp);
        return;
    }
    for (int32_t k : t.cells.child[cell])
    {
        if (k >= 0) multipolesBelow(t, k, mp);
    }
    internalMultipole(t, cell, mp);
}

} // namespace

void computeMultipoles(HostTree& t)
{
    const OctreeCells& c = t.cells;
    const CellScratch& s = t.cellScratch;
    Multipoles& mp       = t.poles;
    int32_t n            = c.size();
    mp.mass.resize(n);
    mp.com.resize(n);
    mp.quad.resize(n);
    mp.boxMin.resize(n);
    mp.boxMax.resize(n);
    if (n == 0) return;
    if (s.numCells != n || s.units.empty())
    {
        multipolesBelow(t, 0, mp); // cells that buildCells did not make: one thread
        return;
    }

    // Each subtree by one thread, in post-order (its cells need only its own cells and bodies; the
    // leaves come in body order, so the bodies stream in), then the top cells serially in reverse
    // pre-order (children before parents). Each cell sums in the same order as ever, whatever the
    // schedule.
    const std::vector<int32_t>& levelFirst = t.scratch.levelFirst;
    const int32_t numSubtrees              = int32_t(s.subtrees.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int32_t j = 0; j < numSubtrees; ++j)
    {
        const int32_t u = s.subtrees[j];
        multipolesBelow(t, unitLevelStarts(s, levelFirst, u)[s.units[u].level], mp);
    }
    for (int32_t u = int32_t(s.units.size()); u-- > 0;)
    {
        if (s.units[u].top) internalMultipole(t, unitLevelStarts(s, levelFirst, u)[s.units[u].level], mp);
    }
}

namespace {

/// Whether a cell of count bodies whose parent holds parentCount is a group (else its children are
/// searched): at most nGroup bodies, and not kGroupContrast times fewer than its parent.
bool isGroup(int32_t count, int32_t parentCount, int nGroup)
{
    return count <= nGroup && int64_t(parentCount) <= int64_t(kGroupContrast) * count;
}

/// Emits the groups below a cell, in Morton order: children that isGroup accepts become groups (with
/// merge, a run of such siblings is joined while together they hold at most nGroup bodies, so a merged
/// group stays inside its parent's box); the others recurse (depth <= kMaxTreeLevel). A leaf is cut
/// into chunks of nGroup (more than one only for a maximum-depth leaf of coincident bodies).
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
        if (!isGroup(c.count[k], c.count[cell], nGroup))
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

namespace {

/// collectGroups over top cell u, in pieces: a child that isGroup refuses is entered when it is a top
/// cell and is a piece of its own when it is a subtree (its groups are collected in parallel); the
/// others are groups, merged as collectGroups merges them.
void collectTopGroups(const OctreeCells& c, const CellScratch& s, int32_t u, int nGroup, bool merge,
                      std::vector<GroupPiece>& pieces)
{
    bool previousSiblingIsGroup = false;
    for (int32_t v : s.units[u].childUnit)
    {
        if (v < 0) continue;
        const CellUnit& child = s.units[v];
        if (!isGroup(child.count, s.units[u].count, nGroup))
        {
            if (child.top) collectTopGroups(c, s, v, nGroup, merge, pieces);
            else pieces.push_back({{0, 0}, v});
            previousSiblingIsGroup = false;
            continue;
        }
        if (merge && previousSiblingIsGroup && pieces.back().group.y + child.count <= nGroup)
        {
            pieces.back().group.y += child.count;
        }
        else pieces.push_back({{child.first, child.count}, -1});
        previousSiblingIsGroup = true;
    }
}

} // namespace

void makeGroups(int nGroup, HostTree& t, bool merge)
{
    const OctreeCells& c = t.cells;
    CellScratch& s       = t.cellScratch;
    if (c.count[0] <= nGroup)
    {
        t.groups.assign(1, {0, c.count[0]});
        return;
    }
    if (s.numCells != c.size() || s.units.empty())
    {
        // Cells that buildCells did not make (its units do not describe them): one recursion.
        t.groups.clear();
        collectGroups(c, 0, nGroup, merge, t.groups);
        return;
    }
    const std::vector<int32_t>& levelFirst = t.scratch.levelFirst;
    const int32_t numSubtrees              = int32_t(s.subtrees.size());
    s.unitGroups.resize(s.units.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int32_t j = 0; j < numSubtrees; ++j)
    {
        const int32_t u = s.subtrees[j];
        // Collected through a vector on this thread's stack: the headers in s.unitGroups lie side by
        // side, and every push_back would write a line other threads read.
        std::vector<I2> groups;
        groups.swap(s.unitGroups[u]);
        groups.clear();
        // Even a subtree small enough to be one group: collectTopGroups splits it when its parent holds
        // kGroupContrast times more.
        const int32_t root = unitLevelStarts(s, levelFirst, u)[s.units[u].level];
        collectGroups(c, root, nGroup, merge, groups);
        groups.swap(s.unitGroups[u]);
    }
    std::vector<GroupPiece>& pieces = s.groupPieces;
    pieces.clear();
    if (s.units[0].top) collectTopGroups(c, s, 0, nGroup, merge, pieces);
    else pieces.push_back({{0, 0}, 0});

    // Each piece's place in the groups, then the pieces copied there in parallel.
    const int32_t numPieces = int32_t(pieces.size());
    s.pieceFirst.resize(size_t(numPieces) + 1);
    s.pieceFirst[0] = 0;
    for (int32_t k = 0; k < numPieces; ++k)
    {
        const int32_t u     = pieces[k].unit;
        s.pieceFirst[k + 1] = s.pieceFirst[k] + (u < 0 ? 1 : int32_t(s.unitGroups[u].size()));
    }
    t.groups.resize(size_t(s.pieceFirst[numPieces]));
#pragma omp parallel for schedule(dynamic, 1)
    for (int32_t k = 0; k < numPieces; ++k)
    {
        const int32_t u = pieces[k].unit;
        if (u < 0) t.groups[s.pieceFirst[k]] = pieces[k].group;
        else std::copy(s.unitGroups[u].begin(), s.unitGroups[u].end(), t.groups.begin() + s.pieceFirst[k]);
    }
}

} // namespace octwalk

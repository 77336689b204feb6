#include "host/tree/octree.h"

#include <algorithm>
#include <numeric>

#include "common/sfc.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/tree/bounds.h"

namespace octwalk {

namespace {

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

KeyGrid keyGrid(const Vec3d* points, int64_t n, std::vector<Box<Vec3d>>& part)
{
    const Box<Vec3d> box = parallelBoundingBox(points, n, part);
    return KeyGrid::ofBox(box.lo, box.hi);
}

} // namespace

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

namespace {

/// t.mass[k] = the bodies' order[k], for k in [begin, end).
void gatherMasses(const BodySpan& b, HostTree& t, int64_t begin, int64_t end)
{
    const int32_t* order = t.order.data();
    for (int64_t k = begin; k < end; ++k) t.mass[k] = b.mass[order[k]];
}

/// t.pos[k], t.mass[k] = the bodies' order[k], for k in [begin, end).
void gatherBodies(const BodySpan& b, HostTree& t, int64_t begin, int64_t end)
{
    const int32_t* order = t.order.data();
    for (int64_t k = begin; k < end; ++k)
    {
        if (k + kGatherPrefetch < end)
        {
            __builtin_prefetch(&b.pos[order[k + kGatherPrefetch]]);
            __builtin_prefetch(&b.mass[order[k + kGatherPrefetch]]);
        }
        t.pos[k]  = b.pos[order[k]];
        t.mass[k] = b.mass[order[k]];
    }
}

} // namespace

void adoptSortedKeys(const BodySpan& b, const uint64_t* sortedKeys, const int32_t* sortedIndex, HostTree& t,
                     bool withMasses)
{
    const int64_t n = b.n;
    t.keys.resize(size_t(n));
    t.order.resize(size_t(n));
    t.pos.clear();
    t.mass.resize(withMasses ? size_t(n) : 0);
    uint64_t* keys = t.keys.data();
    int32_t* order = t.order.data();
#pragma omp parallel
    {
        const Chunk c = chunkOf(n, threadIndex(), threadCount());
        std::copy(sortedKeys + c.begin, sortedKeys + c.end, keys + c.begin);
        std::copy(sortedIndex + c.begin, sortedIndex + c.end, order + c.begin);
#pragma omp barrier
        // Each thread breaks the ties of the runs of equal keys that start in its chunk (a run may reach
        // into the next chunk, whose thread skips it).
        if (b.id || b.rank)
        {
            int64_t begin = c.begin;
            while (begin < c.end && begin > 0 && keys[begin - 1] == keys[begin]) ++begin;
            int64_t end = std::max(begin, c.end);
            while (end > begin && end < n && keys[end - 1] == keys[end]) ++end;
            if (begin < end) breakTiesById(keys, b, order, begin, end);
        }
        if (withMasses)
        {
#pragma omp barrier
            gatherMasses(b, t, c.begin, c.end);
        }
    }
}

void sortBodies(const BodySpan& b, HostTree& t, double boxSize)
{
    const int64_t n = b.n;
    BuildScratch& s = t.scratch;
    Stopwatch clock;
    if (boxSize > 0) validateInBox(b, boxSize);
    const KeyGrid grid = boxSize > 0 ? KeyGrid::ofCube({0.0, 0.0, 0.0}, boxSize) : keyGrid(b.pos, n, s.boxes);
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
        gatherBodies(b, t, r.begin, r.end);
    }
    t.partTimes.sortRuns = clock.lap();
}

} // namespace octwalk

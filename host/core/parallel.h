#pragma once
/// @file parallel.h
/// Small OpenMP helpers whose results do not depend on the thread count: sums over fixed blocks
/// (the blocks, not the threads, set the order of the additions), the first index that fails a
/// test, and static chunks of a range. Without OpenMP (the serial twins) they run the same
/// arithmetic on one thread, so the OpenMP and serial builds agree bit for bit.

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace octwalk {

/// Threads a parallel region started here would get (1 without OpenMP).
inline int maxThreads()
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/// Sets the threads of the parallel regions this host thread starts from now on (n >= 1; nothing without
/// OpenMP). Per thread: other host threads keep theirs.
inline void setThreadsOfThisThread(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/// Inside a parallel region: this thread's index and the region's thread count (0 and 1 outside).
inline int threadIndex()
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

inline int threadCount()
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/// Chunk `part` of `parts` equal static chunks of [0, n): [begin, end).
struct Chunk
{
    int64_t begin, end;
};

inline Chunk chunkOf(int64_t n, int part, int parts) { return {n * part / parts, n * (part + 1) / parts}; }

/// Bodies per block of a deterministic reduction: each block is summed in index order, then the
/// block sums are added in block order, whatever the thread count.
constexpr int64_t kReductionBlock = 4096;

/// The sum over i in [0, n) of term(i) (a value type T with T{} as zero and +=), added in fixed
/// blocks of kReductionBlock: bit-identical for any thread count and in the serial build.
template<class T, class Term>
T deterministicSum(int64_t n, Term&& term)
{
    const int64_t numBlocks = (n + kReductionBlock - 1) / kReductionBlock;
    if (numBlocks <= 1)
    {
        T s{};
        for (int64_t i = 0; i < n; ++i) s += term(i);
        return s;
    }
    std::vector<T> partial(size_t(numBlocks), T{});
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < numBlocks; ++b)
    {
        T s{};
        for (int64_t i = b * kReductionBlock, end = std::min(n, i + kReductionBlock); i < end; ++i) s += term(i);
        partial[b] = s;
    }
    T total{};
    for (const T& s : partial) total += s;
    return total;
}

/// The sum over i in [0, n) of term(i) in the fixed blocks of kReductionBlock, each block as Lanes interleaved lanes:
/// lane l adds term(begin + l), term(begin + l + Lanes), ... in order, a block's sum is its lanes' added in lane order,
/// and the blocks' sums are added in block order (a single block: its sum). A device block of Lanes threads adds in
/// this order with no thread waiting on another's terms (device/resident_gpu.cu: the diagnostics' sums); bit-identical
/// for any thread count and in the serial build.
template<int Lanes, class T, class Term>
T interleavedSum(int64_t n, Term&& term)
{
    static_assert(kReductionBlock % Lanes == 0, "a block holds whole rounds of the lanes");
    const int64_t numBlocks = (n + kReductionBlock - 1) / kReductionBlock;
    const auto blockSum     = [&](int64_t b) {
        std::array<T, Lanes> lane{};
        const int64_t begin = b * kReductionBlock, end = std::min(n, begin + kReductionBlock);
        int l = 0;
        for (int64_t i = begin; i < end; ++i)
        {
            lane[size_t(l)] += term(i);
            l = l + 1 == Lanes ? 0 : l + 1;
        }
        T s{};
        for (const T& t : lane) s += t;
        return s;
    };
    if (numBlocks <= 1) return numBlocks == 1 ? blockSum(0) : T{};
    std::vector<T> partial(size_t(numBlocks), T{});
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < numBlocks; ++b) partial[size_t(b)] = blockSum(b);
    T total{};
    for (const T& s : partial) total += s;
    return total;
}

/// The smallest i in [0, n) with bad(i), or n when there is none; the same index for any thread count.
template<class Bad>
int64_t firstIndexWhere(int64_t n, Bad&& bad)
{
    int64_t first = n;
#pragma omp parallel for schedule(static) reduction(min : first)
    for (int64_t i = 0; i < n; ++i)
    {
        if (i < first && bad(i)) first = i;
    }
    return first;
}

} // namespace octwalk

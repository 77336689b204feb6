#include "host/core/order_statistics.h"

#include <algorithm>
#include <cstring>

namespace octwalk {

namespace {

constexpr int kBucketBits = 16;

/// The leading bits of a non-negative double's pattern, which orders such doubles as their values.
size_t bucketOf(double x)
{
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    return size_t(bits >> (64 - kBucketBits));
}

/// How many of the values fall in each bucket.
std::vector<int64_t> bucketCounts(const double* values, int64_t n)
{
    std::vector<int64_t> count(size_t(1) << kBucketBits, 0);
#pragma omp parallel
    {
        std::vector<int64_t> mine(count.size(), 0);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; ++i) ++mine[bucketOf(values[i])];
#pragma omp critical
        for (size_t b = 0; b < count.size(); ++b) count[b] += mine[b];
    }
    return count;
}

} // namespace

std::vector<double> orderStatistics(const double* values, int64_t n, const std::vector<int64_t>& rank)
{
    const std::vector<int64_t> count = bucketCounts(values, n);
    // Bucket b holds the ranks [before[b], before[b] + count[b]).
    std::vector<int64_t> before(count.size() + 1, 0);
    for (size_t b = 0; b < count.size(); ++b) before[b + 1] = before[b] + count[b];
    std::vector<int> held(count.size(), -1);
    std::vector<std::vector<double>> members;
    std::vector<size_t> bucketOfRank(rank.size());
    for (size_t k = 0; k < rank.size(); ++k)
    {
        const size_t b  = size_t(std::upper_bound(before.begin(), before.end(), rank[k]) - before.begin()) - 1;
        bucketOfRank[k] = b;
        if (held[b] < 0)
        {
            held[b] = int(members.size());
            members.emplace_back();
            members.back().reserve(size_t(count[b]));
        }
    }
    for (int64_t i = 0; i < n; ++i)
    {
        const int h = held[bucketOf(values[i])];
        if (h >= 0) members[size_t(h)].push_back(values[i]);
    }
    std::vector<double> out(rank.size());
    for (size_t k = 0; k < rank.size(); ++k)
    {
        const size_t b          = bucketOfRank[k];
        std::vector<double>& in = members[size_t(held[b])];
        const auto nth          = in.begin() + (rank[k] - before[b]);
        std::nth_element(in.begin(), nth, in.end());
        out[k] = *nth;
    }
    return out;
}

} // namespace octwalk

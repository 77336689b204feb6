#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "host/core/mass_weighted.h"
#include "host/core/parallel.h"
#include "host/sim/simulation.h"

namespace octwalk {

namespace {

/// Sorts v ascending: chunks sorted by the threads, then merged pairwise. Equal pairs are identical, so
/// the result is std::sort's for any thread count.
void parallelSort(std::vector<std::pair<double, double>>& v)
{
    const int64_t n = int64_t(v.size());
    const int parts = maxThreads();
    if (parts < 2 || n < int64_t(parts) * 1024)
    {
        std::sort(v.begin(), v.end());
        return;
    }
    std::vector<int64_t> bound(size_t(parts) + 1);
    for (int k = 0; k <= parts; ++k) bound[k] = n * k / parts;
#pragma omp parallel for schedule(static, 1)
    for (int k = 0; k < parts; ++k) std::sort(v.begin() + bound[k], v.begin() + bound[k + 1]);
    for (int width = 1; width < parts; width *= 2)
    {
#pragma omp parallel for schedule(dynamic, 1)
        for (int k = 0; k < parts; k += 2 * width)
        {
            if (k + width >= parts) continue;
            std::inplace_merge(v.begin() + bound[k], v.begin() + bound[k + width],
                               v.begin() + bound[std::min(k + 2 * width, parts)]);
        }
    }
}

/// The radii where the running mass, added in the order of (radius, mass), first reaches each fraction of m
/// (the largest radius where it never does).
std::vector<double> radiiOfSortedPairs(const std::vector<double>& r, const std::vector<double>& mass, double m,
                                       const std::vector<double>& fractions)
{
    const int64_t n = int64_t(r.size());
    std::vector<std::pair<double, double>> rm(r.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) rm[i] = {r[i], mass[i]};
    parallelSort(rm);
    std::vector<double> radii(fractions.size(), rm.empty() ? 0.0 : rm.back().first);
    double cumulative = 0;
    size_t next       = 0;
    for (const auto& [ri, mi] : rm)
    {
        cumulative += mi;
        while (next < fractions.size() && cumulative >= fractions[next] * m) radii[next++] = ri;
    }
    return radii;
}

bool allEqual(const std::vector<double>& mass)
{
    const int64_t n = int64_t(mass.size());
    int differs     = 0;
#pragma omp parallel for schedule(static) reduction(max : differs)
    for (int64_t i = 0; i < n; ++i) differs = std::max(differs, int(std::memcmp(&mass[i], &mass[0], sizeof(double))));
    return differs == 0;
}

constexpr int kBucketBits = 16;

/// The leading bits of a non-negative double's pattern, which orders such doubles as their values.
size_t bucketOf(double x)
{
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    return size_t(bits >> (64 - kBucketBits));
}

/// The rank[k]-th smallest of the non-negative radii r (each rank < r.size()): the radii counted by their leading
/// bits, then only the buckets holding a rank kept and partly ordered (std::nth_element), instead of a sort of all.
std::vector<double> orderStatistics(const std::vector<double>& r, const std::vector<int64_t>& rank)
{
    const int64_t n = int64_t(r.size());
    std::vector<int64_t> count(size_t(1) << kBucketBits, 0);
#pragma omp parallel
    {
        std::vector<int64_t> mine(count.size(), 0);
#pragma omp for schedule(static)
        for (int64_t i = 0; i < n; ++i) ++mine[bucketOf(r[i])];
#pragma omp critical
        for (size_t b = 0; b < count.size(); ++b) count[b] += mine[b];
    }
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
        const int h = held[bucketOf(r[i])];
        if (h >= 0) members[size_t(h)].push_back(r[i]);
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

/// radiiOfSortedPairs for bodies of one mass mi. Equal masses add up alike in any order, so the running sums, and
/// the ranks where they reach each fraction, are known before the radii are ordered; only those ranks' radii are
/// then found (the same bits as the sort's).
std::vector<double> radiiOfEqualMasses(const std::vector<double>& r, double mi, double m,
                                       const std::vector<double>& fractions)
{
    const int64_t n = int64_t(r.size());
    std::vector<int64_t> rank(fractions.size(), n - 1);
    double cumulative = 0;
    size_t next       = 0;
    for (int64_t j = 0; j < n && next < fractions.size(); ++j)
    {
        cumulative += mi;
        while (next < fractions.size() && cumulative >= fractions[next] * m) rank[next++] = j;
    }
    return orderStatistics(r, rank);
}

} // namespace

std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions)
{
    const MassWeighted centre = massWeighted(p.mass, p.pos);
    const Vec3d c             = centre.mean();
    const int64_t n           = p.size();
    std::vector<double> r(static_cast<size_t>(n));
    int notANumber = 0;
#pragma omp parallel for schedule(static) reduction(max : notANumber)
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d d = p.pos[i] - c;
        r[i]          = std::sqrt(dot(d, d));
        notANumber    = std::max(notANumber, int(std::isnan(r[i])));
    }
    // A NaN radius has no place in the order of the leading bits; the sort keeps its old treatment of it.
    if (n > 0 && notANumber == 0 && allEqual(p.mass)) return radiiOfEqualMasses(r, p.mass[0], centre.mass, fractions);
    return radiiOfSortedPairs(r, p.mass, centre.mass, fractions);
}

} // namespace octwalk

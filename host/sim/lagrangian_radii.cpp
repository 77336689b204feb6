#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "common/integrate.h"
#include "host/core/mass_weighted.h"
#include "host/core/order_statistics.h"
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

} // namespace

bool equalMasses(const std::vector<double>& mass)
{
    const int64_t n = int64_t(mass.size());
    int differs     = 0;
#pragma omp parallel for schedule(static) reduction(max : differs)
    for (int64_t i = 0; i < n; ++i)
        differs = std::max(differs, int(std::memcmp(&mass[i], &mass[0], sizeof(double)) != 0));
    return differs == 0;
}

std::vector<int64_t> equalMassRanks(int64_t n, double mi, double m, const std::vector<double>& fractions)
{
    std::vector<int64_t> rank(fractions.size(), n - 1);
    double cumulative = 0;
    size_t next       = 0;
    for (int64_t j = 0; j < n && next < fractions.size(); ++j)
    {
        cumulative += mi;
        while (next < fractions.size() && cumulative >= fractions[next] * m) rank[next++] = j;
    }
    return rank;
}

std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions,
                                    const MassWeighted& centre)
{
    const Vec3d c   = centre.mean();
    const int64_t n = p.size();
    std::vector<double> r(static_cast<size_t>(n));
    int notANumber = 0;
#pragma omp parallel for schedule(static) reduction(max : notANumber)
    for (int64_t i = 0; i < n; ++i)
    {
        r[i]       = radiusAbout(p.pos[i], c);
        notANumber = std::max(notANumber, int(std::isnan(r[i])));
    }
    // A NaN radius has no place in the order of the leading bits; the sort keeps its old treatment of it.
    if (n > 0 && notANumber == 0 && equalMasses(p.mass))
    {
        // Equal masses add up alike in any order, so the running sums, and the ranks where they reach each
        // fraction, are known before the radii are ordered; only those ranks' radii are then found (the sort's bits).
        return orderStatistics(r.data(), n, equalMassRanks(n, p.mass[0], centre.mass, fractions));
    }
    return radiiOfSortedPairs(r, p.mass, centre.mass, fractions);
}

std::vector<double> lagrangianRadii(const ParticleSet& p, const std::vector<double>& fractions)
{
    return lagrangianRadii(p, fractions, massWeighted(p.mass, p.pos));
}

} // namespace octwalk

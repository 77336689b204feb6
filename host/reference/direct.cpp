#include "host/reference/direct.h"

#include <algorithm>
#include <numeric>

#include "common/gravity.h"
#include "host/core/random.h"

namespace octwalk {

void directSum(const Vec3d* pos, const double* mass, int64_t n, const std::vector<int64_t>& targets, double eps2,
               double G, std::vector<Vec3d>& acc, std::vector<double>& pot)
{
    int64_t numTargets = int64_t(targets.size());
    acc.resize(numTargets);
    pot.resize(numTargets);
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t t = 0; t < numTargets; ++t)
    {
        int64_t i = targets[t];
        Vec3d a{0, 0, 0};
        double p = 0;
        for (int64_t j = 0; j < n; ++j)
        {
            if (j != i) bodyBody(pos[j] - pos[i], mass[j], eps2, a, p);
        }
        acc[t] = G * a;
        pot[t] = G * p;
    }
}

void directSumAll(const Vec3d* pos, const double* mass, int64_t n, double eps2, double G, std::vector<Vec3d>& acc,
                  std::vector<double>& pot)
{
    std::vector<int64_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    directSum(pos, mass, n, all, eps2, G, acc, pot);
}

std::vector<int64_t> sampleIndices(int64_t n, int64_t k, uint64_t seed)
{
    std::vector<int64_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    if (k >= n) return idx;
    Random rng(seed);
    for (int64_t i = 0; i < k; ++i)
    {
        int64_t j = i + int64_t(rng.below(uint64_t(n - i)));
        std::swap(idx[i], idx[j]);
    }
    idx.resize(k);
    std::sort(idx.begin(), idx.end());
    return idx;
}

} // namespace octwalk

#pragma once
/// @file direct.h
/// Direct summation in double: the reference every tree result is measured against.

#include <cstdint>
#include <vector>

#include "common/vec.h"

namespace octwalk {

/// Accelerations and potentials (G applied) on the bodies listed in targets, from all n bodies,
/// in double with Plummer softening eps2; a body skips itself. acc/pot are indexed like targets.
void directSum(const Vec3d* pos, const double* mass, int64_t n, const std::vector<int64_t>& targets, double eps2,
               double G, std::vector<Vec3d>& acc, std::vector<double>& pot);

/// All bodies as targets.
void directSumAll(const Vec3d* pos, const double* mass, int64_t n, double eps2, double G, std::vector<Vec3d>& acc,
                  std::vector<double>& pot);

/// k distinct body indices drawn uniformly with a fixed seed (all of them, in order, when k >= n).
std::vector<int64_t> sampleIndices(int64_t n, int64_t k, uint64_t seed);

} // namespace octwalk

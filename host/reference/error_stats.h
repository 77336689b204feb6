#pragma once
/// @file accuracy.h
/// Error statistics of tree forces against a reference.

#include <cstdint>
#include <vector>

#include "common/vec.h"

namespace octwalk {

struct ErrorStats
{
    int64_t count = 0;
    double median = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
};

/// Per-body relative acceleration errors |a - a_ref| / |a_ref| (0 where both are zero).
std::vector<double> relativeErrors(const std::vector<Vec3d>& acc, const std::vector<Vec3d>& ref);

/// Percentiles (nearest rank) of a set of errors.
ErrorStats errorStats(std::vector<double> errors);

} // namespace octwalk

#pragma once
/// @file order_statistics.h
/// Chosen order statistics of many values without a sort of them all: lagrange.csv's radii
/// (host/sim/lagrangian_radii.cpp) and the CPU twin of the device's radii (host/cpu/resident_cpu.h).

#include <cstdint>
#include <vector>

namespace octwalk {

/// The rank[k]-th smallest of values[0, n) for each k: the values counted by the leading bits of their patterns,
/// then only the buckets that hold a rank partly ordered (std::nth_element). A value is unique for its rank, so the
/// result is any sort's, for any thread count.
/// @param[in] values  n non-negative values, none NaN (their patterns then order as they do)
/// @param[in] rank    each < n
std::vector<double> orderStatistics(const double* values, int64_t n, const std::vector<int64_t>& rank);

} // namespace octwalk

#pragma once
/// @file j_split.h
/// How many slices of the source (j) range a launch splits into, shared by the kernels that split it
/// over blocks (g6_gpu.cu, direct_gpu.cu): each (i-group, j-slice) pair is a unit of work of its own,
/// and a second kernel adds the slices' partial sums in slice order (no atomics, bit-identical repeats).

#include <algorithm>
#include <cstdint>

namespace octwalk {

/// The j-slices of a launch: as many as fill every SM with resident units once (one wave, equal work
/// per unit, no half-empty second wave), none shorter than minSliceLength, at most 65535.
/// @param[in] iUnits          units of work per slice (i-groups)
/// @param[in] residentUnits   units the whole device holds at once
/// @param[in] nj              sources
/// @param[in] minSliceLength  the shortest slice worth a unit of its own
inline int sliceCount(int64_t iUnits, int64_t residentUnits, int64_t nj, int minSliceLength)
{
    const int64_t maxSlices =
        std::max<int64_t>(1, std::min<int64_t>((nj + minSliceLength - 1) / minSliceLength, 65535));
    return int(std::clamp<int64_t>(residentUnits / std::max<int64_t>(iUnits, 1), 1, maxSlices));
}

} // namespace octwalk

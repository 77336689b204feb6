#pragma once
/// @file cell_units.h
/// Where the units of the last buildCells (CellScratch) put their cells, for the passes that follow
/// the cells unit by unit: the multipoles and the groups.

#include <array>
#include <cstdint>
#include <vector>

#include "host/tree/octree.h"

namespace octwalk {

/// The first cell of unit u at every level (breadth-first numbering).
inline std::array<int32_t, kNumTreeLevels> unitLevelStarts(const CellScratch& s, const std::vector<int32_t>& levelFirst,
                                                           int32_t u)
{
    std::array<int32_t, kNumTreeLevels> start;
    const int32_t* base = s.levelBase.data() + size_t(u) * kNumTreeLevels;
    const int numLevels = int(levelFirst.size()) - 1;
    for (int l = 0; l < kNumTreeLevels; ++l) start[l] = l < numLevels ? levelFirst[l] + base[l] : 0;
    return start;
}

} // namespace octwalk

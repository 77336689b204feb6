#pragma once
/// @file lane_expansions.h
/// The device's order of a group's expansion sum (device/lane_reduce.cuh): lane l of a warp adds entries l,
/// l + 32, .. of what the group sums; the 32 partial expansions are reduced by a butterfly (l with l ^ 16,
/// then ^ 8, .. ^ 1), so both backends round the same sums. The Ewald correction (ewald_cpu.cpp) and the far
/// field (forces_cpu.cpp) use it.

#include "common/ewald.h"
#include "common/ewald_walk.h"

namespace octwalk {

struct LaneExpansions
{
    static constexpr int kLanes = kEwaldWarpLanes;
    EwaldLocal lane[kLanes];

    void clear()
    {
        for (EwaldLocal& l : lane) l = zeroEwaldLocal();
    }

    /// Lane 0's sum after the butterfly: at each stride s it adds lanes l and l + s for the l < s that lane 0's
    /// sum still needs (the same additions in the same order, without the other lanes' sums).
    EwaldLocal reduce() const
    {
        EwaldLocal v[kLanes];
        for (int l = 0; l < kLanes; ++l) v[l] = lane[l];
        for (int stride = kLanes / 2; stride >= 1; stride /= 2)
        {
            for (int l = 0; l < stride; ++l) addEwaldLocal(v[l], v[l + stride]);
        }
        return v[0];
    }
};

} // namespace octwalk

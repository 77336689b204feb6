#pragma once
/// @file prefetch.h
/// Software prefetch for passes that gather bodies through a permutation (the tree-order pass, the
/// diagnostics' sums in the caller's order): the gathered slots jump, so the hardware prefetcher cannot
/// follow them and each gather would wait for memory.

#include "common/vec.h"

namespace octwalk {

/// How many bodies ahead a gathering pass prefetches. A step reorders more than it seems: after a step of
/// 1/64 of a Plummer sphere of 2^22 bodies only 16% of neighbours in the new order were neighbours before
/// and 38% jump by more than 64 slots. Measured with BM_StepPasses (fused, 2^22, one thread, CPU time on the
/// busy 2-core development machine): no prefetch 96 ms, 8 ahead 59, 16 ahead 51, 32 ahead 40, 64 ahead 37,
/// 128 ahead 45; also prefetching the line a velocity's end may lie on: 32 ahead 34, 64 ahead 31, 128 ahead
/// 33 ms. (Non-temporal stores of what the pass writes did not pay there: 36 instead of 32 ms.)
constexpr int64_t kGatherPrefetch = 64;

/// Prefetches both cache lines the 24 bytes of a Vec3d may straddle.
inline void prefetchVec(const Vec3d& v)
{
    __builtin_prefetch(&v.x);
    __builtin_prefetch(&v.z);
}

} // namespace octwalk

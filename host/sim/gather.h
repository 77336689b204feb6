#pragma once
/// @file gather.h
/// The gather from the simulation's tree order into the caller's order, shared by the views of its
/// state (Simulation::state) and its checkpoints.

#include <cstdint>
#include <vector>

namespace octwalk {

/// to[i] = from[slot[i]] for every caller's index i (slot: Simulation::slots()).
template<class T>
void gather(const std::vector<T>& from, const std::vector<int32_t>& slot, std::vector<T>& to)
{
    const int64_t n = int64_t(slot.size());
    to.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) to[i] = from[slot[i]];
}

} // namespace octwalk

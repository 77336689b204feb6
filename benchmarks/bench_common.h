#pragma once
// Pieces every benchmark shares: one cache of models, the bodies-per-second counter and the phase
// counters (one per entry of common/phases.h, named as the outputs name them, plus "_s").
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host/core/phases.h"
#include "host/models/models.h"

namespace octwalk::bench {

/// Plummer spheres by N, made once per process (seed 42).
inline const ParticleSet& plummer(int64_t n)
{
    static std::map<int64_t, ParticleSet> cache;
    auto it = cache.find(n);
    if (it == cache.end()) it = cache.emplace(n, makePlummer(n, 42)).first;
    return it->second;
}

inline void setRate(benchmark::State& state, int64_t n)
{
    state.counters["bodies_per_second"] = benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
}

/// The median of every phase over the iterations, and the host and walk totals, in seconds.
inline void setPhaseCounters(benchmark::State& state, const std::vector<PhaseTimes>& times)
{
    PhaseTimes m = medianPhases(times);
    for (size_t k = 0; k < kNumPhases; ++k) state.counters[std::string(kPhases[k].name) + "_s"] = m.seconds[k];
    state.counters["host_s"] = m.host();
    state.counters["walk_s"] = m.walk();
}

} // namespace octwalk::bench

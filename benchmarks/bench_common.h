#pragma once
// Pieces every benchmark shares: one cache of models, the bodies-per-second counter and the phase
// counters (one per entry of common/phases.h, named as the outputs name them, plus "_s").
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/sfc.h"
#include "host/core/parallel.h"
#include "host/core/random.h"
#include "host/core/phases.h"
#include "host/models/galaxy.h"
#include "host/models/models.h"
#include "host/core/timer.h"
#include "host/tree/packed_tree.h"

namespace octwalk::bench {

/// The median (the upper middle of an even count) of one part of each run's timings.
template<class Times>
double medianOf(const std::vector<Times>& times, double Times::*part)
{
    std::vector<double> v;
    for (const Times& t : times) v.push_back(t.*part);
    std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
    return v[v.size() / 2];
}

/// range(0) bodies uniform in the unit box, made once per process (seed 42).
inline const std::vector<Vec3d>& uniformBox(int64_t n)
{
    static std::map<int64_t, std::vector<Vec3d>> cache;
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
    std::vector<Vec3d>& pos = cache[n];
    Random rng(42);
    pos.resize(size_t(n));
    for (Vec3d& p : pos) p = {rng.uniform(), rng.uniform(), rng.uniform()};
    return pos;
}

/// uniformBox's bodies in the order of their Morton keys in the unit cube: the order in which the solver hands
/// them to the mesh (its tree's).
inline const std::vector<Vec3d>& uniformBoxInTreeOrder(int64_t n)
{
    static std::map<int64_t, std::vector<Vec3d>> cache;
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
    const std::vector<Vec3d>& random = uniformBox(n);
    const KeyGrid grid               = KeyGrid::ofCube({0, 0, 0}, 1.0);
    std::vector<std::pair<uint64_t, int64_t>> keyed;
    keyed.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) keyed[size_t(i)] = {grid.key(random[size_t(i)]), i};
    std::sort(keyed.begin(), keyed.end());
    std::vector<Vec3d>& pos = cache[n];
    pos.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = random[size_t(keyed[size_t(i)].second)];
    return pos;
}

/// Plummer spheres by N, made once per process (seed 42).
inline const ParticleSet& plummer(int64_t n)
{
    static std::map<int64_t, ParticleSet> cache;
    auto it = cache.find(n);
    if (it == cache.end()) it = cache.emplace(n, makePlummer(n, 42)).first;
    return it->second;
}

/// The galaxy model (host/models/galaxy.h) by N, made once per process (seed 42).
inline const ParticleSet& galaxy(int64_t n)
{
    static std::map<int64_t, ParticleSet> cache;
    auto it = cache.find(n);
    if (it == cache.end()) it = cache.emplace(n, makeGalaxy(n, 42)).first;
    return it->second;
}

inline void setThreads(int n)
{
#ifdef _OPENMP
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

/// The command line, kept so that benchmark lists can grow only when a filter asks for them.
inline std::vector<std::string>& arguments()
{
    static std::vector<std::string> args;
    return args;
}

inline void rememberArguments(int argc, char** argv)
{
    for (int i = 0; i < argc; ++i) arguments().emplace_back(argv[i]);
}

/// Whether a --benchmark_filter argument contains `text`.
inline bool filterNames(const std::string& text)
{
    for (const std::string& a : arguments())
    {
        if (a.rfind("--benchmark_filter", 0) == 0 && a.find(text) != std::string::npos) return true;
    }
    return false;
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
    state.counters["host_s"]        = m.host();
    state.counters["walk_s"]        = m.walk();
    state.counters["walk_forces_s"] = m.walkForces();
}

/// The median of every host phase over the iterations and their total, in seconds.
inline void setHostPhaseCounters(benchmark::State& state, const std::vector<PhaseTimes>& times)
{
    PhaseTimes m = medianPhases(times);
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group == PhaseGroup::Host) state.counters[std::string(kPhases[k].name) + "_s"] = m.seconds[k];
    }
    state.counters["host_s"] = m.host();
}

/// The host build of one step (sort, cells, multipoles, groups, packing) into t and packed, once
/// untimed (steady state) and then `repeats` times; returns the median seconds.
inline double hostBuildSeconds(const ParticleSet& b, const Parameters& p, HostTree& t, PackedTree& packed,
                               int repeats = 3)
{
    BodySpan s{b.pos.data(), b.mass.data(), b.id.data(), b.size()};
    std::vector<double> seconds;
    for (int r = 0; r <= repeats; ++r)
    {
        Stopwatch clock;
        sortBodies(s, t);
        buildCells(p.n_leaf, t);
        computeMultipoles(t);
        makeGroups(p.n_group, t, p.merge_groups);
        packTree(t, p, packed);
        if (r > 0) seconds.push_back(clock.lap());
    }
    std::sort(seconds.begin(), seconds.end());
    return seconds[seconds.size() / 2];
}

} // namespace octwalk::bench

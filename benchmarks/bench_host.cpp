// Host phases and the CPU twin, on Plummer spheres. Counters: bodies per second and
// interactions per body. Run: build/benchmarks/octwalk_bench_host --benchmark_out=...
#include <benchmark/benchmark.h>

#include "bench_common.h"
#include "host/solver/solver.h"
#include "host/cpu/walk_cpu.h"

using namespace octwalk;
using octwalk::bench::plummer;
using octwalk::bench::setRate;

namespace {

BodySpan span(const ParticleSet& b) { return {b.pos.data(), b.mass.data(), b.id.data(), b.size()}; }

void BM_Sort(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    HostTree t;
    for (auto _ : state) sortBodies(span(b), t);
    setRate(state, b.size());
}

void BM_BuildCells(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    HostTree t;
    sortBodies(span(b), t);
    for (auto _ : state) buildCells(16, t);
    setRate(state, b.size());
}

void BM_Multipoles(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    HostTree t;
    sortBodies(span(b), t);
    buildCells(16, t);
    for (auto _ : state) computeMultipoles(t);
    setRate(state, b.size());
}

void BM_Groups(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    HostTree t;
    sortBodies(span(b), t);
    buildCells(16, t);
    for (auto _ : state) makeGroups(64, t);
    setRate(state, b.size());
}

void BM_Packing(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    HostTree t;
    sortBodies(span(b), t);
    buildCells(16, t);
    computeMultipoles(t);
    makeGroups(64, t);
    PackedTree packed;
    Parameters p;
    for (auto _ : state) packTree(t, p, packed);
    setRate(state, b.size());
}

/// The whole host side of one evaluation: sort, cells, multipoles, groups, packing.
void BM_HostTotal(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    HostTree t;
    PackedTree packed;
    Parameters p;
    for (auto _ : state)
    {
        sortBodies(span(b), t);
        buildCells(p.n_leaf, t);
        computeMultipoles(t);
        makeGroups(p.n_group, t);
        packTree(t, p, packed);
    }
    setRate(state, b.size());
}

/// The CPU twin: both walk passes and both force kernels, theta = range(1) / 100.
void BM_CpuTwin(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    Parameters p;
    p.opening_angle   = double(state.range(1)) / 100.0;
    p.epsilon_squared = 1e-4;
    p.backend         = Backend::Cpu;
    GravitySolver solver(p);
    solver.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    std::vector<PhaseTimes> times;
    double force = 0;
    for (auto _ : state)
    {
        solver.computeForces(acc, pot);
        times.push_back(solver.timings());
        force += solver.timings().forces();
    }
    bench::setPhaseCounters(state, times);
    setRate(state, b.size());
    const InteractionStats& s       = solver.stats();
    state.counters["node_per_body"] = s.nodesPerBody();
    state.counters["leaf_per_body"] = s.leavesPerBody();
    state.counters["force_GFLOPs"] =
        (kFlopsPerBodyNode * double(s.nodeInteractions) + kFlopsPerBodyBody * double(s.leafInteractions)) /
        (force / double(state.iterations())) / 1e9;
}

} // namespace

BENCHMARK(BM_Sort)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildCells)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Multipoles)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Groups)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Packing)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostTotal)->Arg(1 << 16)->Arg(1 << 20)->Arg(1 << 22)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CpuTwin)->Args({1 << 16, 50})->Args({1 << 16, 75})->Unit(benchmark::kMillisecond)->Iterations(2);

BENCHMARK_MAIN();

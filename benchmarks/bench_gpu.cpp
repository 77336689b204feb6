// Device phases on an NVIDIA GPU (manual time = CUDA-event time of upload, both walk passes,
// scan, both force kernels and download), host phases alongside. Skips without a GPU.
// Run on the device machine: build/benchmarks/octwalk_bench_gpu --benchmark_out=gpu.json
#include <benchmark/benchmark.h>

#include <map>

#include "bench_common.h"
#include "device/gpu_solver.h"
#include "device/pinned_memory.h"
#include "host/reference/error_stats.h"
#include "host/reference/direct.h"
#include "host/core/random.h"
#include "host/models/models.h"
#include "host/solver/solver.h"

using namespace octwalk;
using octwalk::bench::plummer;

namespace {

/// One force evaluation per iteration on the GPU backend, epsilon = 0.01, with the given kernel variants.
void runGpuForces(benchmark::State& state, int64_t n, double theta, int nLeaf, int nGroup, bool merge = false,
                  GpuKernelConfig kernels = {})
{
    if (!gpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    const ParticleSet& b = plummer(n);
    Parameters p;
    p.opening_angle   = theta;
    p.epsilon_squared = 1e-4;
    p.backend         = Backend::Gpu;
    p.n_leaf          = nLeaf;
    p.n_group         = nGroup;
    p.merge_groups    = merge;
    GravitySolver solver(p);
    solver.setGpuKernelConfig(kernels);
    solver.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot); // warm-up: buffers grow, module loads
    std::vector<PhaseTimes> times;
    for (auto _ : state)
    {
        solver.computeForces(acc, pot);
        times.push_back(solver.timings());
        state.SetIterationTime(solver.timings().walk());
    }
    const InteractionStats& s = solver.stats();
    bench::setRate(state, b.size());
    bench::setPhaseCounters(state, times);
    PhaseTimes m                       = medianPhases(times);
    state.counters["node_per_body"]    = s.nodesPerBody();
    state.counters["leaf_per_body"]    = s.leavesPerBody();
    state.counters["body_node_GFLOPs"] = kFlopsPerBodyNode * double(s.nodeInteractions) / m[Phase::BodyNode] / 1e9;
    state.counters["body_leaf_GFLOPs"] = kFlopsPerBodyBody * double(s.leafInteractions) / m[Phase::BodyLeaf] / 1e9;
    state.counters["device_bodies_per_second"] = double(b.size()) / m.walk();

    // Accuracy of this very evaluation on a sample of 2000 bodies against double direct summation.
    std::vector<int64_t> idx = sampleIndices(b.size(), 2000, 7);
    std::vector<Vec3d> ref, treeAcc;
    std::vector<double> refPot;
    solver.computeDirect(idx, ref, refPot);
    for (int64_t i : idx) treeAcc.push_back(acc[i]);
    ErrorStats e                   = errorStats(relativeErrors(treeAcc, ref));
    state.counters["median_error"] = e.median;
    state.counters["p99_error"]    = e.p99;
}

/// N = range(0), theta = range(1) / 100, default leaf and group sizes.
void BM_GpuForces(benchmark::State& state)
{
    runGpuForces(state, state.range(0), double(state.range(1)) / 100.0, Parameters{}.n_leaf, Parameters{}.n_group);
}

/// N = range(0), theta = range(1) / 100, n_leaf = range(2), n_group = range(3), merge_groups = range(4),
/// the team walk when range(5) is 1 (else one thread per group), targets per lane = range(6), texture
/// reads when range(7) is 1 (else __ldg).
void BM_GpuForcesTuning(benchmark::State& state)
{
    GpuKernelConfig kernels{state.range(5) != 0 ? GpuWalk::Team : GpuWalk::Thread, int(state.range(6)),
                            state.range(7) != 0};
    runGpuForces(state, state.range(0), double(state.range(1)) / 100.0, int(state.range(2)), int(state.range(3)),
                 state.range(4) != 0, kernels);
}

/// The variants side by side at 2^20 and 2^22, theta = 0.5, n_leaf = 16: the landed groups (n_group 64),
/// merged groups at n_group 64 and 128, each with both walks and 2 or 4 targets per lane through __ldg,
/// and the team walk with 2 targets per lane through textures.
void tuningVariants(benchmark::internal::Benchmark* b)
{
    b->ArgNames({"N", "theta100", "n_leaf", "n_group", "merge", "team_walk", "per_lane", "textures"});
    for (int64_t n : {int64_t(1) << 20, int64_t(1) << 22})
    {
        for (auto [nGroup, merge] : {std::pair<int64_t, int64_t>{64, 0}, {64, 1}, {128, 1}})
        {
            for (int64_t team : {0, 1})
            {
                for (int64_t perLane : {2, 4}) b->Args({n, 50, 16, nGroup, merge, team, perLane, 0});
            }
            b->Args({n, 50, 16, nGroup, merge, 1, 2, 1});
        }
    }
    // Leaf size and a larger theta with the merged groups and the team walk.
    b->Args({1 << 22, 50, 8, 64, 1, 1, 2, 0});
    b->Args({1 << 22, 50, 32, 64, 1, 1, 2, 0});
    b->Args({1 << 22, 75, 16, 64, 1, 1, 2, 0});
}

/// The machine's host-to-device bandwidth from pinned memory (range(0) MiB per copy), beside which
/// the upload phase of BM_GpuForces is read.
void BM_HostToDevice(benchmark::State& state)
{
    if (!gpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    size_t bytes = size_t(state.range(0)) << 20;
    double bw    = 0.0;
    for (auto _ : state)
    {
        bw = hostToDeviceBandwidth(bytes, 5);
        state.SetIterationTime(double(bytes) / bw);
    }
    state.counters["GB_per_s"] = bw / 1e9;
}

/// N = range(0) bodies uniform in the unit cube, theta = 0.5, epsilon = 1e-3; periodic (box_size = 1, Ewald
/// correction) when range(1) is 1, isolated when 0: the periodic walk's speed relative to the isolated one at
/// equal N is the ratio of the two cases' times (issue 13's target: >= 60%). No accuracy counters here: the
/// Ewald reference costs O(N * wave vectors) (tests/unit/test_ewald.cpp measures the accuracy).
void BM_GpuPeriodic(benchmark::State& state)
{
    if (!gpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    const int64_t n = state.range(0);
    static std::map<int64_t, ParticleSet> boxes;
    ParticleSet& b = boxes[n];
    if (b.size() != n)
    {
        b = makeUniformSphere(n, 5);
        Random rng(9);
        for (Vec3d& x : b.pos) x = {rng.uniform(), rng.uniform(), rng.uniform()};
    }
    Parameters p;
    p.epsilon_squared = 1e-6;
    p.backend         = Backend::Gpu;
    p.box_size        = state.range(1) ? 1.0 : 0.0;
    GravitySolver solver(p);
    solver.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot); // warm-up: buffers grow, the Ewald table is computed and uploaded
    std::vector<PhaseTimes> times;
    for (auto _ : state)
    {
        solver.computeForces(acc, pot);
        times.push_back(solver.timings());
        state.SetIterationTime(solver.timings().walk());
    }
    const InteractionStats& s = solver.stats();
    bench::setRate(state, b.size());
    bench::setPhaseCounters(state, times);
    state.counters["periodic"]                 = double(state.range(1));
    state.counters["node_per_body"]            = s.nodesPerBody();
    state.counters["leaf_per_body"]            = s.leavesPerBody();
    state.counters["device_bodies_per_second"] = double(b.size()) / medianPhases(times).walk();
}

} // namespace

BENCHMARK(BM_GpuPeriodic)
    ->Args({1 << 20, 0})
    ->Args({1 << 20, 1})
    ->Args({1 << 22, 0})
    ->Args({1 << 22, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

BENCHMARK(BM_GpuForces)
    ->Args({1 << 20, 50})
    ->Args({1 << 20, 75})
    ->Args({1 << 22, 50})
    ->Args({1 << 22, 75})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

// Tuning: groups, leaf size and kernel variants (tuningVariants).
BENCHMARK(BM_GpuForcesTuning)->Apply(tuningVariants)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

BENCHMARK(BM_HostToDevice)->Arg(64)->Arg(128)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

BENCHMARK_MAIN();

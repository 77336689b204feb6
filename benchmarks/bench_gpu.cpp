// Device phases on an NVIDIA GPU (manual time = CUDA-event time of upload, both walk passes,
// scan, both force kernels and download), host phases alongside. Skips without a GPU.
// Run on the device machine: build/benchmarks/octwalk_bench_gpu --benchmark_out=gpu.json
#include <benchmark/benchmark.h>

#include <map>

#include "device/gravity_gpu.h"
#include "host/accuracy.h"
#include "host/direct.h"
#include "host/models.h"
#include "host/solver.h"

using namespace octwalk;

namespace {

const ParticleSet& plummer(int64_t n)
{
    static std::map<int64_t, ParticleSet> cache;
    auto it = cache.find(n);
    if (it == cache.end()) it = cache.emplace(n, makePlummer(n, 42)).first;
    return it->second;
}

/// One force evaluation per iteration on the GPU backend, epsilon = 0.01.
void runGpuForces(benchmark::State& state, int64_t n, double theta, int nLeaf, int nGroup, bool merge = false)
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
    solver.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot); // warm-up: buffers grow, module loads
    DeviceTimes sum;
    HostTimes hostSum;
    for (auto _ : state)
    {
        solver.computeForces(acc, pot);
        const PhaseTimes& t = solver.timings();
        state.SetIterationTime(t.walk.total());
        sum.upload += t.walk.upload;
        sum.walkCount += t.walk.walkCount;
        sum.scan += t.walk.scan;
        sum.walkWrite += t.walk.walkWrite;
        sum.bodyNode += t.walk.bodyNode;
        sum.bodyLeaf += t.walk.bodyLeaf;
        sum.download += t.walk.download;
        hostSum.sort += t.host.sort;
        hostSum.build += t.host.build;
        hostSum.multipoles += t.host.multipoles;
        hostSum.groups += t.host.groups;
        hostSum.packing += t.host.packing;
    }
    double it = double(state.iterations());
    const InteractionStats& s = solver.stats();
    state.counters["bodies_per_second"] = benchmark::Counter(double(b.size()), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["host_s"]        = hostSum.total() / it;
    state.counters["device_s"]      = sum.total() / it;
    state.counters["upload_s"]      = sum.upload / it;
    state.counters["pass1_s"]       = sum.walkCount / it;
    state.counters["scan_s"]        = sum.scan / it;
    state.counters["pass2_s"]       = sum.walkWrite / it;
    state.counters["body_node_s"]   = sum.bodyNode / it;
    state.counters["body_leaf_s"]   = sum.bodyLeaf / it;
    state.counters["download_s"]    = sum.download / it;
    state.counters["node_per_body"] = s.nodesPerBody();
    state.counters["leaf_per_body"] = s.leavesPerBody();
    state.counters["body_node_GFLOPs"] = kFlopsPerBodyNode * double(s.nodeInteractions) / (sum.bodyNode / it) / 1e9;
    state.counters["body_leaf_GFLOPs"] = kFlopsPerBodyBody * double(s.leafInteractions) / (sum.bodyLeaf / it) / 1e9;
    state.counters["device_bodies_per_second"] = double(b.size()) / (sum.total() / it);

    // Accuracy of this very evaluation on a sample of 2000 bodies against double direct summation.
    std::vector<int64_t> idx = sampleIndices(b.size(), 2000, 7);
    std::vector<Vec3d> ref, treeAcc;
    std::vector<double> refPot;
    solver.computeDirect(idx, ref, refPot);
    for (int64_t i : idx) treeAcc.push_back(acc[i]);
    state.counters["median_error"] = errorStats(relativeErrors(treeAcc, ref)).median;
}

/// N = range(0), theta = range(1) / 100, default leaf and group sizes.
void BM_GpuForces(benchmark::State& state)
{
    runGpuForces(state, state.range(0), double(state.range(1)) / 100.0, Parameters{}.n_leaf, Parameters{}.n_group);
}

/// N = range(0), theta = range(1) / 100, n_leaf = range(2), n_group = range(3), merge_groups = range(4).
void BM_GpuForcesTuning(benchmark::State& state)
{
    runGpuForces(state, state.range(0), double(state.range(1)) / 100.0, int(state.range(2)), int(state.range(3)),
                 state.range(4) != 0);
}

} // namespace

BENCHMARK(BM_GpuForces)
    ->Args({1 << 20, 50})
    ->Args({1 << 20, 75})
    ->Args({1 << 22, 50})
    ->Args({1 << 22, 75})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

// Tuning: leaf and group sizes at 2^22, theta = 0.5.
BENCHMARK(BM_GpuForcesTuning)
    ->Args({1 << 22, 50, 16, 128, 0})
    ->Args({1 << 22, 50, 32, 128, 0})
    ->Args({1 << 22, 50, 8, 64, 1})
    ->Args({1 << 22, 50, 16, 64, 1})
    ->Args({1 << 22, 50, 32, 64, 1})
    ->Args({1 << 22, 75, 16, 64, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

BENCHMARK_MAIN();

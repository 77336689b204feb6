// Device phases on an NVIDIA GPU (manual time = CUDA-event time of upload, both walk passes,
// scan, both force kernels and download), host phases alongside. Skips without a GPU.
// Run on a machine with an NVIDIA GPU: build/benchmarks/octwalk_bench_gpu --benchmark_out=gpu.json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "bench_common.h"
#include "device/gpu_solver.h"
#include "device/pinned_memory.h"
#include "device/pm_gpu.h"
#include "device/refit_gpu.h"
#include "host/reference/error_stats.h"
#include "host/reference/direct.h"
#include "host/core/parallel.h"
#include "host/core/random.h"
#include "host/models/models.h"
#include "host/pm/pm_mesh.h"
#include "host/solver/solver.h"
#include "host/core/timer.h"
#include "host/sim/pipeline.h"

using namespace octwalk;
using octwalk::bench::plummer;

namespace {

/// One force evaluation per iteration on the GPU backend, epsilon = 0.01, with the given kernel variants.
void runGpuForces(benchmark::State& state, int64_t n, double theta, int nLeaf, int nGroup, bool merge = false,
                  GpuKernelConfig kernels = {}, double farFieldRatio = Parameters{}.far_field_ratio)
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
    p.far_field_ratio = farFieldRatio;
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

/// N = range(0), theta = range(1) / 100, the default leaf size; the body-node kernel's shape: split tails
/// when range(2) is 1, range(3) blocks an SM as its minimum (NodeKernelShape); the tree's groups as cut
/// (range(4) = 0) or merged (1), of at most n_group = range(5) bodies; the body-leaf kernel's groups of more
/// than range(6) leaf entries split over several warps (LeafKernelShape; 0: none), and its pass tails split
/// when range(7) is 1; range(8) warps a block in both kernels (isolated: 4 or 1).
void BM_GpuForces(benchmark::State& state)
{
    GpuKernelConfig kernels;
    kernels.node = {state.range(2) != 0, int(state.range(3)), int(state.range(8))};
    kernels.leaf = {int(state.range(6)), state.range(7) != 0, int(state.range(8))};
    runGpuForces(state, state.range(0), double(state.range(1)) / 100.0, Parameters{}.n_leaf, int(state.range(5)),
                 state.range(4) != 0, kernels);
}

/// The default kernels, merged groups of at most 64 and 48 bodies at theta 0.5, each with the body-leaf kernel's
/// long lists split over several warps (more than 512 entries: at 2^20, n_group 64, one group of 58 bodies
/// has 4290 leaf entries, the median 136, benchmarks/results/gpu_forces/kernel_sass.md) or not, its pass tails split or
/// not, both kernels with one warp a block (alone and with both leaf shapes); the earlier body-node kernel (no
/// split tail) and the tree's groups as cut at n_group 64; theta 0.75.
void forcesShapes(benchmark::internal::Benchmark* b)
{
    b->ArgNames({"N", "theta100", "split", "min_blocks", "merge", "n_group", "leaf_split", "leaf_tail", "warps"});
    const NodeKernelShape d{};
    const LeafKernelShape l{};
    const int64_t nGroup = Parameters{}.n_group;
    const int64_t split = d.splitTail ? 1 : 0, minBlocks = d.minBlocks, warps = d.warpsPerBlock;
    const int64_t leafSplit = l.splitAbove, leafTail = l.splitTail ? 1 : 0;
    for (int64_t n : {int64_t(1) << 20, int64_t(1) << 22})
    {
        for (int64_t groupSize : {nGroup, int64_t(48)})
        {
            for (auto [above, tail] : {std::pair<int64_t, int64_t>{0, 0}, {512, 0}, {0, 1}, {512, 1}})
                b->Args({n, 50, split, minBlocks, 1, groupSize, above, tail, warps});
            b->Args({n, 50, split, minBlocks, 1, groupSize, leafSplit, leafTail, 1});
            b->Args({n, 50, split, minBlocks, 1, groupSize, 512, 1, 1});
        }
        b->Args({n, 50, 0, 0, 1, nGroup, leafSplit, leafTail, warps});
        b->Args({n, 50, split, minBlocks, 0, nGroup, leafSplit, leafTail, warps});
        b->Args({n, 75, split, minBlocks, 0, nGroup, leafSplit, leafTail, warps});
    }
}

/// The far field (common/far_field.h): N = range(0), theta = range(1) / 1000, far_field_ratio = range(2) (0: off),
/// merged groups of at most n_group = range(3), the default kernels; body_node_s holds the far-field kernel.
void BM_GpuFarField(benchmark::State& state)
{
    runGpuForces(state, state.range(0), double(state.range(1)) / 1000.0, Parameters{}.n_leaf, int(state.range(3)), true,
                 {}, double(state.range(2)));
}

/// At 2^20 and 2^22, theta 0.475 and 0.5: off, and ratios 5, 6, 8 (n_group 64), and 6 with n_group 96.
void farFieldArgs(benchmark::internal::Benchmark* b)
{
    b->ArgNames({"N", "theta1000", "ratio", "n_group"});
    for (int64_t n : {int64_t(1) << 20, int64_t(1) << 22})
    {
        for (int64_t theta : {475, 500})
        {
            for (int64_t ratio : {0, 5, 6, 8}) b->Args({n, theta, ratio, 64});
            b->Args({n, theta, 6, 96});
        }
    }
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

/// The variants side by side at 2^20 and 2^22, theta = 0.5, n_leaf = 16: the tree's own groups (n_group 64),
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

/// The bodies of BM_GpuPeriodic: n uniform in the unit cube, or (clustered) four Plummer spheres of scale
/// radius 1/40 at fixed places, one across a face, wrapped into [0, 1) (tests/unit/test_ewald.cpp's
/// clustered box).
const ParticleSet& periodicBodies(int64_t n, bool clustered)
{
    static std::map<std::pair<int64_t, bool>, ParticleSet> boxes;
    ParticleSet& b = boxes[{n, clustered}];
    if (b.size() == n) return b;
    b = clustered ? makePlummer(n, 5) : makeUniformSphere(n, 5);
    Random rng(9);
    const Vec3d centres[4] = {{0.3, 0.3, 0.3}, {0.7, 0.4, 0.6}, {0.02, 0.8, 0.5}, {0.5, 0.98, 0.1}};
    auto wrap              = [](double x) {
        double w = x - std::floor(x);
        return w < 1.0 ? w : 0.0;
    };
    for (int64_t i = 0; i < n; ++i)
    {
        Vec3d& x = b.pos[i];
        if (!clustered)
        {
            x = {rng.uniform(), rng.uniform(), rng.uniform()};
            continue;
        }
        const Vec3d& o = centres[i % 4];
        x              = {wrap(o.x + x.x / 40), wrap(o.y + x.y / 40), wrap(o.z + x.z / 40)};
    }
    return b;
}

/// A GPU solver on the bodies, warmed up (buffers grown, the Ewald table computed and uploaded).
struct WarmSolver
{
    GravitySolver solver;
    std::vector<Vec3d> acc;
    std::vector<double> pot;

    WarmSolver(const ParticleSet& b, bool periodic, const EwaldWalkConfig& ewaldWalk = {})
        : solver(parameters(periodic))
    {
        solver.setEwaldWalkConfig(ewaldWalk);
        solver.setBodies(b.pos, b.mass, b.id);
        solver.computeForces(acc, pot);
    }

    static Parameters parameters(bool periodic)
    {
        Parameters p;
        p.epsilon_squared = 1e-6;
        p.backend         = Backend::Gpu;
        p.box_size        = periodic ? 1.0 : 0.0;
        return p;
    }

    PhaseTimes evaluate()
    {
        solver.computeForces(acc, pot);
        return solver.timings();
    }

    /// Sets the bodies again in the last evaluation's tree order (and evaluates them), as a run keeps its state:
    /// the host's reading of previous accelerations body by body then runs along the arrays.
    void takeTreeOrder(const ParticleSet& b)
    {
        const std::vector<int32_t> order = solver.treeOrder();
        ParticleSet sorted               = b;
        for (size_t k = 0; k < order.size(); ++k)
        {
            sorted.pos[k]  = b.pos[order[k]];
            sorted.mass[k] = b.mass[order[k]];
            sorted.id[k]   = b.id[order[k]];
        }
        solver.setBodies(sorted.pos, sorted.mass, sorted.id);
        solver.computeForces(acc, pot);
    }
};

/// N = range(0) bodies in the unit cube, uniform (range(1) = 0) or clustered (1), theta = 0.5, epsilon =
/// 1e-3: the periodic walk (box_size = 1, Ewald correction per group) against the isolated one on the same
/// bodies. Manual time = the periodic walk + forces; counters isolated_ms, periodic_ms and
/// periodic_speed = isolated / periodic time (target: >= 0.6). range(2) = 0: a single evaluation,
/// its error control's group forces from the estimate walk (counted in the walk time); 1: a run's step, the
/// group forces from the previous evaluation's accelerations (GravitySolver::setPreviousAccelerations; host work
/// in the Packing phase, no estimate walk), the bodies in the tree order as a run keeps them (with the models'
/// order, where the host gathers the accelerations at random, the Packing phase took 10.1 ms instead of the
/// estimate path's 5.5 at 2^22 clustered on the H200's host). No accuracy counters: the Ewald reference costs O(N * wave vectors)
/// per sample body, minutes at 2^22 (tests/unit/test_ewald.cpp measures the accuracy). ewald_ms: the Ewald
/// correction's share of the body-leaf phase (median); ewaldWalk: how it finds its sources (BM_GpuPeriodicEwald).
void runGpuPeriodic(benchmark::State& state, const EwaldWalkConfig& ewaldWalk)
{
    if (!gpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    const ParticleSet& b = periodicBodies(state.range(0), state.range(1) != 0);
    std::vector<PhaseTimes> isolatedTimes, times;
    {
        WarmSolver isolated(b, false);
        for (int k = 0; k < 5; ++k) isolatedTimes.push_back(isolated.evaluate());
    }
    const PhaseTimes isolated = medianPhases(isolatedTimes);
    WarmSolver run(b, true, ewaldWalk);
    std::vector<double> ewaldSeconds;
    const bool fromPrevious = state.range(2) != 0;
    if (fromPrevious) run.takeTreeOrder(b);
    for (auto _ : state)
    {
        if (fromPrevious) run.solver.setPreviousAccelerations(run.acc);
        times.push_back(run.evaluate());
        ewaldSeconds.push_back(run.solver.gpuEwaldSeconds());
        state.SetIterationTime(times.back().walk());
    }
    if (fromPrevious && !run.solver.usedPreviousAccelerations())
    {
        state.SkipWithError("the previous accelerations were not used");
        return;
    }
    const InteractionStats& periodicStats = run.solver.stats();
    const PhaseTimes periodic             = medianPhases(times);
    bench::setRate(state, b.size());
    bench::setPhaseCounters(state, times);
    state.counters["clustered"]                = double(state.range(1));
    state.counters["from_previous"]            = double(state.range(2));
    state.counters["packing_ms"]               = 1e3 * periodic[Phase::Packing];
    state.counters["isolated_ms"]              = 1e3 * isolated.walk();
    state.counters["periodic_ms"]              = 1e3 * periodic.walk();
    state.counters["periodic_speed"]           = isolated.walk() / periodic.walk();
    state.counters["node_per_body"]            = periodicStats.nodesPerBody();
    state.counters["leaf_per_body"]            = periodicStats.leavesPerBody();
    state.counters["device_bodies_per_second"] = double(b.size()) / periodic.walk();
    std::sort(ewaldSeconds.begin(), ewaldSeconds.end());
    state.counters["ewald_ms"]          = ewaldSeconds.empty() ? 0.0 : 1e3 * ewaldSeconds[ewaldSeconds.size() / 2];
    state.counters["ewald_min_entries"] = double(ewaldWalk.minEntries);
    state.counters["ewald_warp_walk"]   = ewaldWalk.warp ? 1.0 : 0.0;
}

/// BM_GpuPeriodic with the default Ewald walk (EwaldWalkConfig{}).
void BM_GpuPeriodic(benchmark::State& state) { runGpuPeriodic(state, EwaldWalkConfig{}); }

/// BM_GpuPeriodic's range(0..2), with the Ewald correction's sources chosen by range(3) (EwaldWalkConfig::
/// minEntries: groups with at least this many list entries walk; -1: none) and range(4) (1: the warp walk, 0:
/// one thread a group): the sweep that picks the default.
void BM_GpuPeriodicEwald(benchmark::State& state)
{
    EwaldWalkConfig walk;
    walk.minEntries = state.range(3) < 0 ? std::numeric_limits<int64_t>::max() : state.range(3);
    walk.warp       = state.range(4) != 0;
    runGpuPeriodic(state, walk);
}

/// 2^22 bodies from previous accelerations: clustered (the box of the periodic speed target; about 4200 list entries a group) with
/// no group walking, every group walking one thread a group and a warp a group, the warp walk from 2048 and 4096
/// entries, and the default; uniform (11900 entries a group: every group walks) with both walks.
void periodicEwaldCases(benchmark::internal::Benchmark* b)
{
    b->ArgNames({"N", "clustered", "from_previous", "min_entries", "warp"});
    const int64_t n = int64_t(1) << 22;
    b->Args({n, 1, 1, -1, 0});
    b->Args({n, 1, 1, 0, 0});
    for (int64_t minEntries : {int64_t(0), int64_t(2048), int64_t(4096)}) b->Args({n, 1, 1, minEntries, 1});
    b->Args({n, 1, 1, kEwaldWalkMinEntries, 0});
    for (int64_t warp : {0, 1}) b->Args({n, 0, 1, kEwaldWalkMinEntries, warp});
}

/// Direct summation on the device (GpuSolver::direct): numTargets targets, evenly spaced over
/// numBodies Plummer bodies, eps2 = 1e-4. Manual time: CUDA events around the direct kernels alone (no
/// upload or download). interactions_per_s counts each target against every other body, acceleration
/// and potential.
void runGpuDirect(benchmark::State& state, int64_t numTargets, int64_t numBodies, bool doubleAccumulate,
                  const DirectKernelConfig& config)
{
    if (!gpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    const ParticleSet& b = plummer(numBodies);
    std::vector<F4> bodies(size_t(b.size()));
    for (int64_t i = 0; i < b.size(); ++i)
    {
        bodies[size_t(i)] = {float(b.pos[i].x), float(b.pos[i].y), float(b.pos[i].z), float(b.mass[i])};
    }
    std::vector<int32_t> targets(static_cast<size_t>(numTargets));
    for (int64_t t = 0; t < numTargets; ++t) targets[size_t(t)] = int32_t(t * b.size() / numTargets);
    const BodyView view{bodies.data(), int32_t(bodies.size())};
    GpuSolver device;
    std::vector<F4> out;
    double seconds = 0;
    device.direct(view, targets, 1e-4f, doubleAccumulate, out, seconds, config); // warm-up: buffers, module load
    std::vector<double> times;
    for (auto _ : state)
    {
        device.direct(view, targets, 1e-4f, doubleAccumulate, out, seconds, config);
        times.push_back(seconds);
        state.SetIterationTime(seconds);
    }
    std::sort(times.begin(), times.end());
    const double pairs                   = double(numTargets) * double(b.size() - 1);
    state.counters["targets"]            = benchmark::Counter(double(numTargets));
    state.counters["sources"]            = benchmark::Counter(double(b.size()));
    state.counters["double"]             = benchmark::Counter(doubleAccumulate ? 1.0 : 0.0);
    state.counters["interactions_per_s"] = benchmark::Counter(pairs / times[times.size() / 2]);
}

/// range(0) targets against range(1) sources, accumulation in double when range(2) is 1; the default
/// kernel variant.
void BM_GpuDirect(benchmark::State& state)
{
    runGpuDirect(state, state.range(0), state.range(1), state.range(2) != 0, {});
}

/// range(0) targets against range(1) sources in float, kernel variant directTuningVariants()[range(2)]
/// (its name is the label; variant 0 is the default).
void BM_GpuDirectTuning(benchmark::State& state)
{
    const std::vector<DirectKernelConfig> variants = directTuningVariants();
    const DirectKernelConfig& config               = variants.at(size_t(state.range(2)));
    state.SetLabel(directVariantName(config));
    state.counters["variant"] = benchmark::Counter(double(state.range(2)));
    runGpuDirect(state, state.range(0), state.range(1), false, config);
}

/// The sizes of BM_GpuDirect's float rows and those between its wave counts, for every tuning variant.
void directTuningArgs(benchmark::internal::Benchmark* b)
{
    const int64_t variants = int64_t(directTuningVariants().size());
    const std::vector<std::pair<int64_t, int64_t>> sizes{{1 << 16, 1 << 16}, {1 << 18, 1 << 18}, {1 << 20, 1 << 20},
                                                         {256, 1 << 20},     {1024, 1 << 20},    {3 << 17, 3 << 17}};
    for (const auto& [targets, sources] : sizes)
    {
        for (int64_t v = 0; v < variants; ++v) b->Args({targets, sources, v});
    }
}

/// The device refit of a Plummer sphere of range(0) bodies, double positions already on the device
/// (manual time: CUDA events around the launches). Counters: bodies per second, the host build's
/// median seconds ("host_build_s") and how many refits fit in one build ("build_over_refit").
void BM_GpuRefit(benchmark::State& state)
{
    if (!gpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    const ParticleSet& b = plummer(state.range(0));
    Parameters p;
    HostTree t;
    PackedTree packed;
    const double build   = bench::hostBuildSeconds(b, p, t, packed);
    const RefitView view = refitView(packed, t.pos.data(), t.mass.data(), nullptr, p);
    GpuRefit refit;
    refit.setTopology(view, refitLevels(packed));
    refit.setBodies(t.pos.data(), t.mass.data());
    refit.refit(); // warm-up: module load
    std::vector<double> seconds;
    for (auto _ : state)
    {
        seconds.push_back(refit.refit());
        state.SetIterationTime(seconds.back());
    }
    std::sort(seconds.begin(), seconds.end());
    bench::setRate(state, b.size());
    state.counters["host_build_s"]     = build;
    state.counters["build_over_refit"] = build / seconds[seconds.size() / 2];
    state.counters["levels"]           = double(packed.internalLevelFirst.size() - 1);
}

/// Whole pipelined steps (host/sim/pipeline.h) on the device: Plummer sphere of range(0) bodies,
/// epsilon = 0.01, theta 0.5, steps of 1/128, rebuild policy K = range(1) (0: automatic), lagged
/// topologies built from the positions predicted for the middle of the steps they serve where range(2) is
/// 2 (the default), for the adopting step where it is 1, from the old positions alone where it is 0
/// (Prediction), lagged builds adopted range(3) steps after their positions (host/sim/pipeline.h), the background
/// build on range(4) threads fewer than the process has (Pipeline::setBuildThreads; 0: all, 1: the default). Manual time:
/// the step's wall time (host clock around Pipeline::step, which waits for the device at its end).
/// Counters: ms per step and the device walk + forces alone (CUDA events, medians), their ratio (the
/// target: <= 1.15), interactions per body, the host builds adopted, and the median host build and
/// the median wait for a build at adoption (0 when the build overlapped the device steps).
void BM_GpuPipelineStep(benchmark::State& state)
{
    if (!gpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    const ParticleSet& b = plummer(state.range(0));
    const int64_t n      = b.size();
    Parameters p;
    p.epsilon_squared       = 1e-4;
    p.backend               = Backend::Gpu;
    const Prediction aims[] = {Prediction::None, Prediction::AtAdoption, Prediction::MidServed};
    Pipeline pipe(p, state.range(1), PipelineDevice::Gpu, aims[state.range(2)], state.range(3));
    pipe.setBuildThreads(std::max(1, maxThreads() - int(state.range(4))));
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) callerIndex[i] = int32_t(i);
    pipe.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
    const double h = 1.0 / 128;
    // Warm-up: modules load, buffers grow, and the pipeline's topologies allocate and first touch their
    // buffers: at 2^22 the first builds took 100-240 ms against 45-65 ms from the sixth on (measured
    // from a timeline on an H200), and with one warm-up step the mean step was 1.6x the median.
    for (int k = 0; k < 24 && (k == 0 || pipe.rebuilds() < 7); ++k) pipe.step(h);
    const int64_t rebuildsBefore = pipe.rebuilds();
    std::vector<double> wall, walkForces, builds, waits;
    double interactions = 0;
    for (auto _ : state)
    {
        Stopwatch clock;
        pipe.step(h);
        wall.push_back(clock.lap());
        state.SetIterationTime(wall.back());
        const PipelineStepInfo& info = pipe.lastStep();
        walkForces.push_back(info.times.walk() - info.times[Phase::Download]);
        if (info.rebuilt)
        {
            builds.push_back(info.buildSeconds);
            waits.push_back(info.waitSeconds);
        }
        interactions += double(info.interactions);
    }
    auto median = [](std::vector<double> v) {
        if (v.empty()) return 0.0;
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    auto mean = [](const std::vector<double>& v) {
        return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    };
    const double step = median(wall), device = median(walkForces);
    bench::setRate(state, n);
    state.counters["ms_per_step"]           = 1e3 * step;
    state.counters["walk_forces_ms"]        = 1e3 * device;
    state.counters["step_over_walk_forces"] = step / device;
    // The means: what a run's wall time sees (a policy that adopts every L steps alternates two kinds of step).
    state.counters["mean_ms_per_step"]           = 1e3 * mean(wall);
    state.counters["mean_step_over_walk_forces"] = mean(wall) / mean(walkForces);
    state.counters["max_ms_per_step"]            = 1e3 * *std::max_element(wall.begin(), wall.end());
    state.counters["interactions_per_body"]      = interactions / double(wall.size()) / double(n);
    state.counters["rebuilds"]                   = double(pipe.rebuilds() - rebuildsBefore);
    state.counters["host_build_ms"]              = 1e3 * median(builds);
    state.counters["build_wait_ms"]              = 1e3 * median(waits);
}

/// Arguments N, K, prediction, lag, build threads left out (host/sim/pipeline.h): at N = 2^20, 2^22 and 2^24
/// the classic step (K = 1), the automatic policy with a lag of 1 and with a lag of 2 aimed at the adopting
/// step (the earlier default) and at the middle of the served steps (the default; its build on all threads, on one
/// fewer (the default) and on two fewer), and K = 4 (lag 2, the middle); all but the second on one fewer.
void pipelineCases(benchmark::internal::Benchmark* b)
{
    for (int shift : {20, 22, 24})
    {
        const int64_t n = int64_t(1) << shift;
        b->Args({n, 1, 2, 1, 1});
        b->Args({n, 0, 2, 1, 1});
        b->Args({n, 0, 1, 2, 1});
        for (int64_t fewer : {0, 1, 2}) b->Args({n, 0, 2, 2, fewer});
        b->Args({n, 4, 2, 2, 1});
    }
}

/// TreePM's long-range mesh on range(0) uniform bodies in tree order (bench::uniformBoxInTreeOrder) with a
/// range(1)^3 TSC mesh, on the host's cores (range(2) = 0: host/pm/pm_mesh.h, FFTW) or on the device (1:
/// device/pm_gpu.h, cuFFT; bodies and results in page-locked memory), one mesh (range(3) = 0) or interlaced (1: the
/// default's two passes), side by side in one binary: the whole computeForces (wall clock, as the solver waits for
/// it) and, on the device, its parts (both passes' together); medians over the iterations. The two agree to about 1e-14
/// (tests/gpu/test_pm_gpu.cpp), so no force error is quoted beside them.
void BM_PmMeshBackends(benchmark::State& state)
{
    const int64_t n               = state.range(0);
    const int meshSize            = int(state.range(1));
    const bool onDevice           = state.range(2) == 1;
    const bool interlaced         = state.range(3) == 1;
    const std::vector<Vec3d>& box = bench::uniformBoxInTreeOrder(n);
    const std::vector<double> mass(size_t(n), 1.0 / double(n));
    // Page-locked, as the solver passes them to the device's mesh.
    const PinnedVector<Vec3d> pinnedPos(box.begin(), box.end());
    const PinnedVector<double> pinnedMass(mass.begin(), mass.end());
    PinnedVector<Vec3d> pinnedAcc(static_cast<size_t>(n));
    PinnedVector<double> pinnedPot(static_cast<size_t>(n));
    std::unique_ptr<PmMesh> host;
    std::unique_ptr<GpuMesh> device;
    if (onDevice) device = std::make_unique<GpuMesh>(1.0, meshSize, kTreePmAsmth, MassAssignment::Tsc, 1.0, interlaced);
    else host = std::make_unique<PmMesh>(1.0, meshSize, kTreePmAsmth, MassAssignment::Tsc, 1.0, interlaced);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    std::vector<GpuMeshTimings> parts;
    for (auto _ : state)
    {
        Stopwatch clock;
        if (onDevice)
        {
            device->computeForces(pinnedPos.data(), pinnedMass.data(), n, pinnedAcc.data(), pinnedPot.data());
            parts.push_back(device->timings());
        }
        else host->computeForces(box.data(), mass.data(), n, acc, pot);
        state.SetIterationTime(clock.lap());
    }
    if (onDevice)
    {
        state.counters["upload_s"]      = bench::medianOf(parts, &GpuMeshTimings::upload);
        state.counters["assign_s"]      = bench::medianOf(parts, &GpuMeshTimings::assign);
        state.counters["solve_s"]       = bench::medianOf(parts, &GpuMeshTimings::solve);
        state.counters["interpolate_s"] = bench::medianOf(parts, &GpuMeshTimings::interpolate);
        state.counters["download_s"]    = bench::medianOf(parts, &GpuMeshTimings::download);
        state.counters["device_GB"]     = 1e-9 * double(device->deviceBytes());
    }
    state.counters["threads"] = maxThreads();
    bench::setRate(state, n);
    state.SetLabel(std::string(onDevice ? "device (cuFFT)" : "host (FFTW)") + (interlaced ? ", interlaced" : ""));
}

} // namespace

BENCHMARK(BM_PmMeshBackends)
    ->ArgsProduct({{1 << 20}, {128}, {0, 1}, {0}})
    ->ArgsProduct({{1 << 24}, {256, 512}, {0, 1}, {0, 1}})
    ->ArgsProduct({{1 << 24}, {1024}, {1}, {0, 1}})
    ->ArgNames({"n", "mesh", "device", "interlaced"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// Tuning of the direct kernel (DirectKernelConfig): every variant at every size, in one binary.
BENCHMARK(BM_GpuDirectTuning)->Apply(directTuningArgs)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_GpuPipelineStep)->Apply(pipelineCases)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(32);

BENCHMARK(BM_GpuRefit)->Arg(1 << 20)->Arg(1 << 22)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

BENCHMARK(BM_GpuPeriodic)
    ->Args({1 << 20, 0, 0})
    ->Args({1 << 20, 1, 0})
    ->Args({1 << 22, 0, 0})
    ->Args({1 << 22, 1, 0})
    ->Args({1 << 20, 0, 1})
    ->Args({1 << 20, 1, 1})
    ->Args({1 << 22, 0, 1})
    ->Args({1 << 22, 1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

BENCHMARK(BM_GpuPeriodicEwald)
    ->Apply(periodicEwaldCases)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

BENCHMARK(BM_GpuForces)->Apply(forcesShapes)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);
BENCHMARK(BM_GpuFarField)->Apply(farFieldArgs)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);

// Tuning: groups, leaf size and kernel variants (tuningVariants).
BENCHMARK(BM_GpuForcesTuning)->Apply(tuningVariants)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

// (N, N) for N = 2^16, 2^18, 2^20 and a few hundred targets against 2^20 sources, in float; in double
// the same but (2^20, 2^20), which takes seconds an evaluation.
BENCHMARK(BM_GpuDirect)
    ->Args({1 << 16, 1 << 16, 0})
    ->Args({1 << 18, 1 << 18, 0})
    ->Args({1 << 20, 1 << 20, 0})
    ->Args({256, 1 << 20, 0})
    ->Args({1024, 1 << 20, 0})
    ->Args({1 << 16, 1 << 16, 1})
    ->Args({1 << 18, 1 << 18, 1})
    ->Args({256, 1 << 20, 1})
    ->Args({1024, 1 << 20, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

BENCHMARK(BM_HostToDevice)->Arg(64)->Arg(128)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

BENCHMARK_MAIN();

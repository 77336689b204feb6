// Host phases and the CPU twin, on Plummer spheres (BM_HostTotal also on the galaxy model, with a
// thread count for the scaling table). Counters: bodies per second, per-phase medians and
// interactions per body. Run: build/benchmarks/octwalk_bench_host --benchmark_out=...
#include <benchmark/benchmark.h>

#include <array>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <utility>

#include "bench_common.h"
#include "host/solver/solver.h"
#include "host/core/timer.h"
#include "host/cpu/refit_cpu.h"
#include "host/cpu/walk_cpu.h"
#include "host/io/checkpoint.h"
#include "host/sim/simulation.h"
#include "host/pm/pm_mesh.h"
#include "host/core/random.h"
#include "common/sfc.h"

using namespace octwalk;
using octwalk::bench::plummer;
using octwalk::bench::setRate;

namespace {

BodySpan span(const ParticleSet& b) { return {b.pos.data(), b.mass.data(), b.id.data(), b.size()}; }

/// lagrange.csv's row (lagrangianRadii) of a Plummer sphere's equal masses, which skip the sort of the radii, and of
/// the same bodies with five different masses (unequal: 1), which take it.
void BM_LagrangianRadii(benchmark::State& state)
{
    ParticleSet b = plummer(state.range(0));
    if (state.range(1) != 0)
        for (int64_t i = 0; i < b.size(); ++i) b.mass[i] *= double(1 + i % 5) / 3;
    for (auto _ : state) benchmark::DoNotOptimize(lagrangianRadii(b, lagrangeFractions()));
    setRate(state, b.size());
}

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

/// The model a benchmark builds: range(1) = 0 Plummer, 1 galaxy (host/models/galaxy.h).
const ParticleSet& model(int64_t n, int64_t which) { return which == 0 ? plummer(n) : bench::galaxy(n); }

/// The parts of a host build (HostTree::partTimes, PackedTree's pack*Seconds), as counter names and values.
constexpr int kNumBuildParts                      = 10;
constexpr const char* kBuildParts[kNumBuildParts] = {
    "part_sort_keys_s",   "part_sort_split_s",  "part_sort_runs_s",    "part_cells_top_s",  "part_cells_build_s",
    "part_cells_count_s", "part_cells_write_s", "part_pack_indices_s", "part_pack_nodes_s", "part_pack_bodies_s"};

std::array<double, kNumBuildParts> buildParts(const HostTree& t, const PackedTree& packed)
{
    const BuildPartTimes& p = t.partTimes;
    return {p.sortKeys,
            p.sortSplit,
            p.sortRuns,
            p.cellsTop,
            p.cellsBuild,
            p.cellsCount,
            p.cellsWrite,
            packed.packIndicesSeconds,
            packed.packNodesSeconds,
            packed.packBodiesSeconds};
}

/// The median of every build part over the iterations, as counters.
void setBuildPartCounters(benchmark::State& state, const std::vector<std::array<double, kNumBuildParts>>& parts)
{
    for (int k = 0; k < kNumBuildParts; ++k)
    {
        std::vector<double> seconds;
        for (const auto& p : parts) seconds.push_back(p[size_t(k)]);
        state.counters[kBuildParts[k]] = median(seconds);
    }
}

/// The whole host side of one evaluation of bodies b (sort, cells, multipoles, groups, packing, with the
/// default parameters), after one untimed build (steady state: no fresh memory), on range(2) threads
/// (0: the OpenMP default). Counters: bodies per second, the median of every host phase ("sort_s", ...)
/// and the threads used. BM_HostTotal: range(0) bodies of model range(1).
void timeHostBuild(benchmark::State& state, const ParticleSet& b)
{
    const int saved = maxThreads();
    if (state.range(2) > 0) bench::setThreads(int(state.range(2)));
    HostTree t;
    PackedTree packed;
    Parameters p;
    std::vector<PhaseTimes> times;
    std::vector<std::array<double, kNumBuildParts>> parts;
    // One untimed build first: a simulation step reuses the tree's memory, so the timed builds
    // measure the steady state, not the first touch of fresh pages.
    sortBodies(span(b), t);
    buildCells(p.n_leaf, t);
    computeMultipoles(t);
    makeGroups(p.n_group, t, p.merge_groups);
    packTree(t, p, packed);
    for (auto _ : state)
    {
        PhaseTimes pt;
        Stopwatch clock;
        sortBodies(span(b), t);
        pt[Phase::Sort] = clock.lap();
        buildCells(p.n_leaf, t);
        pt[Phase::Cells] = clock.lap();
        computeMultipoles(t);
        pt[Phase::Multipoles] = clock.lap();
        makeGroups(p.n_group, t, p.merge_groups);
        pt[Phase::Groups] = clock.lap();
        packTree(t, p, packed);
        pt[Phase::Packing] = clock.lap();
        times.push_back(pt);
        parts.push_back(buildParts(t, packed));
    }
    state.counters["threads"] = maxThreads();
    bench::setThreads(saved);
    bench::setHostPhaseCounters(state, times);
    setBuildPartCounters(state, parts);
    setRate(state, b.size());
    state.SetLabel(state.range(1) == 0 ? "plummer" : "galaxy");
}

void BM_HostTotal(benchmark::State& state) { timeHostBuild(state, model(state.range(0), state.range(1))); }

/// The bodies of model `which` as a simulation step finds them when it keeps its state in tree order
/// (host/sim/simulation.h): in the tree order of the previous step, then drifted for one step of 1/64.
ParticleSet inPreviousTreeOrder(int64_t n, int64_t which)
{
    const ParticleSet& b = model(n, which);
    HostTree t;
    sortBodies(span(b), t);
    constexpr double kStep = 1.0 / 64;
    ParticleSet s;
    s.resize(n);
    for (int64_t k = 0; k < n; ++k)
    {
        const int32_t i = t.order[k];
        s.pos[k]        = b.pos[i] + kStep * b.vel[i];
        s.vel[k]        = b.vel[i];
        s.mass[k]       = b.mass[i];
        s.id[k]         = b.id[i];
    }
    return s;
}

/// BM_HostTotal on the bodies of a simulation step (inPreviousTreeOrder): the order they arrive in is
/// almost the tree's, so the sort moves little and the gather into tree order streams.
void BM_HostStep(benchmark::State& state) { timeHostBuild(state, inPreviousTreeOrder(state.range(0), state.range(1))); }

/// N, model and threads: 2^20 and 2^22 for both models on the default threads and on 1, 2, 4, 8, 16
/// threads.
void hostTotalArgs(benchmark::internal::Benchmark* b)
{
    for (int64_t n : {int64_t(1) << 20, int64_t(1) << 22})
    {
        for (int64_t which : {0, 1})
        {
            for (int64_t threads : {0, 1, 2, 4, 8, 16}) b->Args({n, which, threads});
        }
    }
}

/// 2^24 (about 2 GB) only when the filter names it, e.g. BM_HostTotal/n:16777216: registered from main,
/// after the arguments are known (the static registrations run before main).
void registerLargeHostCases()
{
    if (!bench::filterNames("16777216")) return;
    for (auto [name, fn] : {std::pair{"BM_HostTotal", &BM_HostTotal}, std::pair{"BM_HostStep", &BM_HostStep}})
    {
        auto* b = benchmark::RegisterBenchmark(name, fn);
        for (int64_t which : {0, 1})
        {
            for (int64_t threads : {0, 1, 2, 4, 8, 16}) b->Args({int64_t(1) << 24, which, threads});
        }
        b->ArgNames({"n", "model", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
    }
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

/// The CPU refit of a Plummer sphere of range(0) bodies (positions as built: the refit's work does not
/// depend on how far the bodies moved). Counters: bodies per second, the host build's median seconds
/// ("host_build_s") and how many refits fit in one build ("build_over_refit").
void BM_HostRefit(benchmark::State& state)
{
    const ParticleSet& b = plummer(state.range(0));
    Parameters p;
    HostTree t;
    PackedTree packed;
    const double build = bench::hostBuildSeconds(b, p, t, packed);
    std::vector<Moments> moments(size_t(packed.numInternal + packed.numLeaves));
    const RefitView view     = refitView(packed, t.pos.data(), t.mass.data(), moments.data(), p);
    const RefitLevels levels = refitLevels(packed);
    std::vector<double> seconds;
    for (auto _ : state)
    {
        Stopwatch clock;
        refitCpu(view, levels);
        seconds.push_back(clock.lap());
    }
    std::sort(seconds.begin(), seconds.end());
    setRate(state, b.size());
    state.counters["host_build_s"]     = build;
    state.counters["build_over_refit"] = build / seconds[seconds.size() / 2];
    state.counters["threads"]          = maxThreads();
}

/// Whole Simulation::step()s of the Plummer sphere of range(0) bodies on range(1) threads (0: the OpenMP
/// default), real forces on the default backend (the GPU where there is one), after one untimed step. The
/// counter "host_rest_s" is the step's host work outside the force evaluation's phases: force_wall minus
/// those phases, plus integration (the "rest of a step", diagnostics and I/O aside). The median of
/// every step phase is a counter too ("<name>_s"), looked up by name so that this benchmark builds on any
/// commit that times whole steps (for old-versus-new runs).
void BM_SimulationStep(benchmark::State& state)
{
    const int saved = maxThreads();
    if (state.range(1) > 0) bench::setThreads(int(state.range(1)));
    Parameters p;
    p.backend              = Backend::Auto;
    p.epsilon_squared      = 1e-4;
    constexpr double kStep = 1.0 / 64;
    Simulation sim(plummer(state.range(0)), p, planSteps(0.0, 1e6 * kStep, kStep));
    sim.step();
    std::vector<StepTimes> times;
    std::vector<double> rest;
    for (auto _ : state)
    {
        sim.step();
        const StepTimes& t = sim.lastStepTimes();
        times.push_back(t);
        rest.push_back(t[StepPhase::ForceWall] - t.forces.total() + t[StepPhase::Integration]);
    }
    const StepTimes m = medianStepTimes(times);
    for (size_t k = 0; k < kNumStepPhases; ++k) state.counters[std::string(kStepPhases[k].name) + "_s"] = m.seconds[k];
    state.counters["host_rest_s"] = median(rest);
    state.counters["build_s"]     = m.forces.host();
    state.counters["walk_s"]      = m.forces.walk();
    state.counters["threads"]     = maxThreads();
    bench::setThreads(saved);
    setRate(state, state.range(0));
}

/// What a run's energy and lagrange rows read after a pipelined step (the default `octwalk run`), without the step:
/// the diagnostics' sums and the Lagrangian radii (equal masses: ordered where the state is), on the CPU twin
/// (range(1) = 0) or the default backend (1), range(0) Plummer bodies; and, untimed by the iteration, what a row of
/// the whole state would read instead (Simulation::state(), the bodies in the caller's order from the pipeline).
/// Manual time: the steps between iterations are not timed. Counters: the medians of each part ("sums_s",
/// "radii_s", "state_s").
void BM_PipelinedRows(benchmark::State& state)
{
    Parameters p;
    p.backend              = state.range(1) == 0 ? Backend::Cpu : Backend::Auto;
    p.epsilon_squared      = 1e-4;
    constexpr double kStep = 1.0 / 64;
    Simulation sim(plummer(state.range(0)), p, planSteps(0.0, 1e6 * kStep, kStep));
    std::vector<double> sums, radii, states;
    for (auto _ : state)
    {
        sim.step();
        Stopwatch clock;
        benchmark::DoNotOptimize(sim.diagnostics().total);
        sums.push_back(clock.lap());
        benchmark::DoNotOptimize(sim.lagrangianRadii().data());
        radii.push_back(clock.lap());
        state.SetIterationTime(sums.back() + radii.back());
        benchmark::DoNotOptimize(sim.state().pos.data());
        states.push_back(clock.lap());
    }
    state.counters["sums_s"]  = median(sums);
    state.counters["radii_s"] = median(radii);
    state.counters["state_s"] = median(states);
    setRate(state, state.range(0));
}

/// A checkpoint of range(0) Plummer bodies as a pipelined periodic run writes it (state, the pipeline's three sets of
/// positions, the last forces: 153 bytes a body), written and read back (writeCheckpoint, readCheckpoint: the
/// checksum over every byte, the writes, the fsync, the rename) into the directory $TMPDIR (default /tmp), as
/// version 8 (range(1) = 1) or as the builds before it wrote it (0: version 7, FNV-1a byte by byte).
/// Counters: the medians of writing and reading ("write_s", "read_s") and the file's bytes.
void BM_Checkpoint(benchmark::State& state)
{
    CheckpointImage c;
    c.state               = plummer(state.range(0));
    const size_t n        = c.state.pos.size();
    c.numSteps            = 10;
    c.step                = 3;
    c.h                   = 1.0 / 64;
    c.parameters.box_size = 100;
    PipelineFields& f     = c.pipeline;
    f.rebuildEvery        = 0;
    f.adoptStep           = 4;
    f.topologyPos = f.inFlightPos = f.statePos = c.state.pos;
    c.results.assign(n, F4{1.0f, 2.0f, 3.0f, -4.0f});
    const char* dir        = std::getenv("TMPDIR");
    const std::string path = std::string(dir ? dir : "/tmp") + "/octwalk_bench_checkpoint.bin";
    std::vector<double> writes, reads;
    for (auto _ : state)
    {
        Stopwatch clock;
        writeCheckpoint(path, c, state.range(1) == 1 ? CheckpointVersion::Current : CheckpointVersion::Previous);
        writes.push_back(clock.lap());
        benchmark::DoNotOptimize(readCheckpoint(path).state.pos.data());
        reads.push_back(clock.lap());
    }
    state.counters["write_s"] = median(writes);
    state.counters["read_s"]  = median(reads);
    state.counters["bytes"]   = double(std::filesystem::file_size(path));
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".prev");
}

/// The host passes of a classic Simulation step around its force evaluation, without the evaluation: range(0)
/// Plummer bodies in the previous step's tree order (inPreviousTreeOrder) and the permutation of their sort,
/// on range(1) threads. range(2) = 0: the pass after the evaluation (results times G checked, velocities,
/// caller's indices and ids gathered into the new order, closing half-kick) followed by the next step's
/// opening half-kick and drift as a second pass (kickAndDriftPass), as the step once did; 1: the
/// one pass of the step now (treeOrderPass with nextPos, ids left in the caller's order). The results are a
/// Plummer sphere's field in float (their values do not change the work). One iteration = one step's passes.
void BM_StepPasses(benchmark::State& state)
{
    const int saved = maxThreads();
    if (state.range(1) > 0) bench::setThreads(int(state.range(1)));
    const int64_t n       = state.range(0);
    const bool fused      = state.range(2) == 1;
    const ParticleSet now = inPreviousTreeOrder(n, 0);
    HostTree t;
    sortBodies(span(now), t);
    std::vector<F4> out(static_cast<size_t>(n));
    std::vector<Vec3d> vel(now.vel), velOut(static_cast<size_t>(n)), pos(t.pos), nextPos(static_cast<size_t>(n));
    std::vector<int32_t> index(static_cast<size_t>(n)), indexOut(static_cast<size_t>(n));
    std::vector<uint64_t> id(now.id), idOut(static_cast<size_t>(n));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k)
    {
        const Vec3d& x   = t.pos[k];
        const double r2  = dot(x, x) + 1;
        const double phi = -1 / std::sqrt(r2);
        out[k]           = {float(phi / r2 * x.x), float(phi / r2 * x.y), float(phi / r2 * x.z), float(phi)};
        index[k]         = int32_t(k);
    }
    constexpr double kStep = 1.0 / 64;
    TreeOrderPass p;
    p.n        = n;
    p.order    = t.order.data();
    p.out      = out.data();
    p.kick     = true;
    p.halfKick = 0.5 * kStep;
    p.h        = kStep;
    for (auto _ : state)
    {
        p.pos            = pos.data();
        p.vel            = vel.data();
        p.velOut         = velOut.data();
        p.callerIndex    = index.data();
        p.callerIndexOut = indexOut.data();
        if (fused) p.nextPos = nextPos.data();
        else
        {
            p.id    = id.data();
            p.idOut = idOut.data();
        }
        const TreeOrderFlags flags = treeOrderPass(p);
        benchmark::DoNotOptimize(flags);
        // The buffers change hands as in Simulation::reorder, so that every step writes where the last read.
        vel.swap(velOut);
        index.swap(indexOut);
        if (fused) pos.swap(nextPos);
        else
        {
            id.swap(idOut);
            benchmark::DoNotOptimize(kickAndDriftPass(pos.data(), vel.data(), out.data(), 1.0, n, kStep, 0.0));
        }
    }
    state.counters["threads"] = maxThreads();
    bench::setThreads(saved);
    setRate(state, n);
    state.SetLabel(fused ? "one fused pass" : "reorder + kick-drift passes");
}

/// The TreePM mesh's long-range forces (host/pm/pm_mesh.h) on range(0) uniform bodies with a range(1)^3 mesh,
/// CIC (range(2) = 0) or TSC (1), the bodies in random order (range(3) = 0) or in the tree's Morton order (1), as
/// a run passes them: the whole computeForces and its parts (median seconds over the iterations).
void BM_PmForces(benchmark::State& state)
{
    const int64_t n               = state.range(0);
    const std::vector<Vec3d>& pos = state.range(3) == 0 ? bench::uniformBox(n) : bench::uniformBoxInTreeOrder(n);
    const std::vector<double> mass(size_t(n), 1.0 / double(n));
    const MassAssignment a = state.range(2) == 0 ? MassAssignment::Cic : MassAssignment::Tsc;
    PmMesh mesh(1.0, int(state.range(1)), kTreePmAsmth, a, 1.0);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    std::vector<PmTimings> times;
    for (auto _ : state)
    {
        mesh.computeForces(pos.data(), mass.data(), n, acc, pot);
        times.push_back(mesh.timings());
    }
    state.counters["check_s"]       = bench::medianOf(times, &PmTimings::check);
    state.counters["sort_s"]        = bench::medianOf(times, &PmTimings::sort);
    state.counters["assign_s"]      = bench::medianOf(times, &PmTimings::assign);
    state.counters["fft_s"]         = bench::medianOf(times, &PmTimings::fft);
    state.counters["green_s"]       = bench::medianOf(times, &PmTimings::green);
    state.counters["interpolate_s"] = bench::medianOf(times, &PmTimings::interpolate);
    state.counters["threads"]       = maxThreads();
    setRate(state, n);
    state.SetLabel(std::string(a == MassAssignment::Cic ? "CIC" : "TSC") +
                   (state.range(3) == 0 ? ", random order" : ", tree order"));
}

} // namespace

BENCHMARK(BM_PmForces)
    ->ArgsProduct({{1 << 20}, {128}, {0, 1}, {0, 1}})
    ->ArgsProduct({{1 << 24}, {256}, {0, 1}, {0, 1}})
    ->ArgNames({"n", "mesh", "tsc", "tree_order"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_LagrangianRadii)
    ->ArgsProduct({{1 << 20, 1 << 22}, {0, 1}})
    ->ArgNames({"n", "unequal"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Sort)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_BuildCells)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Multipoles)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Groups)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Packing)->Arg(1 << 16)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HostTotal)
    ->Apply(hostTotalArgs)
    ->ArgNames({"n", "model", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_HostRefit)->Arg(1 << 20)->Arg(1 << 22)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_HostStep)
    ->Apply(hostTotalArgs)
    ->ArgNames({"n", "model", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SimulationStep)
    ->ArgsProduct({{1 << 16, 1 << 20, 1 << 22}, {0, 1, 2, 16}})
    ->ArgNames({"n", "threads"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_PipelinedRows)
    ->ArgsProduct({{1 << 18, 1 << 20}, {0, 1}})
    ->ArgNames({"n", "backend"})
    ->Iterations(5)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StepPasses)
    ->ArgsProduct({{1 << 20, 1 << 22}, {1, 2, 16}, {0, 1}})
    ->ArgNames({"n", "threads", "fused"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Checkpoint)
    ->ArgsProduct({{1 << 20, 1 << 22}, {0, 1}})
    ->ArgNames({"n", "version8"})
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CpuTwin)->Args({1 << 16, 50})->Args({1 << 16, 75})->Unit(benchmark::kMillisecond)->Iterations(2);

int main(int argc, char** argv)
{
    bench::rememberArguments(argc, argv);
    registerLargeHostCases();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

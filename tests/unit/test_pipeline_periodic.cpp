// The pipelined step (host/sim/pipeline.h) of a periodic box under TreePM, on its CPU twin: rebuilt every step it
// is the classic Simulation bit for bit (error control on and off); with kept topologies its bodies cross the box's
// faces without stretching the tree, its forces match a fresh classic evaluation of the same state to the tree's
// error, it is deterministic for any thread count, and a restart is bit-identical, also with a build in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "common/errors.h"
#include "host/models/models.h"
#include "host/sim/comoving.h"
#include "host/sim/pipeline.h"
#include "host/sim/simulation.h"
#include "host/solver/solver.h"
#include "test_helpers.h"
#include "unit/pipeline_helpers.h"
#include "unit/refit_helpers.h"

using namespace octwalk;
using test::rebuildEvery;
using test::slurp;
using test::stateOf;

namespace {

constexpr uint64_t kSeed = 20261129;
constexpr double kDt     = 1.0 / 64;
constexpr double kL      = 1.0;

/// TreePM in a unit box, G != 1 so that a G applied twice or not at all shows.
Parameters treePmParameters(double errTol)
{
    Parameters p             = test::cpuParameters(0.5, 1e-4);
    p.box_size               = kL;
    p.pm_grid                = 16;
    p.asmth                  = 1.25; // GADGET-2's split
    p.rcut                   = 4.5;
    p.gravitational_constant = 1.5;
    p.err_tol_force_acc      = errTol;
    return p;
}

/// docs/periodic.md's clustered box with random velocities of about 0.1 L per unit time: over the tests' steps a
/// body moves a few hundredths of the box, so thousands cross its faces.
ParticleSet movingBox(int64_t n)
{
    ParticleSet b = makeClusteredBox(n, kL, kSeed);
    std::mt19937_64 rng(kSeed + 1);
    std::normal_distribution<double> v(0.0, 0.1 * kL);
    b.vel.resize(size_t(n));
    for (Vec3d& u : b.vel) u = {v(rng), v(rng), v(rng)};
    return b;
}

/// movingBox with masses that differ from body to body (1 to 8 parts, in total 1): a mass kept in the wrong order
/// changes the mesh's forces.
ParticleSet movingBoxOfUnequalMasses(int64_t n)
{
    ParticleSet b = movingBox(n);
    double total  = 0;
    for (int64_t i = 0; i < n; ++i) total += double(1 + i % 8);
    for (int64_t i = 0; i < n; ++i) b.mass[size_t(i)] = double(1 + i % 8) / total;
    return b;
}

/// A classic evaluation of bodies at pos, its error control fed the previous accelerations.
struct FreshEvaluation
{
    std::vector<Vec3d> acc;
    InteractionStats stats;
};

FreshEvaluation freshEvaluation(const Parameters& p, const std::vector<Vec3d>& pos, const std::vector<double>& mass,
                                const std::vector<Vec3d>& previous)
{
    GravitySolver fresh(p);
    fresh.setBodies(pos, mass);
    fresh.setPreviousAccelerations(previous);
    FreshEvaluation e;
    std::vector<double> pot;
    fresh.computeForces(e.acc, pot);
    e.stats = fresh.stats();
    return e;
}

} // namespace

TEST(PipelinePeriodic, RebuildEveryStepIsTheClassicTreePmSimulationBitForBit)
{
    const ParticleSet b = movingBox(4096);
    const int64_t n     = b.size();
    for (double errTol : {0.0, 0.002})
    {
        const Parameters p = treePmParameters(errTol);
        Simulation classic(b, p, planSteps(0.0, 8 * kDt, kDt), rebuildEvery(1));
        Pipeline pipe(p, 1, PipelineDevice::Cpu);
        test::startInCallersOrder(pipe, b);
        while (!classic.done())
        {
            classic.step();
            pipe.step(kDt);
            const test::PipelineState s = stateOf(pipe, n);
            ASSERT_TRUE(test::sameBits(s.pos, classic.state().pos))
                << "positions after step " << classic.stepIndex() << ", err_tol_force_acc " << errTol;
            ASSERT_TRUE(test::sameBits(s.vel, classic.state().vel))
                << "velocities after step " << classic.stepIndex() << ", err_tol_force_acc " << errTol;
            const InteractionStats mine = pipe.stats(), theirs = classic.solver().stats();
            EXPECT_EQ(mine.nodeInteractions, theirs.nodeInteractions) << "step " << classic.stepIndex();
            EXPECT_EQ(mine.leafInteractions, theirs.leafInteractions) << "step " << classic.stepIndex();
        }
        const Diagnostics d    = classic.diagnostics();
        const DiagnosticSums e = pipe.diagnosticSums();
        EXPECT_EQ(d.kinetic, e.kinetic);
        EXPECT_EQ(d.potential, e.potential);
    }
}

// The error control must be on in the refit of a kept topology: without it the walk opens more nodes.
TEST(PipelinePeriodic, KeptTopologiesTakeTheErrorControlAndMatchAFreshEvaluation)
{
    const ParticleSet b = movingBox(4096);
    const int64_t n     = b.size();
    const Parameters p  = treePmParameters(0.002);
    for (int64_t every : {int64_t(4), int64_t(0)})
    {
        Simulation sim(b, p, planSteps(0.0, 16 * kDt, kDt), rebuildEvery(every));
        ASSERT_NE(sim.pipeline(), nullptr);
        int64_t outside = 0;
        while (!sim.done())
        {
            sim.step();
            // Raw positions outside the box: bodies that crossed a face under a kept topology.
            for (const Vec3d& x : sim.pipeline()->checkpoint().statePos)
                outside += (x.x < 0 || x.x >= kL || x.y < 0 || x.y >= kL || x.z < 0 || x.z >= kL) ? 1 : 0;
        }
        EXPECT_GT(outside, 0) << "no body left the box between adoptions: the test proves nothing";
        const ParticleSet& s = sim.state();
        for (const Vec3d& x : s.pos)
        {
            ASSERT_TRUE(x.x >= 0 && x.x < kL && x.y >= 0 && x.y < kL && x.z >= 0 && x.z < kL)
                << "an output position outside the box";
        }
        // A fresh classic evaluation of the same state, its error control fed the pipeline's last accelerations.
        const std::vector<Vec3d> acc       = sim.accelerations();
        const FreshEvaluation fresh        = freshEvaluation(p, s.pos, s.mass, acc);
        const std::vector<Vec3d>& freshAcc = fresh.acc;
        std::vector<double> rel(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
        {
            const Vec3d d  = acc[size_t(i)] - freshAcc[size_t(i)];
            rel[size_t(i)] = std::sqrt(dot(d, d) / dot(freshAcc[size_t(i)], freshAcc[size_t(i)]));
        }
        std::sort(rel.begin(), rel.end());
        EXPECT_LT(rel[size_t(n / 2)], 2e-3) << "median, rebuild every " << every;
        EXPECT_LT(rel[size_t(n * 99 / 100)], 2e-2) << "p99, rebuild every " << every;
        // A kept topology walks more than a fresh tree, but not the stretched cells of bodies moved across the box.
        const InteractionStats kept = sim.pipeline()->stats(), own = fresh.stats;
        const double keptPerBody  = double(kept.nodeInteractions + kept.leafInteractions) / double(n);
        const double freshPerBody = double(own.nodeInteractions + own.leafInteractions) / double(n);
        EXPECT_LT(keptPerBody, 1.5 * freshPerBody) << "rebuild every " << every;
    }
}

// A foreground step of a periodic box (lagged topologies from unpredicted positions, ratio 1) adopts a tree built
// from its own positions, its bodies wrapped into the box by the shifts of that build: the forces are a classic
// evaluation's of the same state, its error control fed the same previous accelerations, interaction for
// interaction. The masses differ, so that the host's copy of them, the mesh's, must follow the bodies into each new
// order.
TEST(PipelinePeriodic, AForegroundStepIsAFreshEvaluationOfItsState)
{
    const ParticleSet b = movingBoxOfUnequalMasses(4096);
    const int64_t n     = b.size();
    const Parameters p  = treePmParameters(0.002);
    Pipeline pipe(p, 0, PipelineDevice::Cpu, Prediction::None, 1, 1.0);
    test::startInCallersOrder(pipe, b);
    int64_t compared = 0;
    std::vector<Vec3d> before(static_cast<size_t>(n)), acc(static_cast<size_t>(n));
    for (int k = 0; k < 8; ++k)
    {
        pipe.copyAccelerations(before.data());
        pipe.step(kDt);
        if (!pipe.lastStep().foreground) continue;
        const test::PipelineState s        = stateOf(pipe, n);
        const FreshEvaluation fresh        = freshEvaluation(p, s.pos, b.mass, before);
        const std::vector<Vec3d>& freshAcc = fresh.acc;
        pipe.copyAccelerations(acc.data());
        double worst = 0;
        for (int64_t i = 0; i < n; ++i)
        {
            const Vec3d d = acc[size_t(i)] - freshAcc[size_t(i)];
            worst         = std::max(worst, std::sqrt(dot(d, d) / dot(freshAcc[size_t(i)], freshAcc[size_t(i)])));
        }
        EXPECT_LT(worst, 1e-5) << "step " << pipe.stepIndex();
        EXPECT_EQ(pipe.stats().nodeInteractions, fresh.stats.nodeInteractions) << "step " << pipe.stepIndex();
        EXPECT_EQ(pipe.stats().leafInteractions, fresh.stats.leafInteractions) << "step " << pipe.stepIndex();
        for (const Vec3d& x : pipe.checkpoint().statePos)
        {
            ASSERT_TRUE(x.x >= 0 && x.x < kL && x.y >= 0 && x.y < kL && x.z >= 0 && x.z < kL)
                << "a body outside the box after a foreground adoption, step " << pipe.stepIndex();
        }
        ++compared;
    }
    EXPECT_GE(compared, 3);
}

TEST(PipelinePeriodic, IsBitIdenticalForOneAndTwoThreads)
{
    const ParticleSet b = movingBox(4096);
    const Parameters p  = treePmParameters(0.002);
    std::vector<Vec3d> pos[2], vel[2];
    for (int threads : {1, 2})
    {
        const int before = test::setThreads(threads);
        Simulation sim(b, p, planSteps(0.0, 12 * kDt, kDt), rebuildEvery(0));
        while (!sim.done()) sim.step();
        pos[threads - 1] = sim.state().pos;
        vel[threads - 1] = sim.state().vel;
        test::setThreads(before);
    }
    EXPECT_TRUE(test::sameBits(pos[0], pos[1]));
    EXPECT_TRUE(test::sameBits(vel[0], vel[1]));
}

TEST(PipelinePeriodic, RestartIsBitIdenticalAlsoWithABuildInFlight)
{
    namespace fs       = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("octwalk_pipeline_periodic_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const ParticleSet b = movingBox(2048);
    const Parameters p  = treePmParameters(0.002);
    for (int64_t every : {int64_t(4), int64_t(0)})
    {
        Simulation whole(b, p, planSteps(0.0, 20 * kDt, kDt), rebuildEvery(every));
        while (!whole.done()) whole.step();
        whole.writeCheckpoint((dir / "whole.bin").string());

        Simulation first(b, p, planSteps(0.0, 11 * kDt, kDt), rebuildEvery(every));
        while (!first.done()) first.step();
        EXPECT_GE(first.pipeline()->checkpoint().adoptStep, 0) << "no build in flight, rebuild every " << every;
        first.writeCheckpoint((dir / "half.bin").string());
        Simulation resumed = Simulation::fromCheckpoint((dir / "half.bin").string());
        ASSERT_NE(resumed.pipeline(), nullptr);
        resumed.extendTo(20 * kDt);
        while (!resumed.done()) resumed.step();
        resumed.writeCheckpoint((dir / "resumed.bin").string());
        EXPECT_TRUE(slurp(dir / "whole.bin") == slurp(dir / "resumed.bin")) << "rebuild every " << every;
    }
    fs::remove_all(dir);
}

TEST(PipelinePeriodic, TreePmBoxesArePipelinedByDefaultAndEwaldBoxesAreRefusedByName)
{
    Parameters p = treePmParameters(0.002);
    EXPECT_EQ(resolvedRebuildEvery(p, ForceOptions{}, false), 0) << "TreePM";
    EXPECT_EQ(resolvedRebuildEvery(p, ForceOptions{}, true), 0) << "comoving";
    Parameters hostMesh = p;
    hostMesh.backend    = Backend::Gpu;
    hostMesh.pm_backend = Backend::Cpu;
    EXPECT_EQ(resolvedRebuildEvery(hostMesh, ForceOptions{}, false), 1) << "the mesh away from the state";
    Parameters ewald = p;
    ewald.pm_grid    = 0;
    EXPECT_EQ(resolvedRebuildEvery(ewald, ForceOptions{}, false), 1) << "tree + Ewald";
    try
    {
        Pipeline pipe(ewald, 4, PipelineDevice::Cpu);
        ADD_FAILURE() << "tree + Ewald accepted";
    }
    catch (const ParameterError& e)
    {
        EXPECT_NE(std::string(e.what()).find("pm_grid"), std::string::npos) << e.what();
    }
}

namespace {

/// Einstein-de Sitter, a = 0.1 to 0.2 in fixed steps of ln a (the criterion's steps are tested separately).
ComovingSettings edsSettings(double dlna)
{
    ComovingSettings s;
    s.cosmology = {1.0, 0.0, 0.7};
    s.aBegin    = 0.1;
    s.aEnd      = 0.2;
    s.dlna      = dlna;
    return s;
}

} // namespace

// The pipeline driven with the comoving step's factors, rebuilt every step, is the classic comoving Simulation bit
// for bit: the kicks and drift of the momenta, the softening at the new a and the velocities v = p / a.
TEST(PipelinePeriodic, RebuildEveryStepIsTheClassicComovingStepBitForBit)
{
    const ParticleSet b = movingBox(4096);
    const int64_t n     = b.size();
    const Parameters p  = treePmParameters(0.002);
    ComovingSettings s  = edsSettings(0.02);
    s.softeningMaxPhys  = 0.5 * std::sqrt(p.epsilon_squared) * s.aBegin * 1.5;
    Simulation classic(b, p, s, rebuildEvery(1));
    ASSERT_EQ(classic.pipeline(), nullptr);
    double mass = 0;
    for (double m : b.mass) mass += m; // in index order, as the Simulation sums it
    const double h0 = comovingHubble0(mass, p, s);
    Pipeline pipe(p, 1, PipelineDevice::Cpu);
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    auto epsilonSquaredAt = [&](double a) { return float(comovingEpsilonSquared(s, p.epsilon_squared, a)); };
    std::vector<Vec3d> momenta(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) momenta[size_t(i)] = s.aBegin * b.vel[size_t(i)];
    pipe.setScales(epsilonSquaredAt(s.aBegin), 1 / s.aBegin);
    pipe.start(b.pos.data(), momenta.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
    const Cosmology& c = s.cosmology;
    for (int k = 0; k < 6; ++k)
    {
        const double a0 = classic.time();
        classic.step();
        const double a1 = classic.time(), aMid = std::sqrt(a0 * a1);
        pipe.step({kickFactor(c, a0, aMid) / h0, driftFactor(c, a0, a1) / h0, kickFactor(c, aMid, a1) / h0,
                   epsilonSquaredAt(a1), 1 / a1});
        const test::PipelineState st = stateOf(pipe, n);
        ASSERT_TRUE(test::sameBits(st.pos, classic.state().pos)) << "positions after step " << k + 1;
        ASSERT_TRUE(test::sameBits(st.vel, classic.state().vel)) << "velocities after step " << k + 1;
    }
    const Diagnostics d    = classic.diagnostics();
    const DiagnosticSums e = pipe.diagnosticSums();
    EXPECT_EQ(d.kinetic, e.kinetic);
    EXPECT_EQ(d.potential, e.potential / classic.time()) << "the peculiar potential is phi_c / a";
}

TEST(PipelinePeriodic, ComovingRunsArePipelinedAndRestartBitIdenticallyWithABuildInFlight)
{
    namespace fs       = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("octwalk_pipeline_comoving_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const ParticleSet b = movingBox(2048);
    const Parameters p  = treePmParameters(0.002);
    // The criterion's steps too: the step limit is the pipeline's largest acceleration.
    for (double dlna : {0.01, 0.0})
    {
        const ComovingSettings s = edsSettings(dlna);
        Simulation whole(b, p, s);
        ASSERT_NE(whole.pipeline(), nullptr) << "a comoving TreePM run takes the pipelined step by default";
        while (!whole.done()) whole.step();
        whole.writeCheckpoint((dir / "whole.bin").string());
        const int64_t half = whole.stepIndex() / 2 + 1;

        Simulation first(b, p, s);
        for (int64_t k = 0; k < half; ++k) first.step();
        EXPECT_GE(first.pipeline()->checkpoint().adoptStep, 0) << "no build in flight, dlna " << dlna;
        first.writeCheckpoint((dir / "half.bin").string());
        Simulation resumed = Simulation::fromCheckpoint((dir / "half.bin").string());
        ASSERT_NE(resumed.pipeline(), nullptr);
        while (!resumed.done()) resumed.step();
        EXPECT_EQ(resumed.stepIndex(), whole.stepIndex()) << "dlna " << dlna;
        resumed.writeCheckpoint((dir / "resumed.bin").string());
        EXPECT_TRUE(slurp(dir / "whole.bin") == slurp(dir / "resumed.bin")) << "dlna " << dlna;
    }
    fs::remove_all(dir);
}

// The pipelined step (host/sim/pipeline.h) on its CPU twin: with a build every step it is the classic
// Simulation bit for bit; with K = 4 and the automatic policy it conserves energy as the per-step
// build does; it is deterministic for any thread count and rebuilds where the policy says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.h"
#include "host/core/parallel.h"
#include "host/cpu/resident_cpu.h"
#include "host/io/checkpoint.h"
#include "host/sim/pipeline.h"
#include "host/models/galaxy.h"
#include "host/sim/simulation.h"
#include "test_helpers.h"
#include "unit/pipeline_helpers.h"
#include "unit/refit_helpers.h"

using namespace octwalk;
using test::rebuildEvery;
using test::slurp;
using test::stateOf;

namespace {

constexpr uint64_t kSeed = 20261123;
constexpr double kDt     = 1.0 / 128;
/// The prediction test's steps: long enough that a body moves a good part of a leaf per step.
constexpr double kPredictDt = 1.0 / 32;
constexpr int kPredictSteps = 4;

Parameters parameters()
{
    Parameters p = test::cpuParameters(0.5, 1e-4);
    // G != 1, so a G applied twice or not at all shows.
    p.gravitational_constant = 1.5;
    return p;
}

/// Largest |dE/E0| of a Plummer run of `steps` steps with the given rebuild policy.
double worstEnergyError(const ParticleSet& b, int64_t steps, int64_t every, int64_t* rebuilds = nullptr)
{
    Simulation sim(b, parameters(), planSteps(0.0, double(steps) * kDt, kDt), rebuildEvery(every));
    double worst = 0;
    while (!sim.done())
    {
        sim.step();
        worst = std::max(worst, std::fabs(sim.diagnostics().relativeEnergyError));
    }
    if (rebuilds) *rebuilds = sim.pipeline() ? sim.pipeline()->rebuilds() : sim.stepIndex() + 1;
    return worst;
}

} // namespace

TEST(Pipeline, RebuildEveryStepIsTheClassicSimulationBitForBit)
{
    const ParticleSet b = makeModel("plummer", 4096, kSeed);
    const Parameters p  = parameters();
    const int64_t n     = b.size();
    Simulation classic(b, p, planSteps(0.0, 6 * kDt, kDt), rebuildEvery(1));
    Pipeline pipe(p, 1, PipelineDevice::Cpu);
    test::startInCallersOrder(pipe, b);
    while (!classic.done())
    {
        classic.step();
        pipe.step(kDt);
        const test::PipelineState s = stateOf(pipe, n);
        ASSERT_TRUE(test::sameBits(s.pos, classic.state().pos)) << "positions after step " << classic.stepIndex();
        ASSERT_TRUE(test::sameBits(s.vel, classic.state().vel)) << "velocities after step " << classic.stepIndex();
        // The same tree walked: the same interactions (timing.csv's), counted by the twin's pass 1.
        const InteractionStats mine = pipe.stats(), theirs = classic.solver().stats();
        EXPECT_EQ(mine.nodeInteractions, theirs.nodeInteractions) << "step " << classic.stepIndex();
        EXPECT_EQ(mine.leafInteractions, theirs.leafInteractions) << "step " << classic.stepIndex();
        EXPECT_EQ(mine.numTargets, theirs.numTargets);
        EXPECT_EQ(mine.numGroups, theirs.numGroups);
        EXPECT_EQ(mine.numInternal, theirs.numInternal);
        EXPECT_EQ(mine.numLeaves, theirs.numLeaves);
        EXPECT_EQ(mine.depth, theirs.depth);
        EXPECT_EQ(pipe.lastStep().stepsSinceRebuild, 0);
    }
    const Diagnostics d    = classic.diagnostics();
    const DiagnosticSums e = pipe.diagnosticSums();
    EXPECT_EQ(d.kinetic, e.kinetic);
    EXPECT_EQ(d.potential, e.potential);
    EXPECT_EQ(pipe.rebuilds(), 7);
}

TEST(Pipeline, RebuildsEveryKStepsAndCountsEachStepsWalk)
{
    const ParticleSet b = makeModel("plummer", 4096, kSeed);
    Simulation sim(b, parameters(), planSteps(0.0, 12 * kDt, kDt), rebuildEvery(4));
    std::vector<int64_t> rebuiltAt, age;
    std::vector<double> perBody;
    while (!sim.done())
    {
        sim.step();
        const PipelineStepInfo& info = sim.pipeline()->lastStep();
        if (info.rebuilt) rebuiltAt.push_back(sim.stepIndex());
        age.push_back(info.stepsSinceRebuild);
        const InteractionStats s = sim.pipeline()->stats();
        perBody.push_back(s.nodesPerBody() + s.leavesPerBody());
        EXPECT_EQ(s.nodeInteractions + s.leafInteractions + b.size(), info.interactions) << "self excluded";
    }
    EXPECT_EQ(rebuiltAt, (std::vector<int64_t>{4, 8, 12}));
    EXPECT_EQ(age, (std::vector<int64_t>{1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0}));
    EXPECT_EQ(sim.pipeline()->rebuilds(), 4);
    // Each step's own walk: the counts change with the refitted tree (a stale count repeats the first).
    EXPECT_NE(perBody[0], perBody[1]);
    EXPECT_NE(perBody[2], perBody[3]);
}

TEST(Pipeline, ConservesEnergyAsThePerStepBuildDoes)
{
    const ParticleSet b    = makeModel("plummer", 4096, kSeed);
    const int64_t steps    = 100;
    int64_t rebuilds[3]    = {};
    const double classic   = worstEnergyError(b, steps, 1, &rebuilds[0]);
    const double every4    = worstEnergyError(b, steps, 4, &rebuilds[1]);
    const double automatic = worstEnergyError(b, steps, 0, &rebuilds[2]);
    std::printf("Plummer 2^12, %lld steps of 1/128: max |dE/E0| per-step build %.3g, K = 4 %.3g (%lld builds), "
                "automatic %.3g (%lld builds)\n",
                (long long)steps, classic, every4, (long long)rebuilds[1], automatic, (long long)rebuilds[2]);
    EXPECT_LT(every4, 1.5 * classic + 1e-6);
    EXPECT_LT(automatic, 1.5 * classic + 1e-6);
    EXPECT_EQ(rebuilds[1], 1 + steps / 4);
    // Continuous: the start's build, then one adopted every lag steps from step 1 + lag on.
    EXPECT_EQ(rebuilds[2], 1 + (steps - 1) / kRebuildLag);
}

TEST(Pipeline, IsBitIdenticalForOneAndTwoThreads)
{
#ifdef _OPENMP
    const ParticleSet b = makeModel("plummer", 4096, kSeed);
    std::vector<ParticleSet> out;
    const int threads = omp_get_max_threads();
    for (int t : {1, 2})
    {
        omp_set_num_threads(t);
        for (int64_t every : {int64_t(3), int64_t(0)})
        {
            Simulation sim(b, parameters(), planSteps(0.0, 10 * kDt, kDt), rebuildEvery(every));
            while (!sim.done()) sim.step();
            out.push_back(sim.state());
        }
    }
    omp_set_num_threads(threads);
    for (size_t k = 0; k < 2; ++k)
    {
        EXPECT_TRUE(test::sameBits(out[k].pos, out[k + 2].pos)) << "policy " << k;
        EXPECT_TRUE(test::sameBits(out[k].vel, out[k + 2].vel)) << "policy " << k;
    }
#else
    GTEST_SKIP() << "the serial build has one thread";
#endif
}

// The background build on one thread, on two and on the default (one fewer than the process's threads;
// Pipeline::setBuildThreads): the same topologies, so the same bits, with the automatic policy and with K = 3.
TEST(Pipeline, BuildThreadsDoNotChangeTheBits)
{
    const ParticleSet b = makeModel("plummer", 4096, kSeed);
    const int64_t n     = b.size();
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    for (int64_t every : {int64_t(0), int64_t(3)})
    {
        std::vector<test::PipelineState> out;
        for (int threads : {1, 2, 0})
        {
            Pipeline pipe(parameters(), every, PipelineDevice::Cpu);
            pipe.setBuildThreads(threads);
            pipe.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
            for (int k = 0; k < 7; ++k) pipe.step(kDt);
            EXPECT_GE(pipe.rebuilds(), 2) << "policy " << every;
            out.push_back(stateOf(pipe, n));
        }
        for (size_t k = 1; k < out.size(); ++k)
        {
            EXPECT_TRUE(test::sameBits(out[0].pos, out[k].pos)) << "policy " << every << ", setting " << k;
            EXPECT_TRUE(test::sameBits(out[0].vel, out[k].vel)) << "policy " << every << ", setting " << k;
        }
    }
    Pipeline pipe(parameters(), 0, PipelineDevice::Cpu);
    EXPECT_THROW(pipe.setBuildThreads(-1), ParameterError);
}

namespace {

/// Node + leaf interactions of a fresh tree on the pipeline's current positions.
int64_t freshInteractions(Pipeline& pipe, const ParticleSet& b, const Parameters& p)
{
    const int64_t n             = b.size();
    const test::PipelineState s = stateOf(pipe, n);
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    Pipeline fresh(p, 1, PipelineDevice::Cpu);
    fresh.start(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, pipe.stepIndex());
    return fresh.lastStep().interactions;
}

} // namespace

// With a lag of 1 the automatic policy adopts in every step a topology built from the state one step earlier: from
// predicted positions it walks about as many interactions as a fresh tree, from the old positions
// alone clearly more (Plummer 2^14: a core body crosses a good part of a leaf per step).
TEST(Pipeline, PredictedTopologyWalksAboutAsMuchAsAFreshTree)
{
    const ParticleSet b = makeModel("plummer", 1 << 14, kSeed);
    const Parameters p  = parameters();
    const int64_t n     = b.size();
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    double ratio[2] = {};
    for (bool predict : {true, false})
    {
        Pipeline pipe(p, 0, PipelineDevice::Cpu, predict ? Prediction::MidServed : Prediction::None, 1);
        pipe.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
        for (int k = 0; k < kPredictSteps; ++k) pipe.step(kPredictDt);
        ASSERT_TRUE(pipe.lastStep().rebuilt);
        ratio[predict ? 0 : 1] = double(pipe.lastStep().interactions) / double(freshInteractions(pipe, b, p));
    }
    std::printf("Plummer 2^14, h = %g: interactions / fresh tree's after adoption: predicted %.4f, "
                "positions only %.4f\n",
                kPredictDt, ratio[0], ratio[1]);
    EXPECT_LT(std::fabs(ratio[0] - 1), 0.03);
    EXPECT_GT(ratio[1], ratio[0] + 0.05);
}

// With a lag of two steps the automatic policy adopts every other step (its first build starts in step
// 1) a topology built two steps earlier (each build has two device steps to finish), and K = 4 starts its
// builds two steps before the adoption. Each topology serves two steps (four for K = 4): predicted for the
// middle of them it walks fewer interactions over them than predicted for the adopting step alone (means
// 1.028 against 1.062 of a fresh tree's for the automatic policy, 1.18 against 1.30 for K = 4), and the
// automatic policy's two steps cost about the same (within 2%, against 12-16% aimed at the adoption).
TEST(Pipeline, LagOfTwoStepsAdoptsWhatWasBuiltTwoStepsEarlier)
{
    const ParticleSet b = makeModel("plummer", 1 << 14, kSeed);
    const Parameters p  = parameters();
    const int64_t n     = b.size();
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    for (int64_t every : {int64_t(0), int64_t(4)})
    {
        double served[2] = {};
        for (Prediction aim : {Prediction::MidServed, Prediction::AtAdoption})
        {
            Pipeline pipe(p, every, PipelineDevice::Cpu, aim, 2);
            pipe.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
            std::vector<int64_t> rebuiltAt, walked;
            for (int k = 0; k < 8; ++k)
            {
                pipe.step(kPredictDt);
                if (pipe.lastStep().rebuilt) rebuiltAt.push_back(pipe.stepIndex());
                // The steps served by the topologies of the second and later builds.
                if (pipe.stepIndex() >= (every == 0 ? 3 : 4)) walked.push_back(pipe.lastStep().interactions);
            }
            EXPECT_EQ(rebuiltAt, every == 0 ? (std::vector<int64_t>{3, 5, 7}) : (std::vector<int64_t>{4, 8}));
            const int64_t fresh = freshInteractions(pipe, b, p);
            double mean         = 0;
            for (int64_t w : walked) mean += double(w) / double(walked.size());
            served[aim == Prediction::MidServed ? 0 : 1] = mean / double(fresh);
            std::printf("Plummer 2^14, h = %g, rebuild every %lld, lag 2, aimed at the %s: interactions per step /"
                        " the last step's fresh tree's:",
                        kPredictDt, (long long)every, aim == Prediction::MidServed ? "middle" : "adoption");
            for (int64_t w : walked) std::printf(" %.3f", double(w) / double(fresh));
            std::printf("\n");
            if (aim == Prediction::MidServed && every == 0)
            {
                const auto [lo, hi] = std::minmax_element(walked.begin(), walked.end());
                EXPECT_LT(double(*hi) / double(*lo), 1.15) << "every " << every;
            }
        }
        EXPECT_LT(served[0], served[1]) << "every " << every;
    }
    EXPECT_THROW(Pipeline(p, 0, PipelineDevice::Cpu, Prediction::MidServed, 0), ParameterError);
    EXPECT_THROW(Pipeline(p, 2, PipelineDevice::Cpu, Prediction::MidServed, 3), ParameterError);
}

// A lag of 1 (the automatic lag from kLagOneBodies bodies on) adopts in every step a topology predicted for that
// step: on a 1:3 merger started 3 disk scale lengths apart, each step walks within 5% of the interactions of a
// tree built from its own positions (measured: within 0.8%), body-node and body-body alike, where a lag of 2
// (each topology serving two steps) strays further (up to 5% more body-body interactions).
TEST(Pipeline, LagOneWalksAsMuchAsAFreshTreeOnAViolentMerger)
{
    MergerOrbit orbit;
    orbit.massRatio     = 1.0 / 3;
    orbit.pericentre    = 0.5;
    orbit.separation    = 3.0;
    const ParticleSet b = makeMerger(1 << 14, kSeed, orbit);
    Parameters p        = parameters();
    p.epsilon_squared   = 0.01;
    const int64_t n     = b.size();
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    double worst[2] = {};
    for (int64_t lag : {int64_t(1), int64_t(2)})
    {
        Pipeline lagged(p, 0, PipelineDevice::Cpu, Prediction::MidServed, lag);
        Pipeline fresh(p, 1, PipelineDevice::Cpu);
        lagged.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
        fresh.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
        std::printf("merger 2^14, h = %g, lag %lld: node / leaf interactions over a fresh tree's:", kPredictDt,
                    (long long)lag);
        for (int k = 0; k < 8; ++k)
        {
            lagged.step(kPredictDt);
            fresh.step(kPredictDt);
            const double node = double(lagged.lastStep().nodeInteractions) / double(fresh.lastStep().nodeInteractions);
            const double leaf = double(lagged.lastStep().leafInteractions) / double(fresh.lastStep().leafInteractions);
            std::printf(" %.3f/%.3f", node, leaf);
            // The first lag steps walk the starting topology, built from unpredicted positions.
            if (k >= lag) worst[lag - 1] = std::max({worst[lag - 1], std::fabs(node - 1), std::fabs(leaf - 1)});
        }
        std::printf("\n");
    }
    EXPECT_LT(worst[0], 0.05);
    EXPECT_GT(worst[1], worst[0]);
}

// Where lagged topologies walk more than fresh ones by more than the pipeline's ratio, steps build in the foreground
// from their own drifted positions and walk exactly a fresh tree's interactions; every kLaggedProbeEvery-th step
// walks a lagged topology again, which only the step before it builds. Topologies from unpredicted positions (Plummer
// 2^14, h = 1/32) walk a few percent more than fresh ones: a ratio of 1 builds in the foreground, the default ratio
// only where it measures a fresh walk again (every kFreshProbeEvery steps, at kFreshProbeAt).
TEST(Pipeline, StepsBuildInTheForegroundWhereLaggedTopologiesWalkMore)
{
    const Parameters p = parameters();
    // A ratio of 1, 2^13 bodies: past the lagged walk's step 16, to the fresh walk of step 24.
    const ParticleSet b = makeModel("plummer", 1 << 13, kSeed);
    Pipeline pipe(p, 0, PipelineDevice::Cpu, Prediction::None, 1, 1.0);
    test::startInCallersOrder(pipe, b);
    std::vector<int64_t> foregroundAt;
    std::vector<int64_t> lagBuiltAt;
    for (int64_t k = 0; k < kFreshProbeAt + 1; ++k)
    {
        pipe.step(kPredictDt);
        if (pipe.checkpoint().adoptStep >= 0) lagBuiltAt.push_back(pipe.stepIndex());
        // Step 1 walks the start's topology; every later one adopts one, in the foreground or built a step earlier.
        EXPECT_EQ(pipe.lastStep().rebuilt, pipe.stepIndex() > 1) << "step " << pipe.stepIndex();
        if (!pipe.lastStep().foreground) continue;
        foregroundAt.push_back(pipe.stepIndex());
        if (foregroundAt.size() <= 2)
        {
            EXPECT_EQ(pipe.lastStep().interactions, freshInteractions(pipe, b, p)) << "step " << pipe.stepIndex();
        }
    }
    std::printf("Plummer 2^13, h = %g, lag 1 from unpredicted positions, ratio 1: foreground steps", kPredictDt);
    for (int64_t s : foregroundAt) std::printf(" %lld", (long long)s);
    std::printf("\n");
    // Steps 1 and 2 walk the start's topology and the first lagged one (the start's, from unpredicted positions,
    // measures no lag); step 16 measures the lag again.
    ASSERT_GE(foregroundAt.size(), size_t(8));
    EXPECT_EQ(foregroundAt.front(), 3);
    EXPECT_EQ(std::count(foregroundAt.begin(), foregroundAt.end(), kLaggedProbeEvery), 0);
    EXPECT_EQ(std::count(foregroundAt.begin(), foregroundAt.end(), kFreshProbeAt), 1);
    EXPECT_EQ(pipe.foregroundBuilds(), int64_t(foregroundAt.size()));
    // Lagged builds start in steps 1 and 2, before the lag is measured again (step 15) and after it (step 16, the
    // next step's foreground build leaves it unadopted): none in the other foreground steps, where the lag costs more.
    EXPECT_EQ(lagBuiltAt, (std::vector<int64_t>{1, 2, kLaggedProbeEvery - 1, kLaggedProbeEvery}));

    // The default ratio on 2^12 bodies builds in the foreground only for the fresh walk of step 24.
    const ParticleSet small = makeModel("plummer", 1 << 12, kSeed);
    Pipeline usual(p, 0, PipelineDevice::Cpu, Prediction::None, 1);
    test::startInCallersOrder(usual, small);
    for (int64_t k = 0; k < kFreshProbeAt + 1; ++k)
    {
        usual.step(kPredictDt);
        EXPECT_EQ(usual.lastStep().foreground, usual.stepIndex() == kFreshProbeAt) << "step " << usual.stepIndex();
    }
    EXPECT_THROW(Pipeline(p, 0, PipelineDevice::Cpu, Prediction::MidServed, 1, 0.5), ParameterError);
}

// A restart continues the foreground policy bit for bit: from a step that built in the foreground (no lagged build
// in flight), also from the one before the lag is measured again (that step's lagged build in flight).
TEST(Pipeline, RestartIsBitIdenticalWithForegroundSteps)
{
    const ParticleSet b = makeModel("plummer", 4096, kSeed);
    const Parameters p  = parameters();
    const int64_t n     = b.size();
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    const auto make = [&] { return std::make_unique<Pipeline>(p, 0, PipelineDevice::Cpu, Prediction::None, 1, 1.0); };
    std::unique_ptr<Pipeline> whole = make();
    test::startInCallersOrder(*whole, b);
    std::vector<bool> foreground;
    for (int k = 0; k < 20; ++k)
    {
        whole->step(kPredictDt);
        foreground.push_back(whole->lastStep().foreground);
    }
    const test::PipelineState end = stateOf(*whole, n);
    for (int64_t at : {int64_t(10), kLaggedProbeEvery - 1})
    {
        std::unique_ptr<Pipeline> first = make();
        test::startInCallersOrder(*first, b);
        for (int64_t k = 0; k < at; ++k) first->step(kPredictDt);
        ASSERT_TRUE(first->lastStep().foreground) << "step " << at;
        const PipelineCheckpoint c  = first->checkpoint();
        const test::PipelineState s = stateOf(*first, n);
        // A foreground step starts a lagged build only for the step that measures the lag.
        EXPECT_EQ(c.adoptStep, at + 1 == kLaggedProbeEvery ? at + 1 : -1) << "step " << at;
        std::unique_ptr<Pipeline> resumed = make();
        resumed->restore(s.pos.data(), s.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, at, c);
        for (int64_t k = at; k < 20; ++k)
        {
            resumed->step(kPredictDt);
            EXPECT_EQ(resumed->lastStep().foreground, foreground[size_t(k)]) << "step " << k + 1;
        }
        const test::PipelineState r = stateOf(*resumed, n);
        EXPECT_TRUE(test::sameBits(r.pos, end.pos)) << "restored at step " << at;
        EXPECT_TRUE(test::sameBits(r.vel, end.vel)) << "restored at step " << at;
    }
}

// A pipelined run's forces come from the pipeline from its start: the classic solver builds no tree of its own
// (on the device it would hold a second copy of the state beside the pipeline's), yet checks the bodies.
TEST(Pipeline, APipelinedRunMakesNoClassicEvaluation)
{
    const ParticleSet b = makePlummer(2048, 5);
    Simulation pipelined(b, parameters(), planSteps(0.0, 4 * kDt, kDt), rebuildEvery(0));
    EXPECT_TRUE(pipelined.solver().treeOrder().empty());
    Simulation classic(b, parameters(), planSteps(0.0, 4 * kDt, kDt), rebuildEvery(1));
    EXPECT_EQ(int64_t(classic.solver().treeOrder().size()), b.size());
    ParticleSet bad = b;
    bad.pos[77].y   = std::nan("");
    try
    {
        Simulation refused(bad, parameters(), planSteps(0.0, 4 * kDt, kDt), rebuildEvery(0));
        ADD_FAILURE() << "no exception";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("body 77"), std::string::npos) << e.what();
    }
}

// The drift's range check is waited for only once the refit is queued, after the step's adoption: a body that
// drifts out of range is still named, in a step that adopts a tree and queues the next build's positions, and the
// failed step fails again when repeated (the next build is never started on positions out of range).
TEST(Pipeline, ABodyThatDriftsOutOfRangeIsNamedInAnAdoptingStep)
{
    ParticleSet b = makePlummer(2048, 5);
    b.pos[5]      = {0.5e15, 0, 0};
    b.vel[5]      = {0.4e15, 0, 0};
    Simulation sim(b, parameters(), planSteps(0.0, 8.0, 1.0), rebuildEvery(0));
    ASSERT_NE(sim.pipeline(), nullptr);
    sim.step();
    for (int attempt = 0; attempt < 2; ++attempt)
    {
        try
        {
            sim.step();
            ADD_FAILURE() << "a body drifted to 1.3e15 was accepted";
        }
        catch (const InputError& e)
        {
            EXPECT_NE(std::string(e.what()).find("body 5 "), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("coordinate range"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(sim.pipeline()->rebuilds(), 2);
}

// The default policy resolves to the pipelined step (0) for an isolated Newtonian tree run and to the classic
// step (1) for every run the pipelined step does not take; a given policy is kept.
TEST(Pipeline, TheAutomaticPolicyIsThePipelinedStepWhereItApplies)
{
    const Parameters p = parameters();
    const ForceOptions automatic;
    EXPECT_EQ(automatic.rebuildEvery, kRebuildAutomatic);
    EXPECT_EQ(resolvedRebuildEvery(p, automatic, false), 0);
    EXPECT_EQ(resolvedRebuildEvery(p, automatic, true), 1) << "comoving under tree + Ewald";
    Parameters periodic = p;
    periodic.box_size   = 100;
    periodic.pm_grid    = 0;
    EXPECT_EQ(resolvedRebuildEvery(periodic, automatic, false), 1) << "periodic";
    Parameters relative = p;
    relative.mac        = Mac::Relative;
    EXPECT_EQ(resolvedRebuildEvery(relative, automatic, false), 1) << "relative MAC";
    ForceOptions direct = automatic, zeroNet = automatic;
    direct.direct        = true;
    zeroNet.zeroNetForce = true;
    EXPECT_EQ(resolvedRebuildEvery(p, direct, false), 1) << "direct";
    EXPECT_EQ(resolvedRebuildEvery(p, zeroNet, false), 1) << "zero_net_force";
    EXPECT_EQ(resolvedRebuildEvery(p, rebuildEvery(4), false), 4);
    EXPECT_EQ(resolvedRebuildEvery(p, rebuildEvery(1), false), 1);
    EXPECT_EQ(automatic.rebuildLag, kRebuildLagAutomatic);
    EXPECT_EQ(resolvedRebuildLag(automatic, kLagOneBodies), 1);
    EXPECT_EQ(resolvedRebuildLag(automatic, kLagOneBodies - 1), kRebuildLag);
    EXPECT_EQ(resolvedRebuildLag(rebuildEvery(0, 3), 10), 3);

    const ParticleSet b = makeModel("plummer", 256, kSeed);
    Simulation sim(b, p, planSteps(0.0, kDt, kDt));
    EXPECT_EQ(sim.forceOptions().rebuildEvery, 0);
    EXPECT_NE(sim.pipeline(), nullptr);
    ParticleSet inBox = b;
    for (Vec3d& x : inBox.pos) x += Vec3d{50, 50, 50};
    Simulation periodicSim(inBox, periodic, planSteps(0.0, kDt, kDt));
    EXPECT_EQ(periodicSim.forceOptions().rebuildEvery, 1);
    EXPECT_EQ(periodicSim.pipeline(), nullptr);
}

TEST(Pipeline, RefusesWhatItDoesNotSupport)
{
    const ParticleSet b = makeModel("plummer", 256, kSeed);
    const StepPlan plan = planSteps(0.0, kDt, kDt);
    EXPECT_THROW(Simulation(b, parameters(), plan, rebuildEvery(-2)), ParameterError);
    ForceOptions direct = rebuildEvery(4);
    direct.direct       = true;
    EXPECT_THROW(Simulation(b, parameters(), plan, direct), ParameterError);
    Parameters relative = parameters();
    relative.mac        = Mac::Relative;
    EXPECT_THROW(Simulation(b, relative, plan, rebuildEvery(4)), ParameterError);
    EXPECT_THROW(Pipeline(parameters(), -2, PipelineDevice::Cpu), ParameterError);
}

// Stopped after step 11, K = 4 (lag 2: built from step 10's state) and the automatic policy (lag 2: started
// in step 11, adopted in 13; lag 1: adopted in 12) have a build in flight; the checkpoint carries the lag.
TEST(Pipeline, RestartIsBitIdenticalAlsoWithABuildInFlight)
{
    namespace fs       = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("octwalk_pipeline_restart_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const ParticleSet b = makeModel("plummer", 2048, kSeed);
    const Parameters p  = parameters();
    struct Policy
    {
        int64_t every, lag, adoptStep;
    };
    for (const Policy& policy : {Policy{4, 2, 12}, Policy{0, 2, 13}, Policy{0, 1, 12}})
    {
        const int64_t every = policy.every;
        Simulation whole(b, p, planSteps(0.0, 20 * kDt, kDt), rebuildEvery(every, policy.lag));
        while (!whole.done()) whole.step();
        whole.writeCheckpoint((dir / "whole.bin").string());

        Simulation first(b, p, planSteps(0.0, 11 * kDt, kDt), rebuildEvery(every, policy.lag));
        while (!first.done()) first.step();
        first.writeCheckpoint((dir / "half.bin").string());
        EXPECT_EQ(first.pipeline()->checkpoint().adoptStep, policy.adoptStep)
            << "rebuild every " << every << ", lag " << policy.lag;
        Simulation resumed = Simulation::fromCheckpoint((dir / "half.bin").string());
        ASSERT_NE(resumed.pipeline(), nullptr);
        EXPECT_EQ(resumed.forceOptions().rebuildLag, policy.lag);
        resumed.extendTo(20 * kDt);
        while (!resumed.done()) resumed.step();
        resumed.writeCheckpoint((dir / "resumed.bin").string());
        EXPECT_TRUE(slurp(dir / "whole.bin") == slurp(dir / "resumed.bin"))
            << "rebuild every " << every << ", lag " << policy.lag;
        EXPECT_EQ(resumed.pipeline()->rebuilds(), whole.pipeline()->rebuilds())
            << "rebuild every " << every << ", lag " << policy.lag;
    }
    fs::remove_all(dir);
}

// Checkpoint version 7 (host/io/checkpoint.h): a pipelined image that also holds forces or its own unwrapped
// positions, as a pipelined periodic run's does. Its restart is bit-identical only if every bit comes back.
namespace {

constexpr int64_t kCkptBodies = 5;

/// A pipelined image with awkward bits: -0, a subnormal, positions outside a unit box.
CheckpointImage pipelinedImage(bool inFlight, bool withResults, bool withStatePos)
{
    CheckpointImage c;
    c.state.resize(kCkptBodies);
    for (int64_t i = 0; i < kCkptBodies; ++i)
    {
        const double x  = 0.1 + 0.17 * double(i);
        c.state.pos[i]  = {x, std::nextafter(x, 1.0), -0.0};
        c.state.vel[i]  = {-x, 1e-310, x / 3};
        c.state.mass[i] = 1.0 / double(kCkptBodies);
        c.state.id[i]   = uint64_t(100 + i);
        c.state.type[i] = uint8_t(i % 6);
    }
    c.step            = 11;
    c.numSteps        = 20;
    c.h               = kDt;
    c.initialEnergy   = -0.25;
    c.parameters      = parameters();
    c.extra           = "energy_every=1\n";
    PipelineFields& f = c.pipeline;
    f.rebuildEvery    = 4;
    f.rebuildLag      = 2;
    f.lastRebuildStep = 8;
    f.rebuilds        = 3;
    f.adoptStep       = inFlight ? 12 : -1;
    for (int64_t i = 0; i < kCkptBodies; ++i)
    {
        f.topologyPos.push_back(0.5 * c.state.pos[i]);
        if (inFlight) f.inFlightPos.push_back(0.75 * c.state.pos[i]);
        // Unwrapped: a body that left the box keeps its image's offset.
        if (withStatePos) f.statePos.push_back(c.state.pos[i] + Vec3d{double(i) - 2, 1.0, -3.0});
        if (withResults) c.results.push_back(F4{float(i) * 0.5f, -0.0f, 1e-40f, -float(i)});
    }
    return c;
}

template<class T>
bool sameBits(const std::vector<T>& a, const std::vector<T>& b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

std::string ckptErrorOf(const std::string& path)
{
    try
    {
        readCheckpoint(path);
    }
    catch (const FormatError& e)
    {
        return e.what();
    }
    ADD_FAILURE() << "no FormatError reading " << path;
    return {};
}

struct CkptDir
{
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("octwalk_ckpt_v7_" + std::to_string(::getpid()) + "_" +
                                                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    CkptDir() { std::filesystem::create_directories(dir); }
    ~CkptDir() { std::filesystem::remove_all(dir); }
    std::string file(const std::string& name) const { return (dir / name).string(); }
};

/// `bytes` with a valid checksum in place of its last 8 bytes, so that the reader gets past the checksum.
void writeResealed(const std::string& path, std::string bytes)
{
    bytes.resize(bytes.size() - sizeof(uint64_t));
    const uint64_t h = test::checkpointChecksum(bytes);
    bytes.append(reinterpret_cast<const char*>(&h), sizeof(h));
    std::ofstream(path, std::ios::binary) << bytes;
}

} // namespace

TEST(PipelineCheckpoint, Versions7And8RoundTripResultsAndStatePositionsBitForBit)
{
    const CkptDir d;
    for (const CheckpointVersion version : {CheckpointVersion::Previous, CheckpointVersion::Current})
    {
        const std::string magic = version == CheckpointVersion::Current ? "OCTWALK-CKPT-v8" : "OCTWALK-CKPT-v7";
        struct Case
        {
            bool inFlight, results, statePos;
        };
        for (const Case k :
             {Case{false, true, true}, Case{true, true, true}, Case{false, true, false}, Case{true, false, true}})
        {
            SCOPED_TRACE(testing::Message() << "in flight " << k.inFlight << ", results " << k.results
                                            << ", state positions " << k.statePos);
            CheckpointImage c = pipelinedImage(k.inFlight, k.results, k.statePos);
            // The comoving field follows the blocks: their lengths must be right for it to come back.
            if (!k.results) c.comoving = "a=0.5\n";
            writeCheckpoint(d.file("a.bin"), c, version);
            const std::string bytes = slurp(d.file("a.bin"));
            EXPECT_EQ(bytes.substr(0, 16), std::string(magic.c_str(), 16));
            const CheckpointImage r = readCheckpoint(d.file("a.bin"));
            EXPECT_TRUE(sameBits(r.state.pos, c.state.pos));
            EXPECT_TRUE(sameBits(r.state.vel, c.state.vel));
            EXPECT_TRUE(sameBits(r.state.mass, c.state.mass));
            EXPECT_EQ(r.state.id, c.state.id);
            EXPECT_EQ(r.state.type, c.state.type);
            EXPECT_EQ(r.step, c.step);
            EXPECT_EQ(r.pipeline.rebuildEvery, c.pipeline.rebuildEvery);
            EXPECT_EQ(r.pipeline.rebuildLag, c.pipeline.rebuildLag);
            EXPECT_EQ(r.pipeline.lastRebuildStep, c.pipeline.lastRebuildStep);
            EXPECT_EQ(r.pipeline.rebuilds, c.pipeline.rebuilds);
            EXPECT_EQ(r.pipeline.adoptStep, c.pipeline.adoptStep);
            EXPECT_TRUE(sameBits(r.pipeline.topologyPos, c.pipeline.topologyPos));
            EXPECT_TRUE(sameBits(r.pipeline.inFlightPos, c.pipeline.inFlightPos));
            EXPECT_TRUE(sameBits(r.pipeline.statePos, c.pipeline.statePos));
            EXPECT_TRUE(sameBits(r.results, c.results));
            EXPECT_EQ(r.extra, c.extra);
            EXPECT_EQ(r.comoving, c.comoving);
            // What was read writes the same bytes again: nothing was lost or rounded on the way.
            writeCheckpoint(d.file("b.bin"), r, version);
            EXPECT_TRUE(slurp(d.file("b.bin")) == bytes);
        }
    }
}

// Version 8's checksum (host/io/checkpoint.h), over a file of several pieces of 2^20 bytes: the format's
// description computed here gives the stored value, the bytes are the same for any thread count, and damage the
// pieces' word hash alone would miss (the same high bit of two words flipped) is refused, as is one byte changed.
TEST(PipelineCheckpoint, Version8ChecksumIsTheFormatsForAnyThreadCountAndCatchesDamage)
{
    const CkptDir d;
    CheckpointImage c      = pipelinedImage(true, true, true);
    c.state                = makeModel("plummer", 30000, kSeed);
    const size_t n         = c.state.pos.size();
    c.pipeline.topologyPos = c.pipeline.inFlightPos = c.pipeline.statePos = c.state.pos;
    c.results.assign(n, F4{1.0f, 2.0f, 3.0f, -4.0f});
    const int saved = test::setThreads(1);
    writeCheckpoint(d.file("one.bin"), c);
    test::setThreads(2);
    writeCheckpoint(d.file("two.bin"), c);
    test::setThreads(saved);
    const std::string bytes = slurp(d.file("one.bin"));
    ASSERT_GT(bytes.size(), size_t(3) << 20) << "several pieces";
    EXPECT_TRUE(slurp(d.file("two.bin")) == bytes);
    uint64_t stored;
    std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
    EXPECT_EQ(stored, test::checkpointChecksum(bytes.substr(0, bytes.size() - 8)));
    EXPECT_TRUE(sameBits(readCheckpoint(d.file("one.bin")).pipeline.statePos, c.pipeline.statePos));

    std::string twoHighBits = bytes;
    twoHighBits[(1 << 20) + 7] ^= char(0x80);
    twoHighBits[(1 << 20) + 15] ^= char(0x80);
    std::ofstream(d.file("high.bin"), std::ios::binary) << twoHighBits;
    EXPECT_NE(ckptErrorOf(d.file("high.bin")).find("checksum"), std::string::npos);
    std::string oneByte = bytes;
    oneByte[bytes.size() / 2] ^= char(1);
    std::ofstream(d.file("byte.bin"), std::ios::binary) << oneByte;
    EXPECT_NE(ckptErrorOf(d.file("byte.bin")).find("checksum"), std::string::npos);
}

TEST(PipelineCheckpoint, PipelineWithoutResultsOrStatePositionsIsVersion6BeforeVersion8)
{
    const CkptDir d;
    for (const bool inFlight : {false, true})
    {
        const CheckpointImage c = pipelinedImage(inFlight, false, false);
        writeCheckpoint(d.file("a.bin"), c, CheckpointVersion::Previous);
        const std::string bytes = slurp(d.file("a.bin"));
        EXPECT_EQ(bytes.substr(0, 16), std::string("OCTWALK-CKPT-v6", 16)) << "in flight " << inFlight;
        // Version 6's size exactly: no flag bytes crept in; version 8 has its three flags more.
        const uint64_t n    = uint64_t(kCkptBodies);
        const uint64_t size = 16 + 6 * 8 + 2 * 4 + 8 + toText(c.parameters).size() + n * (24 + 24 + 8 + 8 + 1) + 8 +
                              c.extra.size() + 7 * 8 + n * 24 * (inFlight ? 2 : 1) + 8;
        EXPECT_EQ(bytes.size(), size) << "in flight " << inFlight;
        writeCheckpoint(d.file("b.bin"), c);
        EXPECT_EQ(slurp(d.file("b.bin")).size(), size + 3) << "in flight " << inFlight;
        for (const char* name : {"a.bin", "b.bin"})
        {
            const CheckpointImage r = readCheckpoint(d.file(name));
            EXPECT_TRUE(r.results.empty());
            EXPECT_TRUE(r.pipeline.statePos.empty());
            EXPECT_TRUE(sameBits(r.pipeline.topologyPos, c.pipeline.topologyPos));
        }
    }
    // Without a pipeline results still make version 5 before version 8.
    CheckpointImage c = pipelinedImage(false, true, false);
    c.pipeline        = PipelineFields{};
    writeCheckpoint(d.file("v5.bin"), c, CheckpointVersion::Previous);
    EXPECT_EQ(slurp(d.file("v5.bin")).substr(0, 16), std::string("OCTWALK-CKPT-v5", 16));
    writeCheckpoint(d.file("v8.bin"), c);
    const CheckpointImage r = readCheckpoint(d.file("v8.bin"));
    EXPECT_EQ(r.pipeline.rebuildEvery, 1);
    EXPECT_TRUE(sameBits(r.results, c.results));
}

TEST(PipelineCheckpoint, TruncatedVersion7NamesTheField)
{
    const CkptDir d;
    writeCheckpoint(d.file("a.bin"), pipelinedImage(true, true, true));
    const std::string bytes = slurp(d.file("a.bin"));
    const size_t statePosAt = bytes.size() - 8 - kCkptBodies * sizeof(Vec3d);
    const size_t resultsAt  = statePosAt - 1 - kCkptBodies * sizeof(F4);

    // Cut inside the state positions: fewer bytes than a checksum, which must not be read as one.
    writeResealed(d.file("cut.bin"), bytes.substr(0, bytes.size() - 8 - 4) + std::string(8, '\0'));
    std::string m = ckptErrorOf(d.file("cut.bin"));
    EXPECT_NE(m.find("field 'state positions' at byte offset " + std::to_string(statePosAt)), std::string::npos) << m;
    // Cut inside the results: the file ends two bodies' forces early.
    writeResealed(d.file("cut.bin"), bytes.substr(0, statePosAt - 1 - 2 * sizeof(F4)) + std::string(8, '\0'));
    m = ckptErrorOf(d.file("cut.bin"));
    EXPECT_NE(m.find("field 'results' at byte offset " + std::to_string(resultsAt)), std::string::npos) << m;
    // Cut before the state positions' flag.
    writeResealed(d.file("cut.bin"), bytes.substr(0, statePosAt - 1) + std::string(8, '\0'));
    m = ckptErrorOf(d.file("cut.bin"));
    EXPECT_NE(m.find("field 'state positions flag' at byte offset " + std::to_string(statePosAt - 1)),
              std::string::npos)
        << m;

    // A flag that is neither 0 nor 1.
    std::string bad    = bytes;
    bad[resultsAt - 1] = 2;
    writeResealed(d.file("bad.bin"), bad);
    m = ckptErrorOf(d.file("bad.bin"));
    EXPECT_NE(m.find("field 'results flag' at byte offset " + std::to_string(resultsAt - 1)), std::string::npos) << m;
    // A state position that is not finite names its body and offset.
    bad                = bytes;
    const double nan   = std::nan("");
    const size_t body3 = statePosAt + 3 * sizeof(Vec3d);
    std::memcpy(&bad[body3 + 8], &nan, sizeof(nan));
    writeResealed(d.file("bad.bin"), bad);
    m = ckptErrorOf(d.file("bad.bin"));
    EXPECT_NE(m.find("field 'state positions' at byte offset " + std::to_string(body3)), std::string::npos) << m;
    EXPECT_NE(m.find("body 3 "), std::string::npos) << m;
}

TEST(PipelineCheckpoint, RefusesStatePositionsOrResultsOfTheWrongSizeAtWrite)
{
    const CkptDir d;
    const auto messageOf = [&](const CheckpointImage& c) -> std::string {
        try
        {
            writeCheckpoint(d.file("a.bin"), c);
        }
        catch (const InputError& e)
        {
            return e.what();
        }
        ADD_FAILURE() << "no InputError";
        return {};
    };
    CheckpointImage c = pipelinedImage(false, true, true);
    c.pipeline.statePos.pop_back();
    std::string m = messageOf(c);
    EXPECT_NE(m.find("pipeline.statePos has 4 entries for 5 bodies"), std::string::npos) << m;

    c = pipelinedImage(true, true, true);
    c.results.push_back(F4{});
    m = messageOf(c);
    EXPECT_NE(m.find("results has 6 entries for 5 bodies"), std::string::npos) << m;

    // State positions belong to a pipeline: without one they would be dropped silently.
    c          = pipelinedImage(false, false, true);
    c.pipeline = PipelineFields{};
    c.pipeline.statePos.assign(size_t(kCkptBodies), Vec3d{});
    m = messageOf(c);
    EXPECT_NE(m.find("pipeline.statePos"), std::string::npos) << m;
    EXPECT_NE(m.find("no pipeline"), std::string::npos) << m;
    EXPECT_FALSE(std::filesystem::exists(d.file("a.bin"))) << "a refused image leaves no file";
}

// The resident state's sums for the diagnostics and the step criterion, in the caller's order however the state is
// arranged: after a gather, the same bits as diagnosticSumsCpu over the caller's indices and as the largest of
// std::max over the results, a NaN result never taken (the device's reductions are checked against the same).
TEST(ResidentCpuState, SumsAndLargestAccelerationFollowTheCallersAfterAGather)
{
    const ParticleSet b = makeModel("plummer", 1000, kSeed);
    const int64_t n     = b.size();
    std::vector<int32_t> caller(static_cast<size_t>(n)), order(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) caller[k] = int32_t((k * 7919) % n);
    for (int64_t k = 0; k < n; ++k) order[k] = int32_t((k + n / 3) % n);
    std::vector<F4> result(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
        result[k] = F4{float(b.pos[k].x), float(b.vel[k].y), float(b.pos[k].z), -1.0f / float(1 + k % 17)};
    result[size_t(n / 2)].x = std::nanf("");
    ResidentCpu r;
    r.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
    r.setResults(result.data());
    r.permute(order.data(), nullptr, 0, true);

    // The arrays as the gather left them, and the slot of each caller's index.
    std::vector<Vec3d> pos(b.pos.size()), vel(b.vel.size());
    std::vector<double> mass(b.mass.size());
    std::vector<F4> moved(result.size());
    std::vector<int32_t> slot(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k)
    {
        pos[k]                 = b.pos[order[k]];
        vel[k]                 = b.vel[order[k]];
        mass[k]                = b.mass[order[k]];
        moved[k]               = result[order[k]];
        slot[caller[order[k]]] = int32_t(k);
    }
    const double G = 0.75;
    const StateScale scale{0, 0.5};
    const DiagnosticSums got = r.diagnosticSums(G, scale);
    const DiagnosticSums expected =
        diagnosticSumsCpu(pos.data(), vel.data(), mass.data(), moved.data(), slot.data(), n, G, scale);
    EXPECT_EQ(std::memcmp(&got, &expected, sizeof(got)), 0);
    double largest = 0;
    for (const F4& f : result)
    {
        const Vec3d a = accelerationOf(f, G);
        largest       = std::max(largest, dot(a, a));
    }
    EXPECT_GT(largest, 0.0);
    EXPECT_EQ(r.largestAccelerationSquared(G), largest);
}

namespace {

/// The rank[k]-th smallest of the radii of pos about centre, by a sort of them all.
std::vector<double> sortedRadiiAt(const std::vector<Vec3d>& pos, const Vec3d& centre, const std::vector<int64_t>& rank)
{
    std::vector<double> r;
    for (const Vec3d& x : pos) r.push_back(radiusAbout(x, centre));
    std::sort(r.begin(), r.end());
    std::vector<double> out;
    for (int64_t k : rank) out.push_back(r[size_t(k)]);
    return out;
}

} // namespace

// The diagnostics' order of addition (host/core/parallel.h, interleavedSum): within each block of 4096, lane l adds
// the terms l, l + 256, ... in order, the lanes are added in order, then the blocks; the same bits for any thread
// count. The terms' magnitudes differ enough that another order gives other bits (checked against the plain sum).
TEST(InterleavedSum, AddsInTheDevicesOrderForAnyThreadCount)
{
    const auto term     = [](int64_t i) { return (i % 7 == 0 ? 1e8 : 1.0) / double(3 + i % 11); };
    const auto lanesSum = [&](int64_t n) { return interleavedSum<kDiagnosticLanes, double>(n, term); };
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(255), int64_t(4096), int64_t(4097), int64_t(3 * 4096 + 45)})
    {
        double expected = 0;
        for (int64_t begin = 0; begin < n; begin += 4096)
        {
            std::vector<double> lane(kDiagnosticLanes, 0.0);
            for (int64_t i = begin; i < std::min(n, begin + 4096); ++i)
                lane[size_t((i - begin) % kDiagnosticLanes)] += term(i);
            double block = 0;
            for (double l : lane) block += l;
            expected = begin == 0 ? block : expected + block;
        }
#ifdef _OPENMP
        const int saved = omp_get_max_threads();
        for (int threads : {1, 2, 3})
        {
            omp_set_num_threads(threads);
            EXPECT_EQ(lanesSum(n), expected) << n << " bodies, " << threads;
        }
        omp_set_num_threads(saved);
#else
        EXPECT_EQ(lanesSum(n), expected) << n << " bodies";
#endif
        if (n == 3 * 4096 + 45)
        {
            double plain = 0;
            for (int64_t i = 0; i < n; ++i) plain += term(i);
            EXPECT_NE(plain, expected) << "the terms do not tell the orders apart";
        }
    }
}

// The resident state's order statistics of the radii (a pipelined run's Lagrangian radii of equal masses): the
// sort's values at the ranks after a gather, with ties, a body at the centre and a rank asked twice; a NaN radius is
// refused and the output left as it was (the device's are checked against these). A begin's radii are those of the
// state at the begin.
TEST(ResidentCpuState, RadiusOrderStatisticsAreTheSortedRadiiAfterAGather)
{
    ParticleSet b   = makeModel("plummer", 5000, kSeed);
    const int64_t n = b.size();
    for (int64_t i = 1; i < n; i += 4) b.pos[i] = b.pos[i - 1];
    const Vec3d centre = b.pos[8];
    std::vector<int32_t> caller(static_cast<size_t>(n)), order(static_cast<size_t>(n));
    std::iota(caller.begin(), caller.end(), 0);
    for (int64_t k = 0; k < n; ++k) order[k] = int32_t((k * 7919) % n);
    ResidentCpu r;
    r.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
    r.permute(order.data());
    const std::vector<int64_t> rank{0, 1, 2, n / 3, n / 2, n / 2, n - 2, n - 1};
    std::vector<double> got;
    ASSERT_TRUE(r.radiusOrderStatistics(centre, rank, got));
    EXPECT_EQ(got, sortedRadiiAt(b.pos, centre, rank));
    EXPECT_EQ(got[0], 0.0) << "the body at the centre and its tie";

    r.beginRadiusOrderStatistics(centre, rank);
    r.permute(order.data());
    std::vector<double> begun;
    ASSERT_TRUE(r.finishRadiusOrderStatistics(begun));
    EXPECT_EQ(begun, got);
    EXPECT_THROW(r.finishRadiusOrderStatistics(begun), std::logic_error);

    b.pos[size_t(n / 3)].y = std::nan("");
    r.setState(b.pos.data(), b.vel.data(), b.mass.data(), caller.data(), n);
    std::vector<double> kept{1.5};
    EXPECT_FALSE(r.radiusOrderStatistics(centre, rank, kept));
    EXPECT_EQ(kept, std::vector<double>{1.5});
}

// A pipelined run's lagrange.csv radii: for equal masses, from the resident state's order statistics; for unequal
// ones, from the state on the host. Both are the definition's about the energy row's centre of mass with its total
// mass (the diagnostics' sums in the caller's order), bit for bit, before and after steps.
TEST(Pipeline, LagrangianRadiiAreTheDefinitionAboutTheEnergyRowsCentre)
{
    for (bool equal : {true, false})
    {
        ParticleSet b = makeModel("plummer", 3 * 4096 + 45, kSeed);
        if (!equal)
            for (int64_t i = 0; i < b.size(); ++i) b.mass[i] = double(1 + i % 5) / double(3 * b.size());
        Simulation sim(b, parameters(), planSteps(0.0, kDt, 4 * kDt));
        ASSERT_NE(sim.pipeline(), nullptr);
        for (int step = 0; step < 3; ++step)
        {
            if (step > 0) sim.step();
            const ParticleSet& s = sim.state();
            const double m = interleavedSum<kDiagnosticLanes, double>(s.size(), [&](int64_t c) { return s.mass[c]; });
            const std::vector<double> expected =
                test::radiiByDefinition(s, lagrangeFractions(), sim.diagnostics().comPos, m);
            EXPECT_EQ(sim.lagrangianRadii(), expected) << (equal ? "equal" : "unequal") << " masses, step " << step;
        }
    }
}

// A row's radii begun at one step and finished after the next (as energy.csv's rows are written): those of the
// state at the begin, bit for bit; a begin not finished is dropped by the next one; a finish needs a begin.
TEST(Pipeline, BegunLagrangianRadiiAreThoseOfTheStateAtTheBegin)
{
    for (bool equal : {true, false})
    {
        ParticleSet b = makeModel("plummer", 3 * 4096 + 45, kSeed);
        if (!equal)
            for (int64_t i = 0; i < b.size(); ++i) b.mass[i] = double(1 + i % 5) / double(3 * b.size());
        Simulation sim(b, parameters(), planSteps(0.0, kDt, 4 * kDt));
        EXPECT_THROW(sim.finishLagrangianRadii(), std::logic_error);
        sim.beginLagrangianRadii();
        const std::vector<double> atBegin = sim.lagrangianRadii();
        sim.beginLagrangianRadii();
        sim.step();
        EXPECT_EQ(sim.finishLagrangianRadii(), atBegin) << (equal ? "equal" : "unequal") << " masses";
        EXPECT_NE(sim.lagrangianRadii(), atBegin) << "the step moved the bodies";
        EXPECT_THROW(sim.finishLagrangianRadii(), std::logic_error);
    }
}

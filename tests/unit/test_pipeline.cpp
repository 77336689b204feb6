// The pipelined step (host/sim/pipeline.h) on its CPU twin: with a build every step it is the classic
// Simulation bit for bit; with K = 4 and the automatic policy it conserves energy as the per-step
// build does; it is deterministic for any thread count and rebuilds where the policy says.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <numeric>
#include <vector>

#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.h"
#include "host/sim/pipeline.h"
#include "host/models/galaxy.h"
#include "host/sim/simulation.h"
#include "test_helpers.h"
#include "unit/refit_helpers.h"

using namespace octwalk;

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

ForceOptions rebuildEvery(int64_t k, int64_t lag = kRebuildLag)
{
    ForceOptions f;
    f.rebuildEvery = k;
    f.rebuildLag   = lag;
    return f;
}

struct State
{
    std::vector<Vec3d> pos, vel;
};

State stateOf(Pipeline& pipe, int64_t n)
{
    State s{std::vector<Vec3d>(size_t(n)), std::vector<Vec3d>(size_t(n))};
    pipe.copyState(s.pos.data(), s.vel.data());
    return s;
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
    std::vector<int32_t> callerIndex(static_cast<size_t>(n));
    std::iota(callerIndex.begin(), callerIndex.end(), 0);
    pipe.start(b.pos.data(), b.vel.data(), b.mass.data(), b.id.data(), callerIndex.data(), n, 0);
    while (!classic.done())
    {
        classic.step();
        pipe.step(kDt);
        const State s = stateOf(pipe, n);
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
        std::vector<State> out;
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
    const int64_t n = b.size();
    const State s   = stateOf(pipe, n);
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

// The default policy resolves to the pipelined step (0) for an isolated Newtonian tree run and to the classic
// step (1) for every run the pipelined step does not take; a given policy is kept.
TEST(Pipeline, TheAutomaticPolicyIsThePipelinedStepWhereItApplies)
{
    const Parameters p = parameters();
    const ForceOptions automatic;
    EXPECT_EQ(automatic.rebuildEvery, kRebuildAutomatic);
    EXPECT_EQ(resolvedRebuildEvery(p, automatic, false), 0);
    EXPECT_EQ(resolvedRebuildEvery(p, automatic, true), 1) << "comoving";
    Parameters periodic = p;
    periodic.box_size   = 100;
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

namespace {

std::string slurp(const std::filesystem::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

} // namespace

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

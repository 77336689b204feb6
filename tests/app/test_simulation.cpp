// The leapfrog, its diagnostics, checkpoints and restart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include <cmath>
#include <utility>
#include <vector>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.h"
#include "host/core/mass_weighted.h"
#include "host/io/checkpoint.h"
#include "host/models/galaxy.h"
#include "host/sim/comoving.h"
#include "host/sim/simulation.h"
#include "test_helpers.h"

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

Parameters simParameters(double theta, double eps)
{
    Parameters p = test::cpuParameters(theta, eps * eps);
    return p;
}

/// A two-body orbit of semi-major axis 1, eccentricity e, total mass 1, started at apocentre.
ParticleSet kepler(double e)
{
    ParticleSet p;
    p.resize(2);
    double m1 = 0.75, m2 = 0.25, ra = 1 + e, va = std::sqrt((1 - e) / (1 + e));
    p.mass = {m1, m2};
    p.id   = {0, 1};
    p.pos  = {{-m2 * ra, 0, 0}, {m1 * ra, 0, 0}};
    p.vel  = {{0, -m2 * va, 0}, {0, m1 * va, 0}};
    return p;
}

void orbitElements(const ParticleSet& p, double& a, double& e)
{
    Vec3d r = p.pos[1] - p.pos[0], v = p.vel[1] - p.vel[0];
    double mu = p.mass[0] + p.mass[1], dist = std::sqrt(dot(r, r));
    double energy = 0.5 * dot(v, v) - mu / dist;
    a             = -mu / (2 * energy);
    Vec3d h{r.y * v.z - r.z * v.y, r.z * v.x - r.x * v.z, r.x * v.y - r.y * v.x};
    e = std::sqrt(std::max(0.0, 1 - dot(h, h) / (mu * a)));
}

fs::path freshDir(const std::string& name)
{
    fs::path d = fs::temp_directory_path() / ("octwalk_sim_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(d);
    return d;
}

} // namespace

TEST(Simulation, StepPlanEndsExactlyAtTEnd)
{
    StepPlan p = planSteps(0.0, 1.0, 0.3);
    EXPECT_EQ(p.numSteps, 4);
    EXPECT_DOUBLE_EQ(p.h * 4, 1.0);
    EXPECT_EQ(planSteps(0.0, 1.0, 1.0 / 128).numSteps, 128);
    EXPECT_THROW(planSteps(1.0, 0.5, 0.1), ParameterError);
    EXPECT_THROW(planSteps(0.0, 1.0, 0.0), ParameterError);
    EXPECT_THROW(planSteps(0.0, 1.0, NAN), ParameterError);
}

TEST(Simulation, KeplerOrbitKeepsItsElements)
{
    const double twoPi = 6.283185307179586;
    Simulation sim(kepler(0.5), simParameters(0.5, 0.0), planSteps(0.0, 10 * twoPi, twoPi / 2000));
    while (!sim.done()) sim.step();
    double a, e;
    orbitElements(sim.state(), a, e);
    EXPECT_NEAR(a, 1.0, 1e-3);
    EXPECT_NEAR(e, 0.5, 1e-2);
    EXPECT_NEAR(sim.time(), 10 * twoPi, 1e-12);
}

TEST(Simulation, PlummerEnergyConservedWithoutDrift)
{
    // Steps of 1/64: the leapfrog's error is four times that at 1/128 (max |dE/E0| 3.5e-5 there), far inside
    // the bound, at half the CPU time.
    Simulation sim(makePlummer(1 << 13, 3), simParameters(0.5, 0.01), planSteps(0.0, 10.0, 1.0 / 64));
    Diagnostics start = sim.diagnostics();
    double worst = 0, firstHalf = 0, secondHalf = 0;
    int64_t half = sim.plan().numSteps / 2;
    while (!sim.done())
    {
        sim.step();
        Diagnostics d = sim.diagnostics();
        worst         = std::max(worst, std::fabs(d.relativeEnergyError));
        (sim.stepIndex() <= half ? firstHalf : secondHalf) += d.relativeEnergyError / double(half);
    }
    Diagnostics end = sim.diagnostics();
    std::printf("Plummer 2^13, 10 time units: max |dE/E0| %.3g, mean dE/E0 first half %.3g, second half %.3g\n", worst,
                firstHalf, secondHalf);
    EXPECT_LT(worst, 1e-3);
    // No secular drift: the second half's mean error stays within the scale of the fluctuations.
    EXPECT_LT(std::fabs(secondHalf - firstHalf), 3e-4);
    // A tree's forces are not pairwise symmetric: the net force on this model at theta = 0.5 is
    // a few 1e-6 (direct summation: 1e-17), which moved the centre of mass by 1.0e-4 in 10 time units
    // (5e-5 with 2^14 bodies, at more than twice the cost).
    Vec3d drift = end.comPos - start.comPos;
    EXPECT_LT(std::sqrt(dot(drift, drift)), 2e-4);
}

TEST(Simulation, ZeroNetForceKeepsTheCentreOfMassInPlace)
{
    ForceOptions corrected;
    corrected.zeroNetForce = true;
    Simulation sim(makePlummer(1 << 12, 3), simParameters(0.5, 0.01), planSteps(0.0, 5.0, 1.0 / 64), corrected);
    Diagnostics start = sim.diagnostics();
    while (!sim.done()) sim.step();
    Diagnostics end = sim.diagnostics();
    Vec3d drift     = end.comPos - start.comPos;
    EXPECT_LT(std::sqrt(dot(drift, drift)), 1e-5);
    EXPECT_LT(std::sqrt(dot(end.momentum, end.momentum)), 1e-12);
    EXPECT_LT(std::fabs(end.relativeEnergyError), 1e-3);
}

TEST(Simulation, LeapfrogIsSecondOrder)
{
    ParticleSet b = makePlummer(4096, 8);
    double err[2];
    int i = 0;
    for (double dt : {1.0 / 32, 1.0 / 64})
    {
        Simulation sim(b, simParameters(0.2, 0.05), planSteps(0.0, 1.0, dt));
        double worst = 0;
        while (!sim.done())
        {
            sim.step();
            worst = std::max(worst, std::fabs(sim.diagnostics().relativeEnergyError));
        }
        err[i++] = worst;
    }
    std::printf("max |dE/E0| at dt 1/32: %.3g, 1/64: %.3g, ratio %.2f\n", err[0], err[1], err[0] / err[1]);
    EXPECT_GT(err[0] / err[1], 3.0);
    EXPECT_LT(err[0] / err[1], 5.5);
}

TEST(Simulation, RestartIsBitIdentical)
{
    fs::path dir = freshDir("restart");
    fs::create_directories(dir);
    ParticleSet b = makePlummer(3000, 5);
    Parameters p  = simParameters(0.6, 0.02);
    Simulation whole(b, p, planSteps(0.0, 20.0 / 64, 1.0 / 64));
    while (!whole.done()) whole.step();
    whole.writeCheckpoint((dir / "whole.bin").string(), "settings");

    Simulation first(b, p, planSteps(0.0, 10.0 / 64, 1.0 / 64));
    while (!first.done()) first.step();
    first.writeCheckpoint((dir / "half.bin").string(), "settings");
    std::string extra;
    Simulation resumed = Simulation::fromCheckpoint((dir / "half.bin").string(), &extra);
    EXPECT_EQ(extra, "settings");
    resumed.extendTo(20.0 / 64);
    while (!resumed.done()) resumed.step();
    resumed.writeCheckpoint((dir / "resumed.bin").string(), "settings");

    auto slurp = [](const fs::path& f) {
        std::ifstream in(f, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    EXPECT_TRUE(slurp(dir / "whole.bin") == slurp(dir / "resumed.bin"));
    EXPECT_THROW(resumed.extendTo(0.3), ParameterError);
    fs::remove_all(dir);
}

TEST(Simulation, StateIsInTheCallersOrderWhateverOrderItIsKeptIn)
{
    // The simulation keeps its bodies in tree order between steps; what it shows must not move.
    ParticleSet b = makePlummer(3000, 12);
    for (int64_t i = 0; i < b.size(); ++i) b.id[i] = uint64_t((i * 7919) % b.size());
    Simulation sim(b, simParameters(0.6, 1e-3), planSteps(0.0, 3.0 / 64, 1.0 / 64));
    while (!sim.done()) sim.step();
    const ParticleSet& s = sim.state();
    EXPECT_EQ(s.id, b.id);
    EXPECT_EQ(s.mass, b.mass);
    EXPECT_EQ(s.size(), sim.numBodies());
    // Each body moved a little from where it started, not to another body's place.
    double farthest = 0;
    for (int64_t i = 0; i < b.size(); ++i)
    {
        const Vec3d d = s.pos[i] - b.pos[i];
        farthest      = std::max(farthest, std::sqrt(dot(d, d)));
    }
    EXPECT_LT(farthest, 0.5);
}

namespace {

/// The leapfrog as written in the caller's order, forces from GravitySolver::computeForces (the bodies
/// set in that order each step): what the simulation's tree-ordered state must equal bit for bit.
ParticleSet leapfrogInTheCallersOrder(ParticleSet b, const Parameters& p, double h, int steps, bool zeroNetForce)
{
    GravitySolver solver(p);
    std::vector<Vec3d> acc, previous;
    std::vector<double> pot;
    auto forces = [&] {
        solver.setBodies(b.pos, b.mass, b.id);
        // As the simulation does: a periodic box's error control takes the last evaluation's accelerations.
        if (!previous.empty() && p.box_size > 0 && p.err_tol_force_acc > 0) solver.setPreviousAccelerations(previous);
        solver.computeForces(acc, pot);
        previous = acc;
        if (!zeroNetForce) return;
        double mass = 0;
        Vec3d sum{0, 0, 0};
        for (int64_t i = 0; i < b.size(); ++i)
        {
            mass += b.mass[i];
            sum += b.mass[i] * acc[i];
        }
        const Vec3d mean = (1 / mass) * sum;
        for (Vec3d& a : acc) a = a - mean;
    };
    forces();
    for (int s = 0; s < steps; ++s)
    {
        for (int64_t i = 0; i < b.size(); ++i)
        {
            b.vel[i] += (0.5 * h) * acc[i];
            b.pos[i] += h * b.vel[i];
            if (p.box_size > 0) b.pos[i] = wrapIntoBox(b.pos[i], p.box_size);
        }
        forces();
        for (int64_t i = 0; i < b.size(); ++i) b.vel[i] += (0.5 * h) * acc[i];
    }
    return b;
}

bool sameBits(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}

} // namespace

// The state kept in tree order (reordered, kicked and handed the tree's positions in one pass) is the
// plain leapfrog in the caller's order, bit for bit, whatever the thread count.
TEST(Simulation, TreeOrderedStateIsTheCallersOrderLeapfrogBitForBit)
{
    ParticleSet b = makePlummer(600, 21);
    for (int64_t i = 0; i < b.size(); ++i)
    {
        b.id[i]   = uint64_t((i * 7919) % b.size());
        b.type[i] = uint8_t(i % 6);
    }
    const double h  = 1.0 / 64;
    const int steps = 3;
    struct Case
    {
        const char* name;
        double box;
        bool zeroNetForce;
    };
    for (const Case& c :
         {Case{"isolated", 0.0, false}, Case{"zero net force", 0.0, true}, Case{"periodic", 4.0, false}})
    {
        ParticleSet start = b;
        if (c.box > 0)
        {
            for (Vec3d& x : start.pos) x = wrapIntoBox(x, c.box);
        }
        Parameters p               = simParameters(0.6, 0.02);
        p.box_size                 = c.box;
        p.pm_grid                  = 0;
        const ParticleSet expected = leapfrogInTheCallersOrder(start, p, h, steps, c.zeroNetForce);
        for (int threads : {1, 2})
        {
            const int saved = test::setThreads(threads);
            Simulation sim(start, p, planSteps(0.0, steps * h, h), ForceOptions{false, c.zeroNetForce, 1});
            while (!sim.done()) sim.step();
            test::setThreads(saved);
            const ParticleSet& s = sim.state();
            EXPECT_TRUE(sameBits(s.pos, expected.pos)) << c.name << ", " << threads << " threads";
            EXPECT_TRUE(sameBits(s.vel, expected.vel)) << c.name << ", " << threads << " threads";
            EXPECT_EQ(s.id, b.id) << c.name;
            EXPECT_EQ(s.type, b.type) << c.name;
            EXPECT_EQ(s.mass, b.mass) << c.name;
        }
    }
}

// The pass after each evaluation also makes the next step's opening half-kick and drift, and ids that never
// decrease stay in the caller's order: the state after every step (read at each, or only at the end), its
// diagnostics and a checkpoint written in between are the plain leapfrog's, bit for bit, also when coincident
// bodies leave the tree order to the tie-break by id.
TEST(Simulation, StateBetweenStepsIsThePlainLeapfrogWhetherReadOrNot)
{
    ParticleSet b = makePlummer(500, 8);
    // Pairs of bodies at one point (the same key) moving together, of different masses: the order the
    // tie-break gives them changes the bits of the leaf sums that include them.
    for (int64_t i = 0; i + 1 < b.size(); i += 5)
    {
        b.pos[i + 1]  = b.pos[i];
        b.vel[i + 1]  = b.vel[i];
        b.mass[i + 1] = 3 * b.mass[i];
    }
    const double h     = 1.0 / 64;
    const int steps    = 4;
    const Parameters p = simParameters(0.6, 0.02);
    const fs::path dir = freshDir("read_or_not");
    fs::create_directories(dir);
    const std::string checkpoint = (dir / "checkpoint.bin").string();
    for (bool shuffled : {false, true})
    {
        ParticleSet start = b;
        if (shuffled)
        {
            for (int64_t i = 0; i < start.size(); ++i) start.id[i] = uint64_t((i * 7919) % start.size());
        }
        const std::string name = shuffled ? "shuffled ids" : "ids in order";
        // The classic step: its state lives in tree order on the host between steps.
        const ForceOptions classic{false, false, 1};
        Simulation read(start, p, planSteps(0.0, steps * h, h), classic),
            unread(start, p, planSteps(0.0, steps * h, h), classic);
        ParticleSet expected = start;
        for (int s = 1; s <= steps; ++s)
        {
            read.step();
            unread.step();
            if (s == 2) unread.writeCheckpoint(checkpoint);
            // A step of the plain leapfrog depends only on the state it starts from.
            expected = leapfrogInTheCallersOrder(expected, p, h, 1, false);
            EXPECT_TRUE(sameBits(read.state().pos, expected.pos)) << name << ", step " << s;
            EXPECT_TRUE(sameBits(read.state().vel, expected.vel)) << name << ", step " << s;
            EXPECT_EQ(read.state().id, start.id) << name;
            EXPECT_EQ(read.state().type, start.type) << name;
            read.diagnostics();
        }
        EXPECT_TRUE(sameBits(unread.state().pos, read.state().pos)) << name;
        EXPECT_TRUE(sameBits(unread.state().vel, read.state().vel)) << name;
        const Diagnostics d = read.diagnostics(), e = unread.diagnostics();
        EXPECT_EQ(std::memcmp(&d, &e, sizeof(d)), 0) << name;
        Simulation restarted = Simulation::fromCheckpoint(checkpoint);
        while (!restarted.done()) restarted.step();
        EXPECT_TRUE(sameBits(restarted.state().pos, read.state().pos)) << name;
        EXPECT_TRUE(sameBits(restarted.state().vel, read.state().vel)) << name;
    }
    fs::remove_all(dir);
}

// The simulation checks the results it converts itself (in tree order) as the solver checks its own: the
// body named is the same (the smallest caller's index), whatever order the bodies are kept in.
TEST(Simulation, ResultsThatAreNotFiniteOrUnderflowAreRefusedAsTheSolverRefusesThem)
{
    auto message = [](const ParticleSet& b, const Parameters& p) {
        try
        {
            Simulation sim(b, p, planSteps(0.0, 0.1, 0.05));
        }
        catch (const InputError& e)
        {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    ParticleSet b = makePlummer(200, 3);
    for (int64_t i = 0; i < b.size(); ++i) b.id[i] = uint64_t((i * 7919) % b.size());
    b.pos[3]  = {1e-18, 0, 0};
    b.pos[4]  = {0, 0, 0};
    b.mass[3] = b.mass[4]       = 1e3; // 1e3 / 1e-36 = 1e39 > FLT_MAX
    const std::string notFinite = message(b, simParameters(0.5, 0.0));
    EXPECT_NE(notFinite.find("body 3:"), std::string::npos) << notFinite;
    EXPECT_NE(notFinite.find("not all finite"), std::string::npos) << notFinite;
    EXPECT_THROW(test::treeForces(b, simParameters(0.5, 0.0)), InputError);

    const std::string underflow = message(makePlummer(300, 2), simParameters(0.5, 1e15));
    EXPECT_NE(underflow.find("underflow"), std::string::npos) << underflow;
}

// A step whose forces cannot be evaluated throws, and so does every later step (never a crash on stale or
// missing forces).
TEST(Simulation, AFailedStepFailsAgainWhenRepeated)
{
    ParticleSet b = kepler(0.5);
    b.vel[1]      = {kMaxVelocity, 0, 0};
    Simulation sim(b, simParameters(0.5, 0.01), planSteps(0.0, 8.0, 2.0));
    for (int attempt = 0; attempt < 2; ++attempt)
    {
        try
        {
            sim.step();
            ADD_FAILURE() << "a body drifted to 2e15 was accepted";
        }
        catch (const InputError& e)
        {
            EXPECT_NE(std::string(e.what()).find("body 1"), std::string::npos) << e.what();
        }
    }
}

// The radii sort in parallel above a few thousand bodies: the same radii as the one-thread sort.
TEST(Simulation, LagrangianRadiiAreTheSameForAnyThreadCount)
{
    const ParticleSet b           = makePlummer(20000, 4);
    const int saved               = test::setThreads(1);
    const std::vector<double> one = lagrangianRadii(b, lagrangeFractions());
    for (int threads : {2, 3})
    {
        test::setThreads(threads);
        EXPECT_EQ(lagrangianRadii(b, lagrangeFractions()), one) << threads << " threads";
    }
    test::setThreads(saved);
}

// A restart extends a run within the limits of a fresh one (unchecked, `--t-end inf` on restart would plan
// -9223372036854775808 steps, and 1e13 would start at 1.4e15).
TEST(Simulation, ExtendingARunHasTheLimitsOfAFreshOne)
{
    Simulation sim(makePlummer(200, 3), simParameters(0.5, 0.01), planSteps(0.0, 1.0 / 64, 1.0 / 64));
    for (double tEnd : {double(INFINITY), -double(INFINITY), double(NAN), 1e20, 1e13})
        EXPECT_THROW(sim.extendTo(tEnd), ParameterError) << tEnd;
    EXPECT_THROW(planSteps(0.0, 1e13, 1.0 / 64), ParameterError);
    EXPECT_EQ(sim.plan().numSteps, 1);
    sim.extendTo(2.0 / 64);
    EXPECT_EQ(sim.plan().numSteps, 2);
}

TEST(Simulation, DamagedCheckpointIsRefused)
{
    fs::path dir = freshDir("damaged");
    fs::create_directories(dir);
    Simulation sim(makePlummer(500, 1), simParameters(0.5, 0.01), planSteps(0.0, 1.0 / 64, 1.0 / 64));
    std::string path = (dir / "c.bin").string();
    sim.writeCheckpoint(path);
    sim.writeCheckpoint(path);
    EXPECT_TRUE(fs::exists(path + ".prev"));
    fs::resize_file(path, fs::file_size(path) - 1);
    EXPECT_THROW(Simulation::fromCheckpoint(path), FormatError);
    {
        std::ofstream f(path, std::ios::trunc);
        f << "not a checkpoint at all";
    }
    EXPECT_THROW(Simulation::fromCheckpoint(path), FormatError);
    EXPECT_THROW(Simulation::fromCheckpoint((dir / "missing.bin").string()), FormatError);
    fs::remove_all(dir);
}

/// path with the byte at offset changed (its bits flipped).
void flipByte(const std::string& path, uint64_t offset)
{
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(offset));
    const char c = char(f.get());
    f.seekp(std::streamoff(offset));
    f.put(char(~c));
}

// The checksum is taken in the same pass as the contents; a damage that makes a field unreadable (the body count,
// the parameters' text) is still reported as a failed checksum, as one that leaves every field readable (a
// position), and an intact file reads back the state written.
TEST(Simulation, DamageAnywhereIsReportedByTheChecksum)
{
    const fs::path dir = freshDir("damage_anywhere");
    fs::create_directories(dir);
    Simulation sim(makePlummer(500, 2), simParameters(0.5, 0.01), planSteps(0.0, 1.0 / 64, 1.0 / 64));
    const std::string path = (dir / "c.bin").string();
    sim.writeCheckpoint(path);
    const CheckpointImage intact = readCheckpoint(path);
    const ParticleSet& state     = sim.state();
    ASSERT_EQ(intact.state.pos.size(), state.pos.size());
    EXPECT_EQ(std::memcmp(intact.state.pos.data(), state.pos.data(), state.pos.size() * sizeof(Vec3d)), 0);
    const uint64_t size = fs::file_size(path);
    // The body count (offset 16, after the magic), the parameters' text (from offset 80) and the middle of the
    // bodies' arrays.
    for (uint64_t offset : {uint64_t(17), uint64_t(81), size / 2})
    {
        fs::copy_file(path, path + ".damaged", fs::copy_options::overwrite_existing);
        flipByte(path + ".damaged", offset);
        try
        {
            readCheckpoint(path + ".damaged");
            ADD_FAILURE() << "a byte flipped at offset " << offset << " was not noticed";
        }
        catch (const FormatError& e)
        {
            EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << offset << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << offset << ": " << e.what();
        }
    }
    fs::remove_all(dir);
}

namespace {

/// Lagrangian radii by their definition about the centre of mass (massWeighted, in body order).
std::vector<double> radiiBySortingAll(const ParticleSet& p, const std::vector<double>& fractions)
{
    const MassWeighted centre = massWeighted(p.mass, p.pos);
    return test::radiiByDefinition(p, fractions, centre.mean(), centre.mass);
}

} // namespace

// Equal masses skip the sort (their running sums do not depend on the order); the radii are still the definition's,
// bit for bit: with ties, masses that do not add up exactly, fractions at and beyond the ends, few bodies, and
// unequal masses (which take the sort).
TEST(Simulation, LagrangianRadiiAreTheSortedDefinitionsBitForBit)
{
    const std::vector<double> fractions{0.0, 1e-9, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999999, 1.0, 1.5};
    ParticleSet tied = makePlummer(20000, 5);
    for (int64_t i = 0; i < tied.size(); i += 3) tied.pos[i] = tied.pos[0];
    ParticleSet third = makePlummer(3000, 6);
    for (double& m : third.mass) m = 1.0 / 3;
    ParticleSet unequal = makePlummer(20000, 9);
    for (int64_t i = 0; i < unequal.size(); ++i) unequal.mass[i] = double(1 + i % 5) / 60000;
    unequal.pos[5] = unequal.pos[6];
    // The first mass the smallest and the largest: a test of equal masses must find both kinds of difference.
    ParticleSet smallestFirst = makePlummer(12333, 10), largestFirst = smallestFirst;
    for (int64_t i = 0; i < smallestFirst.size(); ++i)
    {
        smallestFirst.mass[i] = double(1 + i % 5) / 36999;
        largestFirst.mass[i]  = double(5 - i % 5) / 36999;
    }
    std::vector<ParticleSet> sets{makePlummer(20000, 4), tied,    third,         makePlummer(2, 7),
                                  makeGalaxy(12000, 4),  unequal, smallestFirst, largestFirst};
    ParticleSet one = makePlummer(2, 8);
    one.pos.resize(1);
    one.vel.resize(1);
    one.mass.resize(1);
    one.id.resize(1);
    sets.push_back(one);
    for (size_t k = 0; k < sets.size(); ++k)
        EXPECT_EQ(lagrangianRadii(sets[k], fractions), radiiBySortingAll(sets[k], fractions)) << "set " << k;
}

TEST(Simulation, LagrangianRadiiOfAUniformSphere)
{
    ParticleSet b         = makeUniformSphere(20000, 2);
    std::vector<double> r = lagrangianRadii(b, {0.125, 0.5});
    EXPECT_NEAR(r[0], 0.5, 0.02);
    EXPECT_NEAR(r[1], std::cbrt(0.5), 0.02);
}

TEST(Galaxy, ComponentsAndNearEquilibrium)
{
    ParticleSet g = makeGalaxy(12000, 4);
    double m = 0, diskLz = 0;
    for (int64_t i = 0; i < g.size(); ++i) m += g.mass[i];
    EXPECT_NEAR(m, 1.0, 1e-12);
    for (int64_t i = 2000; i < 4000; ++i) diskLz += g.pos[i].x * g.vel[i].y - g.pos[i].y * g.vel[i].x;
    EXPECT_GT(diskLz / 2000, 0.1); // the disk rotates
    Simulation sim(g, simParameters(0.5, 0.02), planSteps(0.0, 1.0, 1.0 / 64));
    double q0 = sim.diagnostics().virialRatio;
    while (!sim.done()) sim.step();
    EXPECT_NEAR(q0, 1.0, 0.15);
    EXPECT_NEAR(sim.diagnostics().virialRatio, 1.0, 0.15);
    EXPECT_LT(std::fabs(sim.diagnostics().relativeEnergyError), 5e-3);
}

namespace {

std::string slurpFile(const fs::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFile(const fs::path& f, const std::string& bytes)
{
    std::ofstream out(f, std::ios::binary | std::ios::trunc);
    out << bytes;
}

template<class T>
void put(std::string& out, const T& v)
{
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template<class T>
void putArray(std::string& out, const std::vector<T>& v)
{
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

/// The checkpoint image as octwalk wrote it before the parameter table (OCTWALK-CKPT-v1, df0634a).
std::string checkpointV1(const CheckpointImage& c)
{
    const Parameters& p = c.parameters;
    std::string body;
    const char magic[16] = "OCTWALK-CKPT-v1";
    body.append(magic, sizeof(magic));
    put(body, int64_t(c.state.size()));
    put(body, c.step);
    put(body, c.numSteps);
    put(body, c.t0);
    put(body, c.h);
    put(body, c.initialEnergy);
    put(body, p.opening_angle);
    put(body, p.epsilon_squared);
    put(body, p.gravitational_constant);
    put(body, int32_t(p.n_leaf));
    put(body, int32_t(p.n_group));
    put(body, int32_t(p.mac));
    put(body, int32_t(p.use_quadrupole));
    put(body, int32_t(p.merge_groups));
    put(body, int32_t(p.backend));
    put(body, int32_t(c.direct));
    put(body, int32_t(c.zeroNetForce));
    putArray(body, c.state.pos);
    putArray(body, c.state.vel);
    putArray(body, c.state.mass);
    putArray(body, c.state.id);
    put(body, uint64_t(c.extra.size()));
    body += c.extra;
    put(body, test::checkpointChecksum(body));
    return body;
}

/// A checkpoint with `from` replaced by `to` (same length) and the checksum made good again.
std::string edited(std::string bytes, const std::string& from, const std::string& to)
{
    size_t at = bytes.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    EXPECT_EQ(from.size(), to.size());
    bytes.replace(at, from.size(), to);
    std::string body = bytes.substr(0, bytes.size() - 8);
    put(body, test::checkpointChecksum(body));
    return body;
}

template<class E>
std::string errorOf(const std::string& path)
{
    try
    {
        Simulation::fromCheckpoint(path);
    }
    catch (const E& e)
    {
        return e.what();
    }
    ADD_FAILURE() << "no exception for " << path;
    return {};
}

} // namespace

TEST(Checkpoint, ParametersAreTableTextAndV1StillRestartsBitIdentically)
{
    fs::path dir = freshDir("ckpt_v1");
    fs::create_directories(dir);
    ParticleSet b = makePlummer(2000, 6);
    Parameters p  = simParameters(0.6, 0.02);
    p.mac         = Mac::Octgrav;
    p.n_leaf      = 8;
    Simulation whole(b, p, planSteps(0.0, 12.0 / 64, 1.0 / 64), ForceOptions{false, true});
    while (!whole.done()) whole.step();
    whole.writeCheckpoint((dir / "whole.bin").string(), "settings");
    std::string wholeBytes = slurpFile(dir / "whole.bin");
    EXPECT_EQ(wholeBytes.rfind("OCTWALK-CKPT-v8", 0), 0u);
    EXPECT_NE(wholeBytes.find(toText(p)), std::string::npos) << "the parameters as the table's name=value lines";

    Simulation first(b, p, planSteps(0.0, 6.0 / 64, 1.0 / 64), ForceOptions{false, true});
    while (!first.done()) first.step();
    first.writeCheckpoint((dir / "half.bin").string(), "settings");
    CheckpointImage half = readCheckpoint((dir / "half.bin").string());
    EXPECT_EQ(toJson(half.parameters), toJson(p));
    writeFile(dir / "half_v1.bin", checkpointV1(half));

    std::string extra;
    Simulation resumed = Simulation::fromCheckpoint((dir / "half_v1.bin").string(), &extra);
    EXPECT_EQ(extra, "settings");
    EXPECT_EQ(toJson(resumed.parameters()), toJson(p));
    EXPECT_TRUE(resumed.forceOptions().zeroNetForce);
    resumed.extendTo(12.0 / 64);
    while (!resumed.done()) resumed.step();
    resumed.writeCheckpoint((dir / "resumed.bin").string(), "settings");
    EXPECT_TRUE(slurpFile(dir / "resumed.bin") == wholeBytes);
    fs::remove_all(dir);
}

TEST(Checkpoint, AVersion2FileWrittenBeforeBoxSizeExistedRestartsIsolated)
{
    // Version-2 checkpoints of before box_size hold no box_size line: the parameter takes its default
    // (isolated) instead of the file being refused as missing it.
    fs::path dir = freshDir("ckpt_no_box");
    fs::create_directories(dir);
    Simulation sim(makePlummer(300, 2), simParameters(0.5, 0.01), planSteps(0.0, 1.0 / 64, 1.0 / 64));
    sim.writeCheckpoint((dir / "c.bin").string());
    std::string bytes         = slurpFile(dir / "c.bin");
    const std::string boxLine = "box_size=0\n";
    const size_t text         = bytes.find("opening_angle=");
    const size_t line         = bytes.find(boxLine);
    ASSERT_NE(text, std::string::npos);
    ASSERT_NE(line, std::string::npos);
    uint64_t length = 0;
    std::memcpy(&length, bytes.data() + text - sizeof(length), sizeof(length));
    length -= boxLine.size();
    std::memcpy(&bytes[text - sizeof(length)], &length, sizeof(length));
    bytes.erase(line, boxLine.size());
    std::string body = bytes.substr(0, bytes.size() - 8);
    put(body, test::checkpointChecksum(body));
    writeFile(dir / "old.bin", body);

    CheckpointImage old = readCheckpoint((dir / "old.bin").string());
    EXPECT_EQ(old.parameters.box_size, 0.0);
    EXPECT_EQ(toJson(old.parameters), toJson(sim.parameters()));
    Simulation resumed = Simulation::fromCheckpoint((dir / "old.bin").string());
    EXPECT_EQ(toJson(resumed.parameters()), toJson(sim.parameters()));
    fs::remove_all(dir);
}

TEST(Checkpoint, ParameterNamesAndValuesAreCheckedThroughTheTable)
{
    fs::path dir = freshDir("ckpt_names");
    fs::create_directories(dir);
    Simulation sim(makePlummer(300, 2), simParameters(0.5, 0.01), planSteps(0.0, 1.0 / 64, 1.0 / 64));
    sim.writeCheckpoint((dir / "c.bin").string());
    const std::string good = slurpFile(dir / "c.bin");
    std::string path       = (dir / "bad.bin").string();

    writeFile(path, edited(good, "n_leaf=16\n", "n_lief=16\n"));
    std::string renamed = errorOf<FormatError>(path);
    EXPECT_NE(renamed.find("unknown parameters: n_lief"), std::string::npos) << renamed;
    EXPECT_NE(renamed.find("missing parameters: n_leaf"), std::string::npos) << renamed;
    EXPECT_NE(renamed.find("'parameters'"), std::string::npos) << renamed;

    writeFile(path, edited(good, "mac=bonsai\n", "mac=barnes\n"));
    EXPECT_NE(errorOf<FormatError>(path).find("barnes"), std::string::npos);

    // Out of range: refused as a fresh run would refuse it.
    writeFile(path, edited(good, "n_leaf=16\n", "n_leaf=-1\n"));
    EXPECT_NE(errorOf<ParameterError>(path).find("parameter n_leaf = -1"), std::string::npos);
    CheckpointImage v1          = readCheckpoint((dir / "c.bin").string());
    v1.parameters.opening_angle = 1.5;
    writeFile(path, checkpointV1(v1));
    EXPECT_NE(errorOf<ParameterError>(path).find("opening_angle = 1.5"), std::string::npos);
    fs::remove_all(dir);
}

// Comoving runs (host/sim/comoving.h, the comoving Simulation and `octwalk run --comoving`): the clock in
// ln a, the settings and their errors, a homogeneous lattice that must stay put, the Zel'dovich pancake
// against its analytic solution, a bit-identical restart, and bad input on the command line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "host/cli/cli.h"
#include "host/core/random.h"
#include "host/io/checkpoint.h"
#include "host/io/snapshot.h"
#include "host/models/cosmo_ics.h"
#include "host/sim/comoving.h"
#include "host/sim/simulation.h"
#include "test_helpers.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

namespace octwalk {
namespace {

namespace fs = std::filesystem;

const Cosmology kEdS{1.0, 0.0, 0.7};

/// Largest displacement and peculiar speed of a perfect lattice run to a = 1 under exact Ewald forces:
/// round-off (measured: 0 and 3e-16).
constexpr double kLatticeRoundOff = 1e-12;
/// The same under the tree. The periodic accuracy target, a lattice force below 1e-6 of a pair force (g = 1.25e-7 for
/// 8^3 bodies of total mass 1 in the unit box), would move a body at most 2.9 g / H0^2 = 4.4e-8 from a = 0.05
/// to 1 (EdS, H0^2 = 8 pi / 3). NOT MET: with theta 0.5 everywhere the tree leaves a lattice force of ~0.13
/// of a pair force (README, Periodic boxes): the lattice drifted by 6.6e-3 and reached peculiar speeds of
/// 0.033; with err_tol_force_acc 0.002 (every group of a lattice opens to theta / 2.25) 6.8e-7 and 1.7e-6
/// (measured). These bounds guard those figures against regressions; they are not the target.
constexpr double kLatticeTreeTolerance      = 2e-6;
constexpr double kLatticeTreeSpeedTolerance = 5e-6;
/// Step of the Layzer-Irvine check, and the change of K + W + int (2K + W) d ln a it allows, over |W|
/// (measured 8.7e-3, 2.4e-3 and 6.3e-4 at dlna = 0.05, 0.025, 0.0125: second order).
constexpr double kLayzerIrvineDlna      = 0.025;
constexpr double kLayzerIrvineTolerance = 5e-3;
/// Step of the linear-growth test and its bound on the growth of a long wave relative to D(a) / D(a_begin)
/// (target 1%; measured -0.21% at a = 0.5 and -0.18% at a = 1, the same at dlna 0.05).
constexpr double kLinearGrowthDlna      = 0.1;
constexpr double kLinearGrowthTolerance = 1e-2;
/// The same under the tree (LinearGrowth.ALongWaveGrowsAsTheGrowthFactorUnderTheTree; measured -0.24% at a = 0.5
/// and -0.21% at a = 1 with the group forces of the error control from the previous step, +1.1% with its estimate
/// walk on every step).
constexpr double kLinearGrowthTreeTolerance = 1e-2;
/// rms velocity error of the pancake at z = 2 relative to the rms velocity (measured 4.9e-3 with the tree).
constexpr double kPancakeVelocityTolerance = 1e-2;

/// nx x nt x nt equal masses (total 1) at the cell centres of the box [0, L)^3, at rest.
ParticleSet slab(int nx, int nt, double boxSize)
{
    ParticleSet p;
    p.resize(int64_t(nx) * nt * nt);
    int64_t k = 0;
    for (int i = 0; i < nx; ++i)
        for (int j = 0; j < nt; ++j)
            for (int l = 0; l < nt; ++l, ++k)
            {
                p.pos[k]  = {(i + 0.5) * boxSize / nx, (j + 0.5) * boxSize / nt, (l + 0.5) * boxSize / nt};
                p.vel[k]  = {0, 0, 0};
                p.mass[k] = 1.0 / double(p.pos.size());
                p.id[k]   = uint64_t(k);
            }
    return p;
}

/// n^3 equal masses (total 1) at the cell centres of the box [0, L)^3, at rest.
ParticleSet lattice(int n, double boxSize) { return slab(n, n, boxSize); }

/// The Zel'dovich pancake in Einstein-de Sitter (D = a), a single plane wave along x in the unit box with
/// its caustic at a = aCross: x = q - (a / aCross) sin(k q) / k, v = a dx/dt = H0 sqrt(a) psi / aCross.
/// Exact before shell crossing (planar motion).
struct Pancake
{
    double aCross = 0.5, hubble0 = 0;
    static constexpr double k = 2 * M_PI;

    double position(double q, double a) const { return q - a / aCross * std::sin(k * q) / k; }
    double velocity(double q, double a) const { return -hubble0 * std::sqrt(a) * std::sin(k * q) / k / aCross; }

    /// The lattice q displaced to scale factor a (wrapped into [0, 1)).
    ParticleSet at(const ParticleSet& grid, double a) const
    {
        ParticleSet p = grid;
        for (int64_t i = 0; i < p.size(); ++i)
        {
            const double q = grid.pos[i].x;
            p.pos[i].x     = wrapPeriodic(position(q, a), 1.0);
            p.vel[i].x     = velocity(q, a);
        }
        return p;
    }
};

/// Nearest-image difference in the unit box.
double periodicDifference(double x, double y)
{
    double d = x - y;
    return d - std::round(d);
}

bool sameBits(const std::vector<Vec3d>& a, const std::vector<Vec3d>& b)
{
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3d)) == 0;
}

Parameters periodicParameters(double epsilon)
{
    Parameters p;
    p.box_size        = 1.0;
    p.pm_grid         = 0;
    p.epsilon_squared = epsilon * epsilon;
    p.backend         = Backend::Cpu;
    return p;
}

ComovingSettings edsSettings(double aBegin, double aEnd, double dlna)
{
    ComovingSettings s;
    s.cosmology = kEdS;
    s.aBegin    = aBegin;
    s.aEnd      = aEnd;
    s.dlna      = dlna;
    return s;
}

std::string errorOf(const ComovingSettings& s)
{
    try
    {
        validate(s);
    }
    catch (const ParameterError& e)
    {
        return e.what();
    }
    return "";
}

} // namespace

TEST(ComovingClock, StepsAreEqualInLnAAndReachEveryOutputExactly)
{
    ComovingSettings s    = edsSettings(0.1, 1.0, 0.1);
    s.outputList          = {0.2, 0.5};
    const int64_t planned = stepsToEnd(s, s.aBegin, s.dlna);
    std::vector<double> reached;
    int64_t steps = 0;
    for (double a = s.aBegin; a < s.aEnd; ++steps)
    {
        const double next = nextScaleFactor(a, nextStop(s, a), s.dlna);
        EXPECT_LE(std::log(next / a), s.dlna * (1 + 1e-12));
        a = next;
        if (isOutputTime(s, a) || a == s.aEnd) reached.push_back(a);
    }
    EXPECT_EQ(steps, planned);
    // ln 2 / 0.1 -> 7 steps, ln 2.5 / 0.1 -> 10, ln 2 / 0.1 -> 7.
    EXPECT_EQ(planned, 24);
    EXPECT_EQ(reached, (std::vector<double>{0.2, 0.5, 1.0}));
}

TEST(ComovingClock, SettingsRoundTripAndBadValuesAreNamed)
{
    ComovingSettings s          = edsSettings(1.0 / 50, 1.0, 0.0);
    s.units                     = CosmoUnits::GadgetMpc;
    s.outputList                = {0.25, 1.0 / 3, 0.5};
    s.softeningMaxPhys          = 0.1;
    const ComovingSettings back = comovingSettingsFromText(toText(s));
    EXPECT_EQ(toText(back), toText(s));
    EXPECT_EQ(back.outputList, s.outputList);
    EXPECT_EQ(back.aBegin, s.aBegin);
    EXPECT_EQ(errorOf(s), "");

    ComovingSettings bad = s;
    bad.aBegin           = 0;
    EXPECT_NE(errorOf(bad).find("a_begin = 0"), std::string::npos) << errorOf(bad);
    bad = s, bad.aEnd = s.aBegin;
    EXPECT_NE(errorOf(bad).find("a_end = 0.02"), std::string::npos) << errorOf(bad);
    bad = s, bad.outputList = {0.5, 0.25};
    EXPECT_NE(errorOf(bad).find("output_list[1] = 0.25"), std::string::npos) << errorOf(bad);
    bad = s, bad.outputList = {0.01};
    EXPECT_NE(errorOf(bad).find("output_list[0] = 0.01"), std::string::npos) << errorOf(bad);
    bad = s, bad.cosmology = {0.1, 2.5, 0.7}, bad.aBegin = 0.5;
    EXPECT_NE(errorOf(bad).find("H(a)^2 <= 0"), std::string::npos) << errorOf(bad);
    bad = s, bad.cosmology.omega0 = -0.3;
    EXPECT_NE(errorOf(bad).find("Omega0"), std::string::npos) << errorOf(bad);
    bad = s, bad.maxDlna = 0;
    EXPECT_NE(errorOf(bad).find("max_dlna = 0"), std::string::npos) << errorOf(bad);
    EXPECT_THROW(comovingSettingsFromText(toText(s) + "omega0=0.3\n"), FormatError);
    EXPECT_THROW(comovingSettingsFromText("units=nbody\n"), FormatError);
}

TEST(ComovingClock, OutputListFileSofteningAndWrapping)
{
    const fs::path list = fs::temp_directory_path() / ("octwalk_outputs_" + std::to_string(::getpid()));
    std::ofstream(list) << "# scale factors\n0.25\n\n0.5  # z = 1\n";
    EXPECT_EQ(readOutputList(list.string()), (std::vector<double>{0.25, 0.5}));
    std::ofstream(list) << "0.25\nhalf\n";
    try
    {
        readOutputList(list.string());
        ADD_FAILURE() << "a bad line was read";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("line 2: 'half'"), std::string::npos) << e.what();
    }
    EXPECT_THROW(readOutputList("/dev/zero"), FormatError); // one endless line: refused at its limit
    fs::remove(list);

    ComovingSettings s = edsSettings(0.02, 1, 0.01);
    EXPECT_EQ(comovingSoftening(s, 0.05, 0.1), 0.05);
    s.softeningMaxPhys = 0.002;
    EXPECT_DOUBLE_EQ(comovingSoftening(s, 0.05, 0.1), 0.02);
    EXPECT_EQ(comovingSoftening(s, 0.05, 0.02), 0.05);

    EXPECT_EQ(wrapPeriodic(-1e-20, 1.0), 0.0);
    EXPECT_EQ(wrapPeriodic(1.0, 1.0), 0.0);
    EXPECT_EQ(wrapPeriodic(2.5, 1.0), 0.5);
    EXPECT_EQ(wrapPeriodic(-0.25, 1.0), 0.75);
}

TEST(ComovingRun, BodiesOutsideTheBoxAndBadSettingsFailBeforeAnyForce)
{
    ParticleSet p = lattice(4, 1.0);
    p.pos[5].y    = 1.0;
    try
    {
        Simulation sim(p, periodicParameters(0.01), edsSettings(0.1, 1, 0.05));
        ADD_FAILURE() << "a body outside the box was accepted";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("body 5"), std::string::npos) << e.what();
    }
    Parameters isolated = periodicParameters(0.01);
    isolated.box_size   = 0;
    EXPECT_THROW(Simulation(lattice(4, 1.0), isolated, edsSettings(0.1, 1, 0.05)), ParameterError);
    EXPECT_THROW(Simulation(lattice(4, 1.0), periodicParameters(0), edsSettings(0.1, 1, 0.0)), ParameterError);
    ComovingSettings gadget  = edsSettings(0.1, 1, 0.05);
    gadget.units             = CosmoUnits::GadgetMpc;
    Parameters g             = periodicParameters(0.01);
    g.gravitational_constant = 43.0071;
    // A unit mass in a 1 Mpc/h box is not the critical density (27.75 in these units).
    EXPECT_THROW(Simulation(lattice(4, 1.0), g, gadget), InputError);
}

namespace {

/// Largest displacement and peculiar speed of a perfect n^3 lattice run from a = 0.05 to 1 in steps of dlna.
std::pair<double, double> latticeDrift(int n, ForceOptions forces, double dlna)
{
    const ParticleSet start = lattice(n, 1.0);
    Simulation sim(start, periodicParameters(0.0), edsSettings(0.05, 1.0, dlna), forces);
    while (!sim.done()) sim.step();
    EXPECT_EQ(sim.time(), 1.0);
    double moved = 0, speed = 0;
    for (int64_t i = 0; i < start.size(); ++i)
    {
        const Vec3d& x = sim.state().pos[i];
        for (double d : {periodicDifference(x.x, start.pos[i].x), periodicDifference(x.y, start.pos[i].y),
                         periodicDifference(x.z, start.pos[i].z)})
            moved = std::max(moved, std::fabs(d));
        speed = std::max(speed, std::sqrt(dot(sim.state().vel[i], sim.state().vel[i])));
    }
    return {moved, speed};
}

} // namespace

TEST(ComovingRun, HomogeneousLatticeStaysPutUnderExactEwaldForces)
{
    // A perfect lattice feels no periodic force, so nothing may move whatever the expansion does.
    // No softening: Plummer softening of the nearest image only would break the lattice's symmetry for
    // pairs half a box apart (measured: 1.5e-3 of a pair force at 4^3 with epsilon = 0.01).
    const auto [moved, speed] = latticeDrift(4, ForceOptions{true, false}, 0.25);
    EXPECT_LT(moved, kLatticeRoundOff) << "largest displacement";
    EXPECT_LT(speed, kLatticeRoundOff) << "largest peculiar speed";
}

TEST(ComovingRun, HomogeneousLatticeStaysPutUnderTreeForces)
{
    const auto [moved, speed] = latticeDrift(8, ForceOptions{}, 0.1);
    std::printf("lattice 8^3 under the tree, a = 0.05 to 1: largest displacement %.3g, peculiar speed %.3g\n", moved,
                speed);
    EXPECT_LT(moved, kLatticeTreeTolerance) << "largest displacement";
    EXPECT_LT(speed, kLatticeTreeSpeedTolerance) << "largest peculiar speed";
}

TEST(ComovingRun, ZeldovichPancakeMatchesTheAnalyticSolution)
{
    // EdS, caustic at a = 0.5 (z = 1), from z = 9 to z = 2, tree forces. Sheets of 16 x 16 bodies (8 of them
    // along the wave): a sheet's field departs from a uniform sheet's by about exp(-2 pi d / s) at distance d
    // for spacing s, so sheets denser than their separation act as the planes of the analytic solution. No
    // softening: it would weaken the pull of the sheets that crowd together near the caustic.
    const ParticleSet grid = slab(8, 16, 1.0);
    Pancake pancake;
    pancake.hubble0     = hubbleConstantForDensity(1.0, 1.0, 1.0, 1.0);
    const double aStart = 0.1, aEnd = 1.0 / 3;
    Simulation sim(pancake.at(grid, aStart), periodicParameters(0.0), edsSettings(aStart, aEnd, 0.1));
    EXPECT_DOUBLE_EQ(sim.comoving()->hubble0, pancake.hubble0);
    while (!sim.done()) sim.step();
    ASSERT_EQ(sim.time(), aEnd);
    double positionError = 0, velocityError = 0, velocityScale = 0, transverse = 0;
    for (int64_t i = 0; i < grid.size(); ++i)
    {
        const double q = grid.pos[i].x;
        const Vec3d& x = sim.state().pos[i];
        const Vec3d& v = sim.state().vel[i];
        positionError += std::pow(periodicDifference(x.x, wrapPeriodic(pancake.position(q, aEnd), 1.0)), 2);
        velocityError += std::pow(v.x - pancake.velocity(q, aEnd), 2);
        velocityScale += std::pow(pancake.velocity(q, aEnd), 2);
        transverse = std::max({transverse, std::fabs(periodicDifference(x.y, grid.pos[i].y)),
                               std::fabs(periodicDifference(x.z, grid.pos[i].z))});
    }
    const double n = double(grid.size());
    // The required bound: rms position error below 1e-3 of the wavelength (1) at z = 2.
    EXPECT_LT(std::sqrt(positionError / n), 1e-3);
    EXPECT_LT(std::sqrt(velocityError / velocityScale), kPancakeVelocityTolerance);
    EXPECT_LT(transverse, 1e-3);
}

TEST(ComovingRun, LayzerIrvineHoldsUnderExactEwaldForces)
{
    // K + W + int (2K + W) d ln a is constant for exact forces whatever the bodies do: 64 bodies of a
    // pancake through its caustic (a = 0.1 to 0.8), exact Ewald sums, softened so the sheets pass.
    Pancake pancake;
    pancake.hubble0 = hubbleConstantForDensity(1.0, 1.0, 1.0, 1.0);
    Simulation sim(pancake.at(lattice(4, 1.0), 0.1), periodicParameters(0.05), edsSettings(0.1, 0.8, kLayzerIrvineDlna),
                   ForceOptions{true, false});
    while (!sim.done()) sim.step();
    const Diagnostics d           = sim.diagnostics();
    const Simulation::Comoving& c = *sim.comoving();
    EXPECT_LT(std::fabs(d.total + c.layzerIrvineIntegral - c.layzerIrvineStart),
              kLayzerIrvineTolerance * std::fabs(d.potential));
}

TEST(ComovingRun, RestartIsBitIdentical)
{
    // The step criterion, an output list and a physical softening cap: everything a restart must carry.
    const ParticleSet grid = slab(4, 8, 1.0);
    Pancake pancake;
    pancake.hubble0     = hubbleConstantForDensity(1.0, 1.0, 1.0, 1.0);
    ComovingSettings s  = edsSettings(0.1, 0.4, 0.0);
    s.errTolIntAccuracy = 0.01;
    s.maxDlna           = 0.05;
    s.outputList        = {0.2, 0.3};
    s.softeningMaxPhys  = 0.004;
    const Parameters p  = periodicParameters(0.02);
    Simulation whole(pancake.at(grid, 0.1), p, s);
    Simulation first(pancake.at(grid, 0.1), p, s);
    while (!whole.done()) whole.step();
    const fs::path ckpt = fs::temp_directory_path() / ("octwalk_comoving_ckpt_" + std::to_string(::getpid()));
    for (int k = 0; k < whole.stepIndex() / 2; ++k) first.step();
    first.writeCheckpoint(ckpt.string());
    Simulation resumed = Simulation::fromCheckpoint(ckpt.string());
    fs::remove(ckpt);
    fs::remove(ckpt.string() + ".prev");
    ASSERT_TRUE(resumed.comoving());
    EXPECT_EQ(resumed.time(), first.time());
    while (!resumed.done()) resumed.step();
    EXPECT_EQ(resumed.stepIndex(), whole.stepIndex());
    EXPECT_EQ(resumed.time(), 0.4);
    EXPECT_TRUE(sameBits(resumed.state().pos, whole.state().pos));
    EXPECT_TRUE(sameBits(resumed.state().vel, whole.state().vel));
    EXPECT_GT(whole.stepIndex(), 3 + int64_t(std::ceil(std::log(4.0) / s.maxDlna)) / 2)
        << "the criterion limited no step";
}

namespace {

/// n equal masses (total 1) at rest in the unit box, half at random places, half in a Plummer sphere of scale
/// radius 1/20 at its centre: net forces from far below the box's pull to far above it, so that the periodic
/// error control opens groups by every factor from 1 to its bound.
ParticleSet clusterInARandomBox(int64_t n, uint64_t seed)
{
    ParticleSet p = makePlummer(n, seed);
    Random rng(seed);
    for (int64_t i = 0; i < n; ++i)
    {
        const Vec3d c = Vec3d{0.5, 0.5, 0.5} + (1.0 / 20) * p.pos[i];
        p.pos[i]      = i % 2 ? Vec3d{rng.uniform(), rng.uniform(), rng.uniform()}
                              : Vec3d{wrapPeriodic(c.x, 1.0), wrapPeriodic(c.y, 1.0), wrapPeriodic(c.z, 1.0)};
        p.vel[i]      = {0, 0, 0};
        p.mass[i]     = 1.0 / double(n);
    }
    return p;
}

/// That box with 512 bodies from a = 0.1 to 0.14 in steps of 0.05 in ln a (7 steps).
Simulation clusterInARandomBoxRun(double errTolForceAcc = Parameters{}.err_tol_force_acc)
{
    Parameters p        = periodicParameters(0.01);
    p.err_tol_force_acc = errTolForceAcc;
    return Simulation(clusterInARandomBox(512, 5), p, edsSettings(0.1, 0.14, 0.05));
}

} // namespace

TEST(PeriodicErrorControl, StepsTakeTheGroupForcesFromThePreviousAccelerations)
{
    Simulation sim = clusterInARandomBoxRun();
    // The first evaluation has no previous step: the estimate walk.
    EXPECT_FALSE(sim.solver().usedPreviousAccelerations());
    sim.step();
    EXPECT_TRUE(sim.solver().usedPreviousAccelerations());
    Simulation theta = clusterInARandomBoxRun(0);
    theta.step();
    EXPECT_FALSE(theta.solver().usedPreviousAccelerations()) << "no error control, nothing to pass";
    auto interactions = [](const Simulation& s) {
        return s.solver().stats().nodeInteractions + s.solver().stats().leafInteractions;
    };
    EXPECT_GT(interactions(sim), interactions(theta)) << "the random half's groups open further than theta";
}

TEST(PeriodicErrorControl, RestartCarriesTheLastForcesAndIsBitIdentical)
{
    Simulation whole = clusterInARandomBoxRun(), first = clusterInARandomBoxRun();
    while (!whole.done()) whole.step();
    for (int k = 0; k < whole.stepIndex() / 2; ++k) first.step();
    const fs::path ckpt = fs::temp_directory_path() / ("octwalk_periodic_ckpt_" + std::to_string(::getpid()));
    first.writeCheckpoint(ckpt.string());
    CheckpointImage image = readCheckpoint(ckpt.string());
    ASSERT_EQ(image.results.size(), size_t(first.numBodies())) << "version 5: the forces of the state";
    Simulation resumed = Simulation::fromCheckpoint(ckpt.string());
    // A force that is not finite (a file that passes its checksum) is refused by name.
    CheckpointImage bad = image;
    bad.results[3].y    = std::nanf("");
    writeCheckpoint(ckpt.string(), bad);
    try
    {
        readCheckpoint(ckpt.string());
        ADD_FAILURE() << "no exception";
    }
    catch (const FormatError& e)
    {
        EXPECT_NE(std::string(e.what()).find("body 3 has a force that is not finite"), std::string::npos) << e.what();
    }
    // The same checkpoint without its forces: the restart evaluates them with the estimate walk, not with the
    // previous step's accelerations the interrupted run had, and the run departs from it.
    image.results.clear();
    writeCheckpoint(ckpt.string(), image);
    Simulation recomputed = Simulation::fromCheckpoint(ckpt.string());
    fs::remove(ckpt);
    fs::remove(ckpt.string() + ".prev");
    while (!resumed.done()) resumed.step();
    while (!recomputed.done()) recomputed.step();
    EXPECT_EQ(resumed.stepIndex(), whole.stepIndex());
    EXPECT_TRUE(sameBits(resumed.state().pos, whole.state().pos));
    EXPECT_TRUE(sameBits(resumed.state().vel, whole.state().vel));
    EXPECT_FALSE(sameBits(recomputed.state().pos, whole.state().pos)) << "the test cannot tell the two restarts apart";
}

TEST(PeriodicErrorControl, APlainPeriodicRunRestartsBitIdentical)
{
    // Not comoving: the forces stay in the solver's buffer (no stored accelerations), which the restart replaces.
    const ParticleSet start = clusterInARandomBox(512, 7);
    const Parameters p      = periodicParameters(0.01);
    Simulation whole(start, p, planSteps(0.0, 0.04, 0.01)), first(start, p, planSteps(0.0, 0.04, 0.01));
    while (!whole.done()) whole.step();
    for (int k = 0; k < 2; ++k) first.step();
    const fs::path ckpt = fs::temp_directory_path() / ("octwalk_periodic_plain_" + std::to_string(::getpid()));
    first.writeCheckpoint(ckpt.string());
    Simulation resumed = Simulation::fromCheckpoint(ckpt.string());
    fs::remove(ckpt);
    fs::remove(ckpt.string() + ".prev");
    EXPECT_EQ(resumed.diagnostics().potential, first.diagnostics().potential);
    while (!resumed.done()) resumed.step();
    EXPECT_TRUE(resumed.solver().usedPreviousAccelerations());
    EXPECT_TRUE(sameBits(resumed.state().pos, whole.state().pos));
    EXPECT_TRUE(sameBits(resumed.state().vel, whole.state().vel));
    EXPECT_EQ(resumed.diagnostics().total, whole.diagnostics().total);
}

TEST(PeriodicErrorControl, ARunIsTheSameForOneAndTwoThreads)
{
    auto run = [](int threads) {
        const int saved = test::setThreads(threads);
        Simulation sim  = clusterInARandomBoxRun();
        for (int k = 0; k < 3; ++k) sim.step();
        test::setThreads(saved);
        return sim.state().pos;
    };
    EXPECT_TRUE(sameBits(run(1), run(2)));
}

namespace {

std::string slurp(const fs::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

} // namespace

TEST(ComovingCli, BadInputIsOneLineNamingTheValueBeforeAnyWork)
{
    const fs::path base = fs::temp_directory_path() / ("octwalk_comoving_cli_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const std::string input = (base / "lattice.tipsy").string(), list = (base / "outputs.txt").string();
    writeSnapshot(input, SnapshotFormat::TipsyStandard, Pancake{}.at(lattice(4, 1.0), 0.1));
    std::ofstream(list) << "0.5\n0.25\n";
    // A GADGET-2 file with the cosmological header: box 1, a = 0.1, EdS.
    const std::string gadget = (base / "lattice.gadget").string();
    ParticleSet withHeader   = lattice(4, 1.0);
    withHeader.time          = 0.1;
    withHeader.boxSize       = 1.0;
    withHeader.cosmology     = kEdS;
    writeSnapshot(gadget, SnapshotFormat::Gadget2, withHeader);
    const std::string out = (base / "run").string();
    struct Case
    {
        std::vector<const char*> args;
        const char* says;
    };
    const std::vector<Case> cases{
        {{"--a-begin", "0.1"}, "--comoving needs --input"},
        {{"--input", input.c_str(), "--box-size", "1"}, "give --a-begin or --z-begin"},
        {{"--input", input.c_str(), "--a-begin", "0.1"}, "no BoxSize; give --box-size"},
        {{"--input", input.c_str(), "--box-size", "1", "--a-begin", "0"}, "a_begin = 0"},
        {{"--input", input.c_str(), "--box-size", "1", "--a-begin", "0.5", "--a-end", "0.4"}, "a_end = 0.4"},
        {{"--input", input.c_str(), "--box-size", "1", "--a-begin", "0.5", "--omega0", "0.1", "--omega-lambda", "2.5"},
         "H(a)^2 <= 0 at a = 0.5"},
        {{"--input", input.c_str(), "--box-size", "1", "--a-begin", "0.1", "--output-list", list.c_str()},
         "output_list[1] = 0.25"},
        {{"--input", input.c_str(), "--box-size", "0.5", "--a-begin", "0.1"}, "outside the box [0, 0.5)"},
        {{"--input", gadget.c_str(), "--box-size", "2"}, "--box-size = 2 does not match the input file's value 1"},
        {{"--input", gadget.c_str(), "--omega0", "0.3"}, "--omega0 = 0.3 does not match the input file's value 1"},
        {{"--input", gadget.c_str(), "--z-begin", "4"}, "--a-begin = 0.2 does not match the input file's value 0.1"},
        {{"--input", input.c_str(), "--box-size", "1", "--a-begin", "0.1", "--units", "cgs"}, "units 'cgs'"},
        {{"--input", input.c_str(), "--box-size", "1", "--a-begin", "0.1", "--t-end", "2"}, "--t-end does not apply"},
    };
    for (const Case& c : cases)
    {
        std::vector<const char*> args{"run", "--comoving", "--quiet", "--backend", "cpu", "--output-dir", out.c_str()};
        args.insert(args.end(), c.args.begin(), c.args.end());
        CliResult r = runOctwalk(args);
        EXPECT_NE(r.code, 0) << c.says;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out)) << "work was done for: " << c.says;
    }
    fs::remove_all(base);
}

TEST(ComovingCli, RunWritesSnapshotsAtTheOutputListAndRecordsTheCosmology)
{
    const fs::path base = fs::temp_directory_path() / ("octwalk_comoving_run_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const std::string input = (base / "pancake.tipsy").string(), list = (base / "outputs.txt").string();
    Pancake pancake;
    pancake.hubble0 = hubbleConstantForDensity(1.0, 1.0, 1.0, 1.0);
    writeSnapshot(input, SnapshotFormat::TipsyStandard, pancake.at(lattice(4, 1.0), 0.1));
    std::ofstream(list) << "0.2\n0.25\n";
    const std::string out = (base / "run").string();
    CliResult r = runOctwalk({"run",         "--comoving",    "--quiet",    "--backend",      "cpu",      "--input",
                              input.c_str(), "--box-size",    "1",          "--z-begin",      "9",        "--a-end",
                              "0.3",         "--omega0",      "1",          "--omega-lambda", "0",        "--dlna",
                              "0.1",         "--output-list", list.c_str(), "--output-dir",   out.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("12 steps of dlna = 0.1"), std::string::npos) << r.out;
    // ln 2 / 0.1 -> 7 steps to a = 0.2, ln 1.25 -> 3 to 0.25, ln 1.2 -> 2 to 0.3.
    for (const char* snap : {"snap_000000.gadget", "snap_000007.gadget", "snap_000010.gadget", "snap_000012.gadget"})
        EXPECT_TRUE(fs::exists(fs::path(out) / snap)) << snap;
    EXPECT_FALSE(fs::exists(fs::path(out) / "snap_000011.gadget"));
    // GADGET-2 by default, with the cosmological header: time = a, BoxSize, Omega0, OmegaLambda.
    const ParticleSet at = readSnapshot((fs::path(out) / "snap_000007.gadget").string());
    EXPECT_DOUBLE_EQ(at.time, 0.2);
    EXPECT_EQ(at.boxSize, 1.0);
    ASSERT_TRUE(at.cosmology.has_value());
    EXPECT_EQ(at.cosmology->omega0, 1.0);
    EXPECT_EQ(at.cosmology->omegaLambda, 0.0);
    const std::string json = slurp(fs::path(out) / "run.json");
    EXPECT_NE(json.find("\"comoving\": {\"units\": \"nbody\", \"omega0\": 1,"), std::string::npos) << json;
    EXPECT_NE(json.find("\"output_list\": [0.20000000000000001, 0.25]"), std::string::npos) << json;
    const std::string energy = slurp(fs::path(out) / "energy.csv");
    EXPECT_NE(energy.find("\nstep,a,z,dlna,kinetic,potential,total,px,py,pz,layzer_irvine,li_error\n"),
              std::string::npos)
        << energy;
    EXPECT_NE(energy.find("\n12,0.3,"), std::string::npos) << energy;
    fs::remove_all(base);
}

TEST(ComovingCli, GadgetUnitsTakeTheirGAndH0AndTheFileHeader)
{
    const fs::path base = fs::temp_directory_path() / ("octwalk_comoving_gadget_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    // A pancake in a 100 Mpc/h LCDM box holding Omega0 rho_crit L^3 (rho_crit = 3 H0^2 / (8 pi G) in
    // 1e10 Msun/h per (Mpc/h)^3 with H0 = 100, G = 43.0071), started from its header's a = 0.02.
    const double box = 100, omega0 = 0.3, rhoCrit = 3 * 100.0 * 100.0 / (8 * M_PI * 43.0071);
    ParticleSet p = Pancake{}.at(slab(4, 8, 1.0), 0.02);
    for (int64_t i = 0; i < p.size(); ++i)
    {
        p.pos[i]  = box * p.pos[i];
        p.mass[i] = omega0 * rhoCrit * box * box * box / double(p.size());
    }
    p.time                  = 0.02;
    p.boxSize               = box;
    p.cosmology             = Cosmology{omega0, 0.7, 0.7};
    const std::string input = (base / "ic.gadget").string(), out = (base / "run").string();
    writeSnapshot(input, SnapshotFormat::Gadget2, p);
    CliResult r = runOctwalk({"run", "--comoving", "--quiet", "--backend", "cpu", "--input", input.c_str(), "--units",
                              "gadget-mpc", "--a-end", "0.025", "--output-dir", out.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("H0 = 100)"), std::string::npos) << r.out;
    // The step criterion's count is a floor and a first estimate, not a promise ("about 157" took 969).
    EXPECT_NE(r.out.find("at least 9 steps (max_dlna = 0.025), "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("at the first step's dlna = "), std::string::npos) << r.out;
    const std::string json = slurp(fs::path(out) / "run.json");
    EXPECT_NE(json.find("\"gravitational_constant\": 43.0071"), std::string::npos) << json;
    EXPECT_NE(json.find("\"omega0\": 0.29999999999999999"), std::string::npos) << json;
    EXPECT_NE(json.find("G = 43.0071, H0 = 100"), std::string::npos) << json;
    // ln(1.25) at most 0.025 per step: at least 9 steps.
    const ParticleSet end = readSnapshot((fs::path(out) / "snap_000009.gadget").string());
    EXPECT_GE(end.time, 0.02);
    // Wrong units: read as kpc/h, the same numbers hold 1e9 times the matter of the box.
    CliResult kpc = runOctwalk({"run", "--comoving", "--quiet", "--backend", "cpu", "--input", input.c_str(), "--units",
                                "gadget-kpc", "--output-dir", (base / "kpc").string().c_str()});
    EXPECT_EQ(kpc.code, 1);
    EXPECT_NE(kpc.err.find("is not Omega0 rho_crit L^3"), std::string::npos) << kpc.err;
    fs::remove_all(base);
}

TEST(ComovingCli, RestartFromAnEarlierCheckpointEndsBitIdentical)
{
    const fs::path base = fs::temp_directory_path() / ("octwalk_comoving_restart_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    Pancake pancake;
    pancake.hubble0      = hubbleConstantForDensity(1.0, 1.0, 1.0, 1.0);
    ParticleSet ic       = pancake.at(slab(4, 4, 1.0), 0.1);
    ic.time              = 0.1;
    ic.boxSize           = 1.0;
    ic.cosmology         = kEdS;
    const fs::path input = base / "ic.gadget", whole = base / "whole", split = base / "split";
    writeSnapshot(input.string(), SnapshotFormat::Gadget2, ic);
    CliResult r =
        runOctwalk({"run", "--comoving", "--quiet", "--backend", "cpu", "--input", input.string().c_str(), "--a-end",
                    "0.3", "--epsilon", "0.02", "--checkpoint-every", "20", "--output-dir", whole.string().c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    // The previous checkpoint (an earlier step) becomes the one a copy of the run restarts from.
    fs::copy(whole, split);
    fs::remove(split / "checkpoint.bin");
    fs::rename(split / "checkpoint.bin.prev", split / "checkpoint.bin");
    CliResult again = runOctwalk({"run", "--restart", split.string().c_str(), "--quiet"});
    ASSERT_EQ(again.code, 0) << again.err;
    EXPECT_NE(again.out.find("restarting from"), std::string::npos) << again.out;
    EXPECT_EQ(slurp(whole / "checkpoint.bin"), slurp(split / "checkpoint.bin"));
    EXPECT_EQ(slurp(whole / "energy.csv"), slurp(split / "energy.csv"));
    CliResult changed = runOctwalk({"run", "--restart", split.string().c_str(), "--a-end", "0.5"});
    EXPECT_EQ(changed.code, 2);
    EXPECT_NE(changed.err.find("--a-end cannot be changed on --restart"), std::string::npos) << changed.err;
    fs::remove_all(base);
}

TEST(PeriodicRun, APlainRunWrapsItsBodiesIntoTheBoxAfterEachDrift)
{
    // A 2^3 lattice (no net force on any body) streaming at +0.3 along x through a periodic unit box: after
    // t = 2 every body is back in [0, 1), at x0 + 0.6 wrapped, instead of outside (where the solver refuses it).
    ParticleSet bodies = lattice(2, 1.0);
    for (Vec3d& v : bodies.vel) v = {0.3, 0, 0};
    Simulation sim(bodies, periodicParameters(0.0), planSteps(0.0, 2.0, 0.125), ForceOptions{true, false});
    while (!sim.done()) sim.step();
    EXPECT_EQ(sim.state().boxSize, 1.0) << "the snapshots record the box";
    for (int64_t i = 0; i < bodies.size(); ++i)
    {
        const Vec3d& x = sim.state().pos[i];
        for (double c : {x.x, x.y, x.z})
        {
            EXPECT_GE(c, 0.0) << "body " << i;
            EXPECT_LT(c, 1.0) << "body " << i;
        }
        EXPECT_NEAR(x.x, wrapPeriodic(bodies.pos[i].x + 0.6, 1.0), 1e-12) << "body " << i;
    }
}

TEST(PeriodicRun, APlainRunStartingOutsideItsBoxFailsNamingTheBody)
{
    ParticleSet bodies = lattice(2, 1.0);
    bodies.pos[3].y    = 1.5;
    try
    {
        Simulation sim(bodies, periodicParameters(0.0), planSteps(0.0, 1.0, 0.125));
        ADD_FAILURE() << "a body outside the box was accepted";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("body 3"), std::string::npos) << e.what();
    }
}

TEST(PeriodicCli, APlainRunOnAPeriodicFileRunsInItsBoxUnlessToldBoxSizeZero)
{
    const fs::path base = fs::temp_directory_path() / ("octwalk_periodic_run_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const std::string input = (base / "box.gadget").string();
    ParticleSet bodies      = lattice(2, 1.0);
    for (Vec3d& v : bodies.vel) v = {0.3, 0, 0};
    bodies.boxSize = 1.0;
    writeSnapshot(input, SnapshotFormat::Gadget2, bodies);
    const std::string periodic = (base / "periodic").string(), isolated = (base / "isolated").string();
    CliResult r =
        runOctwalk({"run", "--quiet", "--backend", "cpu", "--direct", "--input", input.c_str(), "--t-end", "2",
                    "--timestep", "0.125", "--epsilon", "0", "--format", "gadget2", "--output-dir", periodic.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("periodic box of 1"), std::string::npos) << r.out;
    const ParticleSet end = readSnapshot((fs::path(periodic) / "snap_000016.gadget").string());
    EXPECT_EQ(end.boxSize, 1.0);
    for (int64_t i = 0; i < end.size(); ++i)
    {
        EXPECT_GE(end.pos[i].x, 0.0) << "body " << i;
        EXPECT_LT(end.pos[i].x, 1.0) << "body " << i;
    }
    // --box-size 0: isolated forces, no wrapping (the lattice leaves the box). Its collapse at this long step
    // loses 18% of the energy, which is not what this checks: no energy bound.
    r = runOctwalk({"run",
                    "--quiet",
                    "--backend",
                    "cpu",
                    "--direct",
                    "--input",
                    input.c_str(),
                    "--t-end",
                    "2",
                    "--timestep",
                    "0.125",
                    "--epsilon",
                    "0.1",
                    "--box-size",
                    "0",
                    "--format",
                    "gadget2",
                    "--output-dir",
                    isolated.c_str(),
                    "--max-energy-error",
                    "0"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find("periodic box of"), std::string::npos) << r.out;
    const ParticleSet free = readSnapshot((fs::path(isolated) / "snap_000016.gadget").string());
    double largest         = 0;
    for (const Vec3d& x : free.pos) largest = std::max(largest, x.x);
    EXPECT_GT(largest, 1.0);
    // A --box-size that is not the file's is refused before any work.
    r = runOctwalk({"run", "--quiet", "--input", input.c_str(), "--box-size", "2", "--output-dir",
                    (base / "wrong").string().c_str()});
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("box-size"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(base / "wrong"));
    fs::remove_all(base);
}

namespace {

/// The amplitude of a plane wave's displacement along z: sum_i dz_i sin(k q_i) / sum_i sin^2(k q_i),
/// dz the nearest-image displacement from the lattice point q (ids in grid order, cosmo_ics.h).
double planeWaveAmplitude(const ParticleSet& p, const ParticleSet& lattice, double boxSize)
{
    const double k    = 2 * M_PI / boxSize;
    double projection = 0, norm = 0;
    for (int64_t i = 0; i < p.size(); ++i)
    {
        const double q  = lattice.pos[p.id[i]].z;
        const double dz = periodicDifference(p.pos[i].z / boxSize, q / boxSize) * boxSize;
        projection += dz * std::sin(k * q);
        norm += std::sin(k * q) * std::sin(k * q);
    }
    return projection / norm;
}

} // namespace

/// Each body of a set whose motion is along z only, split into 2 x 2 bodies of a quarter of its mass at
/// offsets of a quarter of the spacing either way in x and y (inside the box, as the lattice sits half a spacing
/// off its faces): sheets twice as dense in their plane as they are apart, so
/// that they pull as planes (a sheet's field departs from a plane's by exp(-2 pi d / s) at distance d
/// for spacing s: 2e-3 with the ICs' own lattice, where the plane wave grows 2.5% faster than D(a) from
/// z = 49 to z = 1 under exact Ewald forces, and 4e-6 split, where it grows as D(a) to 0.23%: measured).
ParticleSet splitInPlane(const ParticleSet& p, double spacing)
{
    ParticleSet out;
    out.resize(4 * p.size());
    for (int64_t i = 0; i < p.size(); ++i)
        for (int s = 0; s < 4; ++s)
        {
            const int64_t k = 4 * i + s;
            out.pos[k] = p.pos[i] + Vec3d{0.25 * spacing * ((s & 1) ? 1 : -1), 0.25 * spacing * ((s >> 1) ? 1 : -1), 0};
            out.vel[k] = p.vel[i];
            out.mass[k] = p.mass[i] / 4;
            out.id[k]   = p.id[i];
        }
    out.time      = p.time;
    out.boxSize   = p.boxSize;
    out.cosmology = p.cosmology;
    return out;
}

namespace {

/// The longest wave along z of an nGrid^3 box of 500 Mpc/h (GADGET units) in LCDM, from z = 49 to z = 0
/// (split in plane, 4 nGrid^3 bodies): its growth over D(a) / D(a_begin) at a = 0.5 and a = 1.
std::array<double, 2> planeWaveGrowth(int nGrid, const ForceOptions& forces)
{
    CosmoIcParams ic;
    ic.nGrid     = nGrid;
    ic.boxSize   = 500;
    ic.zBegin    = 49;
    ic.cosmology = Cosmology{0.3, 0.7, 0.7};
    ic.units     = icUnits("gadget-mpc");
    // delta = 2 A cos(k z): 0.1 at z = 0, far from shell crossing.
    const double amplitude   = 0.05 / 38;
    const ParticleSet wave   = makeLptIcs(ic, [&](int kx, int ky, int kz) {
        return std::complex<double>(kx == 0 && ky == 0 && kz == 1 ? amplitude : 0.0, 0.0);
    });
    const ParticleSet points = makeLptIcs(ic, [](int, int, int) { return std::complex<double>(0, 0); });
    const ParticleSet start  = splitInPlane(wave, ic.boxSize / ic.nGrid);
    Parameters p;
    p.box_size               = ic.boxSize;
    p.pm_grid                = 0;
    p.gravitational_constant = ic.units.gravitationalConstant;
    p.epsilon_squared        = 0;
    p.backend                = Backend::Cpu;
    ComovingSettings s;
    s.cosmology  = ic.cosmology;
    s.units      = CosmoUnits::GadgetMpc;
    s.aBegin     = start.time;
    s.aEnd       = 1.0;
    s.outputList = {0.5};
    s.dlna       = kLinearGrowthDlna;
    Simulation sim(start, p, s, forces);
    const double psi0 = planeWaveAmplitude(start, points, ic.boxSize);
    const double d0   = growthFactor(ic.cosmology, s.aBegin);
    std::array<double, 2> growth{};
    const double outputs[2] = {0.5, 1.0};
    for (int k = 0; k < 2; ++k)
    {
        while (sim.time() < outputs[k]) sim.step();
        EXPECT_EQ(sim.time(), outputs[k]);
        growth[k] =
            planeWaveAmplitude(sim.state(), points, ic.boxSize) / psi0 / (growthFactor(ic.cosmology, outputs[k]) / d0);
    }
    return growth;
}

} // namespace

TEST(LinearGrowth, ALongWaveGrowsAsTheGrowthFactorInLcdm)
{
    // The longest wave of a 4^3 box, exact Ewald forces: a plane wave's Zel'dovich motion is exact before
    // shell crossing (its second-order source vanishes), so its displacement grows as D(a) / D(a_begin), a
    // factor 38 here. This proves the ICs' velocities (f(a)), the drift and kick factors of LCDM and the
    // growth factor together, with nothing from a power spectrum measurement.
    const std::array<double, 2> growth = planeWaveGrowth(4, ForceOptions{true, false});
    EXPECT_NEAR(growth[0], 1.0, kLinearGrowthTolerance) << "a = 0.5";
    EXPECT_NEAR(growth[1], 1.0, kLinearGrowthTolerance) << "a = 1";
}

TEST(LinearGrowth, ALongWaveGrowsAsTheGrowthFactorUnderTheTree)
{
    // The same wave in an 8^3 box under the tree (theta 0.5, err_tol_force_acc 0.002): measured +1.09% at
    // a = 0.5 and +1.14% at a = 1 (with theta 0.5 everywhere +10%: in a near-uniform box the tree's error is
    // as large as the wave's pull; the error control opens every group of this near-lattice to theta / 2.25,
    // README, Periodic boxes). Not yet the 1% of the exact forces: the bound guards the measured figure.
    const std::array<double, 2> growth = planeWaveGrowth(8, ForceOptions{});
    std::printf("plane wave 8^3 under the tree: growth / (D / D_begin) = %.4f at a = 0.5, %.4f at a = 1\n", growth[0],
                growth[1]);
    EXPECT_NEAR(growth[0], 1.0, kLinearGrowthTreeTolerance) << "a = 0.5";
    EXPECT_NEAR(growth[1], 1.0, kLinearGrowthTreeTolerance) << "a = 1";
}

} // namespace octwalk

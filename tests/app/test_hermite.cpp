// octwalk hermite: the block-timestep Hermite integrator on libg6's CPU backend (OCTWALK_G6_BACKEND=cpu).
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/errors.h"
#include "host/cli/cli.h"
#include "host/io/snapshot.h"
#include "host/models/models.h"
#include "host/sim/hermite.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

class Hermite : public ::testing::Test
{
protected:
    void SetUp() override { ::setenv("OCTWALK_G6_BACKEND", "cpu", 1); }
};

/// Two bodies of total mass 1 on an orbit of semi-major axis 1 and eccentricity e, started at apocentre.
ParticleSet kepler(double e)
{
    ParticleSet p;
    p.resize(2);
    const double m1 = 0.75, m2 = 0.25, ra = 1 + e, va = std::sqrt((1 - e) / (1 + e));
    p.mass = {m1, m2};
    p.id   = {0, 1};
    p.pos  = {{-m2 * ra, 0, 0}, {m1 * ra, 0, 0}};
    p.vel  = {{0, -m2 * va, 0}, {0, m1 * va, 0}};
    return p;
}

void orbitElements(const ParticleSet& p, double& a, double& e)
{
    const Vec3d r = p.pos[1] - p.pos[0], v = p.vel[1] - p.vel[0];
    const double mu = p.mass[0] + p.mass[1], dist = std::sqrt(dot(r, r));
    a = -mu / (2 * (0.5 * dot(v, v) - mu / dist));
    const Vec3d h{r.y * v.z - r.z * v.y, r.z * v.x - r.x * v.z, r.x * v.y - r.y * v.x};
    e = std::sqrt(std::max(0.0, 1 - dot(h, h) / (mu * a)));
}

Parameters softening(double eps)
{
    Parameters p;
    p.epsilon_squared = eps * eps;
    return p;
}

/// |dE/E0| at the end of an equal-mass Plummer run of n bodies.
double plummerEnergyError(int64_t n, double eps, double tEnd, double eta, double etaStart)
{
    HermiteSettings s;
    s.eta      = eta;
    s.etaStart = etaStart;
    HermiteIntegrator h(makePlummer(n, 7), softening(eps), s, planSteps(0.0, tEnd, s.dtMax));
    while (!h.done()) h.advanceInterval();
    return std::fabs(h.diagnostics().relativeEnergyError);
}

std::string slurp(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

fs::path freshDir(const std::string& name)
{
    fs::path d = fs::temp_directory_path() / ("octwalk_hermite_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(d);
    return d;
}

/// Runs build/octwalk with args in a child process (one OpenMP thread, the CPU backend, output to log);
/// SIGKILLs it `delay` after `trigger` appears unless it ended first. The exit code or -signal.
int runAndKillAfter(const std::vector<std::string>& args, const fs::path& log, const fs::path& trigger,
                    std::chrono::milliseconds delay)
{
    std::vector<const char*> argv{OCTWALK_BINARY};
    for (const std::string& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0)
    {
        ::setenv("OMP_NUM_THREADS", "1", 1);
        ::setenv("OCTWALK_G6_BACKEND", "cpu", 1);
        FILE* f = std::freopen(log.c_str(), "a", stdout);
        if (f) ::dup2(::fileno(stdout), STDERR_FILENO);
        ::execv(OCTWALK_BINARY, const_cast<char* const*>(argv.data()));
        ::_exit(127);
    }
    int status     = 0;
    auto deadline  = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    bool triggered = false;
    while (std::chrono::steady_clock::now() < deadline)
    {
        if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        if (!triggered && fs::exists(trigger))
        {
            triggered = true;
            deadline  = std::chrono::steady_clock::now() + delay;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

} // namespace

// Block steps resolve the pericentre of an e = 0.9 orbit: over 100 orbits at eta = 0.001 the elements
// hold to 1e-6 (measured: |da| = 7e-8, |de| = 1.3e-8 in 111561 block steps). The error of this 4th-order
// scheme goes as eta^2: at the default eta = 0.02 the same orbits lose 1.5e-4 in a, 2.4e-5 in e.
TEST_F(Hermite, EccentricBinaryKeepsItsElementsOver100Orbits)
{
    const double twoPi = 6.283185307179586;
    HermiteSettings s;
    s.eta = 0.001;
    HermiteIntegrator h(kepler(0.9), softening(0), s, planSteps(0.0, 100 * twoPi, s.dtMax));
    while (!h.done()) h.advanceInterval();
    double a = 0, e = 0;
    orbitElements(h.state(), a, e);
    EXPECT_NEAR(a, 1.0, 1e-6);
    EXPECT_NEAR(e, 0.9, 1e-6);
    EXPECT_NEAR(h.time(), 100 * twoPi, 1e-12);
    // The pericentre (distance 0.1) needs steps far below the apocentre's.
    EXPECT_LT(h.counts().blockSteps, 100 * 2000);
    EXPECT_GT(h.counts().blockSteps, 100 * 500);
}

// The kirin set-up (equal-mass Plummer, eps = 1/256) at N = 1024: |dE/E0| <= 1e-6 over a time unit at
// eta = 0.02 (measured 4.1e-8), and the error of this 4th-order scheme falls as eta^2 (steps go as
// sqrt(eta)): measured 4.3x from eta = 0.02 to 0.01 (9.7e-9); scripts/hermite_accuracy.sh has more.
TEST_F(Hermite, PlummerEnergyErrorIsSmallAndFallsWithEta)
{
    const double eps    = 1.0 / 256;
    const double coarse = plummerEnergyError(1024, eps, 1.0, 0.02, 0.01);
    const double fine   = plummerEnergyError(1024, eps, 1.0, 0.01, 0.01);
    EXPECT_LE(coarse, 1e-6);
    EXPECT_GE(coarse / fine, 3.0) << "coarse " << coarse << ", fine " << fine;
}

TEST_F(Hermite, StepsArePowersOfTwoOfTheIntervalAndBodiesStaySynchronised)
{
    HermiteSettings s;
    s.dtMax = 0.1;
    HermiteIntegrator h(makePlummer(64, 3), softening(0.01), s, planSteps(0.0, 0.25, s.dtMax));
    EXPECT_EQ(h.plan().numSteps, 3);
    while (!h.done()) h.advanceInterval();
    EXPECT_DOUBLE_EQ(h.time(), 0.25);
    EXPECT_EQ(h.state().time, h.time());
    const double ratio = h.plan().h / h.shortestStep();
    EXPECT_EQ(ratio, std::exp2(std::round(std::log2(ratio))));
    EXPECT_LE(h.longestStep(), h.plan().h);
    EXPECT_GT(h.counts().bodySteps, h.counts().blockSteps);
}

#ifdef _OPENMP
// Blocks of more than 256 bodies are predicted and corrected in parallel: the same bits for 1 and 2 threads.
TEST_F(Hermite, OneAndTwoThreadsAreBitIdentical)
{
    auto finalState = [](int threads) {
        omp_set_num_threads(threads);
        HermiteSettings s;
        s.dtMax = 1.0 / 64;
        HermiteIntegrator h(makePlummer(600, 5), softening(1.0 / 64), s, planSteps(0.0, 1.0 / 32, s.dtMax));
        while (!h.done()) h.advanceInterval();
        return h.state();
    };
    const int saved       = omp_get_max_threads();
    const ParticleSet one = finalState(1);
    const ParticleSet two = finalState(2);
    omp_set_num_threads(saved);
    ASSERT_EQ(one.size(), two.size());
    EXPECT_EQ(std::memcmp(one.pos.data(), two.pos.data(), one.pos.size() * sizeof(Vec3d)), 0);
    EXPECT_EQ(std::memcmp(one.vel.data(), two.vel.data(), one.vel.size() * sizeof(Vec3d)), 0);
}
#endif

// G enters through the masses given to the library: with G = 2 the potential energy doubles (exactly:
// a power of two) and the kinetic energy does not change.
TEST_F(Hermite, GravitationalConstantScalesThePotential)
{
    const ParticleSet bodies = makePlummer(128, 2);
    Parameters one = softening(0.01), two = softening(0.01);
    two.gravitational_constant = 2;
    HermiteSettings s;
    HermiteIntegrator a(bodies, one, s, planSteps(0, 1, s.dtMax)), b(bodies, two, s, planSteps(0, 1, s.dtMax));
    const HermiteDiagnostics da = a.diagnostics(), db = b.diagnostics();
    EXPECT_EQ(db.potential, 2 * da.potential);
    EXPECT_EQ(db.kinetic, da.kinetic);
    EXPECT_LT(da.potential, 0);
}

TEST_F(Hermite, BadBodiesAndSettingsAreRefusedByName)
{
    ParticleSet p = kepler(0.5);
    p.vel[1].x    = NAN;
    EXPECT_THROW(HermiteIntegrator(p, softening(0), HermiteSettings{}, planSteps(0, 1, 1.0 / 16)), InputError);
    p         = kepler(0.5);
    p.mass[0] = 0;
    try
    {
        HermiteIntegrator h(p, softening(0), HermiteSettings{}, planSteps(0, 1, 1.0 / 16));
        FAIL() << "a massless body was accepted";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("body 0"), std::string::npos) << e.what();
    }
    HermiteSettings s;
    s.eta = -0.1;
    EXPECT_THROW(validate(s), ParameterError);
    s          = HermiteSettings{};
    s.etaStart = 2;
    EXPECT_THROW(validate(s), ParameterError);
    s       = HermiteSettings{};
    s.dtMax = INFINITY;
    EXPECT_THROW(validate(s), ParameterError);
    // Coincident bodies without softening are refused by name (the library would give them no force).
    p        = kepler(0.5);
    p.pos[1] = p.pos[0];
    EXPECT_THROW(HermiteIntegrator(p, softening(0), HermiteSettings{}, planSteps(0, 1, 1.0 / 16)), InputError);
}

TEST_F(Hermite, RestartIsBitIdentical)
{
    const fs::path base     = freshDir("restart");
    const std::string whole = (base / "whole").string(), split = (base / "split").string();
    CliResult a = runOctwalk({"hermite", "--n", "256", "--t-end", "0.25", "--output-dir", whole.c_str(), "--quiet"});
    ASSERT_EQ(a.code, 0) << a.err;
    CliResult b = runOctwalk({"hermite", "--n", "256", "--t-end", "0.125", "--output-dir", split.c_str(), "--quiet"});
    ASSERT_EQ(b.code, 0) << b.err;
    CliResult c = runOctwalk({"hermite", "--restart", split.c_str(), "--t-end", "0.25", "--quiet"});
    ASSERT_EQ(c.code, 0) << c.err;
    const fs::path last = "snap_000004.tipsy";
    ASSERT_TRUE(fs::exists(base / "whole" / last));
    EXPECT_EQ(slurp(base / "whole" / last), slurp(base / "split" / last));
    EXPECT_EQ(slurp(base / "whole" / "checkpoint.bin"), slurp(base / "split" / "checkpoint.bin"));
    EXPECT_EQ(slurp(base / "whole" / "energy.csv"), slurp(base / "split" / "energy.csv"));
    const std::string json = slurp(base / "whole" / "run.json");
    for (const char* key : {"\"eta\": 0.02", "\"library_fraction\"", "\"body_steps\"", "\"octwalk\""})
        EXPECT_NE(json.find(key), std::string::npos) << key;
    // The library's share is part of the integration's time.
    const size_t at = json.find("\"library_fraction\": ");
    ASSERT_NE(at, std::string::npos);
    const double fraction = std::strtod(json.c_str() + at + 20, nullptr);
    EXPECT_GT(fraction, 0.0);
    EXPECT_LE(fraction, 1.0);

    // A restart refuses what the checkpoint fixes, and a leapfrog checkpoint is not a Hermite one.
    CliResult fixed = runOctwalk({"hermite", "--restart", split.c_str(), "--eta", "0.01"});
    EXPECT_EQ(fixed.code, 2);
    EXPECT_NE(fixed.err.find("--eta cannot be changed on --restart"), std::string::npos) << fixed.err;
    const std::string leap = (base / "leap").string();
    ASSERT_EQ(runOctwalk({"run", "--n", "256", "--t-end", "0.015625", "--output-dir", leap.c_str(), "--quiet",
                          "--backend", "cpu"})
                  .code,
              0);
    CliResult wrong = runOctwalk({"hermite", "--restart", leap.c_str()});
    EXPECT_EQ(wrong.code, 1);
    EXPECT_NE(wrong.err.find("not one of octwalk hermite"), std::string::npos) << wrong.err;
    fs::remove_all(base);
}

TEST_F(Hermite, BadOptionsAreOneLineBeforeAnyWork)
{
    const fs::path base   = freshDir("options");
    const std::string dir = (base / "out").string();
    const std::vector<std::vector<const char*>> bad{
        {"--eta", "-0.02"},      {"--eta", "0"},          {"--eta-start", "1.5"},
        {"--dt-max", "0"},       {"--dt-max", "nan"},     {"--epsilon", "-1"},
        {"--t-end", "-1"},       {"--energy-every", "0"}, {"--n", "1"},
        {"--theta", "0.5"},      {"--format", "fits"},    {"--checkpoint-every", "-1"},
        {"--model", "nonesuch"},
    };
    for (const auto& extra : bad)
    {
        std::vector<const char*> args{"hermite", "--output-dir", dir.c_str(), "--quiet"};
        args.insert(args.end(), extra.begin(), extra.end());
        CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 2) << extra[0] << " " << extra[1] << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find("octwalk hermite"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(dir)) << extra[0];
    }
    CliResult help = runOctwalk({"hermite", "--help"});
    EXPECT_EQ(help.code, 0);
    for (const char* word : {"--eta", "--eta-start", "--dt-max", "--epsilon", "Units"})
        EXPECT_NE(help.out.find(word), std::string::npos) << word;
    fs::remove_all(base);
}

// A step below h / 2^48 is explained by what the body does: a body far faster than the others points at the
// input's velocities (it blamed a close encounter and the softening), and forces that overflow Aarseth's
// criterion say so (it printed "its step -nan").
TEST_F(Hermite, AStepTooShortIsExplainedByItsCause)
{
    ParticleSet fast = makePlummer(64, 5);
    fast.vel[3]      = {1e14, 0, 0};
    std::string message;
    try
    {
        HermiteIntegrator h(fast, softening(0.01), HermiteSettings{}, planSteps(0, 1, 1.0 / 16));
        while (!h.done()) h.advanceInterval();
    }
    catch (const InputError& e)
    {
        message = e.what();
    }
    EXPECT_NE(message.find("body 3 (id 3)"), std::string::npos) << message;
    EXPECT_NE(message.find("times the bodies' median speed"), std::string::npos) << message;
    EXPECT_EQ(message.find("epsilon"), std::string::npos) << message;

    Parameters huge             = softening(0.01);
    huge.gravitational_constant = 1e300;
    message.clear();
    try
    {
        HermiteIntegrator h(makePlummer(64, 5), huge, HermiteSettings{}, planSteps(0, 1, 1.0 / 16));
    }
    catch (const InputError& e)
    {
        message = e.what();
    }
    EXPECT_NE(message.find("overflows double precision"), std::string::npos) << message;
    EXPECT_EQ(message.find("nan"), std::string::npos) << message;
}

// Four unsoftened bodies stepped with eta = 1: a close encounter the steps do not follow throws the energy
// off (it ended with exit 0 at dE/E0 = 6.3; a head-on collision the same way at 2.2). The run stops at the
// first energy.csv row beyond max_energy_error, which the user can raise or switch off (0).
TEST_F(Hermite, EnergyLostBeyondTheBoundStopsTheRun)
{
    const fs::path base      = freshDir("encounter");
    const std::string bound  = (base / "bound").string();
    const std::string nobody = (base / "unbounded").string();
    CliResult r = runOctwalk({"hermite", "--n", "4", "--eta", "1", "--epsilon", "0", "--t-end", "4", "--output-dir",
                              bound.c_str(), "--quiet"});
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("exceeds max_energy_error = 0.1"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(fs::exists(fs::path(bound) / "energy.csv"));
    CliResult off = runOctwalk({"hermite", "--n", "4", "--eta", "1", "--epsilon", "0", "--t-end", "4", "--output-dir",
                                nobody.c_str(), "--quiet", "--max-energy-error", "0"});
    EXPECT_EQ(off.code, 0) << off.err;
    fs::remove_all(base);
}

// Direct summation of an isolated system: the tree's options and the periodic box are not offered, and a
// periodic or cosmological snapshot is refused rather than integrated as an isolated cluster.
TEST_F(Hermite, TreeAndPeriodicOptionsAreNotOfferedAndPeriodicInputIsRefused)
{
    const fs::path base   = freshDir("periodic");
    const std::string dir = (base / "out").string();
    const std::vector<std::vector<const char*>> notOffered{
        {"--box-size", "10"}, {"--traceless-quadrupole"}, {"--err-tol-force-acc", "0.01"}, {"--far-field-ratio", "4"}};
    CliResult help = runOctwalk({"hermite", "--help"});
    ASSERT_EQ(help.code, 0);
    for (const auto& extra : notOffered)
    {
        EXPECT_EQ(help.out.find(extra[0]), std::string::npos) << extra[0];
        std::vector<const char*> args{"hermite", "--output-dir", dir.c_str(), "--quiet", "--n", "16"};
        args.insert(args.end(), extra.begin(), extra.end());
        CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 2) << extra[0] << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_FALSE(fs::exists(dir)) << extra[0];
    }

    fs::create_directories(base);
    ParticleSet box = makeModel("uniform", 32, 3);
    box.boxSize     = 4;
    for (Vec3d& x : box.pos) x = {x.x + 2, x.y + 2, x.z + 2};
    const std::string periodic = (base / "box.hdf5").string();
    const std::string gadget   = (base / "box.gadget").string();
    writeSnapshot(periodic, SnapshotFormat::Hdf5, box);
    writeSnapshot(gadget, SnapshotFormat::Gadget2, box);
    for (const std::string& input : {periodic, gadget})
    {
        CliResult r = runOctwalk({"hermite", "--input", input.c_str(), "--output-dir", dir.c_str(), "--quiet"});
        EXPECT_EQ(r.code, 2) << r.err;
        EXPECT_NE(r.err.find("periodic box of side 4"), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_FALSE(fs::exists(dir));
    }
    Parameters p = softening(0.01);
    EXPECT_THROW(HermiteIntegrator(box, p, HermiteSettings{}, planSteps(0, 1, 1.0 / 16)), InputError);
    fs::remove_all(base);
}

// A run killed (SIGKILL) between checkpoints restarts from the last one, drops the rows written after it
// and ends with the checkpoint, diagnostics and snapshot of a run never interrupted, byte for byte.
TEST_F(Hermite, KilledRunRestartsToTheSameBytes)
{
    const fs::path base  = freshDir("kill");
    const fs::path whole = base / "whole", killed = base / "killed";
    fs::create_directories(base);
    auto args = [](const fs::path& dir) {
        return std::vector<std::string>{"hermite", "--n",          "384",        "--t-end", "1", "--checkpoint-every",
                                        "3",       "--output-dir", dir.string(), "--quiet"};
    };
    ASSERT_EQ(runAndKillAfter(args(whole), base / "whole.log", base / "never", std::chrono::milliseconds(0)), 0)
        << slurp(base / "whole.log");
    const int code =
        runAndKillAfter(args(killed), base / "killed.log", killed / "checkpoint.bin", std::chrono::milliseconds(120));
    EXPECT_TRUE(code == -SIGKILL || code == 0) << code;
    const std::string dir = killed.string();
    ASSERT_EQ(runAndKillAfter({"hermite", "--restart", dir, "--quiet"}, base / "restart.log", base / "never",
                              std::chrono::milliseconds(0)),
              0)
        << slurp(base / "restart.log");
    for (const char* f : {"checkpoint.bin", "energy.csv", "lagrange.csv", "snap_000016.tipsy"})
        EXPECT_EQ(slurp(whole / f), slurp(killed / f)) << f;
    fs::remove_all(base);
}

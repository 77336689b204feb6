// Outputs on a disk that fails: a row of energy.csv, lagrange.csv, timing.csv or timeline.csv that does not
// reach its file stops the run with an error naming the file and the step (never a silent gap), and a
// restart rebuilds the headers of the files it finds missing. A snapshot that cannot be written (HDF5
// included) is one line and exit 1, never a crash, and leaves no file behind.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "host/cli/cli.h"
#include "host/models/models.h"
#include "host/sim/diagnostics_files.h"
#include "host/sim/hermite.h"
#include "host/sim/run.h"
#include "host/sim/simulation.h"
#include "test_helpers.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

fs::path freshDir(const std::string& name)
{
    const fs::path d = fs::temp_directory_path() / ("octwalk_outfail_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

/// Makes every descriptor of this process open on `file` write to /dev/full from now on (writes fail with
/// ENOSPC), as a disk that fills up while a run holds its files open.
int failWritesTo(const fs::path& file)
{
    const std::string target = fs::canonical(file).string();
    const int full           = ::open("/dev/full", O_WRONLY);
    if (full < 0) return 0;
    int redirected = 0;
    for (const fs::directory_entry& e : fs::directory_iterator("/proc/self/fd"))
    {
        std::error_code ec;
        const fs::path linked = fs::read_symlink(e.path(), ec);
        if (ec || linked.string() != target) continue;
        if (::dup2(full, std::stoi(e.path().filename().string())) >= 0) ++redirected;
    }
    ::close(full);
    return redirected;
}

std::string slurp(const fs::path& p)
{
    std::ifstream f(p);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

/// The FormatError message of a run whose `file` starts failing after step 2 (empty when none was thrown).
std::string runUntilWritesFail(const std::string& file)
{
    const fs::path dir = freshDir("run_" + file);
    Simulation sim(makePlummer(64, 3), test::cpuParameters(0.5, 0.01), planSteps(0.0, 6.0 / 64, 1.0 / 64));
    RunControl control;
    control.timeline  = true;
    control.afterStep = [&](const Simulation& s, const StepTiming&) {
        if (s.stepIndex() == 2) EXPECT_GT(failWritesTo(dir / file), 0) << file;
    };
    std::string message;
    try
    {
        runSimulation(sim, dir, RunSettings{}, false, control);
    }
    catch (const FormatError& e)
    {
        message = e.what();
    }
    fs::remove_all(dir);
    return message;
}

/// The built binary's exit status and its standard error, run with files limited to `bytes` (a write past
/// that fails with EFBIG, SIGXFSZ ignored), as on a disk with that much room left.
struct ChildResult
{
    int status = -1;
    std::string err;
};

ChildResult runWithFileLimit(const std::vector<std::string>& args, rlim_t bytes, const fs::path& errFile)
{
    std::vector<const char*> argv{OCTWALK_BINARY};
    for (const std::string& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0)
    {
        const int err  = ::open(errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(err, 2);
        ::dup2(null, 1);
        const struct rlimit limit = {bytes, bytes};
        ::setrlimit(RLIMIT_FSIZE, &limit);
        ::signal(SIGXFSZ, SIG_IGN);
        ::execv(OCTWALK_BINARY, const_cast<char* const*>(argv.data()));
        ::_exit(127);
    }
    ChildResult r;
    ::waitpid(pid, &r.status, 0);
    r.err = slurp(errFile);
    return r;
}

/// Names in dir that look like the atomic writer's temporaries.
std::vector<std::string> temporaries(const fs::path& dir)
{
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::directory_iterator(dir))
        if (e.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(e.path().string());
    return found;
}

} // namespace

TEST(OutputFailures, RunStopsAtTheFirstRowThatDoesNotReachItsFile)
{
    for (const char* file : {"energy.csv", "lagrange.csv", "timing.csv", "timeline.csv"})
    {
        const std::string message = runUntilWritesFail(file);
        EXPECT_NE(message.find(std::string(file) + "' at step 3"), std::string::npos) << file << ": " << message;
        EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;
    }
}

TEST(OutputFailures, HermiteStopsAtTheFirstRowThatDoesNotReachItsFile)
{
    ::setenv("OCTWALK_G6_BACKEND", "cpu", 1);
    for (const char* file : {"energy.csv", "lagrange.csv"})
    {
        const fs::path dir = freshDir(std::string("hermite_") + file);
        Parameters p;
        p.epsilon_squared = 1e-4;
        HermiteSettings s;
        HermiteIntegrator h(makePlummer(32, 5), p, s, planSteps(0.0, 4 * s.dtMax, s.dtMax));
        HermiteRunControl control;
        control.afterInterval = [&](const HermiteIntegrator& it, const HermiteDiagnostics*) {
            if (it.stepIndex() == 1) EXPECT_GT(failWritesTo(dir / file), 0);
        };
        std::string message;
        try
        {
            runHermite(h, dir, RunSettings{}, false, control);
        }
        catch (const FormatError& e)
        {
            message = e.what();
        }
        EXPECT_NE(message.find(std::string(file) + "' at step 2"), std::string::npos) << file << ": " << message;
        fs::remove_all(dir);
    }
}

TEST(OutputFailures, HeadersThatCannotBeWrittenAreAnErrorBeforeTheRun)
{
    for (const char* file : {"energy.csv", "lagrange.csv", "timing.csv"})
    {
        const fs::path dir = freshDir(std::string("header_") + file);
        fs::create_symlink("/dev/full", dir / file);
        try
        {
            DiagnosticsFiles files(dir, "# test\n", false, 0);
            ADD_FAILURE() << file << ": no error";
        }
        catch (const FormatError& e)
        {
            EXPECT_NE(std::string(e.what()).find(std::string(file) + "' at step 0"), std::string::npos) << e.what();
        }
        fs::remove_all(dir);
    }
}

TEST(OutputFailures, ARestartRebuildsTheHeadersOfMissingFiles)
{
    const fs::path base = freshDir("restart_headers");
    for (const char* command : {"run", "hermite"})
    {
        ::setenv("OCTWALK_G6_BACKEND", "cpu", 1);
        const std::string dir = (base / command).string();
        std::vector<const char*> start{command,  "--n",          "128",       "--t-end",
                                       "0.0625", "--output-dir", dir.c_str(), "--quiet"};
        if (std::string(command) == "run") start.insert(start.end(), {"--backend", "cpu"});
        ASSERT_EQ(runOctwalk(start).code, 0) << command;
        const std::string energyHeader   = slurp(base / command / "energy.csv");
        const std::string lagrangeHeader = slurp(base / command / "lagrange.csv");
        fs::remove(base / command / "energy.csv");
        fs::remove(base / command / "lagrange.csv");
        const CliResult r = runOctwalk({command, "--restart", dir.c_str(), "--t-end", "0.125", "--quiet"});
        ASSERT_EQ(r.code, 0) << r.err;
        const std::string energy   = slurp(base / command / "energy.csv"),
                          lagrange = slurp(base / command / "lagrange.csv");
        // The version line is the same, and the column names follow it.
        EXPECT_EQ(energy.substr(0, energy.find('\n')), energyHeader.substr(0, energyHeader.find('\n'))) << command;
        EXPECT_NE(energy.find("\nstep,time,"), std::string::npos) << command << ": " << energy.substr(0, 300);
        EXPECT_NE(lagrange.find("\nstep,time,r_"), std::string::npos) << command << ": " << lagrange.substr(0, 300);
        EXPECT_EQ(lagrange.substr(0, lagrange.find('\n')), lagrangeHeader.substr(0, lagrangeHeader.find('\n')));
    }
    fs::remove_all(base);
}

TEST(OutputFailures, ARestartRefusesARowThatIsNotTheRunsNamingTheLine)
{
    const fs::path dir    = freshDir("restart_bad_row");
    const std::string run = (dir / "run").string();
    ASSERT_EQ(runOctwalk({"run", "--n", "128", "--t-end", "0.0625", "--backend", "cpu", "--output-dir", run.c_str(),
                          "--quiet"})
                  .code,
              0);
    {
        std::ofstream energy(dir / "run" / "energy.csv", std::ios::app);
        energy << "12abc,garbage\n";
    }
    const CliResult r = runOctwalk({"run", "--restart", run.c_str(), "--t-end", "0.125", "--quiet"});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("energy.csv' line"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not a row of this run"), std::string::npos) << r.err;
    fs::remove_all(dir);
}

TEST(OutputFailures, SnapshotsThatDoNotFitAreOneLineAndExitOne)
{
    const fs::path dir     = freshDir("snapshots");
    const std::string tips = (dir / "in.tipsy").string();
    ASSERT_EQ(runOctwalk({"ic", "--n", "2000", "-o", tips.c_str()}).code, 0);
    const std::string out = (dir / "out.hdf5").string(), runDir = (dir / "run").string();
    const std::vector<std::vector<std::string>> commands = {
        {"ic", "--n", "2000", "--format", "hdf5", "-o", out},
        {"convert", tips, out, "--format", "hdf5"},
        {"run", "--n", "2000", "--t-end", "0.015625", "--backend", "cpu", "--quiet", "--format", "hdf5", "--output-dir",
         runDir},
    };
    for (const std::vector<std::string>& args : commands)
    {
        const ChildResult r = runWithFileLimit(args, 32 * 1024, dir / "err.txt");
        ASSERT_TRUE(WIFEXITED(r.status)) << args[0] << ": killed by signal " << WTERMSIG(r.status) << "\n" << r.err;
        EXPECT_EQ(WEXITSTATUS(r.status), 1) << args[0] << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args[0] << ": " << r.err;
        EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out)) << args[0];
        EXPECT_TRUE(temporaries(dir).empty()) << args[0];
        if (fs::exists(runDir)) EXPECT_TRUE(temporaries(runDir).empty());
        fs::remove_all(runDir);
    }
    fs::remove_all(dir);
}

TEST(OutputFailures, ARestartFromThePreviousCheckpointLeavesNoTemporary)
{
    const fs::path dir     = freshDir("restart_prev") / "run";
    const std::string path = dir.string();
    ASSERT_EQ(runOctwalk({"run", "--n", "128", "--t-end", "0.0625", "--checkpoint-every", "2", "--output-dir",
                          path.c_str(), "--quiet", "--backend", "cpu"})
                  .code,
              0);
    ASSERT_TRUE(fs::exists(dir / "checkpoint.bin.prev"));
    std::ofstream(dir / "checkpoint.bin", std::ios::trunc) << "damaged";
    const CliResult r = runOctwalk({"run", "--restart", path.c_str(), "--t-end", "0.125", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("using the previous one"), std::string::npos) << r.out;
    EXPECT_TRUE(temporaries(dir).empty()) << temporaries(dir).front();
    EXPECT_TRUE(fs::exists(dir / "checkpoint.bin.damaged"));
    fs::remove_all(dir.parent_path());
}

TEST(OutputFailures, IcLeavesNeitherSnapshotNorSidecarWhenTheSidecarFails)
{
    // A name whose snapshot (and its temporary, 11 characters longer) fits in NAME_MAX = 255 but whose
    // sidecar's temporary (16 longer) does not: the sidecar alone cannot be written.
    const fs::path dir     = freshDir("ic_sidecar");
    const std::string name = (dir / (std::string(236, 'x') + ".tipsy")).string();
    const CliResult r      = runOctwalk({"ic", "--n", "1000", "-o", name.c_str()});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(".json"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(name)) << "the snapshot was left without its sidecar";
    EXPECT_TRUE(fs::is_empty(dir));
    fs::remove_all(dir);
}

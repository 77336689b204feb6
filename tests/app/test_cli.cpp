// The command line: bad options are one clear line and a non-zero exit code, before any work.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <chrono>
#include <csignal>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <vector>

#include "host/cli/cli.h"
#include "host/cli/options.h"
#include "host/core/params.h"
#include "host/sim/simulation.h"

namespace {

struct CliResult
{
    int code;
    std::string out, err;
};

CliResult run(std::vector<const char*> args)
{
    args.insert(args.begin(), "octwalk");
    std::ostringstream out, err;
    int code = octwalk::runCli(int(args.size()), args.data(), out, err);
    return {code, out.str(), err.str()};
}

int lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

} // namespace

TEST(Cli, HelpListsUnitsAndDefaults)
{
    CliResult r = run({"forces", "--help"});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("Units"), std::string::npos);
    EXPECT_NE(r.out.find("--opening-angle"), std::string::npos);
    EXPECT_NE(r.out.find("bonsai"), std::string::npos);
}

TEST(Cli, RejectsBadOptionsWithOneLine)
{
    for (auto args : std::vector<std::vector<const char*>>{{"forces", "--bogus"},
                                                           {"forces", "--n", "abc"},
                                                           {"forces", "--theta", "0"},
                                                           {"forces", "--theta", "0.5", "--theta", "0.6"},
                                                           {"forces", "--theta", "0.5", "--opening-angle", "0.5"},
                                                           {"forces", "--epsilon", "-1"},
                                                           {"forces", "--mac", "barnes"},
                                                           {"forces", "--n", "1"},
                                                           {"forces", "stray"},
                                                           {"frobnicate"}})
    {
        CliResult r = run(args);
        EXPECT_EQ(r.code, 2) << args[1];
        EXPECT_EQ(lines(r.err), 1) << r.err;
    }
}

TEST(Cli, ForcesRunsAndRefusesToOverwrite)
{
    std::string path = (std::filesystem::temp_directory_path() / "octwalk_cli_test.json").string();
    std::filesystem::remove(path);
    CliResult r = run({"forces", "--n", "3000", "--sample", "100", "--backend", "cpu", "-o", path.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("median"), std::string::npos);
    std::ifstream f(path);
    std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(json.find("\"opening_angle\": 0.5"), std::string::npos);
    EXPECT_NE(json.find("\"git\""), std::string::npos);
    CliResult again = run({"forces", "--n", "3000", "--backend", "cpu", "-o", path.c_str()});
    EXPECT_EQ(again.code, 2);
    EXPECT_NE(again.err.find("already exists"), std::string::npos);
    std::filesystem::remove(path);
}

namespace {

std::string slurp(const std::filesystem::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

} // namespace

TEST(Cli, RunRestartIsBitIdenticalAndOutputsAreComplete)
{
    namespace fs  = std::filesystem;
    fs::path base = fs::temp_directory_path() / ("octwalk_cli_run_" + std::to_string(::getpid()));
    fs::remove_all(base);
    std::string whole = (base / "whole").string(), split = (base / "split").string();
    ASSERT_EQ(run({"run", "--n", "2000", "--t-end", "0.125", "--output-dir", whole.c_str(), "--quiet", "--backend",
                   "cpu", "--format", "gadget2"})
                  .code,
              0);
    ASSERT_EQ(run({"run", "--n", "2000", "--t-end", "0.0625", "--output-dir", split.c_str(), "--quiet", "--backend",
                   "cpu", "--format", "gadget2"})
                  .code,
              0);
    std::string ckpt = (base / "split" / "checkpoint.bin").string();
    CliResult r      = run({"run", "--restart", ckpt.c_str(), "--t-end", "0.125", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(slurp(base / "whole" / "checkpoint.bin"), slurp(base / "split" / "checkpoint.bin"));
    EXPECT_EQ(slurp(base / "whole" / "energy.csv"), slurp(base / "split" / "energy.csv"));
    EXPECT_EQ(slurp(base / "whole" / "snap_000016.gadget"), slurp(base / "split" / "snap_000016.gadget"));
    for (const char* f : {"run.json", "lagrange.csv", "snap_000000.gadget"})
        EXPECT_TRUE(fs::exists(base / "whole" / f)) << f;

    // The same directory again is refused before any work; restart options that the checkpoint fixes too.
    CliResult again = run({"run", "--n", "2000", "--output-dir", whole.c_str()});
    EXPECT_EQ(again.code, 2);
    EXPECT_NE(again.err.find("not empty"), std::string::npos);
    CliResult changed = run({"run", "--restart", ckpt.c_str(), "--theta", "0.7"});
    EXPECT_EQ(changed.code, 2);
    // Every solver option the table fixes on restart is refused, whatever its spelling.
    for (const std::string& option : octwalk::cli::fixedOnRestartOptions())
    {
        std::string flag = "--" + option;
        bool isSwitch    = option == "merge-groups" || option == "monopole";
        std::vector<const char*> args{"run", "--restart", ckpt.c_str(), flag.c_str()};
        if (!isSwitch) args.push_back("1");
        CliResult fixed = run(args);
        EXPECT_EQ(fixed.code, 2) << option;
        EXPECT_NE(fixed.err.find("--" + option + " cannot be changed on --restart"), std::string::npos) << fixed.err;
    }
    fs::remove_all(base);
}

TEST(Cli, RunRejectsBadOptionsBeforeWriting)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_bad_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    std::string d = dir.string();
    for (auto args :
         std::vector<std::vector<const char*>>{{"run", "--dt", "0", "--output-dir", d.c_str()},
                                               {"run", "--dt", "0.1", "--timestep", "0.1", "--output-dir", d.c_str()},
                                               {"run", "--t-end", "-1", "--output-dir", d.c_str()},
                                               {"run", "--format", "fits", "--output-dir", d.c_str()},
                                               {"run", "--energy-every", "0", "--output-dir", d.c_str()},
                                               {"run", "--model", "galaxy", "--input", "x", "--output-dir", d.c_str()},
                                               {"run", "--n", "-5", "--output-dir", d.c_str()}})
    {
        CliResult r = run(args);
        EXPECT_NE(r.code, 0) << args[1];
        EXPECT_EQ(lines(r.err), 1) << r.err;
        EXPECT_FALSE(fs::exists(dir)) << args[1];
    }
}

TEST(Cli, IcWritesSnapshotAndSettings)
{
    namespace fs = std::filesystem;
    fs::path f   = fs::temp_directory_path() / ("octwalk_ic_" + std::to_string(::getpid()) + ".tipsy");
    fs::remove(f);
    fs::remove(f.string() + ".json");
    CliResult r = run({"ic", "galaxy", "--n", "3000", "-o", f.string().c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(slurp(f.string() + ".json").find("\"model\": \"galaxy\""), std::string::npos);
    EXPECT_EQ(run({"ic", "plummer", "-o", f.string().c_str()}).code, 2);
    EXPECT_EQ(run({"convert", f.string().c_str(), f.string().c_str()}).code, 2);
    fs::remove(f);
    fs::remove(f.string() + ".json");
}

TEST(Cli, SigintWritesACheckpointAndStops)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_sigint_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    std::string d = dir.string();
    // The signal arrives while the run is stepping (a long run of a small model): once energy.csv has
    // a row after the initial one, the handlers are installed, however slow the machine.
    std::thread interrupter([dir] {
        auto stepped = [&dir] {
            std::ifstream f(dir / "energy.csv");
            int lines = 0;
            for (std::string line; std::getline(f, line);) ++lines;
            return lines >= 4; // comment, header, step 0, step 1
        };
        for (int k = 0; k < 6000 && !stepped(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::raise(SIGINT);
    });
    CliResult r =
        run({"run", "--n", "1000", "--t-end", "1000", "--output-dir", d.c_str(), "--quiet", "--backend", "cpu"});
    interrupter.join();
    EXPECT_EQ(r.code, 128 + SIGINT) << r.err;
    EXPECT_NE(r.out.find("checkpoint written"), std::string::npos);
    ASSERT_TRUE(fs::exists(dir / "checkpoint.bin"));
    // The checkpoint holds the interrupted state, part-way through the run.
    octwalk::Simulation resumed = octwalk::Simulation::fromCheckpoint((dir / "checkpoint.bin").string());
    EXPECT_GT(resumed.stepIndex(), 0);
    EXPECT_LT(resumed.stepIndex(), resumed.plan().numSteps);
    fs::remove_all(dir);
}

TEST(Cli, SolverOptionsAndDefaultsComeFromTheTable)
{
    for (const char* command : {"forces", "run", "profile", "accuracy"})
    {
        CliResult r = run({command, "--help"});
        ASSERT_EQ(r.code, 0) << command;
        for (const char* option : {"--epsilon", "--G", "--backend", "--merge-groups"})
        {
            EXPECT_NE(r.out.find(option), std::string::npos) << command << " " << option;
        }
        EXPECT_NE(r.out.find("--n-leaf arg (=16)"), std::string::npos) << command;
        EXPECT_NE(r.out.find("--n-group arg (=64)"), std::string::npos) << command;
    }
    CliResult forces = run({"forces", "--help"});
    for (const octwalk::ParameterInfo& row : octwalk::parameterTable())
    {
        EXPECT_NE(forces.out.find(std::string("--") + row.option), std::string::npos) << row.option;
    }
    EXPECT_NE(forces.out.find("--epsilon arg (=0) "), std::string::npos);
    EXPECT_NE(run({"run", "--help"}).out.find("--epsilon arg (=0.01)"), std::string::npos);
    EXPECT_NE(run({"profile", "--help"}).out.find("--theta arg (=0.5)"), std::string::npos);
    // A run's parameters: the table's defaults, run's softening, and the options given.
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_params_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    ASSERT_EQ(run({"run", "--n", "100", "--t-end", "0.0078125", "--output-dir", dir.string().c_str(), "--quiet",
                   "--backend", "cpu", "--theta", "0.75", "--monopole", "--mac", "octgrav"})
                  .code,
              0);
    octwalk::Parameters expected;
    expected.opening_angle   = 0.75;
    expected.epsilon_squared = 0.01 * 0.01;
    expected.use_quadrupole  = false;
    expected.mac             = octwalk::Mac::Octgrav;
    expected.backend         = octwalk::Backend::Cpu;
    EXPECT_NE(slurp(dir / "run.json").find("\"parameters\": " + octwalk::toJson(expected)), std::string::npos);
    fs::remove_all(dir);
}

TEST(Cli, OutputIsDashOEverywhere)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_output_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string snap = (dir / "a.tipsy").string(), converted = (dir / "b.gadget").string();
    ASSERT_EQ(run({"ic", "plummer", "--n", "300", "-o", snap.c_str()}).code, 0);
    CliResult c = run({"convert", snap.c_str(), "-o", converted.c_str(), "--format", "gadget2"});
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_TRUE(fs::exists(converted));
    CliResult twice = run({"convert", snap.c_str(), converted.c_str(), "-o", converted.c_str()});
    EXPECT_EQ(twice.code, 2);
    EXPECT_NE(twice.err.find("output"), std::string::npos) << twice.err;

    std::string json = (dir / "acc.json").string(), csv = (dir / "prof.csv").string();
    CliResult a = run({"accuracy", "--n", "500", "--sample", "50", "--theta", "0.5", "--mac", "bonsai", "--backend",
                       "cpu", "--reference", "cpu", "-o", json.c_str()});
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_NE(slurp(json).find("\"settings\""), std::string::npos);
    CliResult p =
        run({"profile", "--n", "1000", "--repeat", "2", "--direct-sample", "0", "--backend", "cpu", "-o", csv.c_str()});
    ASSERT_EQ(p.code, 0) << p.err;
    EXPECT_EQ(slurp(csv).rfind("# {", 0), 0u);
    std::string other = (dir / "x.json").string(), txt = (dir / "x.txt").string();
    for (auto args : std::vector<std::vector<const char*>>{
             {"accuracy", "-o", json.c_str()},                           // exists
             {"profile", "-o", txt.c_str()},                             // neither .json nor .csv
             {"accuracy", "-o", other.c_str(), "--json", other.c_str()}, // the JSON report twice
             {"forces", "-o", json.c_str()}})                            // exists
    {
        CliResult r = run(args);
        EXPECT_EQ(r.code, 2) << args[0] << " " << args[2];
        EXPECT_EQ(lines(r.err), 1) << r.err;
        EXPECT_TRUE(r.err.find("-o/--output") != std::string::npos || r.err.find("already exists") != std::string::npos)
            << r.err;
    }
    EXPECT_FALSE(fs::exists(other));
    EXPECT_FALSE(fs::exists(txt));
    fs::remove_all(dir);
}

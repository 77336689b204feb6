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
    namespace fs = std::filesystem;
    fs::path base = fs::temp_directory_path() / ("octwalk_cli_run_" + std::to_string(::getpid()));
    fs::remove_all(base);
    std::string whole = (base / "whole").string(), split = (base / "split").string();
    ASSERT_EQ(run({"run", "--n", "2000", "--t-end", "0.125", "--output-dir", whole.c_str(), "--quiet",
                   "--backend", "cpu", "--format", "gadget2"}).code, 0);
    ASSERT_EQ(run({"run", "--n", "2000", "--t-end", "0.0625", "--output-dir", split.c_str(), "--quiet",
                   "--backend", "cpu", "--format", "gadget2"}).code, 0);
    std::string ckpt = (base / "split" / "checkpoint.bin").string();
    CliResult r = run({"run", "--restart", ckpt.c_str(), "--t-end", "0.125", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(slurp(base / "whole" / "checkpoint.bin"), slurp(base / "split" / "checkpoint.bin"));
    EXPECT_EQ(slurp(base / "whole" / "energy.csv"), slurp(base / "split" / "energy.csv"));
    EXPECT_EQ(slurp(base / "whole" / "snap_000016.gadget"), slurp(base / "split" / "snap_000016.gadget"));
    for (const char* f : {"run.json", "lagrange.csv", "snap_000000.gadget"}) EXPECT_TRUE(fs::exists(base / "whole" / f)) << f;

    // The same directory again is refused before any work; restart options that the checkpoint fixes too.
    CliResult again = run({"run", "--n", "2000", "--output-dir", whole.c_str()});
    EXPECT_EQ(again.code, 2);
    EXPECT_NE(again.err.find("not empty"), std::string::npos);
    CliResult changed = run({"run", "--restart", ckpt.c_str(), "--theta", "0.7"});
    EXPECT_EQ(changed.code, 2);
    fs::remove_all(base);
}

TEST(Cli, RunRejectsBadOptionsBeforeWriting)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_bad_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    std::string d = dir.string();
    for (auto args : std::vector<std::vector<const char*>>{{"run", "--dt", "0", "--output-dir", d.c_str()},
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
    fs::path f = fs::temp_directory_path() / ("octwalk_ic_" + std::to_string(::getpid()) + ".tipsy");
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
    // The signal arrives while the run is stepping (a long run of a small model).
    std::thread interrupter([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        std::raise(SIGINT);
    });
    CliResult r = run({"run", "--n", "1000", "--t-end", "1000", "--output-dir", d.c_str(), "--quiet", "--backend", "cpu"});
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

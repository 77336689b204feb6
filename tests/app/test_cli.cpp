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

#include "common/errors.h"
#include "host/cli/cli.h"
#include "host/cli/options.h"
#include "common/phases.h"
#include "host/core/params.h"
#include "host/io/snapshot.h"
#include "host/models/models.h"
#include "host/sim/simulation.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

namespace {

int lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

} // namespace

TEST(Cli, HelpListsUnitsAndDefaults)
{
    CliResult r = runOctwalk({"forces", "--help"});
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
        CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 2) << args[1];
        EXPECT_EQ(lines(r.err), 1) << r.err;
    }
}

TEST(Cli, ForcesRunsAndRefusesToOverwrite)
{
    std::string path = (std::filesystem::temp_directory_path() / "octwalk_cli_test.json").string();
    std::filesystem::remove(path);
    CliResult r = runOctwalk({"forces", "--n", "3000", "--sample", "100", "--backend", "cpu", "-o", path.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("median"), std::string::npos);
    std::ifstream f(path);
    std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(json.find("\"opening_angle\": 0.5"), std::string::npos);
    EXPECT_NE(json.find("\"git\""), std::string::npos);
    CliResult again = runOctwalk({"forces", "--n", "3000", "--backend", "cpu", "-o", path.c_str()});
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
    ASSERT_EQ(runOctwalk({"run", "--n", "2000", "--t-end", "0.125", "--output-dir", whole.c_str(), "--quiet",
                          "--backend", "cpu", "--format", "gadget2"})
                  .code,
              0);
    ASSERT_EQ(runOctwalk({"run", "--n", "2000", "--t-end", "0.0625", "--output-dir", split.c_str(), "--quiet",
                          "--backend", "cpu", "--format", "gadget2"})
                  .code,
              0);
    std::string ckpt = (base / "split" / "checkpoint.bin").string();
    CliResult r      = runOctwalk({"run", "--restart", ckpt.c_str(), "--t-end", "0.125", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(slurp(base / "whole" / "checkpoint.bin"), slurp(base / "split" / "checkpoint.bin"));
    EXPECT_EQ(slurp(base / "whole" / "energy.csv"), slurp(base / "split" / "energy.csv"));
    EXPECT_EQ(slurp(base / "whole" / "snap_000016.gadget"), slurp(base / "split" / "snap_000016.gadget"));
    for (const char* f : {"run.json", "lagrange.csv", "snap_000000.gadget"})
        EXPECT_TRUE(fs::exists(base / "whole" / f)) << f;

    // The same directory again is refused before any work; restart options that the checkpoint fixes too.
    CliResult again = runOctwalk({"run", "--n", "2000", "--output-dir", whole.c_str()});
    EXPECT_EQ(again.code, 2);
    EXPECT_NE(again.err.find("not empty"), std::string::npos);
    CliResult changed = runOctwalk({"run", "--restart", ckpt.c_str(), "--theta", "0.7"});
    EXPECT_EQ(changed.code, 2);
    // Every solver option the table fixes on restart is refused, whatever its spelling.
    for (const std::string& option : octwalk::cli::fixedOnRestartOptions())
    {
        std::string flag = "--" + option;
        bool isSwitch    = false; // a Negated row is a switch without a value
        for (const octwalk::ParameterInfo& row : octwalk::parameterTable())
        {
            if (option == row.option || (row.alias && option == row.alias))
                isSwitch = row.form == octwalk::CliForm::Negated;
        }
        std::vector<const char*> args{"run", "--restart", ckpt.c_str(), flag.c_str()};
        if (!isSwitch) args.push_back("1");
        CliResult fixed = runOctwalk(args);
        EXPECT_EQ(fixed.code, 2) << option;
        EXPECT_NE(fixed.err.find("--" + option + " cannot be changed on --restart"), std::string::npos) << fixed.err;
    }
    fs::remove_all(base);
}

namespace {

/// The rows of timing.csv (lines that start with a digit), each split at its commas.
std::vector<std::vector<std::string>> timingRows(const std::string& text, std::string* header = nullptr)
{
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
    {
        if (line.rfind("step,", 0) == 0 && header) *header = line;
        if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
        std::vector<std::string> fields;
        std::istringstream f(line);
        std::string v;
        while (std::getline(f, v, ',')) fields.push_back(v);
        rows.push_back(fields);
    }
    return rows;
}

} // namespace

TEST(Cli, RunWritesTimingPerStepAndKeepsItAcrossARestart)
{
    namespace fs  = std::filesystem;
    fs::path base = fs::temp_directory_path() / ("octwalk_cli_timing_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::string dir = (base / "run").string();
    CliResult r = runOctwalk({"run", "--n", "1000", "--t-end", "0.0625", "--checkpoint-every", "4", "--output-dir",
                              dir.c_str(), "--quiet", "--backend", "cpu", "--rebuild-every", "1"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("median per step over 8 steps: sort "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("step-wall"), std::string::npos) << r.out;

    std::string header;
    std::string text = slurp(base / "run" / "timing.csv");
    EXPECT_EQ(text.rfind("# ", 0), 0u) << "the header comment first";
    EXPECT_NE(text.find("differ from run to run"), std::string::npos);
    auto rows = timingRows(text, &header);
    ASSERT_EQ(rows.size(), 8u);
    std::vector<std::string> names{"step"};
    for (const octwalk::PhaseInfo& p : octwalk::kPhases) names.push_back(p.name);
    for (const octwalk::StepPhaseInfo& p : octwalk::kStepPhases) names.push_back(p.name);
    const size_t stepWall = names.size() - 1;
    names.insert(names.end(), {"node_interactions_per_body", "leaf_interactions_per_body", "steps_since_rebuild"});
    const size_t leaves = names.size() - 2;
    std::string expected;
    for (const std::string& n : names) expected += (expected.empty() ? "" : ",") + n;
    EXPECT_EQ(header, expected);
    for (size_t k = 0; k < rows.size(); ++k)
    {
        ASSERT_EQ(rows[k].size(), names.size()) << "row " << k;
        EXPECT_EQ(rows[k][0], std::to_string(k + 1));
        for (size_t c = 1; c < rows[k].size(); ++c) EXPECT_GE(std::stod(rows[k][c]), 0.0) << names[c];
        EXPECT_GT(std::stod(rows[k][stepWall]), 0.0) << "the step's wall time";
        EXPECT_GT(std::stod(rows[k][leaves]), 0.0) << "leaf interactions per body";
        EXPECT_EQ(rows[k].back(), "0") << "a tree built every step";
    }

    std::string json = slurp(base / "run" / "run.json");
    EXPECT_NE(json.find("\"step_timing\": {\"steps\": 8,"), std::string::npos) << json;
    for (const char* key :
         {"\"median_seconds\"", "\"body_node\"", "\"integration\"", "\"step_wall\"", "\"bodies_per_second\""})
    {
        EXPECT_NE(json.find(key), std::string::npos) << key;
    }

    // A run killed after step 9 but before its checkpoint: the rows after the checkpoint's step 8 are
    // dropped on restart and written again, once each.
    {
        std::ofstream more(base / "run" / "timing.csv", std::ios::app);
        more << "9,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1\n10,1,1";
    }
    std::string ckpt = (base / "run" / "checkpoint.bin").string();
    r                = runOctwalk({"run", "--restart", ckpt.c_str(), "--t-end", "0.125", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    rows = timingRows(slurp(base / "run" / "timing.csv"));
    ASSERT_EQ(rows.size(), 16u);
    for (size_t k = 0; k < rows.size(); ++k)
    {
        EXPECT_EQ(rows[k][0], std::to_string(k + 1));
        EXPECT_NE(rows[k][1], "1") << "a dropped row survived";
    }
    EXPECT_NE(slurp(base / "run" / "run.json").find("\"step_timing\": {\"steps\": 8,"), std::string::npos)
        << "the restart's own steps";
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
        CliResult r = runOctwalk(args);
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
    CliResult r = runOctwalk({"ic", "galaxy", "--n", "3000", "-o", f.string().c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(slurp(f.string() + ".json").find("\"model\": \"galaxy\""), std::string::npos);
    EXPECT_EQ(runOctwalk({"ic", "plummer", "-o", f.string().c_str()}).code, 2);
    EXPECT_EQ(runOctwalk({"convert", f.string().c_str(), f.string().c_str()}).code, 2);
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
        runOctwalk({"run", "--n", "1000", "--t-end", "1000", "--output-dir", d.c_str(), "--quiet", "--backend", "cpu"});
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
        CliResult r = runOctwalk({command, "--help"});
        ASSERT_EQ(r.code, 0) << command;
        for (const char* option : {"--epsilon", "--G", "--backend", "--no-merge-groups"})
        {
            EXPECT_NE(r.out.find(option), std::string::npos) << command << " " << option;
        }
        EXPECT_NE(r.out.find("--n-leaf arg (=16)"), std::string::npos) << command;
        EXPECT_NE(r.out.find("--n-group arg (=64)"), std::string::npos) << command;
    }
    // run offers every row; forces every row but the bound of runs.
    CliResult forces = runOctwalk({"forces", "--help"}), runHelp = runOctwalk({"run", "--help"});
    for (const octwalk::ParameterInfo& row : octwalk::parameterTable())
    {
        EXPECT_NE(runHelp.out.find(std::string("--") + row.option), std::string::npos) << row.option;
        const bool runOnly = std::string(row.name) == "max_energy_error";
        EXPECT_EQ(forces.out.find(std::string("--") + row.option) != std::string::npos, !runOnly) << row.option;
    }
    EXPECT_NE(forces.out.find("--epsilon arg (=0) "), std::string::npos);
    EXPECT_NE(runOctwalk({"run", "--help"}).out.find("--epsilon arg (=0.01)"), std::string::npos);
    EXPECT_NE(runOctwalk({"profile", "--help"}).out.find("--theta arg (=0.5)"), std::string::npos);
    // A run's parameters: the table's defaults, run's softening, and the options given.
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_params_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    ASSERT_EQ(runOctwalk({"run", "--n", "100", "--t-end", "0.0078125", "--output-dir", dir.string().c_str(), "--quiet",
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
    ASSERT_EQ(runOctwalk({"ic", "plummer", "--n", "300", "-o", snap.c_str()}).code, 0);
    CliResult c = runOctwalk({"convert", snap.c_str(), "-o", converted.c_str(), "--format", "gadget2"});
    ASSERT_EQ(c.code, 0) << c.err;
    EXPECT_TRUE(fs::exists(converted));
    CliResult twice = runOctwalk({"convert", snap.c_str(), converted.c_str(), "-o", converted.c_str()});
    EXPECT_EQ(twice.code, 2);
    EXPECT_NE(twice.err.find("output"), std::string::npos) << twice.err;

    std::string json = (dir / "acc.json").string(), csv = (dir / "prof.csv").string();
    CliResult a = runOctwalk({"accuracy", "--n", "500", "--sample", "50", "--theta", "0.5", "--mac", "bonsai",
                              "--backend", "cpu", "--reference", "cpu", "-o", json.c_str()});
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_NE(slurp(json).find("\"settings\""), std::string::npos);
    CliResult p = runOctwalk(
        {"profile", "--n", "1000", "--repeat", "2", "--direct-sample", "0", "--backend", "cpu", "-o", csv.c_str()});
    ASSERT_EQ(p.code, 0) << p.err;
    EXPECT_EQ(slurp(csv).rfind("# {", 0), 0u);
    std::string other = (dir / "x.json").string(), txt = (dir / "x.txt").string();
    for (auto args : std::vector<std::vector<const char*>>{
             {"accuracy", "-o", json.c_str()},                           // exists
             {"profile", "-o", txt.c_str()},                             // neither .json nor .csv
             {"accuracy", "-o", other.c_str(), "--json", other.c_str()}, // the JSON report twice
             {"forces", "-o", json.c_str()}})                            // exists
    {
        CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 2) << args[0] << " " << args[2];
        EXPECT_EQ(lines(r.err), 1) << r.err;
        EXPECT_TRUE(r.err.find("-o/--output") != std::string::npos || r.err.find("already exists") != std::string::npos)
            << r.err;
    }
    EXPECT_FALSE(fs::exists(other));
    EXPECT_FALSE(fs::exists(txt));
    fs::remove_all(dir);
}

// --n (every value of a list) is checked against the tree's limit (2^30 - 1, its 32-bit
// indices) and the model's minimum before any work, naming the option; nothing is computed or written.
TEST(Cli, BodyCountsAreCheckedAgainstTheRealLimitsFirst)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_n_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string json = (dir / "p.json").string(), snap = (dir / "m.tipsy").string();
    CliResult forces = runOctwalk({"forces", "--n", "1099511627776", "--backend", "cpu"});
    EXPECT_EQ(forces.code, 2);
    EXPECT_NE(forces.err.find("--n = 1099511627776"), std::string::npos) << forces.err;
    EXPECT_NE(forces.err.find("1073741823"), std::string::npos) << forces.err;
    CliResult profile =
        runOctwalk({"profile", "--n", "1000,2^40", "--repeat", "2", "--backend", "cpu", "--json", json.c_str()});
    EXPECT_EQ(profile.code, 2);
    EXPECT_NE(profile.err.find("--n = 1099511627776"), std::string::npos) << profile.err;
    EXPECT_EQ(profile.out, "") << "a row was computed before the check";
    EXPECT_FALSE(fs::exists(json));
    CliResult merger = runOctwalk({"ic", "merger", "--n", "3", "-o", snap.c_str()});
    EXPECT_EQ(merger.code, 2);
    EXPECT_NE(merger.err.find("--n = 3 is invalid: must be >= 12"), std::string::npos) << merger.err;
    EXPECT_NE(runOctwalk({"ic", "merger", "--n", "12", "-o", snap.c_str()}).code, 2);
    CliResult galaxy =
        runOctwalk({"run", "--model", "galaxy", "--n", "5", "--output-dir", (dir / "g").string().c_str()});
    EXPECT_NE(galaxy.err.find("--n = 5 is invalid: must be >= 6"), std::string::npos) << galaxy.err;
    fs::remove_all(dir);
}

// An output that cannot be written is found before the computing, naming the option and
// the path. A path under a regular file fails for root too; a read-only directory only for others.
TEST(Cli, UnwritableOutputsAreRefusedBeforeAnyWork)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_unwritable_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "readonly");
    std::ofstream(dir / "file") << "a regular file\n";
    std::vector<fs::path> bad{dir / "file" / "x"};
    if (::geteuid() != 0)
    {
        fs::permissions(dir / "readonly", fs::perms::owner_read | fs::perms::owner_exec);
        bad.push_back(dir / "readonly" / "x");
    }
    for (const fs::path& base : bad)
    {
        std::string json = base.string() + ".json", csv = base.string() + ".csv", sub = base.string();
        struct Case
        {
            std::vector<const char*> args;
            const char* option;
        };
        for (const Case& c : std::vector<Case>{
                 {{"forces", "--n", "1000", "--backend", "cpu", "-o", json.c_str()}, "-o/--output"},
                 {{"accuracy", "--n", "500", "--theta", "0.5", "--backend", "cpu", "--csv", csv.c_str()}, "--csv"},
                 {{"accuracy", "--n", "500", "--theta", "0.5", "--backend", "cpu", "--json", json.c_str()}, "--json"},
                 {{"accuracy", "--n", "500", "--theta", "0.5", "--backend", "cpu", "--errors-dir", sub.c_str()},
                  "--errors-dir"},
                 {{"profile", "--n", "1000", "--repeat", "2", "--backend", "cpu", "--json", json.c_str()}, "--json"},
                 {{"profile", "--n", "1000", "--repeat", "2", "--backend", "cpu", "-o", csv.c_str()}, "-o/--output"},
                 {{"run", "--n", "100", "--t-end", "0.01", "--quiet", "--output-dir", sub.c_str()}, "--output-dir"},
                 {{"ic", "plummer", "--n", "100", "-o", json.c_str()}, "-o/--output"}})
        {
            CliResult r = runOctwalk(c.args);
            EXPECT_EQ(r.code, 2) << c.args[0] << " " << c.option << ": " << r.err;
            EXPECT_EQ(lines(r.err), 1) << r.err;
            EXPECT_NE(r.err.find(c.option), std::string::npos) << r.err;
            EXPECT_NE(r.err.find(base.string()), std::string::npos) << r.err;
            EXPECT_EQ(r.out, "") << c.args[0] << " computed before refusing";
        }
    }
    fs::permissions(dir / "readonly", fs::perms::owner_all);
    // --output-dir naming a file, or nothing.
    std::string file = (dir / "file").string();
    CliResult onFile = runOctwalk({"run", "--n", "100", "--output-dir", file.c_str()});
    EXPECT_EQ(onFile.code, 2);
    EXPECT_NE(onFile.err.find("is a file, not a directory"), std::string::npos) << onFile.err;
    CliResult empty = runOctwalk({"run", "--n", "100", "--output-dir", ""});
    EXPECT_EQ(empty.code, 2);
    EXPECT_NE(empty.err.find("--output-dir is empty"), std::string::npos) << empty.err;
    fs::remove_all(dir);
}

// Options refused by name before any work.
TEST(Cli, OptionsAreValidatedByName)
{
    for (auto [args, expected] : std::vector<std::pair<std::vector<const char*>, const char*>>{
             {{"forces", "--seed", "-1"}, "option --seed = -1"},
             {{"forces", "--seed=-3"}, "option --seed = -3"},
             {{"accuracy", "--reference", "foo"}, "option --reference = 'foo'"},
             {{"ic", "merger", "--inclination", "nan", "-o", "never.tipsy"}, "option --inclination = nan"},
             {{"ic", "merger", "--mass-ratio", "2", "-o", "never.tipsy"}, "option --mass-ratio = 2"},
             {{"ic", "merger", "--separation", "1", "-o", "never.tipsy"}, "option --separation = 1"}})
    {
        CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 2) << args[0] << " " << args[1];
        EXPECT_EQ(lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    }
    EXPECT_FALSE(std::filesystem::exists("never.tipsy"));
}

// Messages that misled: a value printed with too few digits to see why it is out of range, a softening whose
// square underflows (it acted as none), an empty --input (it ran the built-in model), a selection of no
// bodies (an empty file), a scale factor that is not one, and a number of bins that only costs memory.
TEST(Cli, MisleadingInputsAreRefusedWithTheirValues)
{
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("octwalk_misleading_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    const std::string snap = dir + "/c.gadget", empty = dir + "/empty.gadget", out = dir + "/out";
    ASSERT_EQ(runOctwalk({"ic", "cosmo", "--n-grid", "8", "-o", snap.c_str(), "--format", "gadget2"}).code, 0);
    for (auto [args, expected] : std::vector<std::pair<std::vector<const char*>, const char*>>{
             {{"forces", "--n", "64", "--theta", "1.0000001"}, "opening_angle = 1.0000001 is invalid"},
             {{"forces", "--n", "64", "--epsilon", "1e-200"}, "--epsilon = 1e-200 is invalid: must be 0 or >= 2^-63"},
             {{"hermite", "--n", "64", "--epsilon", "1e-30", "--output-dir", out.c_str()}, "--epsilon = 1e-30"},
             {{"run", "--input", "", "--output-dir", out.c_str()}, "option --input is empty"},
             {{"hermite", "--input", "", "--output-dir", out.c_str()}, "option --input is empty"},
             {{"convert", snap.c_str(), empty.c_str(), "--type", "0"}, "--type 0 selects none of the 512 bodies"},
             {{"power", snap.c_str(), "--a", "nan"}, "option --a = nan is invalid"},
             {{"power", snap.c_str(), "--reference", snap.c_str(), "--reference-a", "-1"}, "--reference-a = -1"},
             {{"power", snap.c_str(), "--n-bins", "100000000"}, "n-bins = 100000000 is invalid: must be <= 4225"}})
    {
        CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 2) << args[0] << " " << args[1] << ": " << r.err;
        EXPECT_EQ(lines(r.err), 1) << r.err;
        EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    }
    EXPECT_FALSE(std::filesystem::exists(empty));
    EXPECT_FALSE(std::filesystem::exists(out));
    octwalk::Parameters p;
    p.epsilon_squared = 1e-60;
    EXPECT_THROW(octwalk::validate(p), octwalk::ParameterError);

    // A value beyond float32 is named by the snapshot it was bound for, in 9 digits (std::to_string gave
    // 300 digits and the name of the writer's temporary).
    const std::string table = dir + "/pk.txt", big = dir + "/big.gadget";
    std::ofstream(table) << "0.001 1e300\n10 1e300\n";
    CliResult r = runOctwalk(
        {"ic", "cosmo", "--n-grid", "8", "--power-spectrum", table.c_str(), "-o", big.c_str(), "--format", "gadget2"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("snapshot '" + big + "': particle id"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(".tmp."), std::string::npos) << r.err;
    EXPECT_LT(r.err.size(), 300u) << r.err;
    std::filesystem::remove_all(dir);
}

// A velocity a run cannot step is refused at setup, before the output directory exists (a failure at
// step 1 would leave a directory a rerun refuses); a negative mass is refused by every reader, so convert
// cannot pass on what run rejects.
TEST(Cli, InputsARunWouldRejectAreRefusedBeforeAnyOutput)
{
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("octwalk_cli_inputs_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    octwalk::ParticleSet b = octwalk::makePlummer(100, 1);
    b.vel[42]              = {3e36, 0, 0};
    std::string fast = (dir / "fast.tipsy").string(), out = (dir / "out").string();
    octwalk::writeSnapshot(fast, octwalk::SnapshotFormat::TipsyStandard, b, {});
    CliResult r = runOctwalk({"run", "--input", fast.c_str(), "--output-dir", out.c_str(), "--quiet"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("body 42: velocity component"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));

    b                    = octwalk::makePlummer(100, 1);
    b.mass[17]           = -0.01;
    std::string negative = (dir / "negative.tipsy").string(), converted = (dir / "c.gadget").string();
    octwalk::writeSnapshot(negative, octwalk::SnapshotFormat::TipsyStandard, b, {});
    CliResult c = runOctwalk({"convert", negative.c_str(), "-o", converted.c_str(), "--format", "gadget2"});
    EXPECT_EQ(c.code, 1);
    EXPECT_NE(c.err.find("particle 17"), std::string::npos) << c.err;
    EXPECT_NE(c.err.find("negative"), std::string::npos) << c.err;
    EXPECT_FALSE(fs::exists(converted));
    fs::remove_all(dir);
}

TEST(Cli, AccuracyOfAPeriodicInputIsMeasuredInItsBox)
{
    // As `octwalk run --input` runs a file with a BoxSize in its box, `octwalk accuracy` measures it there
    // (TreePM needs the box), and a --box-size that contradicts the file is refused by name.
    namespace fs       = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("octwalk_cli_periodic_accuracy_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string input = std::string(OCTWALK_DATA_DIR) + "/ics/lcdm32_z0.gadget";
    const std::string json  = (dir / "acc.json").string();
    CliResult a =
        runOctwalk({"accuracy", "--input", input.c_str(), "--sample", "16", "--theta", "0.7", "--mac", "bonsai",
                    "--pm-grid", "32", "--backend", "cpu", "--reference", "cpu", "-o", json.c_str()});
    ASSERT_EQ(a.code, 0) << a.err;
    EXPECT_NE(slurp(json).find("\"box_size\": 32"), std::string::npos) << slurp(json).substr(0, 600);
    CliResult wrong = runOctwalk({"accuracy", "--input", input.c_str(), "--box-size", "30", "--sample", "16", "--theta",
                                  "0.7", "--backend", "cpu", "--reference", "cpu"});
    EXPECT_NE(wrong.code, 0);
    EXPECT_NE(wrong.err.find("--box-size = 30 does not match the input file's value 32"), std::string::npos)
        << wrong.err;
    fs::remove_all(dir);
}

// `octwalk run --rebuild-every K --rebuild-lag L`: the pipelined step through the command line, its restart
// bit-identical to the uninterrupted run (checkpoint version 6; version 4 still read), its settings in
// run.json, and its refusals.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/cli.h"
#include "host/io/checkpoint.h"
#include "test_helpers.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

namespace {

std::string slurp(const std::filesystem::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Per row of a timing.csv: its step's node and leaf interactions per body and steps since the rebuild
/// (the last three columns: counts, the same in every run of the same settings, unlike the seconds).
std::vector<std::string> interactionColumns(const std::string& timing)
{
    std::vector<std::string> rows;
    std::istringstream in(timing);
    std::string line;
    bool header = true;
    while (std::getline(in, line))
    {
        if (line.empty() || line[0] == '#') continue;
        size_t at = line.size();
        for (int k = 0; k < 3 && at != std::string::npos; ++k) at = line.rfind(',', at - 1);
        EXPECT_NE(at, std::string::npos) << line;
        if (at == std::string::npos) continue;
        if (header)
            EXPECT_EQ(line.substr(at + 1), "node_interactions_per_body,leaf_interactions_per_body,steps_since_rebuild");
        else rows.push_back(line.substr(at + 1));
        header = false;
    }
    return rows;
}

} // namespace

TEST(PipelineCli, RunWithRebuildEveryRestartsBitIdentically)
{
    namespace fs        = std::filesystem;
    const fs::path base = fs::temp_directory_path() / ("octwalk_pipeline_cli_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::string whole = (base / "whole").string(), split = (base / "split").string();
    // 2^-3 / 2^-7: 16 steps; the split run stops after 11, with a build in flight for step 12 (K = 4).
    ASSERT_EQ(runOctwalk({"run", "--n", "2000", "--t-end", "0.125", "--dt", "0.0078125", "--rebuild-every", "4",
                          "--output-dir", whole.c_str(), "--quiet", "--backend", "cpu"})
                  .code,
              0);
    ASSERT_EQ(runOctwalk({"run", "--n", "2000", "--t-end", "0.0859375", "--dt", "0.0078125", "--rebuild-every", "4",
                          "--output-dir", split.c_str(), "--quiet", "--backend", "cpu"})
                  .code,
              0);
    const std::string ckpt = (base / "split" / "checkpoint.bin").string();
    EXPECT_EQ(slurp(ckpt).substr(0, 15), "OCTWALK-CKPT-v8");
    EXPECT_EQ(octwalk::readCheckpoint(ckpt).pipeline.rebuildLag, 2) << "the default lag";
    const CliResult r = runOctwalk({"run", "--restart", ckpt.c_str(), "--t-end", "0.125", "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(slurp(base / "whole" / "checkpoint.bin"), slurp(base / "split" / "checkpoint.bin"));
    EXPECT_EQ(slurp(base / "whole" / "energy.csv"), slurp(base / "split" / "energy.csv"));
    EXPECT_EQ(slurp(base / "whole" / "lagrange.csv"), slurp(base / "split" / "lagrange.csv"));
    const std::vector<std::string> counts = interactionColumns(slurp(base / "whole" / "timing.csv"));
    EXPECT_EQ(counts.size(), 16u);
    EXPECT_EQ(counts, interactionColumns(slurp(base / "split" / "timing.csv"))) << "each step's own walk, restarted";
    EXPECT_NE(slurp(base / "whole" / "run.json").find("\"rebuild_every\": 4,\n  \"rebuild_lag\": 2"),
              std::string::npos);
    for (const char* option : {"--rebuild-every", "--rebuild-lag"})
    {
        const CliResult changed = runOctwalk({"run", "--restart", ckpt.c_str(), option, "1"});
        EXPECT_EQ(changed.code, 2) << option;
    }
    fs::remove_all(base);
}

// A version-4 checkpoint (before the lag was stored: every pipelined run had lag 1) reads as lag 1 and
// restarts with it. Built from a version-6 file: its magic, less the lag field, checksum anew.
TEST(PipelineCli, Version4CheckpointsRestartWithLagOne)
{
    namespace fs        = std::filesystem;
    const fs::path base = fs::temp_directory_path() / ("octwalk_pipeline_v4_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::string dir = (base / "run").string();
    ASSERT_EQ(runOctwalk({"run", "--n", "500", "--t-end", "0.0859375", "--dt", "0.0078125", "--rebuild-every", "4",
                          "--rebuild-lag", "1", "--output-dir", dir.c_str(), "--quiet", "--backend", "cpu"})
                  .code,
              0);
    // The run writes version 8; its image written as the builds before version 8 wrote it is version 6.
    const std::string v6path = (base / "run" / "v6.bin").string();
    octwalk::writeCheckpoint(v6path, octwalk::readCheckpoint((base / "run" / "checkpoint.bin").string()),
                             octwalk::CheckpointVersion::Previous);
    const std::string v6 = slurp(v6path);
    ASSERT_EQ(v6.substr(0, 15), "OCTWALK-CKPT-v6");
    // After 11 steps a build is in flight (adopted at 12): the lag comes right before two arrays of N positions.
    const size_t n = 500, lagAt = v6.size() - 8 - 2 * n * 24 - 8;
    ASSERT_EQ(v6.substr(lagAt, 8), std::string("\x01\0\0\0\0\0\0\0", 8)) << "little-endian lag 1";
    std::string v4   = v6.substr(0, lagAt) + v6.substr(lagAt + 8, v6.size() - 8 - (lagAt + 8));
    v4[14]           = '4';
    const uint64_t h = octwalk::test::checkpointChecksum(v4);
    v4.append(reinterpret_cast<const char*>(&h), 8);
    // Restarts write into the checkpoint's directory: the run's own checkpoint becomes the version-4 file.
    const std::string old = (base / "run" / "checkpoint.bin").string();
    {
        std::ofstream out(old, std::ios::binary);
        out << v4;
    }
    const octwalk::CheckpointImage image = octwalk::readCheckpoint(old);
    EXPECT_EQ(image.pipeline.rebuildLag, 1);
    EXPECT_EQ(image.pipeline.adoptStep, 12);
    EXPECT_EQ(image.step, 11);
    const CliResult r = runOctwalk({"run", "--restart", dir.c_str(), "--t-end", "0.125", "--quiet"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(slurp(base / "run" / "run.json").find("\"rebuild_lag\": 1"), std::string::npos);
    EXPECT_EQ(octwalk::readCheckpoint(old).pipeline.rebuildLag, 1);
    fs::remove_all(base);
}

TEST(PipelineCli, RefusesRebuildEveryWhereThePipelineDoesNotApply)
{
    namespace fs            = std::filesystem;
    const fs::path base     = fs::temp_directory_path() / ("octwalk_pipeline_refuse_" + std::to_string(::getpid()));
    const std::string where = base.string();
    fs::remove_all(base);
    for (std::vector<const char*> extra :
         {std::vector<const char*>{"--rebuild-every", "-1"}, std::vector<const char*>{"--rebuild-every", "fast"},
          std::vector<const char*>{"--rebuild-every", "2x"}, std::vector<const char*>{"--rebuild-every", ""},
          std::vector<const char*>{"--rebuild-every", "4", "--direct"},
          std::vector<const char*>{"--rebuild-every", "0", "--zero-net-force"},
          std::vector<const char*>{"--rebuild-every", "0", "--rebuild-lag", "0"},
          std::vector<const char*>{"--rebuild-every", "4", "--rebuild-lag", "5"},
          std::vector<const char*>{"--rebuild-every", "0", "--rebuild-lag", "1.5"},
          std::vector<const char*>{"--rebuild-every", "1", "--rebuild-lag", "2"}})
    {
        std::vector<const char*> args{"run",       "--n", "256",          "--quiet",
                                      "--backend", "cpu", "--output-dir", where.c_str()};
        args.insert(args.end(), extra.begin(), extra.end());
        const CliResult r = runOctwalk(args);
        EXPECT_NE(r.code, 0) << extra[1];
        EXPECT_NE(r.err.find("--rebuild-"), std::string::npos) << r.err;
        fs::remove_all(base);
    }
}

// With no --rebuild-every a run takes the pipelined step where it supports the run (run.json's rebuild_every 0;
// the same bits as --rebuild-every 0 and as --rebuild-every auto) and the classic step where not (a direct run:
// rebuild_every 1); a periodic box likewise keeps the classic step (tests/unit/test_pipeline.cpp's resolution).
TEST(PipelineCli, TheDefaultIsThePipelinedStepWhereItApplies)
{
    namespace fs        = std::filesystem;
    const fs::path base = fs::temp_directory_path() / ("octwalk_pipeline_default_" + std::to_string(::getpid()));
    fs::remove_all(base);
    auto runIn = [&](const std::string& name, std::vector<const char*> extra) {
        const std::string dir = (base / name).string();
        std::vector<const char*> args{"run",       "--n",     "1000",      "--t-end", "0.0625",       "--dt",
                                      "0.0078125", "--quiet", "--backend", "cpu",     "--output-dir", dir.c_str()};
        args.insert(args.end(), extra.begin(), extra.end());
        const CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 0) << name << ": " << r.err;
        return base / name;
    };
    const fs::path byDefault = runIn("default", {}), automatic = runIn("auto", {"--rebuild-every", "auto"}),
                   pipelined = runIn("pipelined", {"--rebuild-every", "0"}), direct = runIn("direct", {"--direct"});
    EXPECT_NE(slurp(byDefault / "run.json").find("\"rebuild_every\": 0"), std::string::npos);
    EXPECT_NE(slurp(direct / "run.json").find("\"rebuild_every\": 1"), std::string::npos);
    for (const fs::path& same : {automatic, pipelined})
    {
        EXPECT_EQ(slurp(byDefault / "energy.csv"), slurp(same / "energy.csv")) << same;
        EXPECT_EQ(slurp(byDefault / "checkpoint.bin"), slurp(same / "checkpoint.bin")) << same;
    }
    const CliResult help = runOctwalk({"run", "--help"});
    EXPECT_NE(help.out.find("--rebuild-every arg (=auto)"), std::string::npos) << help.out;
    fs::remove_all(base);
}

namespace {

/// The data rows of a CSV file (no comment, no header).
size_t dataRows(const std::filesystem::path& f)
{
    std::istringstream in(slurp(f));
    std::string line;
    size_t rows = 0;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != '#' && line.rfind("step,", 0) != 0) ++rows;
    return rows;
}

} // namespace

// lagrange.csv gets a row's radii with the next row (the device sorts them beside the next step): a run that ends,
// and one that a failure stops, still leave it with a row for every energy.csv row.
TEST(PipelineCli, LagrangeRowsFollowEveryEnergyRowAtTheEndAndOnAFailure)
{
    namespace fs        = std::filesystem;
    const fs::path base = fs::temp_directory_path() / ("octwalk_pipeline_rows_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::string ended = (base / "ended").string(), failed = (base / "failed").string();
    const CliResult end = runOctwalk({"run", "--n", "1000", "--t-end", "0.0625", "--dt", "0.0078125", "--quiet",
                                      "--backend", "cpu", "--output-dir", ended.c_str()});
    ASSERT_EQ(end.code, 0) << end.err;
    EXPECT_EQ(dataRows(base / "ended" / "energy.csv"), 9u);
    EXPECT_EQ(dataRows(base / "ended" / "lagrange.csv"), 9u);
    const CliResult fail =
        runOctwalk({"run", "--n", "1000", "--t-end", "0.0625", "--dt", "0.0078125", "--quiet", "--backend", "cpu",
                    "--max-energy-error", "1e-15", "--output-dir", failed.c_str()});
    EXPECT_NE(fail.code, 0);
    EXPECT_NE(fail.err.find("exceeds max_energy_error"), std::string::npos) << fail.err;
    const size_t energyRows = dataRows(base / "failed" / "energy.csv");
    EXPECT_GE(energyRows, 1u);
    EXPECT_LT(energyRows, 9u) << "the bound stopped the run";
    EXPECT_EQ(dataRows(base / "failed" / "lagrange.csv"), energyRows);
    fs::remove_all(base);
}

// profile --steps measures the last step's own forces against direct summation: the step option's error, in the
// CSV beside its time (a lag-2 topology of 2000 bodies: within the tree's usual error at theta 0.5).
TEST(PipelineCli, ProfileOfStepsMeasuresTheLastStepsForceError)
{
    namespace fs          = std::filesystem;
    const fs::path base   = fs::temp_directory_path() / ("octwalk_pipeline_error_" + std::to_string(::getpid()));
    const std::string csv = (base / "p.csv").string();
    fs::remove_all(base);
    fs::create_directories(base);
    const CliResult r = runOctwalk({"profile", "--n", "2000", "--steps", "3", "--backend", "cpu", "--direct-sample",
                                    "0", "--step-error-sample", "200", "--csv", csv.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("err-median"), std::string::npos) << r.out;
    std::istringstream in(slurp(csv));
    std::string line, header, row;
    while (std::getline(in, line))
    {
        if (line.empty() || line[0] == '#') continue;
        (header.empty() ? header : row) = line;
    }
    auto field = [&](const std::string& name) {
        std::vector<std::string> names, values;
        std::string v;
        for (std::istringstream h(header); std::getline(h, v, ',');) names.push_back(v);
        for (std::istringstream d(row); std::getline(d, v, ',');) values.push_back(v);
        const auto at = std::find(names.begin(), names.end(), name);
        EXPECT_NE(at, names.end()) << name;
        return at == names.end() ? std::string() : values.at(size_t(at - names.begin()));
    };
    EXPECT_EQ(field("step_error_sample"), "200");
    const double median = std::stod(field("step_error_median")), p99 = std::stod(field("step_error_p99"));
    EXPECT_GT(median, 1e-6);
    EXPECT_LT(median, 1e-3);
    EXPECT_GE(p99, median);
    fs::remove_all(base);
}

TEST(PipelineCli, TimingRowsCarryEachStepsOwnInteractions)
{
    namespace fs        = std::filesystem;
    const fs::path base = fs::temp_directory_path() / ("octwalk_pipeline_timing_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::string dir = base.string();
    const CliResult r = runOctwalk({"run", "--n", "2000", "--t-end", "0.0625", "--dt", "0.0078125", "--rebuild-every",
                                    "4", "--output-dir", dir.c_str(), "--quiet", "--backend", "cpu"});
    ASSERT_EQ(r.code, 0) << r.err;
    const std::vector<std::string> rows = interactionColumns(slurp(base / "timing.csv"));
    ASSERT_EQ(rows.size(), 8u);
    std::vector<long> age;
    std::vector<double> perBody;
    for (const std::string& row : rows)
    {
        double node = 0, leaf = 0;
        long since = -1;
        ASSERT_EQ(std::sscanf(row.c_str(), "%lf,%lf,%ld", &node, &leaf, &since), 3) << row;
        EXPECT_GT(node, 0.0);
        EXPECT_GT(leaf, 0.0);
        age.push_back(since);
        perBody.push_back(node + leaf);
    }
    // K = 4, lag 1: topologies adopted at steps 4 and 8.
    EXPECT_EQ(age, (std::vector<long>{1, 2, 3, 0, 1, 2, 3, 0}));
    // Stale counts (the run's first evaluation's, as pipelined rows once had) would repeat one value.
    for (size_t k = 1; k < perBody.size(); ++k) EXPECT_NE(perBody[k], perBody[k - 1]) << "step " << k + 1;
    fs::remove_all(base);
}

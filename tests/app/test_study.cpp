// The study commands: the library sweep behaves like an accuracy study should, and the CLI writes
// its outputs, rejects bad lists in one line and never overwrites.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "host/cli/cli.h"
#include "host/cli/lists.h"
#include "common/errors.h"
#include "host/sim/run.h"
#include "host/study/study.h"
#include "test_helpers.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

namespace fs = std::filesystem;
using namespace octwalk;
using octwalk::cli::parseCountList;
using octwalk::cli::parseIntList;
using octwalk::cli::parseNameList;
using octwalk::cli::parseThetaList;

namespace {

int countLines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

std::string slurp(const fs::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// A fresh directory under the temporary directory, removed at the end of the test.
class TempDir
{
public:
    explicit TempDir(const std::string& name)
        : path_(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid())))
    {
        fs::remove_all(path_);
        fs::create_directories(path_);
    }
    ~TempDir() { fs::remove_all(path_); }
    std::string operator/(const std::string& f) const { return (path_ / f).string(); }

private:
    fs::path path_;
};

const ParticleSet& plummer4000()
{
    static const ParticleSet bodies = makeModel("plummer", 4000, 7);
    return bodies;
}

} // namespace

TEST(StudyLists, ParsesListsAndRanges)
{
    EXPECT_EQ(parseThetaList("theta", "0.2,0.3,0.5"), (std::vector<double>{0.2, 0.3, 0.5}));
    EXPECT_EQ(parseThetaList("theta", "0.2:0.8:0.1"), (std::vector<double>{0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}));
    EXPECT_EQ(parseThetaList("theta", "1"), (std::vector<double>{1.0}));
    EXPECT_EQ(parseCountList("n", "2^10:2^12", 2), (std::vector<int64_t>{1024, 2048, 4096}));
    EXPECT_EQ(parseCountList("n", "1000,2^5", 2), (std::vector<int64_t>{1000, 32}));
    EXPECT_EQ(parseIntList("n-leaf", "8,16", 1), (std::vector<int>{8, 16}));
    EXPECT_EQ(parseNameList("mac", "octgrav,bonsai", {"bonsai", "octgrav"}),
              (std::vector<std::string>{"octgrav", "bonsai"}));
}

TEST(StudyLists, RejectsBadTextNamingTheOption)
{
    for (const char* bad : {"0.2,,0.3", "abc", "", "0.2,", " 0.3", "0.5x", "0", "1.5", "-0.1", "nan", "inf", "0.2:0.8",
                            "0.8:0.2:0.1", "0.2:0.8:0", "0.2:0.8:0.1:1"})
    {
        try
        {
            parseThetaList("theta", bad);
            ADD_FAILURE() << "accepted '" << bad << "'";
        }
        catch (const ParameterError& e)
        {
            EXPECT_NE(std::string(e.what()).find("--theta"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(parseCountList("n", "2^10:3000", 2), ParameterError);
    EXPECT_THROW(parseCountList("n", "2^12:2^10", 2), ParameterError);
    EXPECT_THROW(parseCountList("n", "1", 2), ParameterError);
    EXPECT_THROW(parseIntList("n-leaf", "0", 1), ParameterError);
    EXPECT_THROW(parseIntList("n-leaf", "16.5", 1), ParameterError);
    EXPECT_THROW(parseNameList("mac", "bonsai,barnes", {"bonsai", "octgrav"}), ParameterError);
}

TEST(Study, SampledReferenceEqualsFullReferenceOnThoseBodies)
{
    const ParticleSet& b   = plummer4000();
    DirectReference full   = directReference(b, 4000, 3, 1e-4, 2.0, Backend::Cpu);
    DirectReference sample = directReference(b, 500, 3, 1e-4, 2.0, Backend::Cpu);
    ASSERT_FALSE(full.sampled());
    ASSERT_TRUE(sample.sampled());
    ASSERT_EQ(sample.index.size(), 500u);
    for (size_t k = 0; k < sample.index.size(); ++k)
    {
        int64_t i = sample.index[k];
        EXPECT_EQ(full.index[i], i);
        EXPECT_EQ(sample.acc[k].x, full.acc[i].x);
        EXPECT_EQ(sample.acc[k].y, full.acc[i].y);
        EXPECT_EQ(sample.acc[k].z, full.acc[i].z);
        EXPECT_EQ(sample.pot[k], full.pot[i]);
    }
}

TEST(Study, SweepGivesOneRowPerSettingWithErrorGrowingWithTheta)
{
    const ParticleSet& b = plummer4000();
    StudyGrid grid;
    grid.theta                       = {0.3, 0.5, 0.7, 0.9};
    grid.mac                         = {Mac::Bonsai, Mac::Octgrav};
    grid.quadrupole                  = {true};
    std::vector<Parameters> settings = expandGrid(test::cpuParameters(), grid);
    ASSERT_EQ(settings.size(), 8u);
    DirectReference ref              = directReference(b, 500, 3, 0.0, 1.0, Backend::Cpu);
    int seen                         = 0;
    std::vector<AccuracyResult> rows = accuracySweep(b, settings, ref, 1, [&seen](const AccuracyResult&) { ++seen; });
    ASSERT_EQ(rows.size(), settings.size());
    EXPECT_EQ(seen, 8);
    for (size_t k = 0; k < rows.size(); ++k)
    {
        const ErrorStats& e = rows[k].error;
        EXPECT_EQ(rows[k].params.opening_angle, settings[k].opening_angle);
        EXPECT_EQ(e.count, 500);
        EXPECT_EQ(rows[k].errors.size(), 500u);
        EXPECT_GT(e.median, 0.0);
        EXPECT_LE(e.median, e.p90);
        EXPECT_LE(e.p90, e.p99);
        EXPECT_LE(e.p99, e.p999);
        EXPECT_LE(e.p999, e.max);
        EXPECT_LT(std::fabs(rows[k].potentialError()), 1e-2);
        EXPECT_GT(rows[k].nodesPerBody + rows[k].leavesPerBody, 0.0);
        EXPECT_GT(rows[k].walkForcesSeconds, 0.0);
        EXPECT_LE(rows[k].walkForcesSeconds, rows[k].walkSeconds);
        // Within one MAC (theta innermost), a larger opening angle is less accurate and cheaper.
        if (k % 4 != 0)
        {
            EXPECT_GT(e.median, rows[k - 1].error.median) << "theta " << rows[k].params.opening_angle;
            EXPECT_LT(rows[k].leavesPerBody, rows[k - 1].leavesPerBody);
        }
    }
}

TEST(Study, WalkTrafficCountsTheListsTheWalkWrites)
{
    const ParticleSet& b = plummer4000();
    GravitySolver s(test::cpuParameters(0.6));
    s.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    s.computeForces(acc, pot);
    WalkTraffic t = walkTraffic(s.packedTree().treeView(), s.packedTree().groupView());
    EXPECT_EQ(t.nodeEntries, int64_t(s.cpuLists().nodeList.size()));
    EXPECT_EQ(t.leafEntries, int64_t(s.cpuLists().leafList.size()));
    EXPECT_EQ(t.numGroups, s.stats().numGroups);
    // Every group opens at least the root, and never more cells than the tree has.
    EXPECT_GE(t.openedCells, t.numGroups);
    EXPECT_LE(t.openedCells, t.numGroups * s.stats().numInternal);
    EXPECT_GT(t.pass2Bytes(), t.pass1Bytes());
}

TEST(Study, ProfileCountsAllButTheWarmUp)
{
    const ParticleSet& b = plummer4000();
    ProfileResult r      = profileForces(b, test::cpuParameters(), 3, 200, 5);
    EXPECT_EQ(r.counted, 2);
    EXPECT_EQ(r.n, 4000);
    EXPECT_GT(r.total, 0.0);
    EXPECT_GT(r.median[Phase::BodyLeaf], 0.0);
    EXPECT_GT(r.deviceFraction, 0.0);
    EXPECT_LT(r.deviceFraction, 1.0);
    EXPECT_EQ(r.direct.sample, 200);
    EXPECT_DOUBLE_EQ(r.direct.seconds, r.direct.sampleSeconds * 20);
    EXPECT_GT(r.speedup(), 0.0);
    EXPECT_GT(r.walkBytesPerSecond(), 0.0);
    EXPECT_THROW(profileForces(b, test::cpuParameters(), 1, 0, 5), ParameterError);
}

TEST(Study, ProfileOfStepsHasTheStepPhases)
{
    ParticleSet b = plummer4000();
    // The classic step: its integration is a phase of its own (the pipelined step fuses it into the backend's work).
    Simulation sim(b, test::cpuParameters(), planSteps(0.0, 0.03, 0.01), ForceOptions{false, false, 1});
    std::vector<StepTimes> times = timeSteps(sim, 5, true);
    ASSERT_EQ(times.size(), 3u) << "stops at the end of the run";
    ProfileResult r = profileOfSteps(b, sim.solver(), times, 0, 5);
    EXPECT_EQ(r.steps, 3);
    EXPECT_EQ(r.counted, 3);
    EXPECT_GT(r.median[Phase::BodyLeaf], 0.0);
    EXPECT_GT(r.stepMedian[StepPhase::Integration], 0.0);
    EXPECT_GT(r.stepMedian[StepPhase::Diagnostics], 0.0);
    EXPECT_EQ(r.stepMedian[StepPhase::Io], 0.0);
    EXPECT_GE(r.stepMedian[StepPhase::StepWall], r.stepMedian[StepPhase::ForceWall]);
    EXPECT_GE(r.stepMedian[StepPhase::ForceWall], r.total * 0.5);
    EXPECT_GT(r.stepBodiesPerSecond(), 0.0);
    EXPECT_THROW(profileOfSteps(b, sim.solver(), {}, 0, 5), InputError);
}

TEST(StudyCli, AccuracyWritesCsvJsonAndErrorsAndRefusesToOverwrite)
{
    TempDir dir("octwalk_study_accuracy");
    std::string csv = dir / "acc.csv", json = dir / "acc.json", errors = dir / "errors";
    CliResult r = runOctwalk({"accuracy", "--n", "3000", "--sample", "400", "--theta", "0.4:0.8:0.2", "--mac", "bonsai",
                              "--backend", "cpu", "--reference", "cpu", "--csv", csv.c_str(), "--json", json.c_str(),
                              "--errors-dir", errors.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("median"), std::string::npos);
    EXPECT_NE(r.out.find("cpu direct summation"), std::string::npos);

    std::string c = slurp(csv);
    EXPECT_EQ(c.rfind("# {\"octwalk\"", 0), 0u) << c;
    EXPECT_NE(c.find("setting,theta,mac"), std::string::npos);
    EXPECT_EQ(countLines(c), 2 + 3);
    std::string j = slurp(json);
    for (const char* key : {"\"git\"", "\"units\"", "\"reference\"", "\"sample\": 400", "\"p999\"", "\"settings\""})
    {
        EXPECT_NE(j.find(key), std::string::npos) << key;
    }
    int files = 0;
    for (const auto& f : fs::directory_iterator(errors))
    {
        ++files;
        EXPECT_EQ(countLines(slurp(f.path())), 2 + 400) << f.path();
    }
    EXPECT_EQ(files, 3);

    for (auto args : std::vector<std::vector<const char*>>{{"accuracy", "--n", "3000", "--csv", csv.c_str()},
                                                           {"accuracy", "--n", "3000", "--json", json.c_str()},
                                                           {"accuracy", "--n", "3000", "--errors-dir", errors.c_str()}})
    {
        CliResult again = runOctwalk(args);
        EXPECT_EQ(again.code, 2);
        EXPECT_EQ(countLines(again.err), 1) << again.err;
    }
}

TEST(StudyCli, RejectsBadListsInOneLineBeforeWriting)
{
    TempDir dir("octwalk_study_bad");
    std::string csv = dir / "bad.csv";
    for (auto args : std::vector<std::vector<const char*>>{{"accuracy", "--theta", "0.2,,0.3"},
                                                           {"accuracy", "--theta", "abc"},
                                                           {"accuracy", "--theta", "1.5"},
                                                           {"accuracy", "--theta", "0.2:0.8"},
                                                           {"accuracy", "--n-leaf", "8,x"},
                                                           {"accuracy", "--n-group", "0"},
                                                           {"accuracy", "--mac", "bonsai,barnes"},
                                                           {"accuracy", "--multipole", "octupole"},
                                                           {"accuracy", "--sample", "0"},
                                                           {"accuracy", "--model", "kepler"},
                                                           {"profile", "--model", "kepler"},
                                                           {"accuracy", "--input", "x.tipsy", "--n", "100"},
                                                           {"profile", "--n", "2^10:3000"},
                                                           {"profile", "--n", "1"},
                                                           {"profile", "--theta", "0.5,"},
                                                           {"profile", "--repeat", "1"},
                                                           {"profile", "--direct-sample", "many"}})
    {
        args.push_back("--csv");
        args.push_back(csv.c_str());
        CliResult r = runOctwalk(args);
        EXPECT_EQ(r.code, 2) << args[1] << " " << args[2];
        EXPECT_EQ(countLines(r.err), 1) << r.err;
        EXPECT_TRUE(r.out.empty()) << r.out;
        EXPECT_FALSE(fs::exists(csv));
    }
}

TEST(StudyCli, ProfileStepsTimesWholeStepsInEveryOutput)
{
    TempDir dir("octwalk_study_profile_steps");
    std::string csv = dir / "steps.csv", json = dir / "steps.json";
    CliResult r = runOctwalk({"profile", "--n", "2^11", "--steps", "2", "--dt", "0.01", "--direct-sample", "0",
                              "--backend", "cpu", "--csv", csv.c_str(), "--json", json.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("2 simulation steps"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("median per simulation step [ms]"), std::string::npos) << r.out;
    for (const StepPhaseInfo& p : kStepPhases) EXPECT_NE(r.out.find(p.label), std::string::npos) << p.label;
    std::string c = slurp(csv);
    EXPECT_EQ(countLines(c), 2 + 1);
    for (const StepPhaseInfo& p : kStepPhases)
        EXPECT_NE(c.find(std::string(",") + p.name), std::string::npos) << p.name;
    EXPECT_NE(c.find(",steps,"), std::string::npos);
    EXPECT_NE(c.find("step_bodies_per_second"), std::string::npos);
    std::string j = slurp(json);
    for (const char* key :
         {"\"steps\": 2", "\"step_seconds\": {\"force_wall\": ", "\"step_wall\"", "\"step_bodies_per_second\"",
          "\"step_phases\"", "\"timestep\": 0.01", "\"epsilon_squared\": 0.0001", "\"body_leaf\""})
    {
        EXPECT_NE(j.find(key), std::string::npos) << key;
    }
    // --steps times steps, not evaluations; step options without it are a mistake.
    EXPECT_EQ(runOctwalk({"profile", "--n", "2^11", "--steps", "2", "--repeat", "3", "--backend", "cpu"}).code, 2);
    EXPECT_EQ(runOctwalk({"profile", "--n", "2^11", "--dt", "0.01", "--backend", "cpu"}).code, 2);
    EXPECT_EQ(runOctwalk({"profile", "--n", "2^11", "--steps", "-1", "--backend", "cpu"}).code, 2);
}

TEST(StudyCli, ProfileSweepsNAndThetaAndWritesOutputs)
{
    TempDir dir("octwalk_study_profile");
    std::string csv = dir / "prof.csv", json = dir / "prof.json";
    CliResult r = runOctwalk({"profile", "--n", "2^11:2^12", "--theta", "0.5,0.7", "--repeat", "2", "--direct-sample",
                              "100", "--backend", "cpu", "--csv", csv.c_str(), "--json", json.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("speed-up"), std::string::npos);
    EXPECT_NE(r.out.find("walk-count"), std::string::npos);
    std::string c = slurp(csv);
    EXPECT_EQ(countLines(c), 2 + 4);
    EXPECT_NE(c.find("\n4096,0.7,"), std::string::npos) << c;
    std::string j = slurp(json);
    for (const char* key : {"\"walk_bytes\"", "\"extrapolated_seconds\"", "\"node_gflops\"", "\"device_fraction\"",
                            "\"body_node\": 70", "\"git\""})
    {
        EXPECT_NE(j.find(key), std::string::npos) << key;
    }
    CliResult again = runOctwalk({"profile", "--n", "2^11", "--backend", "cpu", "--json", json.c_str()});
    EXPECT_EQ(again.code, 2);
    EXPECT_NE(again.err.find("already exists"), std::string::npos);
}

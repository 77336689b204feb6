// octwalk run --timeline and octwalk profile --timeline: timeline.csv's header and rows, and a timeline
// that leaves every other output as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/phases.h"
#include "host/cli/cli.h"

namespace {

namespace fs = std::filesystem;

int runCli(std::vector<const char*> args, std::string* err = nullptr)
{
    args.insert(args.begin(), "octwalk");
    std::ostringstream out, errors;
    int code = octwalk::runCli(int(args.size()), args.data(), out, errors);
    if (err) *err = errors.str();
    return code;
}

std::string slurp(const fs::path& f)
{
    std::ifstream in(f, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Row
{
    long step;
    std::string lane, phase;
    double start, end;
};

/// The rows of a timeline.csv; columns: the line after the comments.
std::vector<Row> timelineRows(const std::string& text, std::string& comments, std::string& columns)
{
    std::vector<Row> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
    {
        if (line.rfind("#", 0) == 0)
        {
            comments += line + "\n";
            continue;
        }
        if (columns.empty())
        {
            columns = line;
            continue;
        }
        std::vector<std::string> f;
        std::istringstream fields(line);
        std::string v;
        while (std::getline(fields, v, ',')) f.push_back(v);
        EXPECT_EQ(f.size(), 5u) << line;
        if (f.size() != 5) continue;
        rows.push_back({std::stol(f[0]), f[1], f[2], std::stod(f[3]), std::stod(f[4])});
    }
    return rows;
}

/// The checks every timeline of steps 1..steps on the CPU passes: each interval ends after it starts;
/// the host lane's intervals do not overlap and come in step order, each step with its own host work;
/// the tree build and the walk of each step lie between its kick_drift and its reorder_kick.
void checkCpuTimeline(const std::vector<Row>& rows, long steps, bool withIo)
{
    std::map<long, std::map<std::string, Row>> byStep;
    const Row* previousHost = nullptr;
    for (const Row& r : rows)
    {
        EXPECT_GE(r.end, r.start) << r.lane << " " << r.phase;
        EXPECT_GE(r.start, 0.0);
        byStep[r.step][r.lane + "/" + r.phase] = r;
        if (r.lane != "host") continue;
        if (previousHost)
        {
            EXPECT_GE(r.start, previousHost->end) << "host intervals overlap at step " << r.step << " " << r.phase;
            EXPECT_GE(r.step, previousHost->step) << "host intervals out of step order";
        }
        previousHost = &r;
    }
    ASSERT_EQ(long(byStep.size()), steps);
    for (const auto& [step, phases] : byStep)
    {
        std::vector<std::string> expected{"host/kick_drift", "host/reorder_kick"};
        if (withIo) expected.insert(expected.end(), {"host/diagnostics", "host/io"});
        for (const octwalk::PhaseInfo& p : octwalk::kPhases)
        {
            expected.push_back((p.group == octwalk::PhaseGroup::Host ? "host-build/" : "host-walk/") +
                               std::string(p.name));
        }
        for (const std::string& name : expected) EXPECT_EQ(phases.count(name), 1u) << "step " << step << " " << name;
        if (phases.count("host/kick_drift") == 0 || phases.count("host/reorder_kick") == 0) continue;
        const double from = phases.at("host/kick_drift").end, to = phases.at("host/reorder_kick").start;
        for (const auto& [name, r] : phases)
        {
            if (r.lane == "host") continue;
            EXPECT_GE(r.start, from - 1e-9) << "step " << step << " " << name;
            EXPECT_LE(r.end, to + 1e-9) << "step " << step << " " << name;
        }
    }
}

} // namespace

TEST(TimelineRun, RunWritesHostIntervalsInStepOrderAndChangesNothingElse)
{
    fs::path base = fs::temp_directory_path() / ("octwalk_timeline_run_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::string with = (base / "with").string(), without = (base / "without").string();
    std::string err;
    for (const std::string* dir : {&with, &without})
    {
        std::vector<const char*> args{"run",          "--n",        "1000",    "--t-end",   "0.0625",
                                      "--output-dir", dir->c_str(), "--quiet", "--backend", "cpu"};
        if (dir == &with) args.push_back("--timeline");
        ASSERT_EQ(runCli(args, &err), 0) << err;
    }
    EXPECT_FALSE(fs::exists(base / "without" / "timeline.csv")) << "off unless asked for";
    EXPECT_EQ(slurp(base / "with" / "energy.csv"), slurp(base / "without" / "energy.csv"));
    EXPECT_EQ(slurp(base / "with" / "checkpoint.bin"), slurp(base / "without" / "checkpoint.bin"));

    std::string comments, columns;
    std::vector<Row> rows = timelineRows(slurp(base / "with" / "timeline.csv"), comments, columns);
    EXPECT_EQ(columns, "step,lane,phase,start_s,end_s");
    EXPECT_NE(comments.find("seconds since the start of the run"), std::string::npos) << comments;
    checkCpuTimeline(rows, 8, true);
    fs::remove_all(base);
}

TEST(TimelineRun, ProfileStepsWritesATimelineFile)
{
    fs::path base = fs::temp_directory_path() / ("octwalk_timeline_profile_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const std::string file = (base / "timeline.csv").string();
    std::string err;
    ASSERT_EQ(runCli({"profile", "--n", "2000", "--steps", "3", "--backend", "cpu", "--direct-sample", "0",
                      "--timeline", file.c_str()},
                     &err),
              0)
        << err;
    std::string comments, columns;
    std::vector<Row> rows = timelineRows(slurp(file), comments, columns);
    EXPECT_EQ(columns, "step,lane,phase,start_s,end_s");
    EXPECT_NE(comments.find("\"command\": \"profile\""), std::string::npos) << "the profile's settings";
    checkCpuTimeline(rows, 3, false);

    EXPECT_EQ(runCli({"profile", "--n", "2000", "--steps", "3", "--backend", "cpu", "--timeline", file.c_str()}, &err),
              2)
        << "an existing file is refused";
    const std::string other = (base / "other.csv").string();
    EXPECT_EQ(runCli({"profile", "--n", "2000", "--backend", "cpu", "--timeline", other.c_str()}, &err), 2)
        << "no --steps";
    EXPECT_EQ(
        runCli({"profile", "--n", "2000,4000", "--steps", "2", "--backend", "cpu", "--timeline", other.c_str()}, &err),
        2)
        << "two N";
    EXPECT_FALSE(fs::exists(other));
    fs::remove_all(base);
}

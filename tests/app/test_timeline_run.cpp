// octwalk run --timeline and octwalk profile --timeline: timeline.csv's header and rows, and a timeline
// that leaves every other output as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
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
        std::vector<const char*> args{
            "run",        "--n",     "1000",      "--t-end", "0.0625",          "--output-dir",
            dir->c_str(), "--quiet", "--backend", "cpu",     "--rebuild-every", "1"};
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
                      "--rebuild-every", "1", "--timeline", file.c_str()},
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

namespace {

/// rows' intervals by step and lane/phase (the last of each when a phase repeats).
std::map<long, std::map<std::string, Row>> byStepAndPhase(const std::vector<Row>& rows)
{
    std::map<long, std::map<std::string, Row>> out;
    for (const Row& r : rows) out[r.step][r.lane + "/" + r.phase] = r;
    return out;
}

/// Steps of rows on `lane`, in the order of their start (rows are written by step, and a build thread's
/// rows may come a step late).
std::vector<const Row*> laneByStart(const std::vector<Row>& rows, const std::string& lane)
{
    std::vector<const Row*> out;
    for (const Row& r : rows)
    {
        if (r.lane == lane) out.push_back(&r);
    }
    std::stable_sort(out.begin(), out.end(), [](const Row* a, const Row* b) { return a->start < b->start; });
    return out;
}

/// A pipelined run of `steps` steps with --rebuild-every `every` on the CPU twin, with and without --timeline:
/// the same energy.csv and checkpoint; returns the timeline's rows.
std::vector<Row> pipelineTimeline(const fs::path& base, const char* every, const char* lag, long steps)
{
    const std::string with = (base / "with").string(), without = (base / "without").string();
    char tEnd[32];
    std::snprintf(tEnd, sizeof(tEnd), "%.17g", double(steps) / 128);
    std::string err;
    for (const std::string* dir : {&with, &without})
    {
        std::vector<const char*> args{"run",       "--n",       "2000",         "--t-end",         tEnd,
                                      "--dt",      "0.0078125", "--quiet",      "--rebuild-every", every,
                                      "--backend", "cpu",       "--output-dir", dir->c_str(),      "--rebuild-lag",
                                      lag};
        if (dir == &with) args.push_back("--timeline");
        EXPECT_EQ(runCli(args, &err), 0) << err;
    }
    EXPECT_FALSE(fs::exists(base / "without" / "timeline.csv"));
    EXPECT_EQ(slurp(base / "with" / "energy.csv"), slurp(base / "without" / "energy.csv"));
    EXPECT_EQ(slurp(base / "with" / "checkpoint.bin"), slurp(base / "without" / "checkpoint.bin"));
    std::string comments, columns;
    std::vector<Row> rows = timelineRows(slurp(base / "with" / "timeline.csv"), comments, columns);
    EXPECT_EQ(columns, "step,lane,phase,start_s,end_s");
    return rows;
}

/// The checks of every pipelined timeline of steps 1..steps on the CPU twin: intervals end after they
/// start; the host lane's intervals do not overlap and their steps increase; each step has its host
/// phases and the twin's refit, walk, forces and kick/drift inside its host kick_drift..kick; each build
/// lies after the drift of the step that started it, its phases in order. withIo: a run's, whose steps
/// also write diagnostics and I/O (profile --steps: neither).
void checkPipelineTimeline(const std::vector<Row>& rows, long steps, bool withIo = true)
{
    for (const Row& r : rows)
    {
        EXPECT_GE(r.end, r.start) << r.lane << " " << r.phase << " of step " << r.step;
        EXPECT_GE(r.start, 0.0);
    }
    const Row* previous = nullptr;
    for (const Row* r : laneByStart(rows, "host"))
    {
        if (previous)
        {
            EXPECT_GE(r->start, previous->end) << "host intervals overlap at step " << r->step << " " << r->phase;
            EXPECT_GE(r->step, previous->step) << "host intervals out of step order at " << r->phase;
        }
        previous = r;
    }
    previous = nullptr;
    for (const Row* r : laneByStart(rows, "host-build"))
    {
        if (previous) EXPECT_GE(r->step, previous->step) << "builds out of step order at " << r->phase;
        previous = r;
    }
    auto phases = byStepAndPhase(rows);
    // Before the first step: the diagnostics and the snapshot of the initial state, read from the twin.
    for (const auto& [name, r] : phases[0]) EXPECT_EQ(r.lane, "host-walk") << name << " before the first step";
    phases.erase(0);
    ASSERT_EQ(long(phases.size()), steps);
    for (const auto& [step, p] : phases)
    {
        SCOPED_TRACE("step " + std::to_string(step));
        for (const char* name : {"host/kick_drift", "host/evaluate", "host/kick", "host-walk/kick_drift",
                                 "host-walk/refit", "host-walk/walk_count", "host-walk/scan", "host-walk/walk_write",
                                 "host-walk/body_node", "host-walk/body_leaf", "host-walk/kick"})
        {
            EXPECT_EQ(p.count(name), 1u) << name;
        }
        EXPECT_EQ(p.count("host/diagnostics") + p.count("host/io"), withIo ? 2u : 0u);
        if (p.count("host/kick_drift") == 0 || p.count("host/kick") == 0) continue;
        const double from = p.at("host/kick_drift").start, to = p.at("host/kick").end;
        for (const auto& [name, r] : p)
        {
            // The rows' and the snapshots' reads come after the step.
            const bool afterStep =
                r.phase == "diagnostics" || r.phase == "lagrangian_radii" || r.phase == "download_state";
            if (r.lane != "host-walk" || afterStep) continue;
            EXPECT_GE(r.start, from) << name;
            EXPECT_LE(r.end, to) << name;
        }
        // A build still running at the end of the run may be cut off; the others are complete.
        if (p.count("host-build/order") == 0) continue;
        EXPECT_GE(p.at("host-build/wait_positions").start, p.at("host/kick_drift").end) << "built from drifted state";
        const char* order[] = {"wait_positions", "sort", "cells", "groups", "packing", "order"};
        for (size_t k = 1; k < std::size(order); ++k)
        {
            const std::string before = std::string("host-build/") + order[k - 1],
                              now    = std::string("host-build/") + order[k];
            ASSERT_EQ(p.count(now), 1u) << now;
            ASSERT_EQ(p.count(before), 1u) << before;
            EXPECT_GE(p.at(now).start, p.at(before).end) << now;
        }
    }
}

/// The steps whose rows have lane/phase.
std::set<long> stepsWith(const std::vector<Row>& rows, const std::string& lane, const std::string& phase)
{
    std::set<long> out;
    for (const Row& r : rows)
    {
        if (r.lane == lane && r.phase == phase) out.insert(r.step);
    }
    return out;
}

} // namespace

TEST(TimelineRun, ContinuousPipelineRecordsBuildRefitWalkAndKicksAndChangesNothingElse)
{
    fs::path base = fs::temp_directory_path() / ("octwalk_timeline_pipe0_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::vector<Row> rows = pipelineTimeline(base, "0", "2", 8);
    checkPipelineTimeline(rows, 8);
    // Lag 2 (the default): every other step starts a build (written by the step that joins it: the last
    // one's may be cut off), and the step two later adopts it and starts the next.
    const std::set<long> built = stepsWith(rows, "host-build", "sort");
    for (long s : {1, 3, 5}) EXPECT_EQ(built.count(s), 1u) << "build started at step " << s;
    EXPECT_EQ(built.count(2), 0u);
    const std::set<long> predicted = stepsWith(rows, "host-walk", "predict");
    EXPECT_EQ(predicted, (std::set<long>{1, 3, 5, 7}));
    const std::set<long> adopted = stepsWith(rows, "host", "adopt"), permuted = stepsWith(rows, "host-walk", "permute");
    EXPECT_EQ(adopted, (std::set<long>{3, 5, 7}));
    EXPECT_EQ(permuted, adopted);
    EXPECT_EQ(stepsWith(rows, "host", "wait_build"), adopted);
    fs::remove_all(base);
}

TEST(TimelineRun, PipelineEveryThreeStepsRecordsBuildsAtTheirSteps)
{
    fs::path base = fs::temp_directory_path() / ("octwalk_timeline_pipe3_" + std::to_string(::getpid()));
    fs::remove_all(base);
    const std::vector<Row> rows = pipelineTimeline(base, "3", "1", 7);
    checkPipelineTimeline(rows, 7);
    // K = 3, lag 1: builds start after the drifts of steps 2 and 5 and are adopted at steps 3 and 6.
    EXPECT_EQ(stepsWith(rows, "host-build", "order"), (std::set<long>{2, 5}));
    EXPECT_EQ(stepsWith(rows, "host", "start_build"), (std::set<long>{2, 5}));
    EXPECT_EQ(stepsWith(rows, "host-walk", "upload_topology"), (std::set<long>{3, 6}));
    fs::remove_all(base);
}

TEST(TimelineRun, ProfileStepsWithRebuildEveryRecordsThePipelinedStep)
{
    fs::path base = fs::temp_directory_path() / ("octwalk_timeline_profile_pipe_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const std::string file = (base / "timeline.csv").string(), json = (base / "profile.json").string();
    std::string err;
    ASSERT_EQ(runCli({"profile", "--n", "2000", "--steps", "4", "--backend", "cpu", "--direct-sample", "0",
                      "--rebuild-every", "0", "--rebuild-lag", "1", "--timeline", file.c_str(), "--json", json.c_str()},
                     &err),
              0)
        << err;
    std::string comments, columns;
    const std::vector<Row> rows = timelineRows(slurp(file), comments, columns);
    checkPipelineTimeline(rows, 4, false);
    // Continuous: each step starts a build, each after the first adopts the one before.
    EXPECT_EQ(stepsWith(rows, "host", "start_build"), (std::set<long>{1, 2, 3, 4}));
    EXPECT_EQ(stepsWith(rows, "host", "adopt"), (std::set<long>{2, 3, 4}));
    EXPECT_EQ(stepsWith(rows, "host-walk", "permute"), (std::set<long>{2, 3, 4}));
    EXPECT_TRUE(stepsWith(rows, "host", "reorder_kick").empty()) << "no classic step";
    const std::string profile = slurp(json);
    EXPECT_NE(profile.find("\"rebuild_every\": 0, \"rebuild_lag\": 1"), std::string::npos) << profile;
    EXPECT_NE(profile.find("\"opened_cells\": 0,"), std::string::npos) << "no host tree to count the walk's traffic on";

    EXPECT_EQ(runCli({"profile", "--n", "2000", "--backend", "cpu", "--rebuild-every", "0"}, &err), 2)
        << "--rebuild-every needs --steps";
    EXPECT_NE(err.find("--rebuild-every"), std::string::npos) << err;
    fs::remove_all(base);
}

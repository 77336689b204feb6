// octwalk profile: per-phase timings, rates and the speed-up over direct summation vs N and theta (the
// measurements live in host/study/study.cpp).
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "device/gpu_solver.h"
#include "host/cli/commands.h"
#include "host/cli/lists.h"
#include "host/cli/options.h"
#include "host/cli/study_report.h"
#include "host/core/phases.h"
#include "host/core/timeline.h"
#include "host/io/atomic_file.h"
#include "host/models/models.h"
#include "host/reference/direct.h"
#include "host/reference/error_stats.h"
#include "host/sim/run.h"
#include "host/study/study.h"

namespace octwalk::cli {

namespace {

/// One CSV row per interval, each ending in a newline.
std::string timelineCsvRows(const std::vector<TimelineInterval>& intervals)
{
    std::string rows;
    for (const TimelineInterval& i : intervals) rows += timelineCsvRow(i) + "\n";
    return rows;
}

/// The parameter the profile takes as a list instead of the table's single-valued option.
const std::vector<std::string> kProfileSweptParameters{"opening_angle"};

struct ProfileOptions
{
    ModelOptions source;
    // --n and --theta are lists here; mac, n-leaf, n-group and monopole are the table's options.
    std::string n = "2^20", theta = defaultText("opening_angle"), directSample = "auto", output, csv, json, timeline;
    int repeat = 5;
    /// Whole simulation steps timed instead of force evaluations (0: force evaluations).
    int steps            = 0;
    bool stepDiagnostics = false;
    /// With --steps: bodies whose last-step force error is measured against direct summation (0: none).
    int64_t stepErrorSample = 2048;
    /// With --steps: run's --rebuild-every and --rebuild-lag (host/sim/pipeline.h for --rebuild-every != 1).
    ForceOptions forces;
};

/// "auto": enough targets to fill a large GPU (32768 = 128 blocks of 256) or a quick CPU run.
int64_t directSampleSize(const std::string& text, Backend backend)
{
    if (text == "auto") return backend == Backend::Gpu ? 32768 : 1000;
    std::vector<int> v = parseIntList("direct-sample", text, 0);
    if (v.size() != 1) throw ParameterError("option --direct-sample = '" + text + "' is invalid: give one number");
    return v.front();
}

const std::string kProfileCsvColumns =
    "n,theta,mac,n_leaf,n_group,multipole,backend,evaluations," + phasesCsvHeader() +
    ",total_seconds,wall_seconds,device_fraction,node_per_body,leaf_per_body,node_gflops,leaf_gflops,walk_bytes,"
    "walk_bytes_per_second,bodies_per_second,direct_sample,direct_seconds_extrapolated,speedup";

/// The columns of profile --steps, after kProfileCsvColumns.
std::string stepCsvColumns()
{
    return ",steps," + stepPhasesCsvHeader() +
           ",step_bodies_per_second,step_error_sample,step_error_median,step_error_p99";
}

std::string profileCsvRow(const ProfileResult& r, bool withSteps)
{
    const PhaseTimes& t = r.median;
    const Parameters& p = r.params;
    std::ostringstream c;
    c << r.n << ',' << num(p.opening_angle, false) << ',' << toString(p.mac) << ',' << p.n_leaf << ',' << p.n_group
      << ',' << multipoleName(p) << ',' << toString(r.backend) << ',' << r.counted << ',' << phasesCsv(t);
    for (double v : {r.total, r.wall, r.deviceFraction, r.stats.nodesPerBody(), r.stats.leavesPerBody(), r.nodeGflops(),
                     r.leafGflops(), r.traffic.bytes(), r.walkBytesPerSecond(), r.bodiesPerSecond()})
    {
        c << ',' << num(v, false);
    }
    c << ',' << r.direct.sample << ',' << num(r.direct.seconds, false) << ',' << num(r.speedup(), false);
    if (withSteps)
    {
        c << ',' << r.steps << ',' << stepPhasesCsv(r.stepMedian) << ',' << num(r.stepBodiesPerSecond(), false) << ','
          << r.stepError.count << ',' << num(r.stepError.median, false) << ',' << num(r.stepError.p99, false);
    }
    c << '\n';
    return c.str();
}

std::string profileJsonRow(const ProfileResult& r)
{
    const PhaseTimes& t = r.median;
    std::ostringstream j;
    j << "    {\"n\": " << r.n << ", \"theta\": " << num(r.params.opening_angle)
      << ", \"parameters\": " << toJson(r.params) << ", \"backend\": " << jsonString(toString(r.backend))
      << ", \"evaluations\": " << r.counted << ",\n     " << phasesJson(t)
      << ",\n     \"total_seconds\": " << num(r.total) << ", \"wall_seconds\": " << num(r.wall)
      << ", \"device_fraction\": " << num(r.deviceFraction) << ", \"bodies_per_second\": " << num(r.bodiesPerSecond())
      << ",\n     \"node_interactions\": " << r.stats.nodeInteractions
      << ", \"leaf_interactions\": " << r.stats.leafInteractions
      << ", \"node_per_body\": " << num(r.stats.nodesPerBody())
      << ", \"leaf_per_body\": " << num(r.stats.leavesPerBody()) << ", \"node_gflops\": " << num(r.nodeGflops())
      << ", \"leaf_gflops\": " << num(r.leafGflops()) << ",\n     \"walk\": {\"groups\": " << r.traffic.numGroups
      << ", \"opened_cells\": " << r.traffic.openedCells << ", \"node_entries\": " << r.traffic.nodeEntries
      << ", \"leaf_entries\": " << r.traffic.leafEntries << ", \"visited_entries\": " << r.traffic.visitedEntries()
      << ", \"pass1_bytes\": " << num(r.traffic.pass1Bytes()) << ", \"pass2_bytes\": " << num(r.traffic.pass2Bytes())
      << ", \"bytes_per_second\": " << num(r.walkBytesPerSecond()) << "}"
      << ",\n     \"direct\": {\"sample\": " << r.direct.sample
      << ", \"sample_seconds\": " << num(r.direct.sampleSeconds)
      << ", \"extrapolated_seconds\": " << num(r.direct.seconds) << ", \"kernel\": " << jsonString(r.direct.kernel)
      << "}, \"speedup\": " << num(r.speedup());
    if (r.steps > 0)
    {
        j << ",\n     \"steps\": " << r.steps << ", \"step_seconds\": " << stepPhasesJson(r.stepMedian)
          << ", \"step_bodies_per_second\": " << num(r.stepBodiesPerSecond())
          << ", \"step_error\": {\"sample\": " << r.stepError.count << ", \"median\": " << num(r.stepError.median)
          << ", \"p99\": " << num(r.stepError.p99) << "}";
    }
    j << "}";
    return j.str();
}

std::string profileTableHeader()
{
    char lead[32];
    std::snprintf(lead, sizeof(lead), "%10s %6s", "N", "theta");
    return lead + title(10, "host[ms]") + title(10, "walk[ms]") + title(10, "total[ms]") + title(7, "walk%") +
           title(11, "node/body") + title(10, "leaf/body") + title(11, "node GF/s") + title(10, "leaf GF/s") +
           title(10, "walk GB/s") + title(9, "Mbody/s") + title(10, "speed-up") + "\n";
}

std::string profileTableRow(const ProfileResult& r)
{
    char lead[32];
    std::snprintf(lead, sizeof(lead), "%10lld %6.3g", static_cast<long long>(r.n), r.params.opening_angle);
    return std::string(lead) + cell("%10.3f", 1e3 * r.median.host()) + cell("%10.3f", 1e3 * r.median.walk()) +
           cell("%10.3f", 1e3 * r.total) + cell("%6.1f%%", 100 * r.deviceFraction) +
           cell("%11.1f", r.stats.nodesPerBody()) + cell("%10.1f", r.stats.leavesPerBody()) +
           cell("%11.1f", r.nodeGflops()) + cell("%10.1f", r.leafGflops()) +
           cell("%10.2f", r.walkBytesPerSecond() / 1e9) + cell("%9.2f", r.bodiesPerSecond() / 1e6) +
           (r.direct.sample > 0 ? cell("%10.1f", r.speedup()) : std::string("         -")) + "\n";
}

std::string phaseTable(const std::vector<ProfileResult>& results)
{
    char head[32];
    std::snprintf(head, sizeof(head), "%10s %6s", "N", "theta");
    std::string s = std::string("median per phase [ms]\n") + head + phasesTableHeader(11) + "\n";
    for (const ProfileResult& r : results)
    {
        const PhaseTimes& t = r.median;
        char lead[32];
        std::snprintf(lead, sizeof(lead), "%10lld %6.3g", static_cast<long long>(r.n), r.params.opening_angle);
        s += lead + phasesTableRow(t, 11) + "\n";
    }
    return s;
}

/// The relative force errors of sim's last evaluation on `sample` bodies (sampleIndices with seed) against
/// double direct summation of its current positions: the error of the forces the step kicked with.
ErrorStats stepForceError(const Simulation& sim, int64_t sample, uint64_t seed)
{
    const ParticleSet& state       = sim.state();
    const std::vector<Vec3d> acc   = sim.accelerations();
    const Parameters& p            = sim.parameters();
    const std::vector<int64_t> idx = sampleIndices(state.size(), sample, seed);
    std::vector<Vec3d> ref, got(idx.size());
    std::vector<double> pot;
    directSum(state.pos.data(), state.mass.data(), state.size(), idx, p.epsilon_squared, p.gravitational_constant, ref,
              pot);
    for (size_t k = 0; k < idx.size(); ++k) got[k] = acc[size_t(idx[k])];
    return errorStats(relativeErrors(got, ref));
}

/// The step phases of profile --steps, per row.
std::string stepTable(const std::vector<ProfileResult>& results)
{
    char head[32];
    std::snprintf(head, sizeof(head), "%10s %6s", "N", "theta");
    std::string s = std::string("median per simulation step [ms] (force-wall: the evaluation above with its "
                                "reordering)\n") +
                    head + stepPhasesTableHeader(12) + title(10, "Mbody/s") + title(11, "err-median") +
                    title(10, "err-p99") + "\n";
    for (const ProfileResult& r : results)
    {
        char lead[32];
        std::snprintf(lead, sizeof(lead), "%10lld %6.3g", static_cast<long long>(r.n), r.params.opening_angle);
        s += lead + stepPhasesTableRow(r.stepMedian, 12) + cell("%10.2f", r.stepBodiesPerSecond() / 1e6);
        if (r.stepError.count > 0) s += cell("%11.3e", r.stepError.median) + cell("%10.3e", r.stepError.p99);
        s += "\n";
    }
    return s;
}

} // namespace

int profileCommand(int argc, const char* const* argv, std::ostream& out)
{
    ProfileOptions o;
    po::options_description cmd(
        "octwalk profile: medians per phase over repeated force evaluations (the first is a warm-up), interactions, "
        "kernel GFLOP/s, walk bandwidth, bodies per second and the speed-up over direct summation, for every N x "
        "theta.\nSweep");
    // One option per line: Boost.Program_options chains read best that way.
    // clang-format off
    cmd.add_options()("help,h", "this help")
        ("n", po::value(&o.n)->default_value(o.n),
         "body counts: a list (1000,2^12) or every power of two in a range (2^15:2^24), each from 2 to 2^30 - 1")
        ("theta", po::value(&o.theta)->default_value(o.theta),
         listHelp("opening_angle", "opening angles: a list or start:stop:step (inclusive)").c_str())
        ("repeat", po::value(&o.repeat)->default_value(o.repeat), "evaluations per setting, >= 2 (first not counted)")
        ("direct-sample", po::value(&o.directSample)->default_value(o.directSample),
         "targets of the timed direct summation, extrapolated to N (auto: 32768 on the GPU, 1000 on the CPU; "
         "0: skip)")
        ("steps", po::value(&o.steps)->default_value(o.steps),
         "time this many whole simulation steps (kick-drift-kick leapfrog of the model, as octwalk run; the "
         "initial force evaluation is the warm-up) instead of --repeat force evaluations; adds the step phases "
         "(integration, step wall time) to every output. 0: force evaluations only. With --steps, --epsilon "
         "defaults to run's 0.01")
        ("step-diagnostics", po::bool_switch(&o.stepDiagnostics),
         "with --steps: also time the diagnostics a run writes (energy sums, Lagrangian radii) in each step")
        ("step-error-sample", po::value(&o.stepErrorSample)->default_value(o.stepErrorSample),
         "with --steps: after the timed steps, the last step's own forces (the tree it walked: refitted and "
         "lagged in the pipelined step) on this many sampled bodies against double direct summation, as the "
         "median and 99th percentile of the relative acceleration error (0: skip)")
        ("csv", po::value(&o.csv), "write one row per N x theta to this new CSV file")
        ("json", po::value(&o.json), "write the profile to this new JSON file")
        ("timeline", po::value(&o.timeline),
         "with --steps, one N and one theta: write what ran when in the timed steps to this new CSV file (one row "
         "per interval: step, lane, phase, start and end in seconds since the first timed step), for "
         "scripts/plot_timeline.py");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(modelOptions(o.source, 0, false))
        .add(outputOption(o.output, kReportOutputHelp))
        .add(timestepOptions(" of --steps"))
        .add(rebuildOptions(o.forces, "; with --steps"))
        .add(solverOptions(Parameters{}, withRunOnlyParameters(kProfileSweptParameters)));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    checkModel(o.source);
    std::vector<int64_t> counts = parseCountList("n", o.n, 2);
    for (int64_t n : counts) // every N against the model's limits, before the first row is computed
    {
        ModelOptions m = o.source;
        m.n            = n;
        checkModel(m);
    }
    std::vector<double> thetas = parseThetaList("theta", o.theta);
    if (o.repeat < 2)
    {
        throw ParameterError("option --repeat = " + std::to_string(o.repeat) +
                             " is invalid: must be >= 2 (the first "
                             "evaluation is a warm-up)");
    }
    if (o.steps < 0)
    {
        throw ParameterError("option --steps = " + std::to_string(o.steps) + " is invalid: must be >= 0");
    }
    const bool withSteps = o.steps > 0;
    if (!withSteps && (vm.count("timestep") || vm.count("dt") || o.stepDiagnostics ||
                       !vm["rebuild-every"].defaulted() || !vm["rebuild-lag"].defaulted()))
    {
        throw UsageError("--timestep, --dt, --step-diagnostics, --rebuild-every and --rebuild-lag need --steps");
    }
    if (withSteps && !vm["repeat"].defaulted()) throw UsageError("give --steps or --repeat, not both");
    checkRebuildOptions(vm, o.forces);
    if (!o.timeline.empty() && (!withSteps || counts.size() != 1 || thetas.size() != 1))
    {
        throw UsageError("--timeline needs --steps and a single --n and --theta (one timeline per file)");
    }
    const double dt = timestepOption(vm);
    if (withSteps) planSteps(0.0, double(o.steps) * dt, dt); // ParameterError for a bad timestep, before any work
    Parameters base = studyParameters(vm, withRunOnlyParameters(kProfileSweptParameters));
    if (withSteps && (!vm.count("epsilon") || vm["epsilon"].defaulted()))
    {
        base.epsilon_squared = kRunEpsilon * kRunEpsilon;
    }
    // Resolved here so that the report names the step the rows were timed with.
    o.forces.rebuildEvery = withSteps ? resolvedRebuildEvery(base, o.forces, false) : 1;
    StudyGrid grid;
    grid.theta                       = thetas;
    grid.mac                         = {base.mac};
    grid.nLeaf                       = {base.n_leaf};
    grid.nGroup                      = {base.n_group};
    grid.quadrupole                  = {base.use_quadrupole};
    std::vector<Parameters> settings = expandGrid(base, grid);
    Backend backend                  = GravitySolver(settings.front()).activeBackend();
    int64_t directSample             = directSampleSize(o.directSample, backend);
    resolveReports(o.output, o.csv, o.json);
    checkNewOutput("--timeline", o.timeline);

    out << versionHeader() << ": profile of " << o.source.model << " on " << toString(backend)
        << (backend == Backend::Gpu ? " (" + gpuDescription() + ")" : std::string()) << ", "
        << (withSteps ? std::to_string(o.steps) + " simulation steps of " + num(dt) + " per row (medians)" +
                            (o.forces.rebuildEvery != 1
                                 ? ", --rebuild-every " + std::to_string(o.forces.rebuildEvery) + " --rebuild-lag " +
                                       vm["rebuild-lag"].as<std::string>() + " (the pipelined step: no walk bytes)"
                                 : std::string())
                      : std::to_string(o.repeat - 1) + " counted evaluations per row (medians)")
        << "; speed-up = direct summation time extrapolated from " << directSample
        << " targets to N, over the tree's total per evaluation\n";
    out << profileTableHeader();
    std::vector<ProfileResult> results;
    std::string timelineRows;
    for (int64_t n : counts)
    {
        ModelOptions m     = o.source;
        m.n                = n;
        ParticleSet bodies = buildModel(m);
        for (const Parameters& p : settings)
        {
            if (withSteps)
            {
                Simulation sim(bodies, p, planSteps(0.0, double(o.steps) * dt, dt), o.forces);
                TimelineSession timelineSession(!o.timeline.empty());
                std::vector<StepTimes> times = timeSteps(sim, o.steps, o.stepDiagnostics);
                timelineRows                 = timelineCsvRows(processTimeline().take());
                results.push_back(profileOfSteps(bodies, sim.solver(), times, directSample, o.source.seed + 1));
                results.back().stats = stepInteractions(sim);
                if (o.stepErrorSample > 0)
                {
                    results.back().stepError = stepForceError(sim, o.stepErrorSample, o.source.seed + 2);
                }
                // The pipelined step's refitted tree stays with its backend: no host tree to count the walk's
                // traffic on.
                if (sim.pipeline()) results.back().traffic = WalkTraffic{};
            }
            else
            {
                results.push_back(profileForces(bodies, p, o.repeat, directSample, o.source.seed + 1));
            }
            out << profileTableRow(results.back()) << std::flush;
        }
    }
    out << phaseTable(results);
    if (withSteps) out << stepTable(results);
    out << "walk bytes: " << kWalkTrafficFormula << "\n";

    const Parameters& first = settings.front();
    std::ostringstream head;
    head << "{" << provenanceJson(first.gravitational_constant)
         << ", \"command\": \"profile\", \"model\": " << jsonString(o.source.model) << ", \"seed\": " << o.source.seed
         << ", \"backend\": " << jsonString(toString(backend))
         << ", \"device\": " << jsonString(backend == Backend::Gpu ? gpuDescription() : "cpu")
         << ", \"repeat\": " << (withSteps ? o.steps + 1 : o.repeat)
         << ", \"warmup\": 1, \"statistic\": \"median over the counted evaluations, per phase\"";
    if (withSteps)
    {
        head << ", \"steps\": " << o.steps << ", \"timestep\": " << num(dt)
             << ", \"rebuild_every\": " << o.forces.rebuildEvery << ", \"rebuild_lag\": "
             << (o.forces.rebuildLag == kRebuildLagAutomatic ? jsonString("auto") : std::to_string(o.forces.rebuildLag))
             << ", \"step_diagnostics\": " << (o.stepDiagnostics ? "true" : "false") << ", \"step_phases\": {";
        for (size_t k = 0; k < kNumStepPhases; ++k)
        {
            head << (k ? ", " : "") << jsonString(kStepPhases[k].name) << ": " << jsonString(kStepPhases[k].help);
        }
        head << "}, \"step_statistic\": \"whole kick-drift-kick steps of the model (the initial force evaluation is "
                "the warm-up); force phases are medians over the steps' evaluations; diagnostics "
             << (o.stepDiagnostics ? "timed" : "not computed (0)") << "; no I/O (0)\"";
    }
    head << ", \"flops_per_interaction\": {\"body_node\": " << kFlopsPerBodyNode
         << ", \"body_body\": " << kFlopsPerBodyBody << "}, \"walk_bytes\": " << jsonString(kWalkTrafficFormula)
         << ", \"device_fraction\": \"walk phases (upload, pass 1, scan, pass 2, body-node, body-leaf, download) over "
            "host + walk, median per evaluation\", \"direct\": \"one direct-summation evaluation timed on "
         << directSample << " sampled targets and extrapolated linearly to N targets (not measured at N)\"}";
    std::string headJson = head.str();
    if (!o.csv.empty())
    {
        std::string text = "# " + headJson + "\n" + kProfileCsvColumns + (withSteps ? stepCsvColumns() : "") + "\n";
        for (const ProfileResult& r : results) text += profileCsvRow(r, withSteps);
        writeFileAtomically(o.csv, text);
    }
    if (!o.json.empty())
    {
        std::string text = headJson.substr(0, headJson.size() - 1) + ",\n  \"results\": [\n";
        for (size_t k = 0; k < results.size(); ++k)
        {
            text += profileJsonRow(results[k]) + (k + 1 < results.size() ? ",\n" : "\n");
        }
        writeFileAtomically(o.json, text + "  ]\n}\n");
    }
    if (!o.timeline.empty())
    {
        writeFileAtomically(o.timeline,
                            "# " + headJson + "\n" + timelineCsvComment() + timelineCsvHeader() + "\n" + timelineRows);
    }
    return 0;
}

} // namespace octwalk::cli

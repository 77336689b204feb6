// octwalk run.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "common/errors.h"
#include "host/cli/commands.h"
#include "host/cli/options.h"
#include "host/core/phases.h"
#include "host/core/version.h"
#include "host/io/atomic_file.h"
#include "host/io/json.h"
#include "host/io/snapshot.h"
#include "host/models/galaxy.h"
#include "host/models/models.h"
#include "host/sim/run.h"

namespace fs = std::filesystem;

namespace octwalk::cli {

namespace {

volatile std::sig_atomic_t gStopSignal = 0;

extern "C" void onStopSignal(int signo) { gStopSignal = signo; }

/// Installs SIGINT/SIGTERM handlers for the lifetime of a run and restores the previous ones.
class StopSignals
{
public:
    StopSignals()
    {
        gStopSignal = 0;
        oldInt_     = std::signal(SIGINT, onStopSignal);
        oldTerm_    = std::signal(SIGTERM, onStopSignal);
    }
    ~StopSignals()
    {
        std::signal(SIGINT, oldInt_);
        std::signal(SIGTERM, oldTerm_);
    }
    int received() const { return gStopSignal; }

private:
    void (*oldInt_)(int);
    void (*oldTerm_)(int);
};

/// One progress line on a terminal, rewritten in place; nothing when output is not a terminal.
class Progress
{
public:
    explicit Progress(bool enabled) : enabled_(enabled && isatty(STDOUT_FILENO)), start_(Clock::now()), last_(start_) {}

    /// Steps whose median wall time gives the bodies per second of the line.
    static constexpr size_t kRecentSteps = 32;

    /// The energy error is an O(N) sum, so it is computed only when a line is printed.
    void update(const Simulation& sim, const StepTiming& timing, int64_t n)
    {
        if (!enabled_) return;
        auto now = Clock::now();
        if (std::chrono::duration<double>(now - last_).count() < 0.5 && !sim.done()) return;
        last_          = now;
        double elapsed = std::chrono::duration<double>(now - start_).count();
        int64_t done   = timing.steps();
        double perStep = done > 0 ? elapsed / double(done) : 0;
        double eta     = perStep * double(sim.plan().numSteps - sim.stepIndex());
        double recent  = timing.recentStepSeconds(kRecentSteps);
        std::printf("\rstep %lld/%lld  t = %.5g  dE/E0 = %+.3e  %.3g bodies/s  ETA %.0f s   ",
                    static_cast<long long>(sim.stepIndex()), static_cast<long long>(sim.plan().numSteps), sim.time(),
                    sim.diagnostics().relativeEnergyError, recent > 0 ? double(n) / recent : 0.0, eta);
        std::fflush(stdout);
        if (sim.done()) std::printf("\n");
    }

private:
    using Clock = std::chrono::steady_clock;
    bool enabled_;
    Clock::time_point start_, last_;
};

/// "median per step [ms] over K steps: sort .. step-wall ..; R bodies/s".
std::string timingSummary(const StepTiming& timing, int64_t n)
{
    const StepTimes m = timing.median();
    const double wall = m[StepPhase::StepWall];
    std::ostringstream s;
    s.precision(3);
    s << "median per step over " << timing.steps() << " steps: " << stepTimesText(m) << "; "
      << (wall > 0 ? double(n) / wall : 0.0) << " bodies/s\n";
    return s.str();
}

/// Runs sim with a progress line and SIGINT/SIGTERM handling, then prints the median step times and
/// rewrites run.json with them; the exit code (128 + signal when stopped).
/// source, restartedFromStep: as written to run.json at the start (writeRunJson).
int runWithProgress(Simulation& sim, const fs::path& dir, const RunSettings& rs, bool quiet, bool resume,
                    const std::string& source, int64_t restartedFromStep, std::ostream& out)
{
    Progress progress(!quiet);
    StopSignals signals;
    RunControl control;
    control.afterStep     = [&](const Simulation& s, const StepTiming& t) { progress.update(s, t, s.state().size()); };
    control.stopRequested = [&] { return signals.received(); };
    RunOutcome r          = runSimulation(sim, dir, rs, resume, control);
    writeRunJson(dir, sim, rs, source, restartedFromStep, &r.timing);
    if (r.timing.steps() > 0) out << timingSummary(r.timing, sim.state().size());
    if (r.stoppedBy != 0)
    {
        out << "\nstopped by signal " << r.stoppedBy << " at step " << sim.stepIndex() << ", t = " << sim.time()
            << "; checkpoint written; resume with: octwalk run --restart " << r.checkpoint.string() << "\n";
        return 128 + r.stoppedBy;
    }
    Diagnostics d = sim.diagnostics();
    out << "done: " << sim.plan().numSteps << " steps to t = " << sim.time() << ", dE/E0 = " << d.relativeEnergyError
        << ", 2K/|W| = " << d.virialRatio << "; output in " << dir.string() << "\n";
    return 0;
}

} // namespace

int runCommand(int argc, const char* const* argv, std::ostream& out)
{
    Parameters defaults;
    defaults.epsilon_squared = kRunEpsilon * kRunEpsilon;
    ModelOptions mo;
    RunSettings rs;
    std::string input, inputFormat = "auto", outputDir = "run", restart;
    double tEnd = 1.0;
    bool direct = false, quiet = false, zeroNetForce = false;
    po::options_description cmd("octwalk run: shared-timestep kick-drift-kick leapfrog. Writes energy.csv, "
                                "lagrange.csv, timing.csv (seconds per step by phase), snapshots, run.json and "
                                "checkpoint.bin into --output-dir.\n"
                                "SIGINT/SIGTERM write a checkpoint and stop (exit code 128 + signal).\nRun");
    // One option per line: Boost.Program_options chains read best that way.
    // clang-format off
    cmd.add_options()("help,h", "this help")
        ("t-end", po::value(&tEnd)->default_value(tEnd), "end time [time]")
        ("output-dir", po::value(&outputDir)->default_value(outputDir), "new or empty directory for all outputs")
        ("energy-every", po::value(&rs.energyEvery)->default_value(rs.energyEvery),
         "steps between rows of energy.csv and lagrange.csv, >= 1")
        ("snapshot-every", po::value(&rs.snapshotEvery)->default_value(rs.snapshotEvery),
         "steps between snapshots (0: first and last only), >= 0")
        ("checkpoint-every", po::value(&rs.checkpointEvery)->default_value(rs.checkpointEvery),
         "steps between checkpoints (one is always written at the end), >= 0")
        ("direct", po::bool_switch(&direct), "exact direct summation (double, O(N^2)) instead of the tree")
        ("zero-net-force", po::bool_switch(&zeroNetForce),
         "subtract the mass-weighted mean acceleration each step (momentum conserved to round-off)")
        ("restart", po::value(&restart), "continue a run: its directory or checkpoint file (the newest valid one of "
                                         "checkpoint.bin and checkpoint.bin.prev is used; the directory receives the "
                                         "outputs)")
        ("quiet", po::bool_switch(&quiet), "no progress line");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(timestepOptions("; the run uses equal sub-steps that end exactly at --t-end"))
        .add(inputOption(input, "start from this snapshot instead of a built-in model"))
        .add(inputFormatOption(inputFormat))
        .add(formatOption(rs.format))
        .add(modelOptions(mo, 65536, true))
        .add(solverOptions(defaults));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    double timestep = timestepOption(vm);

    if (!restart.empty())
    {
        std::vector<std::string> fixed = fixedOnRestartOptions();
        fixed.insert(fixed.end(), {"input", "model", "n", "seed", "mass-ratio", "pericentre", "separation",
                                   "inclination", "direct", "zero-net-force", "timestep", "dt", "energy-every",
                                   "snapshot-every", "checkpoint-every", "format", "output-dir"});
        for (const std::string& option : fixed)
        {
            if (vm.count(option) && !vm[option].defaulted())
            {
                throw UsageError("--" + option + " cannot be changed on --restart (the checkpoint holds it)");
            }
        }
        RestartPoint point = findRestartCheckpoint(restart);
        std::string extra;
        Simulation sim    = Simulation::fromCheckpoint(point.checkpoint.string(), &extra);
        RunSettings saved = RunSettings::decode(extra);
        if (!vm["t-end"].defaulted()) sim.extendTo(tEnd);
        fs::path dir = point.checkpoint.parent_path();
        if (dir.empty()) dir = ".";
        int64_t from             = sim.stepIndex();
        const std::string source = "{\"restart\": " + jsonString(point.checkpoint.string()) + "}";
        writeRunJson(dir, sim, saved, source, from);
        if (!point.skipped.empty())
        {
            out << "the newest checkpoint is not usable (" << point.skipped << "); using the previous one\n";
        }
        out << versionHeader() << ": restarting from " << point.checkpoint.string() << " at step " << from << " of "
            << sim.plan().numSteps << ", t = " << sim.time() << "\n";
        return runWithProgress(sim, dir, saved, quiet, true, source, from, out);
    }

    Parameters p = toParameters(vm, defaults);
    checkModel(mo);
    if (rs.energyEvery < 1)
        throw ParameterError("option --energy-every = " + std::to_string(rs.energyEvery) + " must be >= 1");
    if (rs.snapshotEvery < 0) throw ParameterError("option --snapshot-every must be >= 0");
    if (rs.checkpointEvery < 0) throw ParameterError("option --checkpoint-every must be >= 0");
    parseSnapshotFormat(rs.format);
    if (!input.empty() && !vm["model"].defaulted()) throw UsageError("give --input or --model, not both");
    if (outputDir.empty()) throw UsageError("option --output-dir is empty: name a directory");
    fs::path dir(outputDir);
    if (!input.empty() && fs::exists(input) && fs::exists(dir) &&
        fs::equivalent(fs::path(input).parent_path().empty() ? "." : fs::path(input).parent_path(), dir))
    {
        throw UsageError("--input '" + input + "' lies in --output-dir '" + outputDir + "'; choose another directory");
    }
    checkNewDirectory("--output-dir", outputDir, " (use --restart to continue a run)");
    StepPlan plan = planSteps(0.0, tEnd, timestep);

    ParticleSet bodies;
    std::string source;
    if (!input.empty())
    {
        bodies = inputFormat == "auto" ? readSnapshot(input) : readSnapshot(input, parseSnapshotFormat(inputFormat));
        plan   = planSteps(bodies.time, tEnd, timestep);
        source = "{\"input\": " + jsonString(input) + "}";
    }
    else
    {
        bodies = buildModel(mo);
        source = modelJson(mo);
    }
    Simulation sim(std::move(bodies), p, plan, ForceOptions{direct, zeroNetForce});
    fs::create_directories(dir);
    writeRunJson(dir, sim, rs, source, -1);
    out << versionHeader() << ": " << sim.state().size() << " bodies, " << plan.numSteps << " steps of " << plan.h
        << " to t = " << tEnd << ", " << (direct ? "direct summation" : "tree") << " on " << backendLine(sim.solver())
        << "\n";
    return runWithProgress(sim, dir, rs, quiet, false, source, -1, out);
}

} // namespace octwalk::cli

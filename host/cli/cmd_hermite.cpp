// octwalk hermite.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <new>
#include <sstream>
#include <utility>

#include "common/errors.h"
#include "host/cli/commands.h"
#include "host/cli/options.h"
#include "host/core/version.h"
#include "host/io/json.h"
#include "host/io/snapshot.h"
#include "host/models/models.h"
#include "host/sim/hermite.h"

namespace fs = std::filesystem;

namespace octwalk::cli {

namespace {

/// The progress line after an interval; the energy error is that of the last diagnostics row.
class HermiteProgress
{
public:
    HermiteProgress(bool enabled, const HermiteIntegrator& h)
        : line_(enabled), firstInterval_(h.stepIndex()), firstSteps_(h.counts().bodySteps)
    {}

    void update(const HermiteIntegrator& h, const HermiteDiagnostics* d)
    {
        if (d) energyError_ = d->relativeEnergyError;
        if (!line_.due(h.done())) return;
        const double elapsed  = line_.elapsed();
        const double eta      = line_.eta(h.stepIndex() - firstInterval_, h.plan().numSteps - h.stepIndex());
        const double bodyRate = elapsed > 0 ? double(h.counts().bodySteps - firstSteps_) / elapsed : 0;
        char text[256];
        std::snprintf(text, sizeof(text),
                      "interval %lld/%lld  t = %.5g  dE/E0 = %+.3e  %.3g body steps/s  ETA %.0f s   ",
                      static_cast<long long>(h.stepIndex()), static_cast<long long>(h.plan().numSteps), h.time(),
                      energyError_, bodyRate, eta);
        line_.show(text, h.done());
    }

private:
    ProgressLine line_;
    int64_t firstInterval_, firstSteps_;
    double energyError_ = 0;
};

int runWithProgress(HermiteIntegrator& h, const fs::path& dir, const RunSettings& rs, bool quiet, bool resume,
                    const std::string& source, int64_t restartedFromStep, std::ostream& out)
{
    HermiteProgress progress(!quiet, h);
    StopSignals signals;
    HermiteRunControl control;
    control.afterInterval = [&](const HermiteIntegrator& s, const HermiteDiagnostics* d) { progress.update(s, d); };
    control.stopRequested = [&] { return signals.received(); };
    const int stopped     = runHermite(h, dir, rs, resume, control);
    writeHermiteRunJson(dir, h, rs, source, restartedFromStep, true);
    const double wall = h.integrationSeconds();
    out << "integration " << wall << " s, " << (wall > 0 ? 100 * h.librarySeconds() / wall : 0.0) << "% inside libg6; "
        << h.counts().blockSteps << " block steps, " << h.counts().bodySteps << " body steps\n";
    if (stopped != 0)
    {
        out << stoppedLine("hermite", "interval", stopped, h.stepIndex(), h.time(), dir / "checkpoint.bin");
        return 128 + stopped;
    }
    const HermiteDiagnostics d = h.diagnostics();
    out << "done: " << h.plan().numSteps << " intervals to t = " << h.time() << ", dE/E0 = " << d.relativeEnergyError
        << ", 2K/|W| = " << d.virialRatio << "; output in " << dir.string() << "\n";
    return 0;
}

/// run(), with the host running out of memory said as a BackendError naming N (the integrator and libg6 each
/// keep a copy of every body and its derivatives; std::bad_alloc alone named nothing).
template<class Run>
int namingHostMemory(int64_t n, Run run)
{
    try
    {
        return run();
    }
    catch (const std::bad_alloc&)
    {
        throw BackendError("out of host memory for hermite with N = " + std::to_string(n) +
                           " bodies (the integrator keeps about 200 bytes a body, libg6 its own copy of each)");
    }
}

/// The parameter-table rows that direct summation of an isolated system uses; every other row (the tree's, the
/// periodic box's, the backend's, and any added later) is not offered, so giving it is an unknown option.
const std::vector<std::string> kDirectParameters{"epsilon_squared", "gravitational_constant", "max_energy_error"};

/// The table rows hermite does not offer (solverOptions' and toParameters' `except`).
std::vector<std::string> notOffered()
{
    std::vector<std::string> names;
    for (const ParameterInfo& row : parameterTable())
    {
        if (std::find(kDirectParameters.begin(), kDirectParameters.end(), row.name) == kDirectParameters.end())
        {
            names.push_back(row.name);
        }
    }
    return names;
}

/// UsageError for a snapshot that is not an isolated system: its periodic images or its expansion would be
/// dropped without a word.
void checkIsolated(const ParticleSet& bodies, const std::string& input)
{
    if (bodies.boxSize > 0)
    {
        std::ostringstream s;
        s << "--input '" << input << "' is a periodic box of side " << bodies.boxSize
          << "; hermite integrates isolated systems only (use octwalk run)";
        throw UsageError(s.str());
    }
    if (bodies.cosmology)
    {
        throw UsageError("--input '" + input +
                         "' is a cosmological snapshot (comoving positions, peculiar velocities); hermite integrates "
                         "isolated systems only (use octwalk run --comoving)");
    }
}

} // namespace

int hermiteCommand(int argc, const char* const* argv, std::ostream& out)
{
    Parameters defaults;
    defaults.epsilon_squared = 1.0 / (256.0 * 256.0);
    ModelOptions mo;
    mo.n = 1024;
    HermiteSettings hs;
    RunSettings rs;
    rs.checkpointEvery = 16;
    std::string input, inputFormat = "auto", outputDir = "hermite", restart;
    double tEnd = 1.0;
    bool quiet  = false;
    po::options_description cmd(
        "octwalk hermite: direct N-body for star clusters, 4th-order Hermite predictor-corrector (Makino & Aarseth "
        "1992) with block time steps, forces through libg6 (the GRAPE-6 API; OCTWALK_G6_BACKEND=auto|gpu|cpu picks "
        "its backend, OCTWALK_G6_PRECISION=ds|double its device arithmetic). Every body is synchronised every "
        "--dt-max, where energy.csv, lagrange.csv, snapshots and checkpoints are written; run.json holds the "
        "settings, the step counts and the fraction of the time spent in the library.\n"
        "SIGINT/SIGTERM write a checkpoint and stop (exit code 128 + signal).\nHermite");
    // clang-format off
    cmd.add_options()("help,h", "this help")
        ("t-end", po::value(&tEnd)->default_value(tEnd), "end time [time]")
        ("eta", po::value(&hs.eta)->default_value(hs.eta), "Aarseth's accuracy parameter, in (0, 1]")
        ("eta-start", po::value(&hs.etaStart)->default_value(hs.etaStart),
         "the first step's parameter, in (0, 1]: dt = eta_start |a| / |jerk| at most, shorter when Aarseth's "
         "criterion, from the snap and crackle of a trial step of that length, asks for it")
        ("dt-max", po::value(&hs.dtMax)->default_value(hs.dtMax),
         "longest step and sync interval [time], > 0; the interval is the largest (t_end - t_0) / k not above it")
        ("output-dir", po::value(&outputDir)->default_value(outputDir), "new or empty directory for all outputs")
        ("energy-every", po::value(&rs.energyEvery)->default_value(rs.energyEvery),
         "intervals between rows of energy.csv and lagrange.csv, >= 1")
        ("snapshot-every", po::value(&rs.snapshotEvery)->default_value(rs.snapshotEvery),
         "intervals between snapshots (0: first and last only), >= 0")
        ("checkpoint-every", po::value(&rs.checkpointEvery)->default_value(rs.checkpointEvery),
         "intervals between checkpoints (one is always written at the end), >= 0")
        ("restart", po::value(&restart), "continue a run: its directory or checkpoint file (the newest valid one of "
                                         "checkpoint.bin and checkpoint.bin.prev); --t-end may extend it")
        ("quiet", po::bool_switch(&quiet), "no progress line");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(inputOption(input, "start from this snapshot instead of a built-in model"))
        .add(inputFormatOption(inputFormat))
        .add(formatOption(rs.format))
        .add(modelOptions(mo, mo.n, true))
        .add(solverOptions(defaults, notOffered()));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << " Softening: Plummer, --epsilon is the length (default 1/256).\n";
        return 0;
    }

    if (!restart.empty())
    {
        for (const auto& [option, value] : vm)
        {
            if (option != "restart" && option != "t-end" && option != "quiet" && !value.defaulted())
                throw UsageError("--" + option + " cannot be changed on --restart (the checkpoint holds it)");
        }
        RestartPoint point = findRestartCheckpoint(restart);
        RunSettings saved;
        std::unique_ptr<HermiteIntegrator> h =
            HermiteIntegrator::fromCheckpoint(std::move(point.image), point.checkpoint.string(), &saved);
        if (!vm["t-end"].defaulted()) h->extendTo(tEnd);
        const fs::path dir       = point.directory();
        const int64_t from       = h->stepIndex();
        const std::string source = point.sourceJson();
        writeHermiteRunJson(dir, *h, saved, source, from, false);
        point.reportSkipped(out);
        out << versionHeader() << ": hermite restarting from " << point.checkpoint.string() << " at interval " << from
            << " of " << h->plan().numSteps << ", t = " << h->time() << "\n";
        return namingHostMemory(h->state().size(),
                                [&] { return runWithProgress(*h, dir, saved, quiet, true, source, from, out); });
    }

    Parameters p = toParameters(vm, defaults, notOffered());
    validate(hs);
    validate(rs);
    checkModel(mo);
    if (!input.empty() && !vm["model"].defaulted()) throw UsageError("give --input or --model, not both");
    if (!input.empty() && fs::exists(input) && fs::exists(outputDir) &&
        fs::equivalent(fs::path(input).parent_path().empty() ? "." : fs::path(input).parent_path(), outputDir))
    {
        throw UsageError("--input '" + input + "' lies in --output-dir '" + outputDir + "'; choose another directory");
    }
    checkNewDirectory("--output-dir", outputDir, " (use --restart to continue a run)");
    StepPlan plan = planSteps(0.0, tEnd, hs.dtMax);

    ParticleSet bodies;
    std::string source;
    if (!input.empty())
    {
        bodies = inputFormat == "auto" ? readSnapshot(input) : readSnapshot(input, parseSnapshotFormat(inputFormat));
        checkIsolated(bodies, input);
        plan   = planSteps(bodies.time, tEnd, hs.dtMax);
        source = "{\"input\": " + jsonString(input) + "}";
    }
    else
    {
        bodies = buildModel(mo);
        source = modelJson(mo);
    }
    const int64_t n = bodies.size();
    return namingHostMemory(n, [&] {
        HermiteIntegrator h(std::move(bodies), p, hs, plan);
        const fs::path dir(outputDir);
        fs::create_directories(dir);
        writeHermiteRunJson(dir, h, rs, source, -1, false);
        out << versionHeader() << ": hermite, " << h.state().size() << " bodies, " << plan.numSteps
            << " sync intervals of " << plan.h << " to t = " << tEnd << ", eta = " << hs.eta
            << ", epsilon = " << std::sqrt(p.epsilon_squared) << ", libg6 with " << h.pipes() << " pipes\n";
        return runWithProgress(h, dir, rs, quiet, false, source, -1, out);
    });
}

} // namespace octwalk::cli

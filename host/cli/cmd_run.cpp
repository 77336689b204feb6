// octwalk run.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <utility>

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
#include "host/sim/comoving.h"
#include "host/sim/run.h"
#ifdef OCTWALK_HAVE_MPI
#include "host/sim/distributed_run.h"
#endif

namespace fs = std::filesystem;

namespace octwalk::cli {

namespace {

/// Steps whose median wall time gives the bodies per second of the progress line.
constexpr size_t kRecentSteps = 32;

/// The progress line after a step; the energy error is an O(N) sum, so it is computed only when a line is shown.
void showProgress(ProgressLine& line, const Simulation& sim, const StepTiming& timing)
{
    if (!line.due(sim.done())) return;
    const double eta    = line.eta(timing.steps(), sim.plan().numSteps - sim.stepIndex());
    const double recent = timing.recentStepSeconds(kRecentSteps);
    const double rate   = recent > 0 ? double(sim.numBodies()) / recent : 0.0;
    char text[256];
    if (sim.comoving())
    {
        std::snprintf(text, sizeof(text), "step %lld/~%lld  a = %.5g  z = %.4g  %.3g bodies/s  ETA %.0f s   ",
                      static_cast<long long>(sim.stepIndex()), static_cast<long long>(sim.plan().numSteps), sim.time(),
                      1 / sim.time() - 1, rate, eta);
    }
    else
    {
        std::snprintf(text, sizeof(text), "step %lld/%lld  t = %.5g  dE/E0 = %+.3e  %.3g bodies/s  ETA %.0f s   ",
                      static_cast<long long>(sim.stepIndex()), static_cast<long long>(sim.plan().numSteps), sim.time(),
                      sim.diagnostics().relativeEnergyError, rate, eta);
    }
    line.show(text, sim.done());
}

ParticleSet readInput(const std::string& input, const std::string& format)
{
    return format == "auto" ? readSnapshot(input) : readSnapshot(input, parseSnapshotFormat(format));
}

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
/// source, restartedFromStep: as written to run.json at the start (writeRunJson); timeline: write timeline.csv.
int runWithProgress(Simulation& sim, const fs::path& dir, const RunSettings& rs, bool quiet, bool resume,
                    const std::string& source, int64_t restartedFromStep, bool timeline, std::ostream& out)
{
    // The run's first lines reach a log file before the first step, which may take minutes: a run killed before
    // its first progress line still says what it was.
    out << std::flush;
    ProgressLine progress(!quiet);
    StopSignals signals;
    RunControl control;
    control.timeline      = timeline;
    control.afterStep     = [&](const Simulation& s, const StepTiming& t) { showProgress(progress, s, t); };
    control.stopRequested = [&] { return signals.received(); };
    RunOutcome r          = runSimulation(sim, dir, rs, resume, control);
    writeRunJson(dir, sim, rs, source, restartedFromStep, &r.timing);
    if (r.timing.steps() > 0) out << timingSummary(r.timing, sim.state().size());
    if (r.stoppedBy != 0)
    {
        out << "\n" << stoppedLine("run", "step", r.stoppedBy, sim.stepIndex(), sim.time(), r.checkpoint);
        return 128 + r.stoppedBy;
    }
    if (sim.comoving())
    {
        out << "done: " << sim.stepIndex() << " steps to a = " << sim.time() << " (z = " << 1 / sim.time() - 1
            << "); output in " << dir.string() << "\n";
        return 0;
    }
    Diagnostics d = sim.diagnostics();
    out << "done: " << sim.plan().numSteps << " steps to t = " << sim.time() << ", dE/E0 = " << d.relativeEnergyError
        << ", 2K/|W| = " << d.virialRatio << "; output in " << dir.string() << "\n";
    return 0;
}

/// The comoving options as given, before the input file's header fills what they leave out.
struct ComovingCli
{
    bool enabled = false;
    ComovingSettings settings;
    std::string units = "nbody", outputList;
};

/// A default as --help shows it ("0.3", not 0.29999999999999999).
std::string shortText(double v)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%g", v);
    return text;
}

po::options_description comovingOptions(ComovingCli& c)
{
    ComovingSettings& s = c.settings;
    po::options_description o(
        "Comoving (cosmological) runs, --comoving: time is the scale factor a; positions comoving in the periodic "
        "box [0, L)^3 (--box-size, or the input file's BoxSize); velocities peculiar, a dx/dt; forces Ewald-summed "
        "with the mean density subtracted; GADGET-2's drift and kick factors. The input file's header (a, Omega0, "
        "OmegaLambda, HubbleParam, BoxSize) gives what the options below leave out, and must agree with what they "
        "give. Softening: Plummer epsilon (--epsilon, default 1/30 of the mean spacing L/N^(1/3)) fixed in comoving "
        "units, at most --softening-max-phys / a (GADGET's SofteningHalo and SofteningHaloMaxPhys). Snapshots are "
        "GADGET-2 (--format gadget2) unless --format is given");
    // clang-format off
    o.add_options()
        ("comoving", po::bool_switch(&c.enabled), "integrate in the scale factor (needs --input)")
        ("omega0", po::value(&s.cosmology.omega0)->default_value(s.cosmology.omega0, shortText(s.cosmology.omega0)),
         "Omega0, matter density today / critical, >= 0")
        ("omega-lambda", po::value(&s.cosmology.omegaLambda)->default_value(s.cosmology.omegaLambda, shortText(s.cosmology.omegaLambda)),
         "OmegaLambda, >= 0 (H(a)^2 must stay > 0 over the run)")
        ("hubble-param", po::value(&s.cosmology.hubbleParam)->default_value(s.cosmology.hubbleParam, shortText(s.cosmology.hubbleParam)),
         "h, H0 = 100 h km/s/Mpc (recorded; lengths in GADGET units are per h)")
        ("a-begin", po::value<double>(), "first scale factor (default: the input file's time), > 0")
        ("z-begin", po::value<double>(), "first redshift, instead of --a-begin")
        ("a-end", po::value(&s.aEnd)->default_value(s.aEnd, shortText(s.aEnd)), "last scale factor, > a-begin")
        ("output-list", po::value(&c.outputList),
         "file of scale factors (one per line, increasing, in [a-begin, a-end]) at which snapshots are written, "
         "besides the first and the last")
        ("dlna", po::value(&s.dlna)->default_value(s.dlna, shortText(s.dlna)), "fixed step in ln a; 0: the criterion below")
        ("err-tol-int-accuracy", po::value(&s.errTolIntAccuracy)->default_value(s.errTolIntAccuracy, shortText(s.errTolIntAccuracy)),
         "GADGET's ErrTolIntAccuracy eta: dlna = min over bodies of H(a) sqrt(2 eta a eps / |g / a^2|), shared")
        ("max-dlna", po::value(&s.maxDlna)->default_value(s.maxDlna, shortText(s.maxDlna)), "GADGET's MaxSizeTimestep: longest step in ln a")
        ("softening-max-phys", po::value(&s.softeningMaxPhys)->default_value(s.softeningMaxPhys, shortText(s.softeningMaxPhys)),
         "GADGET's SofteningHaloMaxPhys, largest physical softening [length]; 0: the comoving epsilon throughout")
        ("units", po::value(&c.units)->default_value(c.units),
         "nbody (G = --G, H0 from the box's mean density: sqrt(8 pi G M / (3 Omega0 L^3))), gadget-kpc (kpc/h, "
         "1e10 Msun/h, km/s, G = 43007.1, H0 = 0.1) or gadget-mpc (Mpc/h, G = 43.0071, H0 = 100)");
    // clang-format on
    return o;
}

/// How many steps a comoving run takes, as far as the start can tell: exact for a fixed --dlna; with the step
/// criterion, the count at the first step's dlna, which later steps shorten as structure grows (a 32^3 box
/// announced 157 and took 969), and the least, at max_dlna.
std::string comovingStepsText(const Simulation& sim, const ComovingSettings& s)
{
    std::ostringstream t;
    t.precision(3);
    if (s.dlna > 0)
    {
        t << sim.plan().numSteps << " steps of dlna = " << s.dlna;
        return t.str();
    }
    t << "at least " << stepsToEnd(s, s.aBegin, s.maxDlna) << " steps (max_dlna = " << s.maxDlna << "), "
      << sim.plan().numSteps << " at the first step's dlna = " << sim.plan().h
      << ", more as clustering shortens the steps of the criterion";
    return t.str();
}

/// Completes a comoving run's settings and parameters from the options and the input's header.
ComovingSettings comovingSettings(const po::variables_map& vm, ComovingCli& c, const ParticleSet& bodies, Parameters& p)
{
    ComovingSettings s = c.settings;
    s.units            = parseCosmoUnits(c.units);
    auto given         = [&](const char* name) { return vm.count(name) && !vm[name].defaulted(); };
    if (bodies.cosmology)
    {
        const Cosmology& f = *bodies.cosmology;
        if (given("omega0")) checkAgrees("omega0", s.cosmology.omega0, f.omega0);
        if (given("omega-lambda")) checkAgrees("omega-lambda", s.cosmology.omegaLambda, f.omegaLambda);
        if (given("hubble-param")) checkAgrees("hubble-param", s.cosmology.hubbleParam, f.hubbleParam);
        s.cosmology = f;
    }
    if (vm.count("a-begin") && vm.count("z-begin")) throw UsageError("give --a-begin or --z-begin, not both");
    if (vm.count("a-begin")) s.aBegin = vm["a-begin"].as<double>();
    else if (vm.count("z-begin")) s.aBegin = 1 / (1 + vm["z-begin"].as<double>());
    else if (bodies.cosmology) s.aBegin = bodies.time;
    else throw UsageError("--comoving: the input file has no cosmological header; give --a-begin or --z-begin");
    if (bodies.cosmology && (vm.count("a-begin") || vm.count("z-begin"))) checkAgrees("a-begin", s.aBegin, bodies.time);
    if (bodies.boxSize > 0)
    {
        if (given("box-size")) checkAgrees("box-size", p.box_size, bodies.boxSize);
        p.box_size = bodies.boxSize;
    }
    if (!(p.box_size > 0)) throw UsageError("--comoving: the input file has no BoxSize; give --box-size");
    const UnitSystem& units = unitSystem(s.units);
    if (units.gravitationalConstant > 0 && !given("G")) p.gravitational_constant = units.gravitationalConstant;
    if (!given("epsilon"))
    {
        const double eps  = defaultComovingSoftening(p.box_size, bodies.size());
        p.epsilon_squared = eps * eps;
    }
    if (!c.outputList.empty()) s.outputList = readOutputList(c.outputList);
    validate(s);
    validate(p);
    return s;
}

/// The checks of a comoving run's options that need no input file, on one rank or several.
void checkComovingOptions(const po::variables_map& vm, const std::string& input)
{
    if (input.empty()) throw UsageError("--comoving needs --input (a snapshot of a periodic box)");
    for (const char* option : {"t-end", "timestep", "dt"})
    {
        if (vm.count(option) && !vm[option].defaulted())
            throw UsageError(std::string("--") + option + " does not apply to --comoving (see --a-end, --dlna)");
    }
}

/// The run's forces for its first line: direct summation, the tree, tree + Ewald, or TreePM with its mesh and split.
std::string forcesText(const Parameters& p, bool direct)
{
    if (direct) return "direct summation";
    if (!(p.box_size > 0)) return "tree";
    if (!(p.pm_grid > 0)) return "tree + Ewald";
    std::ostringstream s;
    s << "TreePM (" << p.pm_grid << "^3 mesh" << (p.pm_interlace ? ", interlaced" : "") << ", asmth " << p.asmth
      << ", rcut " << p.rcut << ")";
    return s.str();
}

#ifdef OCTWALK_HAVE_MPI
/// What a new run on several ranks takes from the options (runCommand's locals).
struct DistributedCli
{
    const po::variables_map& vm;
    Parameters p;
    const ModelOptions& mo;
    const RunSettings& rs;
    const std::string &input, &inputFormat, &outputDir;
    double tEnd, timestep;
    const ForceOptions& force;
    bool direct, zeroNetForce, timeline, quiet;
    /// The comoving options (enabled: --comoving).
    ComovingCli& comoving;
};

/// The CLI's exit code of an exception (UsageError and the library's ParameterError and InputError: 2).
int cliExitCode(const std::exception& e)
{
    return dynamic_cast<const UsageError*>(&e) || dynamic_cast<const std::invalid_argument*>(&e) ? 2 : 1;
}

/// ParameterError for the options a run on several ranks does not take yet (the same on every rank: main()
/// has checked that all got the same command line).
void refuseOnRanks(const DistributedCli& d)
{
    auto refuse = [](const std::string& what) {
        throw ParameterError(what + " runs on one rank for now; start it without mpirun");
    };
    // The default (auto) takes the classic step here, which is what ranks run.
    const bool pipelined = d.force.rebuildEvery != 1 && d.force.rebuildEvery != kRebuildAutomatic;
    if (pipelined || !d.vm["rebuild-lag"].defaulted())
        refuse("--rebuild-every " + d.vm["rebuild-every"].as<std::string>() + " (the pipelined step)");
    if (d.direct) refuse("--direct");
    if (d.zeroNetForce) refuse("--zero-net-force");
    if (d.timeline) refuse("--timeline");
    checkDistributable(d.p);
}

/// Rank 0's text, on every rank. Collective.
std::string rankZerosText(const mpi::Communicator& comm, const std::string& text)
{
    std::vector<int64_t> counts;
    const std::vector<char> all = comm.allgatherv(std::vector<char>(text.begin(), text.end()), &counts);
    return std::string(all.begin(), all.begin() + counts[0]);
}

/// A new run on the ranks of comm: rank 0 checks the directories, reads the input or builds the model as a
/// single-process run does, the others start empty; every rank raises what rank 0's checks raise.
int distributedNewRun(const mpi::Communicator& comm, DistributedCli d, std::ostream& out)
{
    refuseOnRanks(d);
    const bool comoving = d.comoving.enabled;
    ParticleSet bodies;
    DistributedRunConfig c;
    c.parameters = d.p;
    c.settings   = d.rs;
    if (comoving)
    {
        checkComovingOptions(d.vm, d.input);
        // TIPSY has no cosmological header and stores float32: a comoving run writes GADGET-2 unless told.
        if (d.vm["format"].defaulted()) c.settings.format = "gadget2";
        validate(c.settings);
    }
    std::string comovingText;
    c.dir     = d.outputDir;
    c.quiet   = d.quiet;
    c.source  = d.input.empty() ? modelJson(d.mo) : "{\"input\": " + jsonString(d.input) + "}";
    double t0 = 0;
    agreeOnRanks(
        comm,
        [&] {
            if (comm.rank() != 0) return;
            const fs::path dir(d.outputDir);
            if (!d.input.empty() && fs::exists(d.input) && fs::exists(dir) &&
                fs::equivalent(fs::path(d.input).parent_path().empty() ? "." : fs::path(d.input).parent_path(), dir))
            {
                throw UsageError("--input '" + d.input + "' lies in --output-dir '" + d.outputDir +
                                 "'; choose another directory");
            }
            checkNewDirectory("--output-dir", d.outputDir, " (use --restart to continue a run)");
            bodies              = d.input.empty() ? buildModel(d.mo) : readInput(d.input, d.inputFormat);
            const bool boxGiven = d.vm.count("box-size") && !d.vm["box-size"].defaulted();
            if (comoving) comovingText = toText(comovingSettings(d.vm, d.comoving, bodies, c.parameters));
            else
            {
                if (bodies.boxSize > 0 && boxGiven && c.parameters.box_size > 0)
                    checkAgrees("box-size", c.parameters.box_size, bodies.boxSize);
                if (bodies.boxSize > 0 && !boxGiven) c.parameters.box_size = bodies.boxSize;
                t0 = bodies.time;
                planSteps(t0, d.tEnd, d.timestep);
            }
            checkDistributable(c.parameters);
            if (c.parameters.box_size > 0) checkInsideBox(bodies, c.parameters.box_size);
            fs::create_directories(dir);
        },
        cliExitCode);
    // The parameters as rank 0 completed them from the input (its box; a comoving run's softening and G), and
    // its start time or comoving settings: every rank plans the same steps from them.
    const int64_t n = comm.allreduceSum(bodies.size());
    c.parameters    = withPmGridFor(parametersFromText(rankZerosText(comm, toText(c.parameters))), n);
    if (comoving)
    {
        c.comoving = comovingSettingsFromText(rankZerosText(comm, comovingText));
        c.plan     = StepPlan{c.comoving->aBegin, c.comoving->dlna, 0};
        out << versionHeader() << ": " << n << " bodies on " << comm.size()
            << " ranks, comoving from a = " << c.comoving->aBegin << " to a = " << c.comoving->aEnd << " in a box of "
            << c.parameters.box_size << " (" << unitSystem(c.comoving->units).name << " units), "
            << forcesText(c.parameters, false) << " with essential trees on " << toString(d.p.backend) << "\n";
        return runDistributed(comm, std::move(bodies), c, out);
    }
    t0     = comm.allgather(t0)[0];
    c.plan = planSteps(t0, d.tEnd, d.timestep);
    out << versionHeader() << ": " << n << " bodies on " << comm.size() << " ranks, " << c.plan.numSteps << " steps of "
        << c.plan.h << " to t = " << d.tEnd << ", " << forcesText(c.parameters, false) << " with essential trees on "
        << toString(d.p.backend) << "\n";
    return runDistributed(comm, std::move(bodies), c, out);
}
#endif

/// TreePM on a mesh of fewer than 2 N^(1/3) cells per side: one line saying what it costs from a lattice start.
void noteCoarseMesh(const Parameters& p, int64_t n, std::ostream& out)
{
    if (!(p.box_size > 0 && p.pm_grid > 0)) return;
    const double fine = 2 * std::cbrt(double(n));
    if (double(p.pm_grid) >= fine - 0.5) return;
    out << "note: --pm-grid " << p.pm_grid << " is below 2 N^(1/3) = " << std::lround(fine)
        << " cells per side: TreePM's force error there is about ten times tree + Ewald's, and a starting lattice "
           "on the mesh's cell faces grows the largest scales up to 4% too little by z = 1"
        << (p.pm_interlace ? " (ic cosmo's lattice lies on the faces of the interlaced mesh's shifted half: 2.3%; "
                             "--no-pm-interlace avoids it)"
                           : " (not ic cosmo's, at the cells' centres)")
        << " (docs/periodic.md)\n";
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
    bool direct = false, quiet = false, zeroNetForce = false, timeline = false;
    ForceOptions forceOptions;
    ComovingCli comoving;
    po::options_description cmd(
        "octwalk run: shared-timestep kick-drift-kick leapfrog. Writes energy.csv, "
        "lagrange.csv, timing.csv (seconds per step by phase), snapshots, run.json and "
        "checkpoint.bin into --output-dir. An --input with a BoxSize (GADGET, HDF5) runs in that periodic "
        "box, bodies wrapped into [0, L) after each drift, unless --box-size 0.\n"
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
        ("snapshot-files", po::value(&rs.snapshotFiles)->default_value(rs.snapshotFiles),
         "files each snapshot is split over, GADGET-2's NumFilesPerSnapshot (snap_NNNNNN.gadget.0 ... .K-1; "
         "--format gadget2 or gadget2-format2); on several ranks, as many as the ranks lets each rank write its "
         "own part, >= 1")
        ("direct", po::bool_switch(&direct), "exact direct summation (double, O(N^2)) instead of the tree")
        ("zero-net-force", po::bool_switch(&zeroNetForce),
         "subtract the mass-weighted mean acceleration each step (momentum conserved to round-off)")
        ("restart", po::value(&restart), "continue a run: its directory or checkpoint file (the newest valid one of "
                                         "checkpoint.bin and checkpoint.bin.prev is used; the directory receives the "
                                         "outputs)")
        ("quiet", po::bool_switch(&quiet), "no progress line")
        ("timeline", po::bool_switch(&timeline),
         "also write timeline.csv: one row per interval of host and device work (step, lane, phase, start and "
         "end in seconds since the start of the run), for scripts/plot_timeline.py");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(timestepOptions("; the run uses equal sub-steps that end exactly at --t-end"))
        .add(rebuildOptions(forceOptions))
        .add(inputOption(input, "start from this snapshot instead of a built-in model"))
        .add(inputFormatOption(inputFormat))
        .add(formatOption(rs.format))
        .add(modelOptions(mo, 65536, true))
        .add(solverOptions(defaults))
        .add(comovingOptions(comoving));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    double timestep = timestepOption(vm);
    checkRebuildOptions(vm, forceOptions);

    if (!restart.empty())
    {
        std::vector<std::string> fixed = fixedOnRestartOptions();
        fixed.insert(fixed.end(), {"input",
                                   "model",
                                   "n",
                                   "seed",
                                   "mass-ratio",
                                   "pericentre",
                                   "separation",
                                   "inclination",
                                   "direct",
                                   "zero-net-force",
                                   "rebuild-every",
                                   "rebuild-lag",
                                   "timestep",
                                   "dt",
                                   "energy-every",
                                   "snapshot-every",
                                   "checkpoint-every",
                                   "snapshot-files",
                                   "format",
                                   "output-dir",
                                   "comoving",
                                   "omega0",
                                   "omega-lambda",
                                   "hubble-param",
                                   "a-begin",
                                   "z-begin",
                                   "a-end",
                                   "output-list",
                                   "dlna",
                                   "err-tol-int-accuracy",
                                   "max-dlna",
                                   "softening-max-phys",
                                   "units"});
        for (const std::string& option : fixed)
        {
            if (vm.count(option) && !vm[option].defaulted())
            {
                throw UsageError("--" + option + " cannot be changed on --restart (the checkpoint holds it)");
            }
        }
#ifdef OCTWALK_HAVE_MPI
        if (const mpi::Communicator* comm = runCommunicator())
        {
            std::optional<double> end;
            if (!vm["t-end"].defaulted()) end = tEnd;
            return restartDistributed(*comm, restart, end, quiet, out);
        }
#endif
        RestartPoint point = findRestartCheckpoint(restart);
        std::string extra;
        Simulation sim    = Simulation::fromCheckpoint(std::move(point.image), point.checkpoint.string(), &extra);
        RunSettings saved = RunSettings::decode(extra);
        if (!vm["t-end"].defaulted()) sim.extendTo(tEnd);
        const fs::path dir       = point.directory();
        const int64_t from       = sim.stepIndex();
        const std::string source = point.sourceJson();
        writeRunJson(dir, sim, saved, source, from);
        point.reportSkipped(out);
        out << versionHeader() << ": restarting from " << point.checkpoint.string() << " at step " << from << " of "
            << sim.plan().numSteps << ", t = " << sim.time() << "\n";
        return runWithProgress(sim, dir, saved, quiet, true, source, from, timeline, out);
    }

    Parameters p = toParameters(vm, defaults);
    checkModel(mo);
    if (rs.energyEvery < 1)
        throw ParameterError("option --energy-every = " + std::to_string(rs.energyEvery) + " must be >= 1");
    if (rs.snapshotEvery < 0) throw ParameterError("option --snapshot-every must be >= 0");
    if (rs.checkpointEvery < 0) throw ParameterError("option --checkpoint-every must be >= 0");
    parseSnapshotFormat(rs.format);
    // A comoving run writes GADGET-2 by default (below): its split snapshots are checked there.
    if (!comoving.enabled || !vm["format"].defaulted()) validate(rs);
    if (!input.empty() && !vm["model"].defaulted()) throw UsageError("give --input or --model, not both");
    if (outputDir.empty()) throw UsageError("option --output-dir is empty: name a directory");
#ifdef OCTWALK_HAVE_MPI
    if (const mpi::Communicator* comm = runCommunicator())
    {
        forceOptions.direct = direct;
        return distributedNewRun(*comm,
                                 DistributedCli{vm, p, mo, rs, input, inputFormat, outputDir, tEnd, timestep,
                                                forceOptions, direct, zeroNetForce, timeline, quiet, comoving},
                                 out);
    }
#endif
    fs::path dir(outputDir);
    if (!input.empty() && fs::exists(input) && fs::exists(dir) &&
        fs::equivalent(fs::path(input).parent_path().empty() ? "." : fs::path(input).parent_path(), dir))
    {
        throw UsageError("--input '" + input + "' lies in --output-dir '" + outputDir + "'; choose another directory");
    }
    checkNewDirectory("--output-dir", outputDir, " (use --restart to continue a run)");
    if (comoving.enabled)
    {
        checkComovingOptions(vm, input);
        // TIPSY has no cosmological header and stores float32: a comoving run writes GADGET-2 unless told.
        if (vm["format"].defaulted()) rs.format = "gadget2";
        validate(rs);
        ParticleSet bodies        = readInput(input, inputFormat);
        ComovingSettings s        = comovingSettings(vm, comoving, bodies, p);
        forceOptions.direct       = direct;
        forceOptions.zeroNetForce = zeroNetForce;
        Simulation sim(std::move(bodies), p, s, forceOptions);
        const std::string source = "{\"input\": " + jsonString(input) + "}";
        fs::create_directories(dir);
        writeRunJson(dir, sim, rs, source, -1);
        out << versionHeader() << ": " << sim.state().size() << " bodies, comoving from a = " << s.aBegin
            << " to a = " << s.aEnd << " in a box of " << p.box_size << " (" << unitSystem(s.units).name
            << " units, H0 = " << sim.comoving()->hubble0 << "), " << comovingStepsText(sim, s) << ", "
            << forcesText(sim.parameters(), direct) << " on " << backendLine(sim.solver()) << "\n";
        noteCoarseMesh(sim.parameters(), sim.state().size(), out);
        return runWithProgress(sim, dir, rs, quiet, false, source, -1, timeline, out);
    }
    StepPlan plan = planSteps(0.0, tEnd, timestep);

    ParticleSet bodies;
    std::string source;
    if (!input.empty())
    {
        bodies = readInput(input, inputFormat);
        plan   = planSteps(bodies.time, tEnd, timestep);
        source = "{\"input\": " + jsonString(input) + "}";
        // A periodic file runs periodic (Ewald forces, positions wrapped after each drift) unless --box-size
        // says otherwise: 0 for isolated forces, or the file's value.
        const bool boxGiven = vm.count("box-size") && !vm["box-size"].defaulted();
        if (bodies.boxSize > 0 && boxGiven && p.box_size > 0) checkAgrees("box-size", p.box_size, bodies.boxSize);
        if (bodies.boxSize > 0 && !boxGiven) p.box_size = bodies.boxSize;
    }
    else
    {
        bodies = buildModel(mo);
        source = modelJson(mo);
    }
    forceOptions.direct       = direct;
    forceOptions.zeroNetForce = zeroNetForce;
    Simulation sim(std::move(bodies), p, plan, forceOptions);
    fs::create_directories(dir);
    writeRunJson(dir, sim, rs, source, -1);
    out << versionHeader() << ": " << sim.state().size() << " bodies, " << plan.numSteps << " steps of " << plan.h
        << " to t = " << tEnd << ", " << forcesText(sim.parameters(), direct) << " on " << backendLine(sim.solver());
    if (p.box_size > 0) out << ", periodic box of " << p.box_size << " (--box-size 0: isolated)";
    out << "\n";
    noteCoarseMesh(sim.parameters(), sim.state().size(), out);
    return runWithProgress(sim, dir, rs, quiet, false, source, -1, timeline, out);
}

} // namespace octwalk::cli

#include "host/sim/run.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/errors.h"
#include "host/core/phases.h"
#include "host/core/timer.h"
#include "host/core/version.h"
#include "host/io/atomic_file.h"
#include "host/io/checkpoint.h"
#include "host/io/json.h"
#include "host/io/snapshot.h"
#include "host/sim/diagnostics_files.h"

namespace octwalk {

namespace fs = std::filesystem;

std::string RunSettings::encode() const
{
    std::ostringstream s;
    s << energyEvery << ' ' << snapshotEvery << ' ' << checkpointEvery << ' ' << format;
    return s.str();
}

RunSettings RunSettings::decode(const std::string& text)
{
    RunSettings r;
    std::istringstream s(text);
    if (!(s >> r.energyEvery >> r.snapshotEvery >> r.checkpointEvery >> r.format))
    {
        // Only the first line: another command's checkpoint (octwalk hermite's) stores binary state after it.
        throw FormatError("checkpoint: the run settings stored in it cannot be read ('" +
                          text.substr(0, std::min<size_t>(text.find('\n'), 200)) + "')");
    }
    return r;
}

void validate(const RunSettings& rs)
{
    auto check = [](const char* name, int64_t value, int64_t least) {
        if (value < least)
        {
            throw ParameterError(std::string("run setting ") + name + " = " + std::to_string(value) +
                                 " is invalid: must be >= " + std::to_string(least));
        }
    };
    check("energy_every", rs.energyEvery, 1);
    check("snapshot_every", rs.snapshotEvery, 0);
    check("checkpoint_every", rs.checkpointEvery, 0);
    parseSnapshotFormat(rs.format);
}

void StepTiming::add(const StepTimes& t)
{
    ++steps_;
    if (window_.size() < kWindow)
    {
        window_.push_back(t);
        return;
    }
    window_[next_] = t;
    next_          = (next_ + 1) % kWindow;
}

StepTimes StepTiming::median() const { return medianStepTimes(window_); }

double StepTiming::recentStepSeconds(size_t recent) const
{
    std::vector<double> v;
    const size_t n = std::min(recent, window_.size());
    for (size_t k = 0; k < n; ++k)
    {
        // the newest entry is just before next_ (a full ring) or at the back (still filling)
        size_t newest = window_.size() < kWindow ? window_.size() - 1 : (next_ + kWindow - 1) % kWindow;
        v.push_back(window_[(newest + window_.size() - k) % window_.size()][StepPhase::StepWall]);
    }
    return octwalk::median(std::move(v));
}

std::string StepTiming::json(int64_t numBodies) const
{
    const StepTimes m = median();
    const double wall = m[StepPhase::StepWall];
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.9g", wall > 0 ? double(numBodies) / wall : 0.0);
    return "{\"steps\": " + std::to_string(steps_) + ", \"steps_in_median\": " + std::to_string(window_.size()) +
           ", \"statistic\": \"median per phase over the steps of this process (a restart counts its own)\"" +
           ", \"median_seconds\": " + stepTimesJson(m) + ", \"bodies_per_second\": " + rate + "}";
}

namespace {

/// The units a run's outputs are in, for run.json and the file headers.
std::string unitsText(const Simulation& sim)
{
    std::ostringstream u;
    u.precision(17);
    if (!sim.comoving())
    {
        u << "N-body, G = " << sim.parameters().gravitational_constant;
        return u.str();
    }
    const Simulation::Comoving& c = *sim.comoving();
    u.precision(9);
    u << unitSystem(c.settings.units).description << "; G = " << sim.parameters().gravitational_constant
      << ", H0 = " << c.hubble0 << "; comoving positions, peculiar velocities a dx/dt, time = scale factor a";
    return u.str();
}

/// The "comoving" object of run.json.
std::string comovingJson(const Simulation::Comoving& c)
{
    const ComovingSettings& s = c.settings;
    std::ostringstream j;
    j.precision(17);
    j << "{\"units\": " << jsonString(unitSystem(s.units).name) << ", \"omega0\": " << s.cosmology.omega0
      << ", \"omega_lambda\": " << s.cosmology.omegaLambda << ", \"hubble_param\": " << s.cosmology.hubbleParam
      << ", \"hubble0\": " << c.hubble0 << ", \"a_begin\": " << s.aBegin << ", \"a_end\": " << s.aEnd
      << ", \"z_begin\": " << 1 / s.aBegin - 1 << ", \"dlna\": " << s.dlna
      << ", \"err_tol_int_accuracy\": " << s.errTolIntAccuracy << ", \"max_dlna\": " << s.maxDlna
      << ", \"softening_max_phys\": " << s.softeningMaxPhys << ", \"output_list\": [";
    for (size_t i = 0; i < s.outputList.size(); ++i) j << (i ? ", " : "") << s.outputList[i];
    j << "], \"step\": " << jsonString(s.dlna > 0 ? "fixed dlna" : "GADGET-2 ErrTolIntAccuracy criterion, shared")
      << ", \"softening\": \"Plummer, comoving epsilon, at most softening_max_phys / a when that is > 0\"}";
    return j.str();
}

} // namespace

void writeRunJson(const fs::path& dir, const Simulation& sim, const RunSettings& rs, const std::string& source,
                  int64_t restartedFromStep, const StepTiming* timing)
{
    std::ostringstream j;
    j.precision(17);
    j << "{\n  \"octwalk\": " << jsonString(OCTWALK_VERSION) << ",\n  \"git\": " << jsonString(OCTWALK_GIT_HASH)
      << ",\n  \"units\": " << jsonString(unitsText(sim)) << ",\n  \"initial_conditions\": " << source
      << ",\n  \"parameters\": " << toJson(sim.parameters())
      << ",\n  \"forces\": " << jsonString(sim.direct() ? "direct" : "tree")
      << ",\n  \"zero_net_force\": " << (sim.forceOptions().zeroNetForce ? "true" : "false")
      << ",\n  \"rebuild_every\": " << sim.forceOptions().rebuildEvery
      << ",\n  \"rebuild_lag\": " << sim.forceOptions().rebuildLag;
    if (sim.comoving())
    {
        j << ",\n  \"integrator\": \"comoving kick-drift-kick leapfrog in the scale factor (GADGET-2 drift and kick "
          << "factors), shared steps equal in ln a between outputs\""
          << ",\n  \"comoving\": " << comovingJson(*sim.comoving()) << ",\n  \"a\": " << sim.time()
          << ",\n  \"steps_estimate\": " << sim.plan().numSteps;
    }
    else
    {
        j << ",\n  \"integrator\": \"kick-drift-kick leapfrog, shared equal sub-steps ending exactly at t_end\""
          << ",\n  \"t_start\": " << sim.plan().t0
          << ",\n  \"t_end\": " << sim.plan().t0 + double(sim.plan().numSteps) * sim.plan().h
          << ",\n  \"timestep\": " << sim.plan().h << ",\n  \"steps\": " << sim.plan().numSteps;
    }
    j << ",\n  \"energy_every\": " << rs.energyEvery << ",\n  \"snapshot_every\": " << rs.snapshotEvery
      << ",\n  \"checkpoint_every\": " << rs.checkpointEvery << ",\n  \"snapshot_format\": " << jsonString(rs.format)
      << ",\n  \"n\": " << sim.state().size() << ",\n  \"restarted_from_step\": " << restartedFromStep;
    if (timing) j << ",\n  \"step_timing\": " << timing->json(sim.state().size());
    j << "\n}\n";
    writeFileAtomically((dir / "run.json").string(), j.str(), Existing::Replace);
}

void writeSnapshotAt(const fs::path& dir, const Simulation& sim, const RunSettings& rs)
{
    SnapshotFormat f = parseSnapshotFormat(rs.format);
    char name[64];
    std::snprintf(name, sizeof(name), "snap_%06lld", static_cast<long long>(sim.stepIndex()));
    SnapshotMeta meta{toJson(sim.parameters()), versionAndHash(), sim.parameters().gravitational_constant};
    // A restarted run may rewrite the snapshot of the step it resumes from; it is the same state.
    writeSnapshot((dir / (name + snapshotExtension(f))).string(), f, sim.state(), meta, true);
}

InteractionStats stepInteractions(const Simulation& sim)
{
    // A pipelined step walks without the solver, whose counts are those of the run's first evaluation.
    return sim.pipeline() ? sim.pipeline()->stats() : sim.solver().stats();
}

int64_t stepsSinceRebuild(const Simulation& sim)
{
    return sim.pipeline() ? sim.pipeline()->lastStep().stepsSinceRebuild : 0;
}

void recordStepIntervals(Timeline& timeline, const Simulation& sim, double stepBegin, double stepEnd)
{
    // The pipelined step records its own intervals as it runs (host/sim/pipeline.h).
    if (!timeline.enabled() || sim.pipeline()) return;
    const int64_t step    = sim.stepIndex();
    const PhaseTimes& f   = sim.lastStepTimes().forces;
    const SpanExtent full = spanExtent(f.spans);
    // Spans outside this step would be an earlier evaluation's: the step then shows as one interval.
    if (full.empty() || full.begin < stepBegin || full.end > stepEnd)
    {
        timeline.recordSteady(step, "host", "step", stepBegin, stepEnd);
        return;
    }
    recordForcePhases(timeline, step, f, sim.solver().activeBackend() == Backend::Gpu ? "device" : "host-walk");
    timeline.recordSteady(step, "host", "kick_drift", stepBegin, full.begin);
    timeline.recordSteady(step, "host", "reorder_kick", full.end, stepEnd);
}

std::vector<StepTimes> timeSteps(Simulation& sim, int64_t steps, bool withDiagnostics)
{
    std::vector<StepTimes> times;
    Timeline& timeline = processTimeline();
    for (int64_t k = 0; k < steps && !sim.done(); ++k)
    {
        Stopwatch stepClock;
        const double stepBegin = steadyClockSeconds();
        sim.step();
        const double stepEnd = steadyClockSeconds();
        recordStepIntervals(timeline, sim, stepBegin, stepEnd);
        StepTimes t = sim.lastStepTimes();
        if (withDiagnostics)
        {
            Stopwatch clock;
            const double diagnosticsBegin = steadyClockSeconds();
            Diagnostics d                 = sim.diagnostics();
            std::vector<double> radii     = lagrangianRadii(sim.state(), lagrangeFractions());
            t[StepPhase::Diagnostics]     = clock.lap();
            timeline.recordSteady(sim.stepIndex(), "host", "diagnostics", diagnosticsBegin, steadyClockSeconds());
            (void)d;
        }
        t[StepPhase::StepWall] = stepClock.lap();
        times.push_back(t);
    }
    return times;
}

RestartPoint findRestartCheckpoint(const fs::path& where)
{
    std::error_code ec;
    const fs::path current = fs::is_directory(where, ec) ? where / "checkpoint.bin" : where;
    const fs::path prev    = current.string() + ".prev";
    RestartPoint point;
    point.checkpoint = current;
    try
    {
        readCheckpoint(current.string());
        return point;
    }
    catch (const FormatError& e)
    {
        point.skipped = e.what();
    }
    try
    {
        readCheckpoint(prev.string());
    }
    catch (const FormatError& e)
    {
        throw FormatError("no valid checkpoint to restart from: " + point.skipped + "; and " + e.what());
    }
    // Keep the damaged file for inspection, and give the valid one back its name (a kill in between leaves
    // no current file, which the next restart passes over for .prev as here).
    if (fs::exists(fs::symlink_status(current)))
    {
        const std::string damaged = current.string() + ".damaged";
        if (::rename(current.c_str(), damaged.c_str()) != 0)
        {
            throw FormatError("'" + current.string() + "': cannot move the damaged checkpoint to '" + damaged +
                              "': " + std::strerror(errno));
        }
    }
    linkAtomically(prev.string(), current.string());
    point.checkpoint = prev;
    return point;
}

RunOutcome runSimulation(Simulation& sim, const fs::path& dir, const RunSettings& rs, bool resume,
                         const RunControl& control)
{
    validate(rs);
    const std::string units =
        sim.comoving() ? unitsText(sim) : "N-body, G = " + std::to_string(sim.parameters().gravitational_constant);
    std::string comment = "# " + versionHeader() + "; units " + units + "; parameters " + toJson(sim.parameters()) +
                          (sim.comoving() ? "; comoving " + comovingJson(*sim.comoving()) : std::string()) + "\n";
    TimelineSession timelineSession(control.timeline);
    Timeline& timeline = processTimeline();
    DiagnosticsFiles diag(dir, comment, resume, sim.stepIndex(), sim.comoving().has_value(), control.timeline);
    RunOutcome outcome;
    outcome.checkpoint = dir / "checkpoint.bin";
    if (!resume)
    {
        diag.write(sim);
        writeSnapshotAt(dir, sim, rs);
    }
    while (!sim.done())
    {
        Stopwatch stepClock;
        const double stepBegin = steadyClockSeconds();
        sim.step();
        const double stepEnd = steadyClockSeconds();
        StepTimes t          = sim.lastStepTimes();
        Stopwatch clock;
        int64_t k = sim.stepIndex();
        if (k % rs.energyEvery == 0 || sim.done()) diag.write(sim);
        t[StepPhase::Diagnostics]   = clock.lap();
        const double diagnosticsEnd = steadyClockSeconds();
        if ((rs.snapshotEvery > 0 && k % rs.snapshotEvery == 0) || sim.done() || sim.atOutputTime())
        {
            writeSnapshotAt(dir, sim, rs);
        }
        if ((rs.checkpointEvery > 0 && k % rs.checkpointEvery == 0) || sim.done())
        {
            sim.writeCheckpoint(outcome.checkpoint.string(), rs.encode());
        }
        t[StepPhase::Io]       = clock.lap();
        t[StepPhase::StepWall] = stepClock.lap();
        if (timeline.enabled())
        {
            recordStepIntervals(timeline, sim, stepBegin, stepEnd);
            timeline.recordSteady(k, "host", "diagnostics", stepEnd, diagnosticsEnd);
            timeline.recordSteady(k, "host", "io", diagnosticsEnd, steadyClockSeconds());
            diag.writeTimeline(timeline.take());
        }
        diag.writeTiming(k, t, stepInteractions(sim), stepsSinceRebuild(sim));
        outcome.timing.add(t);
        if (control.afterStep) control.afterStep(sim, outcome.timing);
        int stop = control.stopRequested ? control.stopRequested() : 0;
        if (stop != 0 && !sim.done())
        {
            sim.writeCheckpoint(outcome.checkpoint.string(), rs.encode());
            outcome.stoppedBy = stop;
            return outcome;
        }
    }
    return outcome;
}

} // namespace octwalk

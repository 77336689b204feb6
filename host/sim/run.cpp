#include "host/sim/run.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/errors.h"
#include "host/core/phases.h"
#include "host/core/timer.h"
#include "host/core/version.h"
#include "host/io/atomic_file.h"
#include "host/io/json.h"
#include "host/sim/diagnostics_files.h"

namespace octwalk {

namespace fs = std::filesystem;

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

std::string comovingUnitsText(const Parameters& p, const Simulation::Comoving& c)
{
    std::ostringstream u;
    u.precision(9);
    u << unitSystem(c.settings.units).description << "; G = " << p.gravitational_constant << ", H0 = " << c.hubble0
      << "; comoving positions, peculiar velocities a dx/dt, time = scale factor a";
    return u.str();
}

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

namespace {

/// The units a run's outputs are in, for run.json and the file headers.
std::string unitsText(const Simulation& sim)
{
    if (sim.comoving()) return comovingUnitsText(sim.parameters(), *sim.comoving());
    std::ostringstream u;
    u.precision(17);
    u << "N-body, G = " << sim.parameters().gravitational_constant;
    return u.str();
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
      << ",\n  \"snapshot_files\": " << rs.snapshotFiles << ",\n  \"checkpoint_every\": " << rs.checkpointEvery
      << ",\n  \"snapshot_format\": " << jsonString(rs.format) << ",\n  \"n\": " << sim.state().size()
      << ",\n  \"restarted_from_step\": " << restartedFromStep;
    if (timing) j << ",\n  \"step_timing\": " << timing->json(sim.state().size());
    j << "\n}\n";
    writeFileAtomically((dir / "run.json").string(), j.str(), Existing::Replace);
}

void writeSnapshotAt(const fs::path& dir, const Simulation& sim, const RunSettings& rs)
{
    writeRunSnapshot(dir, sim.stepIndex(), sim.state(), sim.parameters(), rs.format, rs.snapshotFiles);
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
            std::vector<double> radii     = sim.lagrangianRadii();
            t[StepPhase::Diagnostics]     = clock.lap();
            timeline.recordSteady(sim.stepIndex(), "host", "diagnostics", diagnosticsBegin, steadyClockSeconds());
            (void)d;
        }
        t[StepPhase::StepWall] = stepClock.lap();
        times.push_back(t);
    }
    return times;
}

namespace {

/// A Simulation in runLoop: its diagnostics files, snapshots and checkpoints, and after every step a row of
/// timing.csv, its intervals on the timeline when that is on, and the caller's afterStep.
class SimulationStepper : public RunStepper
{
public:
    SimulationStepper(Simulation& sim, const fs::path& dir, const RunSettings& rs, DiagnosticsFiles& files,
                      const RunControl& control, StepTiming& timing)
        : sim_(sim), dir_(dir), rs_(rs), files_(files), control_(control), timing_(timing)
    {}

    bool done() const override { return sim_.done(); }
    int64_t stepIndex() const override { return sim_.stepIndex(); }
    void step() override { sim_.step(); }
    void writeDiagnostics() override
    {
        files_.write(sim_);
        // Only an isolated run's energy is held to the bound: a periodic box's E0 may be near zero (its
        // relative error then says little), a comoving one's is not conserved.
        if (sim_.comoving() || sim_.parameters().box_size > 0) return;
        const Diagnostics d = sim_.diagnostics();
        checkEnergyBound(d.relativeEnergyError, sim_.parameters().max_energy_error, d.time, sim_.stepIndex(), "step");
    }
    void writeSnapshot() override { writeSnapshotAt(dir_, sim_, rs_); }
    bool atOutputTime() const override { return sim_.atOutputTime(); }
    void writeCheckpoint(const std::string& path) override
    {
        files_.finishRows();
        sim_.writeCheckpoint(path, rs_.encode());
    }

    void afterStep(const LoopStepTimes& times, bool) override
    {
        const int64_t k           = sim_.stepIndex();
        StepTimes t               = sim_.lastStepTimes();
        t[StepPhase::Diagnostics] = times.diagnostics;
        t[StepPhase::Io]          = times.io;
        t[StepPhase::StepWall]    = times.wall;
        Timeline& timeline        = processTimeline();
        if (timeline.enabled())
        {
            recordStepIntervals(timeline, sim_, times.stepBegin, times.stepEnd);
            timeline.recordSteady(k, "host", "diagnostics", times.stepEnd, times.diagnosticsEnd);
            timeline.recordSteady(k, "host", "io", times.diagnosticsEnd, steadyClockSeconds());
            files_.writeTimeline(timeline.take());
        }
        files_.writeTiming(k, t, stepInteractions(sim_), stepsSinceRebuild(sim_));
        timing_.add(t);
        if (control_.afterStep) control_.afterStep(sim_, timing_);
    }

private:
    Simulation& sim_;
    const fs::path& dir_;
    const RunSettings& rs_;
    DiagnosticsFiles& files_;
    const RunControl& control_;
    StepTiming& timing_;
};

} // namespace

RunOutcome runSimulation(Simulation& sim, const fs::path& dir, const RunSettings& rs, bool resume,
                         const RunControl& control)
{
    validate(rs);
    const std::string units =
        sim.comoving() ? unitsText(sim) : "N-body, G = " + std::to_string(sim.parameters().gravitational_constant);
    std::string comment = "# " + versionHeader() + "; units " + units + "; parameters " + toJson(sim.parameters()) +
                          (sim.comoving() ? "; comoving " + comovingJson(*sim.comoving()) : std::string()) + "\n";
    TimelineSession recording(control.timeline);
    DiagnosticsFiles files(dir, comment, resume, sim.stepIndex(), sim.comoving().has_value(), control.timeline,
                           sim.parameters().box_size > 0);
    RunOutcome outcome;
    outcome.checkpoint = dir / "checkpoint.bin";
    SimulationStepper stepper(sim, dir, rs, files, control, outcome.timing);
    outcome.stoppedBy = runLoop(stepper, outcome.checkpoint, rs, resume, control.stopRequested);
    return outcome;
}

} // namespace octwalk

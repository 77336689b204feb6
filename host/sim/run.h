#pragma once
/// @file run.h
/// A run on disk: the step loop of a Simulation (host/sim/run_driver.h) with its outputs in one directory
/// (energy.csv, lagrange.csv, timing.csv, snapshots, run.json, checkpoint.bin). What a person sees (a
/// progress line, signal handling, messages) is the caller's (host/cli/cmd_run.cpp).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "host/core/timeline.h"
#include "host/sim/run_driver.h"
#include "host/sim/simulation.h"

namespace octwalk {

/// Medians per phase over the steps of a run (in this process: a restart counts its own steps).
class StepTiming
{
public:
    /// The most recent steps kept for the medians (a bounded window, so long runs stay small).
    static constexpr size_t kWindow = size_t(1) << 16;

    void add(const StepTimes& t);
    /// Steps added (all of them, also those that have left the window).
    int64_t steps() const { return steps_; }
    /// Per phase, the median over the window (zeros before the first step).
    StepTimes median() const;
    /// Median of StepPhase::StepWall over the last `recent` steps.
    double recentStepSeconds(size_t recent) const;
    /// `{"steps": .., "steps_in_median": .., "median_seconds": {every phase}, "bodies_per_second": ..}`,
    /// bodies per second from the median step wall time.
    std::string json(int64_t numBodies) const;

private:
    std::vector<StepTimes> window_; ///< a ring once full; next_ is the oldest entry then
    size_t next_   = 0;
    int64_t steps_ = 0;
};

/// Writes dir/run.json: version, units, initial conditions, parameters, forces, integrator, times
/// and output cadences, replacing an earlier one (through the atomic writer).
/// @param[in] source             the initial conditions as a JSON value
/// @param[in] restartedFromStep  the checkpoint's step of a restart, -1 for a new run
/// @param[in] timing             the steps' timing at the end of a run ("step_timing"); none at its start
void writeRunJson(const std::filesystem::path& dir, const Simulation& sim, const RunSettings& rs,
                  const std::string& source, int64_t restartedFromStep, const StepTiming* timing = nullptr);

/// Writes the snapshot of the current step, dir/snap_NNNNNN.EXT in rs.format (replacing one of the
/// same step, which a restarted run rewrites with the same state).
void writeSnapshotAt(const std::filesystem::path& dir, const Simulation& sim, const RunSettings& rs);

/// Takes `steps` steps of sim (fewer when it reaches its end) writing nothing, and returns their times:
/// the force evaluation's phases, integration and the step's wall time, and the diagnostics (energy
/// sums and Lagrangian radii, as a run's rows need) only when withDiagnostics. For `octwalk profile --steps`.
/// Each step's intervals also go to processTimeline() when it is on (recordStepIntervals).
std::vector<StepTimes> timeSteps(Simulation& sim, int64_t steps, bool withDiagnostics);

/// The interactions of the tree walk of the step sim has just taken (timing.csv's and octwalk profile
/// --steps' interactions per body): the pipeline's own walk with --rebuild-every != 1, else the solver's.
InteractionStats stepInteractions(const Simulation& sim);

/// Steps since the tree walked in the step sim has just taken was adopted: 0 for the classic step (a
/// tree built every step), Pipeline's PipelineStepInfo::stepsSinceRebuild otherwise.
int64_t stepsSinceRebuild(const Simulation& sim);

/// Records the intervals of the step sim has just taken (sim.step() from stepBegin to stepEnd, on
/// steadyClockSeconds()'s clock) into timeline when it is on: the force evaluation's phases
/// (recordForcePhases: lane "host-build", and "device" on the GPU backend or "host-walk" on the CPU), and
/// on lane "host" the rest of sim.step(): "kick_drift" up to the evaluation's first phase and
/// "reorder_kick" after its last (one interval "step" when the evaluation has no phase spans, as with
/// direct summation). Nothing for a pipelined run: its step records its own (host/sim/pipeline.h).
void recordStepIntervals(Timeline& timeline, const Simulation& sim, double stepBegin, double stepEnd);

/// What the caller sees of a running loop.
struct RunControl
{
    /// Called after every step with the run's timing so far (e.g. a progress line); may be empty.
    std::function<void(const Simulation&, const StepTiming&)> afterStep;
    /// Polled after every step; a non-zero value (e.g. a signal number) writes a checkpoint and
    /// stops the run. May be empty.
    std::function<int()> stopRequested;
    /// Record what ran when (processTimeline(), on for the run) and write it to dir/timeline.csv.
    bool timeline = false;
};

struct RunOutcome
{
    /// 0 when the run reached its end, else the value of RunControl::stopRequested that stopped it.
    int stoppedBy = 0;
    /// The checkpoint written at the end or on the stop.
    std::filesystem::path checkpoint;
    /// The timing of the steps taken (each also a row of timing.csv).
    StepTiming timing;
};

/// Steps sim to its end, writing the diagnostics every rs.energyEvery steps, snapshots every
/// rs.snapshotEvery steps, and a checkpoint (with rs) every rs.checkpointEvery steps, each also at
/// the end, and a row of timing.csv (StepTimes: the force evaluation's phases, integration,
/// diagnostics, I/O and the step's wall time) every step. A new run (resume false) first writes the diagnostics and the snapshot of its first step;
/// a resumed one continues the files of dir, dropping diagnostics rows after its step.
/// ParameterError (validate) before anything is written when rs is out of range.
RunOutcome runSimulation(Simulation& sim, const std::filesystem::path& dir, const RunSettings& rs, bool resume,
                         const RunControl& control = {});

/// The units of a comoving run's outputs, for run.json and the file headers.
std::string comovingUnitsText(const Parameters& p, const Simulation::Comoving& c);
/// The "comoving" object of run.json: the cosmology, the clock's settings and H0.
std::string comovingJson(const Simulation::Comoving& c);

} // namespace octwalk

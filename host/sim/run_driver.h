#pragma once
/// @file run_driver.h
/// What `octwalk run` (host/sim/run.h) and `octwalk hermite` (host/sim/hermite.h) share around their
/// integrators: the output cadences a restart reuses, the loop that steps a run and writes its outputs,
/// the checkpoint-and-stop on SIGINT/SIGTERM, the progress line, energy.csv and lagrange.csv, and the
/// restart: its checkpoint, and its diagnostics files cut back to that checkpoint's step.

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>

#include "host/core/params.h"
#include "host/core/particles.h"
#include "host/io/checkpoint.h"

namespace octwalk {

/// Settings of a run that a restart must reuse; stored in the checkpoint.
struct RunSettings
{
    /// Steps between rows of energy.csv and lagrange.csv. >= 1
    int64_t energyEvery = 1;
    /// Steps between snapshots (0: the first and last only). >= 0
    int64_t snapshotEvery = 0;
    /// Steps between checkpoints (one is always written at the end). >= 0
    int64_t checkpointEvery = 100;
    /// Snapshot format name (see parseSnapshotFormat).
    std::string format = "tipsy";
    /// Files each snapshot is split over (GADGET-2's NumFilesPerSnapshot: snap_NNNNNN.gadget.0 ... .K-1);
    /// 1: one file. > 1 for the gadget2 formats only.
    int32_t snapshotFiles = 1;

    /// The text stored in the checkpoint.
    std::string encode() const;
    /// Parses encode()'s text; FormatError when it cannot be read.
    static RunSettings decode(const std::string& text);
};

/// ParameterError naming the first setting out of range and its value, or for an unknown format.
void validate(const RunSettings& rs);

/// The checkpoint a restart continues from.
struct RestartPoint
{
    /// The checkpoint file used.
    std::filesystem::path checkpoint;
    /// Why the newer checkpoint was passed over (empty when it was used).
    std::string skipped;
    /// The checkpoint's contents, read once while finding it (a 2^27-body run's is 20 GB): the restart takes
    /// them from here.
    CheckpointImage image;

    /// The run directory that receives the outputs: the checkpoint's ("." for a bare file name).
    std::filesystem::path directory() const;
    /// run.json's "initial_conditions" of the restarted run.
    std::string sourceJson() const;
    /// Tells out when the newest checkpoint was passed over for the previous one.
    void reportSkipped(std::ostream& out) const;
};

/// Finds the newest valid checkpoint of a run for a restart: `where` is the run directory (its
/// checkpoint.bin) or a checkpoint file; that file, else file + ".prev" when the file is missing or
/// damaged (it fails its checksum or cannot be read: FormatError). When .prev is used, the damaged file
/// is kept as file + ".damaged" and file becomes a second name of .prev, so that the next checkpoint's
/// rotation cannot replace the one valid checkpoint with the damaged one. FormatError naming both files
/// when neither is valid. The point holds the image read.
RestartPoint findRestartCheckpoint(const std::filesystem::path& where);

/// Drops the rows after `step` of a diagnostics file of a restarted run (a run killed between
/// checkpoints; rows start with their step), through the atomic writer. Nothing when there is no file.
void truncateRowsAfter(const std::filesystem::path& path, int64_t step);

/// Flushes out, a diagnostics file of a run, and checks that everything written to it reached the file.
/// FormatError naming path, step and the system's reason when it did not (a full disk): a row lost is an
/// error that stops the run, never a silent gap in the file.
void flushRows(std::ostream& out, const std::filesystem::path& path, int64_t step);

/// Whether a diagnostics file gets its header: a new run, or a resumed one whose file is missing or empty.
bool needsHeader(const std::filesystem::path& path, bool resume);

/// energy.csv and lagrange.csv of a run, opened for appending (FormatError when they cannot be); a resumed
/// run's rows after its step are dropped first. The columns of energy.csv are the integrator's.
class EnergyLagrangeFiles
{
public:
    EnergyLagrangeFiles(const std::filesystem::path& dir, bool resume, int64_t resumeStep);

    /// lagrange.csv's header of a new run: headerComment, then step, time and r_f for every lagrangeFractions().
    void writeLagrangeHeader(const std::string& headerComment);
    /// A row of lagrange.csv: step, time and the radii of state enclosing lagrangeFractions() of its mass.
    void writeLagrangeRow(int64_t step, double time, const ParticleSet& state);
    /// A row of lagrange.csv with radii found already (one for each of lagrangeFractions()).
    void writeLagrangeRow(int64_t step, double time, const std::vector<double>& radii);
    /// Flushes both files after the rows of `step` (or the headers); FormatError (flushRows) naming the file
    /// and the step when anything written did not reach it.
    void flush(int64_t step);
    /// flush() after the last lagrange.csv row (the headers when none yet).
    void flush();

    std::ofstream energy, lagrange;
    /// Whether the file was new or empty when opened (a restart recreates a missing one): it needs its header.
    bool energyIsNew = false, lagrangeIsNew = false;

private:
    std::filesystem::path energyPath_, lagrangePath_;
    int64_t lastStep_;
};

/// Writes the snapshot of step (or interval) `index`, dir/snap_NNNNNN.EXT in `format`, replacing one of the
/// same index, which a restarted run rewrites with the same state.
/// The path of snapshot index of a run (snap_NNNNNN and the format's extension; the base name of the parts
/// when a snapshot is split over files).
std::filesystem::path runSnapshotPath(const std::filesystem::path& dir, int64_t index, const std::string& format);

void writeRunSnapshot(const std::filesystem::path& dir, int64_t index, const ParticleSet& state, const Parameters& p,
                      const std::string& format, int32_t files = 1);

/// Wall times of one pass of runLoop: seconds of the diagnostics, of the snapshots and checkpoints, and of the
/// whole step, and the steadyClockSeconds() marks around the step and after the diagnostics.
struct LoopStepTimes
{
    double diagnostics = 0, io = 0, wall = 0;
    double stepBegin = 0, stepEnd = 0, diagnosticsEnd = 0;
};

/// A run whose energy drifted beyond the bound its parameters set (max_energy_error).
class EnergyBoundError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

/// EnergyBoundError when bound > 0 and |relativeError| (dE/E0 of a diagnostics row) exceeds it (or is not
/// finite), naming dE/E0, the time, the step (stepName: "step", "interval") and the bound. Called after the
/// row is written, so energy.csv shows it.
void checkEnergyBound(double relativeError, double bound, double time, int64_t step, const char* stepName);

/// What runLoop steps and writes: `run`'s Simulation or `hermite`'s integrator.
class RunStepper
{
public:
    virtual ~RunStepper()             = default;
    virtual bool done() const         = 0;
    virtual int64_t stepIndex() const = 0;
    /// One step (a sync interval of `hermite`).
    virtual void step() = 0;
    /// The rows of the diagnostics files for the current step.
    virtual void writeDiagnostics() = 0;
    virtual void writeSnapshot()    = 0;
    /// Whether the current step takes a snapshot whatever the cadence (a comoving run's output list).
    virtual bool atOutputTime() const { return false; }
    virtual void writeCheckpoint(const std::string& path) = 0;
    /// Called after the outputs of every step; wroteDiagnostics: whether its rows were written.
    virtual void afterStep(const LoopStepTimes& times, bool wroteDiagnostics) = 0;
};

/// Steps s to its end: the diagnostics every rs.energyEvery steps, snapshots every rs.snapshotEvery,
/// checkpoints (to `checkpoint`) every rs.checkpointEvery, each also at the end. A new run (resume false)
/// first writes the diagnostics and the snapshot of its first step. After every step stopRequested (may
/// be empty) is polled: a non-zero value writes a checkpoint and ends the loop early.
/// Returns 0 when s reached its end, else the value that stopped it. ParameterError (validate) before
/// anything is written when rs is out of range.
int runLoop(RunStepper& s, const std::filesystem::path& checkpoint, const RunSettings& rs, bool resume,
            const std::function<int()>& stopRequested);

/// SIGINT and SIGTERM recorded instead of ending the process, for the lifetime of the object (the previous
/// handlers restored after it), so that a run polls them (received) and stops with a checkpoint.
class StopSignals
{
public:
    StopSignals();
    ~StopSignals();
    StopSignals(const StopSignals&)            = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    /// The signal received, 0 while none.
    int received() const;

private:
    void (*oldInt_)(int);
    void (*oldTerm_)(int);
};

/// The line a run stopped by a signal prints: where it stopped and how to resume it with `octwalk command`.
/// unit: "step" or "interval".
std::string stoppedLine(const char* command, const char* unit, int signal, int64_t index, double time,
                        const std::filesystem::path& checkpoint);

/// A run's progress. On a terminal, one line rewritten in place at most twice a second and at the end. Into a
/// file or a pipe (a batch job's log), whole lines: the first step's, then one a minute, and the last, so that a
/// log shows how a long run is going without a line per step.
class ProgressLine
{
public:
    enum class Output
    {
        Terminal,
        Log,
    };

    /// Where standard output goes decides the output.
    explicit ProgressLine(bool enabled);
    /// The lines go to out, as output says, a Log line at most every logSeconds.
    ProgressLine(bool enabled, Output output, std::FILE* out, double logSeconds = kLogSeconds);

    /// Whether a line is due (see the class; finished: always); then marks the time.
    bool due(bool finished);
    /// Seconds from the start to the last mark.
    double elapsed() const;
    /// Seconds left for `remaining` steps at the mean pace of the `done` steps so far (0 before the first).
    double eta(int64_t done, int64_t remaining) const;
    /// Prints text: over the terminal's line (a finished run's line is ended), or as a log's line without its
    /// trailing blanks.
    void show(const char* text, bool finished);

    static constexpr double kLogSeconds = 60.0;

private:
    using Clock = std::chrono::steady_clock;
    bool enabled_;
    Output output_;
    std::FILE* out_;
    double logSeconds_;
    bool shownAny_ = false;
    Clock::time_point start_, last_;
};

} // namespace octwalk

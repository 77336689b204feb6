#pragma once
/// @file diagnostics_files.h
/// energy.csv and lagrange.csv of a run: one row per diagnostics step; timing.csv: one row per step
/// (the measured phase times and the walk's interactions per body); timeline.csv when asked for: one row
/// per recorded interval (host/core/timeline.h). All kept consistent with the checkpoint on restart.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "host/core/timeline.h"
#include "host/sim/run_driver.h"
#include "host/sim/simulation.h"

namespace octwalk {

/// energy.csv's header of a comoving run after the run's comment line: what the columns mean, then their names.
inline constexpr const char* kComovingEnergyHeader =
    "# comoving run: a = scale factor, z = 1/a - 1, dlna = the step just taken in ln a; kinetic = sum m v^2 / 2 of "
    "the peculiar velocities v = a dx/dt; potential = W = sum m phi / (2 a), the peculiar potential energy (mean "
    "density subtracted); px, py, pz = sum m v; layzer_irvine = K + W + int (2K + W) d ln a (Layzer-Irvine: "
    "constant in exact dynamics) and li_error = its change since a_begin over |W|\n"
    "step,a,z,dlna,kinetic,potential,total,px,py,pz,layzer_irvine,li_error\n";

/// lagrange.csv's note in a comoving run, which has no rows.
inline constexpr const char* kComovingLagrangeNote =
    "# comoving run: no Lagrangian radii (a periodic box has no centre)\n";

/// lagrange.csv's note in a periodic run in time, which has no rows.
inline constexpr const char* kPeriodicLagrangeNote =
    "# periodic box: no Lagrangian radii (a periodic box has no centre)\n";

/// One row of a comoving run's energy.csv: the diagnostics d (time = a) at `step` and the clock c.
void writeComovingEnergyRow(std::ostream& out, int64_t step, const Diagnostics& d, const Simulation::Comoving& c);

class DiagnosticsFiles
{
public:
    /// Opens (appends to) dir/energy.csv, dir/lagrange.csv and dir/timing.csv. FormatError when they
    /// cannot be opened or their headers not written. Each gets its header also on a restart of a run that
    /// has none (a file deleted or never written). Every row below is flushed and checked: FormatError
    /// (flushRows) naming the file and the step when it did not reach the file.
    /// @param[in] dir            the run's output directory
    /// @param[in] headerComment  "# ..." line(s) written before the column names of a new file
    /// @param[in] resume         continue files of a restarted run: rows after resumeStep are dropped
    ///                           (a run killed between checkpoints) and no header is written
    /// @param[in] resumeStep     the step of the checkpoint the run resumes from
    /// @param[in] comoving       a comoving run: energy.csv has a, z, the step in ln a, the peculiar kinetic
    ///                           and potential energies and momentum; lagrange.csv only its header (a
    ///                           periodic box has no centre to measure radii from)
    /// @param[in] timeline       also open (append to) dir/timeline.csv, with its header when new (rows
    ///                           after resumeStep dropped on a resume)
    /// @param[in] periodic       a run in time in a periodic box: lagrange.csv only its header, as for comoving
    ///                           (the radii's sort of every body took 0.89 s a row at 2^24 bodies on an H200's
    ///                           host, longer than the step's forces: benchmarks/results/periodic/lagrange_rows)
    DiagnosticsFiles(const std::filesystem::path& dir, const std::string& headerComment, bool resume,
                     int64_t resumeStep, bool comoving = false, bool timeline = false, bool periodic = false);

    /// Finishes the pending lagrange.csv row (finishRows) when the run stops on an error; the error in that is
    /// dropped, the one that stopped the run is what counts.
    ~DiagnosticsFiles();
    DiagnosticsFiles(const DiagnosticsFiles&)            = delete;
    DiagnosticsFiles& operator=(const DiagnosticsFiles&) = delete;

    /// A row of energy.csv for the current step of sim, flushed, and the lagrange.csv row of the previous
    /// write. The current step's Lagrangian radii are begun (Simulation::beginLagrangianRadii) and written with
    /// the next write or finishRows: a pipelined run's device sorts them while the next step runs. sim outlives
    /// this object or its rows are finished first.
    void write(const Simulation& sim);
    /// Writes and flushes the pending lagrange.csv row, if any: before a checkpoint (a restart resumes after the
    /// checkpoint's step, whose row must be in the file) and at the end of the run.
    void finishRows();

    /// One row of timing.csv (step, stepTimesCsv, then the walk's node and leaf interactions per body
    /// from stats and the steps since its tree was built), flushed.
    /// @param[in] stepsSinceRebuild  0 for a tree built in this step (every classic step)
    void writeTiming(int64_t step, const StepTimes& t, const InteractionStats& stats, int64_t stepsSinceRebuild);

    /// One row of timeline.csv per interval, flushed; nothing when the file was not asked for.
    void writeTimeline(const std::vector<TimelineInterval>& intervals);

private:
    /// Opens timeline.csv for appending, with its header when isNew (checked at `step`).
    void openTimeline(const std::string& headerComment, bool isNew, int64_t step);
    /// Writes the pending lagrange.csv row, if any (not flushed).
    void writePendingLagrangeRow();
    /// energy.csv's and lagrange.csv's headers, for those that are new.
    void writeEnergyLagrangeHeaders(const std::string& headerComment);

    EnergyLagrangeFiles rows_;
    /// The lagrange.csv row whose radii were begun and not yet written (step, time, its simulation).
    struct PendingLagrangeRow
    {
        int64_t step;
        double time;
        const Simulation* sim;
    };
    std::optional<PendingLagrangeRow> pendingLagrange_;
    std::filesystem::path timingPath_, timelinePath_;
    std::ofstream timing_, timeline_;
    bool comoving_, periodic_;
};

} // namespace octwalk

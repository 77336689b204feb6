#include "host/sim/diagnostics_files.h"

#include <cmath>
#include <cstdio>

#include "common/errors.h"
#include "host/core/phases.h"
#include "host/io/atomic_file.h"

namespace octwalk {

namespace fs = std::filesystem;

namespace {

/// The columns timing.csv appends after the phases (new columns go last: readers index the old ones).
constexpr const char* kInteractionColumns = "node_interactions_per_body,leaf_interactions_per_body,steps_since_rebuild";

} // namespace

DiagnosticsFiles::DiagnosticsFiles(const fs::path& dir, const std::string& headerComment, bool resume,
                                   int64_t resumeStep, bool comoving, bool timeline, bool periodic)
    : rows_(dir, resume, resumeStep), timingPath_(dir / "timing.csv"), timelinePath_(dir / "timeline.csv"),
      comoving_(comoving), periodic_(periodic && !comoving)
{
    if (resume)
    {
        truncateRowsAfter(timingPath_, resumeStep);
        if (timeline) truncateRowsAfter(timelinePath_, resumeStep);
    }
    const bool timingIsNew = needsHeader(timingPath_, resume);
    if (timeline) openTimeline(headerComment, needsHeader(timelinePath_, resume), resumeStep);
    timing_.open(timingPath_, std::ios::app);
    if (!timing_) throw FormatError("cannot open the diagnostics files in '" + dir.string() + "'");
    if (timingIsNew)
    {
        timing_ << headerComment << "# seconds per step, measured: unlike every other output of a run, these "
                << "differ from run to run and after a restart (whose rows continue from the checkpoint's step). "
                << "Force evaluation phases as in common/phases.h, then the step's own:";
        for (const StepPhaseInfo& p : kStepPhases) timing_ << " " << p.name << " = " << p.help << ";";
        timing_ << " " << kInteractionColumns << " = the step's tree walk: body-node and body-body interactions "
                << "per body (counts, not seconds; 0 with --direct), and the steps since that walk's tree was built "
                << "(0 when built for the step: always, unless --rebuild-every refits it in between)";
        timing_ << "\nstep," << stepTimesCsvHeader() << "," << kInteractionColumns << "\n";
        flushRows(timing_, timingPath_, resumeStep);
    }
    writeEnergyLagrangeHeaders(headerComment);
    rows_.flush(resumeStep);
}

void DiagnosticsFiles::writeEnergyLagrangeHeaders(const std::string& headerComment)
{
    if (comoving_)
    {
        if (rows_.energyIsNew)
        {
            rows_.energy << headerComment << kComovingEnergyHeader;
        }
        if (rows_.lagrangeIsNew) rows_.lagrange << headerComment << kComovingLagrangeNote;
        return;
    }
    if (rows_.energyIsNew)
    {
        rows_.energy << headerComment << "step,time,kinetic,potential,total,dE_over_E0,virial_2K_over_W,com_x,com_y,"
                     << "com_z,com_vx,com_vy,com_vz,px,py,pz,Lx,Ly,Lz\n";
    }
    if (!rows_.lagrangeIsNew) return;
    if (periodic_) rows_.lagrange << headerComment << kPeriodicLagrangeNote;
    else rows_.writeLagrangeHeader(headerComment);
}

void writeComovingEnergyRow(std::ostream& out, int64_t step, const Diagnostics& d, const Simulation::Comoving& c)
{
    out << step << ',' << d.time << ',' << 1 / d.time - 1 << ',' << c.lastDlna << ',' << d.kinetic << ',' << d.potential
        << ',' << d.total << ',' << d.momentum.x << ',' << d.momentum.y << ',' << d.momentum.z;
    const double constant = d.total + c.layzerIrvineIntegral;
    out << ',' << constant << ','
        << (d.potential != 0 ? (constant - c.layzerIrvineStart) / std::fabs(d.potential) : 0.0) << '\n';
}

void DiagnosticsFiles::write(const Simulation& sim)
{
    Diagnostics d = sim.diagnostics();
    if (comoving_)
    {
        writeComovingEnergyRow(rows_.energy, sim.stepIndex(), d, *sim.comoving());
        rows_.flush(sim.stepIndex());
        return;
    }
    rows_.energy << sim.stepIndex() << ',' << d.time << ',' << d.kinetic << ',' << d.potential << ',' << d.total << ','
                 << d.relativeEnergyError << ',' << d.virialRatio << ',' << d.comPos.x << ',' << d.comPos.y << ','
                 << d.comPos.z << ',' << d.comVel.x << ',' << d.comVel.y << ',' << d.comVel.z << ',' << d.momentum.x
                 << ',' << d.momentum.y << ',' << d.momentum.z << ',' << d.angularMomentum.x << ','
                 << d.angularMomentum.y << ',' << d.angularMomentum.z << '\n';
    writePendingLagrangeRow();
    if (!periodic_)
    {
        sim.beginLagrangianRadii();
        pendingLagrange_ = PendingLagrangeRow{sim.stepIndex(), d.time, &sim};
    }
    rows_.flush(sim.stepIndex());
}

void DiagnosticsFiles::writePendingLagrangeRow()
{
    if (!pendingLagrange_) return;
    const PendingLagrangeRow row = *pendingLagrange_;
    pendingLagrange_.reset();
    rows_.writeLagrangeRow(row.step, row.time, row.sim->finishLagrangianRadii());
}

void DiagnosticsFiles::finishRows()
{
    if (!pendingLagrange_) return;
    const int64_t step = pendingLagrange_->step;
    writePendingLagrangeRow();
    rows_.flush(step);
}

DiagnosticsFiles::~DiagnosticsFiles()
{
    try
    {
        finishRows();
    }
    catch (...)
    {
        // The run stopped on an error already (a finished run has no pending row): that error is reported.
    }
}

void DiagnosticsFiles::writeTiming(int64_t step, const StepTimes& t, const InteractionStats& stats,
                                   int64_t stepsSinceRebuild)
{
    char counts[96];
    std::snprintf(counts, sizeof(counts), "%.9g,%.9g,%lld", stats.nodesPerBody(), stats.leavesPerBody(),
                  static_cast<long long>(stepsSinceRebuild));
    timing_ << step << ',' << stepTimesCsv(t) << ',' << counts << '\n';
    flushRows(timing_, timingPath_, step);
}

void DiagnosticsFiles::openTimeline(const std::string& headerComment, bool isNew, int64_t step)
{
    timeline_.open(timelinePath_, std::ios::app);
    if (!timeline_) throw FormatError("cannot open '" + timelinePath_.string() + "'");
    if (!isNew) return;
    timeline_ << headerComment << timelineCsvComment() << timelineCsvHeader() << "\n";
    flushRows(timeline_, timelinePath_, step);
}

void DiagnosticsFiles::writeTimeline(const std::vector<TimelineInterval>& intervals)
{
    if (!timeline_.is_open()) return;
    for (const TimelineInterval& i : intervals) timeline_ << timelineCsvRow(i) << '\n';
    if (!intervals.empty()) flushRows(timeline_, timelinePath_, intervals.back().step);
}

} // namespace octwalk

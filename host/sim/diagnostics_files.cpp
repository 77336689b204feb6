#include "host/sim/diagnostics_files.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <iomanip>

#include "common/errors.h"
#include "host/core/phases.h"
#include "host/io/atomic_file.h"

namespace octwalk {

namespace fs = std::filesystem;

namespace {

/// The columns timing.csv appends after the phases (new columns go last: readers index the old ones).
constexpr const char* kInteractionColumns = "node_interactions_per_body,leaf_interactions_per_body,steps_since_rebuild";

/// Drops rows written after the checkpoint's step (a run killed between checkpoints).
void truncateAfter(const fs::path& path, int64_t step)
{
    std::ifstream in(path);
    if (!in) return;
    std::string line, kept;
    while (std::getline(in, line))
    {
        if (in.eof()) break; // a last line without its newline: a row cut short by a kill
        bool isRow = !line.empty() && std::isdigit(static_cast<unsigned char>(line[0]));
        if (isRow && std::stoll(line.substr(0, line.find(','))) > step) break;
        kept += line + "\n";
    }
    in.close();
    // Through the one writer, never in place: a kill part-way leaves the old file, not an empty one.
    writeFileAtomically(path.string(), kept, Existing::Replace);
}

} // namespace

DiagnosticsFiles::DiagnosticsFiles(const fs::path& dir, const std::string& headerComment, bool resume,
                                   int64_t resumeStep, bool comoving, bool timeline)
    : energyPath_(dir / "energy.csv"), lagrangePath_(dir / "lagrange.csv"), timingPath_(dir / "timing.csv"),
      timelinePath_(dir / "timeline.csv"), comoving_(comoving)
{
    if (resume)
    {
        truncateAfter(energyPath_, resumeStep);
        truncateAfter(lagrangePath_, resumeStep);
        truncateAfter(timingPath_, resumeStep);
        if (timeline) truncateAfter(timelinePath_, resumeStep);
    }
    std::error_code ec;
    const bool timingIsNew = !resume || fs::file_size(timingPath_, ec) == 0 || ec;
    if (timeline) openTimeline(headerComment, !resume || fs::file_size(timelinePath_, ec) == 0 || ec);
    energy_.open(energyPath_, std::ios::app);
    lagrange_.open(lagrangePath_, std::ios::app);
    timing_.open(timingPath_, std::ios::app);
    if (!energy_ || !lagrange_ || !timing_)
        throw FormatError("cannot open the diagnostics files in '" + dir.string() + "'");
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
        timing_.flush();
    }
    if (!resume && comoving)
    {
        energy_ << headerComment
                << "# comoving run: a = scale factor, z = 1/a - 1, dlna = the step just taken in ln a; kinetic = "
                << "sum m v^2 / 2 of the peculiar velocities v = a dx/dt; potential = W = sum m phi / (2 a), the "
                << "peculiar potential energy (mean density subtracted); px, py, pz = sum m v; layzer_irvine = "
                << "K + W + int (2K + W) d ln a (Layzer-Irvine: constant in exact dynamics) and li_error = its "
                << "change since a_begin over |W|\n"
                << "step,a,z,dlna,kinetic,potential,total,px,py,pz,layzer_irvine,li_error\n";
        lagrange_ << headerComment << "# comoving run: no Lagrangian radii (a periodic box has no centre)\n";
    }
    else if (!resume)
    {
        energy_ << headerComment << "step,time,kinetic,potential,total,dE_over_E0,virial_2K_over_W,com_x,com_y,"
                << "com_z,com_vx,com_vy,com_vz,px,py,pz,Lx,Ly,Lz\n";
        lagrange_ << headerComment << "step,time";
        for (double f : lagrangeFractions()) lagrange_ << ",r_" << f;
        lagrange_ << "\n";
    }
    energy_ << std::setprecision(15);
    lagrange_ << std::setprecision(9);
}

void DiagnosticsFiles::write(const Simulation& sim)
{
    Diagnostics d = sim.diagnostics();
    if (comoving_)
    {
        energy_ << sim.stepIndex() << ',' << d.time << ',' << 1 / d.time - 1 << ',' << sim.comoving()->lastDlna << ','
                << d.kinetic << ',' << d.potential << ',' << d.total << ',' << d.momentum.x << ',' << d.momentum.y
                << ',' << d.momentum.z;
        const Simulation::Comoving& c = *sim.comoving();
        const double constant         = d.total + c.layzerIrvineIntegral;
        energy_ << ',' << constant << ','
                << (d.potential != 0 ? (constant - c.layzerIrvineStart) / std::fabs(d.potential) : 0.0) << '\n';
        energy_.flush();
        return;
    }
    energy_ << sim.stepIndex() << ',' << d.time << ',' << d.kinetic << ',' << d.potential << ',' << d.total << ','
            << d.relativeEnergyError << ',' << d.virialRatio << ',' << d.comPos.x << ',' << d.comPos.y << ','
            << d.comPos.z << ',' << d.comVel.x << ',' << d.comVel.y << ',' << d.comVel.z << ',' << d.momentum.x << ','
            << d.momentum.y << ',' << d.momentum.z << ',' << d.angularMomentum.x << ',' << d.angularMomentum.y << ','
            << d.angularMomentum.z << '\n';
    lagrange_ << sim.stepIndex() << ',' << d.time;
    for (double r : lagrangianRadii(sim.state(), lagrangeFractions())) lagrange_ << ',' << r;
    lagrange_ << '\n';
    energy_.flush();
    lagrange_.flush();
}

void DiagnosticsFiles::writeTiming(int64_t step, const StepTimes& t, const InteractionStats& stats,
                                   int64_t stepsSinceRebuild)
{
    char counts[96];
    std::snprintf(counts, sizeof(counts), "%.9g,%.9g,%lld", stats.nodesPerBody(), stats.leavesPerBody(),
                  static_cast<long long>(stepsSinceRebuild));
    timing_ << step << ',' << stepTimesCsv(t) << ',' << counts << '\n';
    timing_.flush();
}

void DiagnosticsFiles::openTimeline(const std::string& headerComment, bool isNew)
{
    timeline_.open(timelinePath_, std::ios::app);
    if (!timeline_) throw FormatError("cannot open '" + timelinePath_.string() + "'");
    if (!isNew) return;
    timeline_ << headerComment << timelineCsvComment() << timelineCsvHeader() << "\n";
    timeline_.flush();
}

void DiagnosticsFiles::writeTimeline(const std::vector<TimelineInterval>& intervals)
{
    if (!timeline_.is_open()) return;
    for (const TimelineInterval& i : intervals) timeline_ << timelineCsvRow(i) << '\n';
    timeline_.flush();
}

} // namespace octwalk

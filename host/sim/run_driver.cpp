#include "host/sim/run_driver.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "common/errors.h"
#include "host/core/timer.h"
#include "host/core/version.h"
#include "host/io/atomic_file.h"
#include "host/io/checkpoint.h"
#include "host/io/json.h"
#include "host/io/snapshot.h"
#include "host/sim/simulation.h"

namespace octwalk {

namespace fs = std::filesystem;

std::string RunSettings::encode() const
{
    std::ostringstream s;
    s << energyEvery << ' ' << snapshotEvery << ' ' << checkpointEvery << ' ' << format;
    // Only when set, so that the checkpoints of runs that do not split their snapshots stay as they were.
    if (snapshotFiles != 1) s << " files " << snapshotFiles;
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
    std::string key;
    if (s >> key && key == "files" && !(s >> r.snapshotFiles))
    {
        throw FormatError("checkpoint: the snapshot files stored in it cannot be read ('" +
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
    check("snapshot_files", rs.snapshotFiles, 1);
    const SnapshotFormat f = parseSnapshotFormat(rs.format);
    if (rs.snapshotFiles > 1 && f != SnapshotFormat::Gadget2 && f != SnapshotFormat::Gadget2Format2)
    {
        throw ParameterError("run setting snapshot_files = " + std::to_string(rs.snapshotFiles) +
                             " needs a GADGET-2 format (gadget2 or gadget2-format2), not " + rs.format);
    }
}

fs::path RestartPoint::directory() const
{
    const fs::path dir = checkpoint.parent_path();
    return dir.empty() ? fs::path(".") : dir;
}

std::string RestartPoint::sourceJson() const { return "{\"restart\": " + jsonString(checkpoint.string()) + "}"; }

void RestartPoint::reportSkipped(std::ostream& out) const
{
    if (!skipped.empty()) out << "the newest checkpoint is not usable (" << skipped << "); using the previous one\n";
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
        point.image = readCheckpoint(current.string());
        return point;
    }
    catch (const FormatError& e)
    {
        point.skipped = e.what();
    }
    try
    {
        point.image = readCheckpoint(prev.string());
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

void truncateRowsAfter(const fs::path& path, int64_t step)
{
    std::error_code ec;
    if (!fs::exists(path, ec)) return;
    // The run's own file, but a restart may meet anything at its name: only a regular file is read.
    if (!fs::is_regular_file(path, ec))
        throw FormatError("'" + path.string() + "' is not a regular file: a restart continues its rows there");
    std::ifstream in(path);
    if (!in) throw FormatError("cannot read '" + path.string() + "' to continue its rows");
    std::string line, kept;
    int64_t number = 0;
    while (std::getline(in, line))
    {
        ++number;
        if (in.eof()) break; // a last line without its newline: a row cut short by a kill
        const bool isRow = !line.empty() && std::isdigit(static_cast<unsigned char>(line[0]));
        if (isRow)
        {
            char* end           = nullptr;
            const long long row = std::strtoll(line.c_str(), &end, 10);
            if (*end != ',' && *end != '\0')
                throw FormatError("'" + path.string() + "' line " + std::to_string(number) +
                                  ": not a row of this run (it starts with '" + line.substr(0, 40) + "')");
            if (row > step) break;
        }
        kept += line + "\n";
    }
    in.close();
    // Through the one writer, never in place: a kill part-way leaves the old file, not an empty one.
    writeFileAtomically(path.string(), kept, Existing::Replace);
}

void flushRows(std::ostream& out, const fs::path& path, int64_t step)
{
    errno = 0;
    out.flush();
    if (out) return;
    const int error = errno;
    throw FormatError("cannot write '" + path.string() + "' at step " + std::to_string(step) +
                      (error != 0 ? std::string(": ") + std::strerror(error) : std::string()) +
                      "; the run stops here (its rows up to the last checkpoint are kept for a restart)");
}

bool needsHeader(const fs::path& path, bool resume)
{
    if (!resume) return true;
    std::error_code ec;
    return fs::file_size(path, ec) == 0 || ec;
}

EnergyLagrangeFiles::EnergyLagrangeFiles(const fs::path& dir, bool resume, int64_t resumeStep)
    : energyPath_(dir / "energy.csv"), lagrangePath_(dir / "lagrange.csv"), lastStep_(resumeStep)
{
    if (resume)
    {
        truncateRowsAfter(energyPath_, resumeStep);
        truncateRowsAfter(lagrangePath_, resumeStep);
    }
    energyIsNew   = needsHeader(energyPath_, resume);
    lagrangeIsNew = needsHeader(lagrangePath_, resume);
    energy.open(energyPath_, std::ios::app);
    lagrange.open(lagrangePath_, std::ios::app);
    if (!energy || !lagrange) throw FormatError("cannot open the diagnostics files in '" + dir.string() + "'");
    // The headers are text and the fractions short: these precisions change none of their characters.
    energy << std::setprecision(15);
    lagrange << std::setprecision(9);
}

void EnergyLagrangeFiles::writeLagrangeHeader(const std::string& headerComment)
{
    lagrange << headerComment << "step,time";
    for (double f : lagrangeFractions()) lagrange << ",r_" << f;
    lagrange << "\n";
}

void EnergyLagrangeFiles::writeLagrangeRow(int64_t step, double time, const ParticleSet& state)
{
    writeLagrangeRow(step, time, lagrangianRadii(state, lagrangeFractions()));
}

void EnergyLagrangeFiles::writeLagrangeRow(int64_t step, double time, const std::vector<double>& radii)
{
    lagrange << step << ',' << time;
    for (double r : radii) lagrange << ',' << r;
    lagrange << '\n';
    lastStep_ = step;
}

void EnergyLagrangeFiles::flush(int64_t step)
{
    flushRows(energy, energyPath_, step);
    flushRows(lagrange, lagrangePath_, step);
}

void EnergyLagrangeFiles::flush() { flush(lastStep_); }

fs::path runSnapshotPath(const fs::path& dir, int64_t index, const std::string& format)
{
    char name[64];
    std::snprintf(name, sizeof(name), "snap_%06lld", static_cast<long long>(index));
    return dir / (name + snapshotExtension(parseSnapshotFormat(format)));
}

void writeRunSnapshot(const fs::path& dir, int64_t index, const ParticleSet& state, const Parameters& p,
                      const std::string& format, int32_t files)
{
    const SnapshotFormat f = parseSnapshotFormat(format);
    const fs::path path    = runSnapshotPath(dir, index, format);
    if (files > 1)
    {
        writeSnapshotSplit(path.string(), f, state, files, true);
        return;
    }
    SnapshotMeta meta{toJson(p), versionAndHash(), p.gravitational_constant};
    writeSnapshot(path.string(), f, state, meta, true);
}

void checkEnergyBound(double relativeError, double bound, double time, int64_t step, const char* stepName)
{
    if (!(bound > 0) || std::fabs(relativeError) <= bound) return;
    std::ostringstream s;
    s.precision(4);
    s << "dE/E0 = " << relativeError << " at t = " << time << " (" << stepName << " " << step
      << ") exceeds max_energy_error = " << bound
      << ": the integration no longer conserves energy (an unsoftened close encounter or too long a step: a "
         "larger epsilon or a shorter step helps; --max-energy-error sets the bound, 0 removes it); energy.csv "
         "holds the rows up to here, the last checkpoint the state before";
    throw EnergyBoundError(s.str());
}

namespace {

bool every(int64_t k, int64_t cadence) { return cadence > 0 && k % cadence == 0; }

} // namespace

int runLoop(RunStepper& s, const fs::path& checkpoint, const RunSettings& rs, bool resume,
            const std::function<int()>& stopRequested)
{
    validate(rs);
    if (!resume)
    {
        s.writeDiagnostics();
        s.writeSnapshot();
    }
    while (!s.done())
    {
        LoopStepTimes t;
        Stopwatch stepClock;
        t.stepBegin = steadyClockSeconds();
        s.step();
        t.stepEnd = steadyClockSeconds();
        Stopwatch clock;
        const int64_t k             = s.stepIndex();
        const bool wroteDiagnostics = every(k, rs.energyEvery) || s.done();
        if (wroteDiagnostics) s.writeDiagnostics();
        t.diagnostics    = clock.lap();
        t.diagnosticsEnd = steadyClockSeconds();
        if (every(k, rs.snapshotEvery) || s.done() || s.atOutputTime()) s.writeSnapshot();
        if (every(k, rs.checkpointEvery) || s.done()) s.writeCheckpoint(checkpoint.string());
        t.io   = clock.lap();
        t.wall = stepClock.lap();
        s.afterStep(t, wroteDiagnostics);
        const int stop = stopRequested ? stopRequested() : 0;
        if (stop != 0 && !s.done())
        {
            s.writeCheckpoint(checkpoint.string());
            return stop;
        }
    }
    return 0;
}

namespace {

volatile std::sig_atomic_t gStopSignal = 0;

extern "C" void onStopSignal(int signo) { gStopSignal = signo; }

} // namespace

StopSignals::StopSignals()
{
    gStopSignal = 0;
    oldInt_     = std::signal(SIGINT, onStopSignal);
    oldTerm_    = std::signal(SIGTERM, onStopSignal);
}

StopSignals::~StopSignals()
{
    std::signal(SIGINT, oldInt_);
    std::signal(SIGTERM, oldTerm_);
}

int StopSignals::received() const { return gStopSignal; }

std::string stoppedLine(const char* command, const char* unit, int signal, int64_t index, double time,
                        const fs::path& checkpoint)
{
    std::ostringstream s;
    s << "stopped by signal " << signal << " at " << unit << " " << index << ", t = " << time
      << "; checkpoint written; resume with: octwalk " << command << " --restart " << checkpoint.string() << "\n";
    return s.str();
}

ProgressLine::ProgressLine(bool enabled)
    : ProgressLine(enabled, isatty(STDOUT_FILENO) ? Output::Terminal : Output::Log, stdout)
{}

ProgressLine::ProgressLine(bool enabled, Output output, std::FILE* out, double logSeconds)
    : enabled_(enabled), output_(output), out_(out), logSeconds_(logSeconds), start_(Clock::now()), last_(start_)
{}

bool ProgressLine::due(bool finished)
{
    if (!enabled_) return false;
    const Clock::time_point now = Clock::now();
    const double since          = std::chrono::duration<double>(now - last_).count();
    const bool waited           = output_ == Output::Terminal ? since >= 0.5 : (!shownAny_ || since >= logSeconds_);
    if (!waited && !finished) return false;
    last_     = now;
    shownAny_ = true;
    return true;
}

double ProgressLine::elapsed() const { return std::chrono::duration<double>(last_ - start_).count(); }

double ProgressLine::eta(int64_t done, int64_t remaining) const
{
    return done > 0 ? elapsed() / double(done) * double(remaining) : 0;
}

void ProgressLine::show(const char* text, bool finished)
{
    if (output_ == Output::Log)
    {
        std::string line(text);
        line.erase(line.find_last_not_of(' ') + 1);
        std::fprintf(out_, "%s\n", line.c_str());
    }
    else
    {
        std::fprintf(out_, "\r%s", text);
        if (finished) std::fprintf(out_, "\n");
    }
    std::fflush(out_);
}

} // namespace octwalk

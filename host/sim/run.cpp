#include "host/sim/run.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "common/errors.h"
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
        throw FormatError("checkpoint: the run settings stored in it cannot be read ('" + text + "')");
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

void writeRunJson(const fs::path& dir, const Simulation& sim, const RunSettings& rs, const std::string& source,
                  int64_t restartedFromStep)
{
    std::ostringstream j;
    j.precision(17);
    j << "{\n  \"octwalk\": " << jsonString(OCTWALK_VERSION) << ",\n  \"git\": " << jsonString(OCTWALK_GIT_HASH)
      << ",\n  \"units\": \"N-body, G = " << sim.parameters().gravitational_constant << "\""
      << ",\n  \"initial_conditions\": " << source << ",\n  \"parameters\": " << toJson(sim.parameters())
      << ",\n  \"forces\": " << jsonString(sim.direct() ? "direct" : "tree")
      << ",\n  \"zero_net_force\": " << (sim.forceOptions().zeroNetForce ? "true" : "false")
      << ",\n  \"integrator\": \"kick-drift-kick leapfrog, shared equal sub-steps ending exactly at t_end\""
      << ",\n  \"t_start\": " << sim.plan().t0
      << ",\n  \"t_end\": " << sim.plan().t0 + double(sim.plan().numSteps) * sim.plan().h
      << ",\n  \"timestep\": " << sim.plan().h << ",\n  \"steps\": " << sim.plan().numSteps
      << ",\n  \"energy_every\": " << rs.energyEvery << ",\n  \"snapshot_every\": " << rs.snapshotEvery
      << ",\n  \"checkpoint_every\": " << rs.checkpointEvery << ",\n  \"snapshot_format\": " << jsonString(rs.format)
      << ",\n  \"n\": " << sim.state().size() << ",\n  \"restarted_from_step\": " << restartedFromStep << "\n}\n";
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
    std::string comment = "# " + versionHeader() +
                          "; units N-body, G = " + std::to_string(sim.parameters().gravitational_constant) +
                          "; parameters " + toJson(sim.parameters()) + "\n";
    DiagnosticsFiles diag(dir, comment, resume, sim.stepIndex());
    RunOutcome outcome;
    outcome.checkpoint = dir / "checkpoint.bin";
    if (!resume)
    {
        diag.write(sim);
        writeSnapshotAt(dir, sim, rs);
    }
    while (!sim.done())
    {
        sim.step();
        int64_t k = sim.stepIndex();
        if (k % rs.energyEvery == 0 || sim.done()) diag.write(sim);
        if ((rs.snapshotEvery > 0 && k % rs.snapshotEvery == 0) || sim.done()) writeSnapshotAt(dir, sim, rs);
        if ((rs.checkpointEvery > 0 && k % rs.checkpointEvery == 0) || sim.done())
        {
            sim.writeCheckpoint(outcome.checkpoint.string(), rs.encode());
        }
        if (control.afterStep) control.afterStep(sim);
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

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "host/core/version.h"
#include "host/core/number_text.h"
#include "host/io/atomic_file.h"
#include "host/io/json.h"
#include "host/sim/hermite.h"

namespace octwalk {

namespace fs = std::filesystem;

namespace {

/// energy.csv and lagrange.csv of a Hermite run: one row per diagnostics interval, each flushed and checked
/// (a row that does not reach its file stops the run with FormatError naming it); a restart writes the
/// header of a file it finds missing.
class HermiteFiles
{
public:
    HermiteFiles(const fs::path& dir, const std::string& header, bool resume, int64_t resumeStep)
        : rows_(dir, resume, resumeStep)
    {
        if (rows_.energyIsNew)
        {
            rows_.energy << header << "step,time,kinetic,potential,total,dE_over_E0,virial_2K_over_W,px,py,pz,Lx,Ly,Lz,"
                         << "block_steps,body_steps,dt_min,dt_max\n";
        }
        if (rows_.lagrangeIsNew) rows_.writeLagrangeHeader(header);
        rows_.flush(resumeStep);
    }

    void write(const HermiteIntegrator& h, const HermiteDiagnostics& d)
    {
        rows_.energy << h.stepIndex() << ',' << d.time << ',' << d.kinetic << ',' << d.potential << ',' << d.total
                     << ',' << d.relativeEnergyError << ',' << d.virialRatio << ',' << d.momentum.x << ','
                     << d.momentum.y << ',' << d.momentum.z << ',' << d.angularMomentum.x << ',' << d.angularMomentum.y
                     << ',' << d.angularMomentum.z << ',' << h.counts().blockSteps << ',' << h.counts().bodySteps << ','
                     << h.shortestStep() << ',' << h.longestStep() << '\n';
        rows_.writeLagrangeRow(h.stepIndex(), d.time, h.state());
        rows_.flush(h.stepIndex());
    }

private:
    EnergyLagrangeFiles rows_;
};

/// A HermiteIntegrator in runLoop, one sync interval a step; the caller's afterInterval sees the
/// diagnostics of the intervals that wrote a row.
class HermiteStepper : public RunStepper
{
public:
    HermiteStepper(HermiteIntegrator& h, const fs::path& dir, const RunSettings& rs, HermiteFiles& files,
                   const HermiteRunControl& control)
        : h_(h), dir_(dir), rs_(rs), files_(files), control_(control)
    {}

    bool done() const override { return h_.done(); }
    int64_t stepIndex() const override { return h_.stepIndex(); }
    void step() override { h_.advanceInterval(); }
    void writeDiagnostics() override
    {
        last_ = h_.diagnostics();
        files_.write(h_, last_);
        checkEnergyBound(last_.relativeEnergyError, h_.parameters().max_energy_error, last_.time, h_.stepIndex(),
                         "interval");
    }
    void writeSnapshot() override { writeRunSnapshot(dir_, h_.stepIndex(), h_.state(), h_.parameters(), rs_.format); }
    void writeCheckpoint(const std::string& path) override { h_.writeCheckpoint(path, rs_); }
    void afterStep(const LoopStepTimes&, bool wroteDiagnostics) override
    {
        if (control_.afterInterval) control_.afterInterval(h_, wroteDiagnostics ? &last_ : nullptr);
    }

private:
    HermiteIntegrator& h_;
    const fs::path& dir_;
    const RunSettings& rs_;
    HermiteFiles& files_;
    const HermiteRunControl& control_;
    HermiteDiagnostics last_;
};

} // namespace

void writeHermiteRunJson(const fs::path& dir, const HermiteIntegrator& h, const RunSettings& rs,
                         const std::string& source, int64_t restartedFromStep, bool finished)
{
    const Parameters& p = h.parameters();
    std::ostringstream j;
    j << "{\n  \"octwalk\": " << jsonString(OCTWALK_VERSION) << ",\n  \"git\": " << jsonString(OCTWALK_GIT_HASH)
      << ",\n  \"command\": \"hermite\""
      << ",\n  \"units\": \"N-body, G = " << exactDigits(p.gravitational_constant) << "\""
      << ",\n  \"initial_conditions\": " << source
      << ",\n  \"integrator\": \"4th-order Hermite predictor-corrector (Makino & Aarseth 1992), block time steps, "
         "forces through the GRAPE-6 API (libg6)\""
      << ",\n  \"epsilon\": " << exactDigits(std::sqrt(p.epsilon_squared))
      << ",\n  \"gravitational_constant\": " << exactDigits(p.gravitational_constant)
      << ",\n  \"max_energy_error\": " << exactDigits(p.max_energy_error)
      << ",\n  \"eta\": " << exactDigits(h.settings().eta)
      << ",\n  \"eta_start\": " << exactDigits(h.settings().etaStart)
      << ",\n  \"dt_max\": " << exactDigits(h.settings().dtMax) << ",\n  \"sync_interval\": " << exactDigits(h.plan().h)
      << ",\n  \"t_start\": " << exactDigits(h.plan().t0)
      << ",\n  \"t_end\": " << exactDigits(h.plan().t0 + double(h.plan().numSteps) * h.plan().h)
      << ",\n  \"intervals\": " << h.plan().numSteps << ",\n  \"energy_every\": " << rs.energyEvery
      << ",\n  \"snapshot_every\": " << rs.snapshotEvery << ",\n  \"checkpoint_every\": " << rs.checkpointEvery
      << ",\n  \"snapshot_format\": " << jsonString(rs.format) << ",\n  \"n\": " << h.state().size()
      << ",\n  \"g6_npipes\": " << h.pipes() << ",\n  \"g6_backend\": "
      << jsonString(std::getenv("OCTWALK_G6_BACKEND") ? std::getenv("OCTWALK_G6_BACKEND") : "library default")
      << ",\n  \"restarted_from_step\": " << restartedFromStep;
    if (finished)
    {
        const double wall = h.integrationSeconds();
        j << ",\n  \"block_steps\": " << h.counts().blockSteps << ",\n  \"body_steps\": " << h.counts().bodySteps
          << ",\n  \"integration_seconds\": " << exactDigits(wall)
          << ",\n  \"library_seconds\": " << exactDigits(h.librarySeconds())
          << ",\n  \"library_fraction\": " << exactDigits(wall > 0 ? h.librarySeconds() / wall : 0.0)
          << ",\n  \"timing_note\": \"seconds of this process (a restart counts its own); library: inside the "
             "g6 calls of the integration (diagnostics excluded)\"";
    }
    j << "\n}\n";
    writeFileAtomically((dir / "run.json").string(), j.str(), Existing::Replace);
}

int runHermite(HermiteIntegrator& h, const fs::path& dir, const RunSettings& rs, bool resume,
               const HermiteRunControl& control)
{
    validate(rs);
    const std::string header =
        "# " + versionHeader() +
        "; octwalk hermite; units N-body, G = " + exactDigits(h.parameters().gravitational_constant) +
        "; epsilon = " + exactDigits(std::sqrt(h.parameters().epsilon_squared)) +
        ", eta = " + exactDigits(h.settings().eta) + ", eta_start = " + exactDigits(h.settings().etaStart) +
        ", dt_max = " + exactDigits(h.settings().dtMax) + "\n";
    HermiteFiles files(dir, header, resume, h.stepIndex());
    HermiteStepper stepper(h, dir, rs, files, control);
    return runLoop(stepper, dir / "checkpoint.bin", rs, resume, control.stopRequested);
}

} // namespace octwalk

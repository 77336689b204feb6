#include "host/sim/distributed_run.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <numeric>
#include <ostream>
#include <sstream>

#include "common/errors.h"
#include "host/core/version.h"
#include "host/io/atomic_file.h"
#include "host/io/checkpoint.h"
#include "host/io/json.h"
#include "host/io/snapshot.h"
#include "host/mpi/distributed_leapfrog.h"
#include "host/sim/diagnostics_files.h"
#include "host/sim/distributed_comoving.h"
#include "host/sim/run.h"

namespace octwalk {

namespace fs = std::filesystem;

namespace {

const mpi::Communicator* gRunCommunicator = nullptr;
bool gWorkStarted                         = false;

/// What agreeOnRanks gathers from every rank: its exit code (0: its check passed) and its message, cut to fit.
struct RankOutcome
{
    int32_t code = 0;
    char message[500]{};
};

uint64_t fnv1a(const std::string& text)
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text)
    {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

/// "ranks P" on the line after the run settings in a rank's checkpoint ("extra"): the rank count it was
/// written at, which a restart must match (each rank's bodies are its domain at that count).
constexpr const char* kRanksKey = "\nranks ";

std::string checkpointExtra(const RunSettings& rs, int ranks)
{
    return rs.encode() + kRanksKey + std::to_string(ranks);
}

/// The rank count stored by checkpointExtra; FormatError naming the file when it has none (a single-process
/// run's checkpoint).
int checkpointRanks(const std::string& extra, const fs::path& file)
{
    const size_t at = extra.find(kRanksKey);
    if (at == std::string::npos)
    {
        throw FormatError("'" + file.string() + "' is not a checkpoint of a distributed run (it stores no rank count)");
    }
    const char* text = extra.c_str() + at + std::strlen(kRanksKey);
    char* end        = nullptr;
    const long ranks = std::strtol(text, &end, 10);
    if (end == text || ranks < 1 || ranks > INT32_MAX)
        throw FormatError("'" + file.string() + "': its rank count '" + std::string(text).substr(0, 20) +
                          "' is not a positive integer");
    return int(ranks);
}

} // namespace

void setRunCommunicator(const mpi::Communicator* comm) { gRunCommunicator = comm; }

const mpi::Communicator* runCommunicator() { return gRunCommunicator; }

bool distributedWorkStarted() { return gWorkStarted; }

void agreeOnRanks(const mpi::Communicator& comm, const std::function<void()>& check,
                  const std::function<int(const std::exception&)>& exitCode)
{
    RankOutcome mine;
    std::exception_ptr error;
    try
    {
        check();
    }
    catch (const std::exception& e)
    {
        error     = std::current_exception();
        mine.code = std::max(1, exitCode(e));
        std::snprintf(mine.message, sizeof(mine.message), "%s", e.what());
    }
    const std::vector<RankOutcome> all = comm.allgather(mine);
    for (int r = 0; r < comm.size(); ++r)
    {
        const RankOutcome& o = all[size_t(r)];
        if (o.code == 0) continue;
        if (r == comm.rank()) std::rethrow_exception(error);
        const std::string text = std::string(o.message) + " (on rank " + std::to_string(r) + ")";
        if (o.code == 2) throw ParameterError(text);
        throw FormatError(text);
    }
}

void checkSameOnAllRanks(const mpi::Communicator& comm, const std::string& text, const char* what)
{
    const std::vector<uint64_t> hashes = comm.allgather(fnv1a(text));
    for (int r = 1; r < comm.size(); ++r)
    {
        if (hashes[size_t(r)] != hashes[0])
        {
            throw ParameterError(std::string("rank ") + std::to_string(r) + " of " + std::to_string(comm.size()) +
                                 " got other " + what + " than rank 0: every rank must run the same command");
        }
    }
}

std::string DistributedRunConfig::canonicalText() const
{
    std::ostringstream s;
    s.precision(17);
    s << toText(parameters) << "t0=" << plan.t0 << "\nh=" << plan.h << "\nsteps=" << plan.numSteps
      << "\nsettings=" << settings.encode() << "\ndir=" << dir.string() << "\nsource=" << source << "\n";
    if (comoving) s << "comoving:\n" << toText(*comoving);
    return s.str();
}

void checkDistributable(const Parameters& p)
{
    if (p.box_size > 0 && p.pm_grid == 0)
    {
        std::ostringstream m;
        m << "box_size " << p.box_size
          << " with pm_grid 0: periodic runs on several ranks take TreePM (--pm-grid auto, the default, or a mesh "
             "size); the Ewald sum runs on one rank (start it without mpirun)";
        throw ParameterError(m.str());
    }
    if (p.mac == Mac::Relative)
    {
        throw ParameterError("mac relative: runs on several ranks take the octgrav or bonsai MAC; start it without "
                             "mpirun or choose another --mac");
    }
}

fs::path rankCheckpointPath(const fs::path& dir, int rank)
{
    return dir / ("checkpoint.bin.rank-" + std::to_string(rank));
}

namespace {

/// All ranks' bodies on rank 0, sorted by id (the order of a single-process run's outputs); an empty set on the
/// other ranks. Collective.
ParticleSet gatherById(const mpi::Communicator& comm, const ParticleSet& local)
{
    ParticleSet all;
    all.pos       = comm.gatherv(local.pos);
    all.vel       = comm.gatherv(local.vel);
    all.cosmology = local.cosmology;
    all.mass      = comm.gatherv(local.mass);
    all.id        = comm.gatherv(local.id);
    all.type      = comm.gatherv(local.type);
    all.time      = local.time;
    all.boxSize   = local.boxSize;
    std::vector<size_t> order(all.id.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return all.id[a] < all.id[b]; });
    ParticleSet sorted;
    sorted.resize(all.size());
    sorted.time      = all.time;
    sorted.boxSize   = all.boxSize;
    sorted.cosmology = all.cosmology;
    for (size_t k = 0; k < order.size(); ++k)
    {
        sorted.pos[k]  = all.pos[order[k]];
        sorted.vel[k]  = all.vel[order[k]];
        sorted.mass[k] = all.mass[order[k]];
        sorted.id[k]   = all.id[order[k]];
        sorted.type[k] = all.type[order[k]];
    }
    return sorted;
}

/// The diagnostics of energy.csv for all ranks' bodies: each rank's sums (DistributedLeapfrog::localSums, the
/// single-process run's order of sums) added over the ranks in rank order: the same bits at the same rank count
/// whatever the thread count. Collective.
Diagnostics distributedDiagnostics(const mpi::Communicator& comm, const mpi::DistributedLeapfrog& lf,
                                   const ParticleSet& local, double initialEnergy)
{
    const DiagnosticSums l      = lf.localSums(local, 1.0);
    const std::vector<double> s = comm.allreduceSumOrdered(
        {l.mass, l.comPos.x, l.comPos.y, l.comPos.z, l.momentum.x, l.momentum.y, l.momentum.z, l.angularMomentum.x,
         l.angularMomentum.y, l.angularMomentum.z, l.kinetic, l.potential});
    Diagnostics d;
    d.time            = local.time;
    d.kinetic         = s[10];
    d.potential       = s[11];
    d.total           = d.kinetic + d.potential;
    d.momentum        = {s[4], s[5], s[6]};
    d.angularMomentum = {s[7], s[8], s[9]};
    if (s[0] > 0)
    {
        d.comPos = (1 / s[0]) * Vec3d{s[1], s[2], s[3]};
        d.comVel = (1 / s[0]) * d.momentum;
    }
    d.relativeEnergyError = initialEnergy != 0 ? (d.total - initialEnergy) / std::fabs(initialEnergy) : 0.0;
    d.virialRatio         = d.potential != 0 ? 2 * d.kinetic / std::fabs(d.potential) : 0.0;
    return d;
}

/// timing.csv's columns: the step's wall time and the distributed phases, each the largest over the ranks
/// (the slowest rank sets the pace), and the load imbalance of the step's force evaluation.
constexpr const char* kTimingHeader =
    "step,force_wall,local_tree,essential_build,exchange,exchange_wait,remote_walk,imbalance,rebalanced,"
    "essential_nodes,essential_bytes,diagnostics,io,step_wall,mesh_sum,mesh_solve,mesh_transforms,mesh_transposes";

/// The run's state on this rank and the hooks runLoop calls, every one collective.
class DistributedStepper : public RunStepper
{
public:
    /// comoving: the comoving run that steps local (its leapfrog is lf), null for a run in time.
    DistributedStepper(const mpi::Communicator& comm, ParticleSet& local, mpi::DistributedLeapfrog& lf,
                       DistributedComoving* comoving, const DistributedRunConfig& c, int64_t step, double initialEnergy,
                       bool resume)
        : comm_(comm), local_(local), lf_(lf), comoving_(comoving), c_(c), step_(step), initialEnergy_(initialEnergy),
          progress_(!c.quiet && comm.rank() == 0)
    {
        if (comm_.rank() == 0) openFiles(resume);
    }

    bool done() const override { return comoving_ ? comoving_->done() : step_ >= c_.plan.numSteps; }
    int64_t stepIndex() const override { return step_; }
    double lastEnergyError() const { return lastError_; }
    bool atOutputTime() const override
    {
        return comoving_ && isOutputTime(comoving_->clock().settings, comoving_->clock().a);
    }

    void step() override
    {
        ++step_;
        if (comoving_)
        {
            comoving_->step(local_);
            return;
        }
        lf_.step(local_, c_.plan.h);
        // The time of step k, not a sum of h: the same at every step count as a single-process run's.
        local_.time = c_.plan.t0 + double(step_) * c_.plan.h;
    }

    void writeDiagnostics() override
    {
        if (comoving_)
        {
            const Diagnostics d = comoving_->diagnostics(local_);
            if (comm_.rank() != 0) return;
            writeComovingEnergyRow(files_->energy, step_, d, comoving_->clock());
            files_->flush(step_);
            return;
        }
        const Diagnostics d = distributedDiagnostics(comm_, lf_, local_, initialEnergy_);
        lastError_          = d.relativeEnergyError;
        // A periodic box has no centre for Lagrangian radii, and no E0 that a relative error could be held to (it
        // may be near zero): its rows gather no bodies to rank 0 (at 2^24 bodies that took 4 s a row).
        const bool periodic   = c_.parameters.box_size > 0;
        const ParticleSet all = periodic ? ParticleSet{} : gatherById(comm_, local_);
        if (comm_.rank() != 0) return;
        std::ostream& e = files_->energy;
        e << step_ << ',' << d.time << ',' << d.kinetic << ',' << d.potential << ',' << d.total << ','
          << d.relativeEnergyError << ',' << d.virialRatio << ',' << d.comPos.x << ',' << d.comPos.y << ','
          << d.comPos.z << ',' << d.comVel.x << ',' << d.comVel.y << ',' << d.comVel.z << ',' << d.momentum.x << ','
          << d.momentum.y << ',' << d.momentum.z << ',' << d.angularMomentum.x << ',' << d.angularMomentum.y << ','
          << d.angularMomentum.z << '\n';
        if (!periodic) files_->writeLagrangeRow(step_, d.time, all);
        files_->flush();
        // Rank 0 alone holds the run to the bound (every rank has the same sums): one line, then MPI_Abort ends
        // the job, the row that crossed it written.
        if (!periodic) checkEnergyBound(d.relativeEnergyError, c_.parameters.max_energy_error, d.time, step_, "step");
    }

    void writeSnapshot() override
    {
        const RunSettings& rs = c_.settings;
        // A comoving run's bodies carry momenta: the snapshot holds peculiar velocities p / a.
        ParticleSet peculiar;
        if (comoving_)
        {
            peculiar       = local_;
            const double a = comoving_->clock().a;
            for (Vec3d& v : peculiar.vel) v = (1 / a) * v;
        }
        const ParticleSet& bodies = comoving_ ? peculiar : local_;
        if (rs.snapshotFiles == comm_.size() && comm_.size() > 1)
        {
            writeOwnPart(bodies);
            return;
        }
        const ParticleSet all = gatherById(comm_, bodies);
        if (comm_.rank() == 0) writeRunSnapshot(c_.dir, step_, all, c_.parameters, rs.format, rs.snapshotFiles);
    }

    /// A snapshot split over as many files as ranks: rank r writes part r, its own bodies, and no rank gathers
    /// them all. The parts' counts add up to the totals every header states.
    void writeOwnPart(const ParticleSet& bodies)
    {
        const std::array<uint64_t, 6> mine                = typeCounts(bodies);
        const std::vector<std::array<uint64_t, 6>> counts = comm_.allgather(mine);
        std::array<uint64_t, 6> totals{};
        for (const auto& c : counts)
        {
            for (size_t t = 0; t < totals.size(); ++t) totals[t] += c[t];
        }
        const std::string base = runSnapshotPath(c_.dir, step_, c_.settings.format).string();
        writeSnapshotPart(base + "." + std::to_string(comm_.rank()), parseSnapshotFormat(c_.settings.format), bodies,
                          comm_.size(), totals, true);
        // Every part is on disk before any rank goes on (a run stopped after this step finds them all).
        comm_.barrier();
    }

    void writeCheckpoint(const std::string& path) override
    {
        CheckpointImage image;
        image.state         = local_;
        image.step          = step_;
        image.numSteps      = c_.plan.numSteps;
        image.t0            = c_.plan.t0;
        image.h             = c_.plan.h;
        image.initialEnergy = initialEnergy_;
        image.parameters    = c_.parameters;
        image.extra         = checkpointExtra(c_.settings, comm_.size());
        // The next step's error control reads them: without them a restart's step would differ.
        if (c_.parameters.box_size > 0) image.results = lf_.previousResults();
        if (comoving_)
        {
            // As a single-process comoving run's checkpoint: vel holds the momenta, the plan counts the steps to
            // a_end at the current step limit (an estimate with the criterion).
            const Simulation::Comoving& clock = comoving_->clock();
            image.t0                          = clock.settings.aBegin;
            image.h                           = comoving_->stepLimit();
            image.numSteps                    = step_ + stepsToEnd(clock.settings, clock.a, comoving_->stepLimit());
            image.comoving                    = comovingCheckpointText(clock);
        }
        octwalk::writeCheckpoint(path, image);
    }

    void afterStep(const LoopStepTimes& times, bool) override
    {
        const mpi::DistributedForces& f = lf_.forces();
        const std::vector<double> slowest =
            comm_.allreduceMax({f.secondsForce, f.secondsLocal, f.secondsEssentialBuild, f.secondsExchange,
                                f.secondsExchangeWait, f.secondsRemote, times.diagnostics, times.io, times.wall,
                                f.secondsMesh, f.secondsMeshSolve, f.secondsMeshTransforms, f.secondsMeshTransposes});
        const std::vector<std::array<int64_t, 2>> sent =
            comm_.allgather(std::array<int64_t, 2>{f.nodesSent, f.bytesSent});
        if (comm_.rank() != 0) return;
        int64_t nodes = 0, bytes = 0;
        for (const auto& r : sent)
        {
            nodes += r[0];
            bytes += r[1];
        }
        timing_ << step_ << std::setprecision(6);
        for (size_t k = 0; k < 6; ++k) timing_ << ',' << slowest[k];
        timing_ << ',' << std::setprecision(9) << lf_.imbalance() << ',' << (lf_.rebalanced() ? 1 : 0) << ',' << nodes
                << ',' << bytes << std::setprecision(6);
        for (size_t k = 6; k < slowest.size(); ++k) timing_ << ',' << slowest[k];
        timing_ << '\n';
        flushTiming();
        stepWalls_.push_back(slowest[8]);
        showProgress();
    }

    /// Median over this process's steps of the slowest rank's step wall time (0 before the first step).
    double medianStepSeconds() const
    {
        std::vector<double> v = stepWalls_;
        if (v.empty()) return 0;
        std::nth_element(v.begin(), v.begin() + long(v.size() / 2), v.end());
        return v[v.size() / 2];
    }

private:
    /// A row that did not reach the file (a full disk) is an error, not a gap in timing.csv.
    void flushTiming()
    {
        timing_.flush();
        if (!timing_)
            throw FormatError("cannot write '" + (c_.dir / "timing.csv").string() + "' at step " +
                              std::to_string(step_));
    }

    void openFiles(bool resume)
    {
        files_.emplace(c_.dir, resume, step_);
        const fs::path timingPath = c_.dir / "timing.csv";
        if (resume) truncateRowsAfter(timingPath, step_);
        std::error_code ec;
        const bool timingIsNew = !resume || fs::file_size(timingPath, ec) == 0 || ec;
        timing_.open(timingPath, std::ios::app);
        if (!timing_) throw FormatError("cannot open '" + timingPath.string() + "'");
        const std::string units   = comoving_ ? comovingUnitsText(c_.parameters, comoving_->clock())
                                              : "N-body, G = " + std::to_string(c_.parameters.gravitational_constant);
        const std::string comment = "# " + versionHeader() + " on " + std::to_string(comm_.size()) + " ranks; units " +
                                    units + "; parameters " + toJson(c_.parameters) +
                                    (comoving_ ? "; comoving " + comovingJson(comoving_->clock()) : std::string()) +
                                    "\n";
        if (timingIsNew)
        {
            timing_
                << comment
                << "# seconds per step, measured (they differ from run to run), each the largest over the "
                   "ranks: force_wall = the force evaluation; local_tree = the rank's own tree built and walked; "
                   "essential_build = the essential trees cut for the other ranks; exchange = the group boxes' "
                   "allgather and the essential trees' Alltoallv, waits included, both on a second thread while "
                   "the own tree is walked; exchange_wait = what the walk did not hide of them; remote_walk = "
                   "the received trees walked (on the rank's backend); imbalance = the largest rank's interactions "
                   "over the mean; rebalanced = 1 when the step cut the domains again; essential_nodes, "
                   "essential_bytes = the essential trees' nodes and bytes sent, summed over the ranks; TreePM's long "
                   "range, within force_wall: mesh_sum = before the trees, the bodies sent to the mesh's slabs, their "
                   "masses assigned and the planes past each slab added at their owners (the mesh whole on the first "
                   "rank's GPU: the bodies checked); mesh_solve = the transforms and transposes (whole: the bodies "
                   "gathered on the first rank and its GPU's mesh), the interpolation and the values sent back, on "
                   "the GPU backend on a host thread while the device walks; of mesh_solve, mesh_transforms = the "
                   "serial transforms of the mesh's planes and rows (whole: the GPU's transforms and gradients), "
                   "mesh_transposes = the transposes between them (whole: the bodies gathered and their values sent "
                   "back; waits for the other ranks included)\n"
                << kTimingHeader << '\n';
            flushTiming();
        }
        if (resume) return;
        if (comoving_)
        {
            files_->energy << comment << kComovingEnergyHeader;
            files_->lagrange << comment << kComovingLagrangeNote;
            return;
        }
        files_->energy << comment << "step,time,kinetic,potential,total,dE_over_E0,virial_2K_over_W,com_x,com_y,"
                       << "com_z,com_vx,com_vy,com_vz,px,py,pz,Lx,Ly,Lz\n";
        if (c_.parameters.box_size > 0) files_->lagrange << comment << kPeriodicLagrangeNote;
        else files_->writeLagrangeHeader(comment);
    }

    void showProgress()
    {
        const bool finished = done();
        if (!progress_.due(finished)) return;
        char text[256];
        if (comoving_)
        {
            const Simulation::Comoving& clock = comoving_->clock();
            const int64_t left = done() ? 0 : stepsToEnd(clock.settings, clock.a, comoving_->stepLimit());
            std::snprintf(text, sizeof(text), "step %lld  a = %.5g  z = %.4g  imbalance %.3f  ETA %.0f s   ",
                          static_cast<long long>(step_), clock.a, 1 / clock.a - 1, lf_.imbalance(),
                          progress_.eta(int64_t(stepWalls_.size()), left));
            progress_.show(text, finished);
            return;
        }
        const double eta = progress_.eta(int64_t(stepWalls_.size()), c_.plan.numSteps - step_);
        std::snprintf(text, sizeof(text),
                      "step %lld/%lld  t = %.5g  dE/E0 = %+.3e (last diagnostics)  imbalance %.3f  "
                      "ETA %.0f s   ",
                      static_cast<long long>(step_), static_cast<long long>(c_.plan.numSteps), local_.time, lastError_,
                      lf_.imbalance(), eta);
        progress_.show(text, finished);
    }

    const mpi::Communicator& comm_;
    ParticleSet& local_;
    mpi::DistributedLeapfrog& lf_;
    DistributedComoving* comoving_;
    const DistributedRunConfig& c_;
    int64_t step_;
    double initialEnergy_;
    double lastError_ = 0;
    std::optional<EnergyLagrangeFiles> files_;
    std::ofstream timing_;
    std::vector<double> stepWalls_;
    ProgressLine progress_;
};

/// Writes dir/run.json (rank 0): what a single-process run's holds for a tree run, with "ranks" (and a comoving
/// run's clock: comoving, else null).
void writeDistributedRunJson(const mpi::Communicator& comm, const DistributedRunConfig& c, int64_t numBodies,
                             int64_t restartedFromStep, double medianStepSeconds, const DistributedComoving* comoving)
{
    if (comm.rank() != 0) return;
    std::ostringstream j;
    j.precision(17);
    const StepPlan& plan = c.plan;
    j << "{\n  \"octwalk\": " << jsonString(OCTWALK_VERSION) << ",\n  \"git\": " << jsonString(OCTWALK_GIT_HASH)
      << ",\n  \"units\": " << jsonString("N-body, G = " + std::to_string(c.parameters.gravitational_constant))
      << ",\n  \"initial_conditions\": " << c.source << ",\n  \"parameters\": " << toJson(c.parameters)
      << ",\n  \"forces\": \"tree\",\n  \"ranks\": " << comm.size()
      << ",\n  \"decomposition\": \"Morton-curve domains balanced by interactions, cut again when the largest "
         "rank's cost exceeds the mean by 10%\""
      << ",\n  \"energy_every\": " << c.settings.energyEvery << ",\n  \"snapshot_every\": " << c.settings.snapshotEvery
      << ",\n  \"snapshot_files\": " << c.settings.snapshotFiles
      << ",\n  \"checkpoint_every\": " << c.settings.checkpointEvery
      << ",\n  \"snapshot_format\": " << jsonString(c.settings.format) << ",\n  \"n\": " << numBodies
      << ",\n  \"restarted_from_step\": " << restartedFromStep;
    if (comoving)
    {
        j << ",\n  \"integrator\": \"comoving kick-drift-kick leapfrog in the scale factor (GADGET-2 drift and kick "
             "factors), steps shared by all bodies\""
          << ",\n  \"comoving\": " << comovingJson(comoving->clock()) << ",\n  \"a\": " << comoving->clock().a;
    }
    else
    {
        j << ",\n  \"integrator\": \"kick-drift-kick leapfrog, shared equal sub-steps ending exactly at t_end\""
          << ",\n  \"t_start\": " << plan.t0 << ",\n  \"t_end\": " << plan.t0 + double(plan.numSteps) * plan.h
          << ",\n  \"timestep\": " << plan.h << ",\n  \"steps\": " << plan.numSteps;
    }
    if (medianStepSeconds > 0) j << ",\n  \"median_step_seconds\": " << medianStepSeconds;
    j << "\n}\n";
    writeFileAtomically((c.dir / "run.json").string(), j.str(), Existing::Replace);
}

/// The first non-zero stop signal of the ranks in rank order (0: none), the same on every rank, so that all
/// stop after the same step. Collective.
int agreedStopSignal(const mpi::Communicator& comm, const StopSignals& signals)
{
    const std::vector<int32_t> all = comm.allgather(int32_t(signals.received()));
    for (int32_t s : all)
        if (s != 0) return s;
    return 0;
}

/// Steps the run to its end or a stop signal with runLoop; prints the closing lines on out. Collective.
int loop(const mpi::Communicator& comm, ParticleSet& local, mpi::DistributedLeapfrog& lf, DistributedComoving* comoving,
         const DistributedRunConfig& c, int64_t step, double initialEnergy, bool resume, int64_t restartedFromStep,
         std::ostream& out)
{
    gWorkStarted = true;
    // The run's first lines reach a log file before the first step, which may take minutes: a run killed before
    // its first progress line still says what it was.
    out << std::flush;
    const int64_t n = comm.allreduceSum(local.size());
    writeDistributedRunJson(comm, c, n, restartedFromStep, 0, comoving);
    DistributedStepper stepper(comm, local, lf, comoving, c, step, initialEnergy, resume);
    StopSignals signals;
    const fs::path checkpoint = rankCheckpointPath(c.dir, comm.rank());
    const int stop = runLoop(stepper, checkpoint, c.settings, resume, [&] { return agreedStopSignal(comm, signals); });
    writeDistributedRunJson(comm, c, n, restartedFromStep, stepper.medianStepSeconds(), comoving);
    out << "median step over " << comm.size() << " ranks: " << stepper.medianStepSeconds() << " s\n";
    if (stop != 0)
    {
        out << "\nstopped by signal " << stop << " at step " << stepper.stepIndex() << ", t = " << local.time
            << "; checkpoints written on all " << comm.size() << " ranks; resume with: mpirun -np " << comm.size()
            << " octwalk run --restart " << c.dir.string() << "\n";
        return 128 + stop;
    }
    if (comoving)
    {
        out << "done: " << stepper.stepIndex() << " steps to a = " << comoving->clock().a << " on " << comm.size()
            << " ranks; output in " << c.dir.string() << "\n";
        return 0;
    }
    out << "done: " << c.plan.numSteps << " steps to t = " << local.time << " on " << comm.size()
        << " ranks, dE/E0 = " << stepper.lastEnergyError() << "; output in " << c.dir.string() << "\n";
    return 0;
}

/// An exception's exit code as the CLI gives it to this library's errors (the user's mistakes 2).
int libraryExitCode(const std::exception& e) { return dynamic_cast<const std::invalid_argument*>(&e) ? 2 : 1; }

} // namespace

int runDistributed(const mpi::Communicator& comm, ParticleSet bodies, const DistributedRunConfig& config,
                   std::ostream& out)
{
    checkSameOnAllRanks(comm, config.canonicalText(), "options");
    checkDistributable(config.parameters);
    bodies.boxSize = config.parameters.box_size;
    if (config.comoving)
    {
        const Simulation::Comoving clock =
            DistributedComoving::startClock(comm, bodies, config.parameters, *config.comoving);
        bodies.time      = clock.a;
        bodies.cosmology = config.comoving->cosmology;
        DistributedComoving comoving(comm, config.parameters, clock);
        comoving.start(bodies);
        return loop(comm, bodies, comoving.leapfrog(), &comoving, config, 0, 0.0, false, -1, out);
    }
    bodies.time = config.plan.t0;
    mpi::DistributedLeapfrog lf(comm, config.parameters);
    lf.start(bodies);
    const double e0 = lf.energy(bodies).total();
    return loop(comm, bodies, lf, nullptr, config, 0, e0, false, -1, out);
}

int restartDistributed(const mpi::Communicator& comm, const fs::path& where, std::optional<double> tEnd, bool quiet,
                       std::ostream& out)
{
    std::error_code ec;
    const fs::path dir = fs::is_directory(where, ec) ? where : where.parent_path().empty() ? "." : where.parent_path();
    CheckpointImage image;
    agreeOnRanks(
        comm,
        [&] {
            const fs::path file = rankCheckpointPath(dir, comm.rank());
            image               = readCheckpoint(file.string());
            const int ranks     = checkpointRanks(image.extra, file);
            if (ranks != comm.size())
            {
                throw ParameterError("'" + file.string() + "' was written by a run on " + std::to_string(ranks) +
                                     " ranks: restart it on " + std::to_string(ranks) + " (mpirun -np " +
                                     std::to_string(ranks) + "), not " + std::to_string(comm.size()));
            }
        },
        libraryExitCode);
    const std::vector<int64_t> steps = comm.allgather(image.step);
    for (int r = 1; r < comm.size(); ++r)
    {
        if (steps[size_t(r)] != steps[0])
        {
            throw ParameterError("the ranks' checkpoints in '" + dir.string() + "' are of different steps (rank 0: " +
                                 std::to_string(steps[0]) + ", rank " + std::to_string(r) + ": " +
                                 std::to_string(steps[size_t(r)]) + "): a run killed while writing them");
        }
    }
    DistributedRunConfig c;
    c.parameters = image.parameters;
    c.plan       = StepPlan{image.t0, image.h, image.numSteps};
    c.settings   = RunSettings::decode(image.extra);
    c.dir        = dir;
    c.source     = "{\"restart\": " + jsonString(dir.string()) + "}";
    c.quiet      = quiet;
    validate(c.parameters);
    checkDistributable(c.parameters);
    std::optional<Simulation::Comoving> clock;
    if (!image.comoving.empty())
    {
        clock      = comovingFromCheckpointText(image.comoving);
        c.comoving = clock->settings;
        if (tEnd)
        {
            throw ParameterError("a comoving run ends at its a_end = " + std::to_string(clock->settings.aEnd) +
                                 ": --t-end does not extend it");
        }
    }
    if (tEnd)
    {
        const double k     = (*tEnd - c.plan.t0) / c.plan.h;
        const double whole = std::round(k);
        if (!(whole >= double(image.step)) || std::fabs(k - whole) > 1e-9 * std::max(1.0, whole))
        {
            throw ParameterError("parameter t_end = " + std::to_string(*tEnd) + " is invalid for this restart: it " +
                                 "must be t0 + k h with h = " + std::to_string(c.plan.h) +
                                 " and k >= " + std::to_string(image.step));
        }
        c.plan.numSteps = int64_t(whole);
    }
    checkSameOnAllRanks(comm, c.canonicalText(), "checkpoint settings");
    ParticleSet local = std::move(image.state);
    local.time        = c.plan.t0 + double(image.step) * c.plan.h;
    local.boxSize     = c.parameters.box_size;
    if (clock)
    {
        local.time      = clock->a;
        local.cosmology = clock->settings.cosmology;
        out << versionHeader() << ": restarting a comoving run on " << comm.size() << " ranks from step " << image.step
            << ", a = " << clock->a << "\n";
        DistributedComoving comoving(comm, c.parameters, *clock);
        comoving.resume(local, std::move(image.results));
        return loop(comm, local, comoving.leapfrog(), &comoving, c, image.step, 0.0, true, image.step, out);
    }
    out << versionHeader() << ": restarting on " << comm.size() << " ranks from step " << image.step << " of "
        << c.plan.numSteps << ", t = " << local.time << "\n";
    mpi::DistributedLeapfrog lf(comm, c.parameters);
    lf.resume(local, std::move(image.results));
    return loop(comm, local, lf, nullptr, c, image.step, image.initialEnergy, true, image.step, out);
}

} // namespace octwalk

#pragma once
/// @file distributed_run.h
/// `octwalk run` on several ranks (mpirun -np P, P > 1): the bodies spread over the ranks by
/// host/mpi/distributed_leapfrog.h, the outputs of the single-process run (host/sim/run.h) written by
/// rank 0 from what the ranks gather to it, and one checkpoint per rank. The step loop is the one of
/// host/sim/run_driver.h (runLoop), every hook collective, so that all ranks take the same branches.
///
/// Errors: a check that can fail on one rank only (a file rank 0 reads, a rank's checkpoint) runs inside
/// agreeOnRanks, which makes every rank raise it; after the checks (distributedWorkStarted()), an error is
/// one rank's alone, and the caller aborts the job (host/cli/main.cpp) so that no rank waits forever.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

#include "host/core/params.h"
#include "host/core/particles.h"
#include "host/mpi/communicator.h"
#include "host/sim/comoving.h"
#include "host/sim/run_driver.h"
#include "host/sim/simulation.h"

namespace octwalk {

/// The communicator of a run started on several ranks, set by main() for the process's lifetime; null in a
/// single-process run (then nothing here is used).
void setRunCommunicator(const mpi::Communicator* comm);
const mpi::Communicator* runCommunicator();

/// Whether a distributed run has passed the checks that all ranks make together: from then on an error is
/// one rank's, and the others may be waiting for it inside a collective.
bool distributedWorkStarted();

/// Runs check on every rank, then raises on every rank the error of the first rank (in rank order) whose
/// check threw: that rank rethrows its own exception, the others a ParameterError (when exitCode says 2) or a
/// FormatError with its message and the rank's name. Collective.
/// @param exitCode  the exit code an exception maps to (2: the user's mistake; 1: an error)
void agreeOnRanks(const mpi::Communicator& comm, const std::function<void()>& check,
                  const std::function<int(const std::exception&)>& exitCode);

/// ParameterError naming the first rank whose text differs from rank 0's (compared by a 64-bit FNV-1a
/// hash; what: what the text is, for the message). Collective.
void checkSameOnAllRanks(const mpi::Communicator& comm, const std::string& text, const char* what);

/// A new distributed run's settings (as `octwalk run` has them once its options are read).
struct DistributedRunConfig
{
    Parameters parameters;
    StepPlan plan;
    RunSettings settings;
    std::filesystem::path dir;
    /// run.json's "initial_conditions" (a JSON value).
    std::string source = "null";
    bool quiet         = false;
    /// A comoving run's settings (host/sim/comoving.h; plan is then unused); empty for a run in time.
    std::optional<ComovingSettings> comoving;

    /// The canonical text every rank must agree on (checkSameOnAllRanks).
    std::string canonicalText() const;
};

/// ParameterError for what the distributed run does not take yet: periodic boxes (box_size > 0) and the
/// MAC relative (host/mpi/distributed_forces.h), naming the value and saying to start without mpirun.
void checkDistributable(const Parameters& p);

/// The checkpoint of rank `rank` of a run in dir: dir/checkpoint.bin.rank-R (beside the single-process
/// run's checkpoint.bin).
std::filesystem::path rankCheckpointPath(const std::filesystem::path& dir, int rank);

/// Runs a new distributed run: bodies holds every body on rank 0 and none on the others. Writes dir's
/// outputs (rank 0) and each rank's checkpoint; out (rank 0's; the others pass a stream that drops its
/// text) gets the closing lines. Returns the exit code: 0, or 128 + the signal that stopped the run.
int runDistributed(const mpi::Communicator& comm, ParticleSet bodies, const DistributedRunConfig& config,
                   std::ostream& out);

/// Continues a distributed run from each rank's checkpoint in `where` (the run directory, or its
/// checkpoint.bin path); tEnd, when given, extends the run (t0 + k h, as Simulation::extendTo). Refuses
/// (ParameterError, on all ranks) checkpoints written at another rank count, and ranks at different steps.
int restartDistributed(const mpi::Communicator& comm, const std::filesystem::path& where, std::optional<double> tEnd,
                       bool quiet, std::ostream& out);

} // namespace octwalk

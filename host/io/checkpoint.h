#pragma once
/// @file checkpoint.h
/// The checkpoint file: everything a run needs to continue bit-identically, in the host's byte
/// order, closed by a checksum of all preceding bytes so that a damaged file is refused instead of
/// silently resumed.
///
/// Version 8 ("OCTWALK-CKPT-v8\0", written) holds every run in one layout: version 3's fields up to the
/// settings, then each optional block behind a presence flag (uint8, 0 or 1):
///
///     uint8 has_pipeline;    [1 only: the pipeline field of version 6]
///     uint8 has_results;     [1 only: F4 results[N]]        (as version 5's)
///     uint8 has_state_pos;   [1 only: Vec3d state_pos[N]]   (only with a pipeline, as version 7's)
///     [comoving runs only: uint64 comoving length; char comoving[length]]
///     uint64 checksum
///
/// Its checksum is taken in pieces of 2^20 bytes from the file's first byte, so that the pieces of a
/// file of gigabytes are hashed in parallel (the versions before it took FNV-1a byte by byte, about
/// 1 GB/s on one core): a piece's hash is FNV-1a's step over its 64-bit words (host order; the last
/// partial word padded with zero bytes), each step (h ^= w; h *= FNV prime) followed by h ^= h >> 29,
/// from FNV's offset basis; the checksum is that same hash of the pieces' hashes followed by the byte
/// count, as 64-bit words. The same for any thread count.
///
/// Versions 3 to 7, written by earlier builds (and by writeCheckpoint with CheckpointVersion::Previous),
/// are closed by FNV-1a of all preceding bytes. Layout of version 3, in order:
///
///     char[16] magic "OCTWALK-CKPT-v3\0"
///     int64 N, step, numSteps; double t0, h, E0
///     int32 direct, zero_net_force
///     uint64 parameters length; char parameters[length]: "name=value\n" per row of parameterTable()
///                                (toText in host/core/params.h; reals with 17 digits, exact)
///     Vec3d pos[N], vel[N]; double mass[N]; uint64 id[N]; uint8 type[N] (GADGET types 0..5)
///     uint64 settings length; char settings[length]
///     [comoving runs only: uint64 comoving length; char comoving[length]]
///     uint64 FNV-1a of everything above (version 8: its checksum)
///
/// Version 4 ("OCTWALK-CKPT-v4\0", written by pipelined runs only: --rebuild-every != 1) is version 3
/// with the pipeline field after the settings (host/sim/pipeline.h: PipelineCheckpoint):
///
///     int64 rebuild_every, last_rebuild_step, fresh_interactions, last_interactions, rebuilds, adopt_step
///     Vec3d topology_pos[N]                    (caller's order: the positions the topology was built from)
///     [adopt_step >= 0 only: Vec3d in_flight_pos[N]]  (those of the build in flight)
///
/// Version 6 ("OCTWALK-CKPT-v6\0", written by pipelined runs since the lag became a run option) is version 4
/// with one more int64 after adopt_step: rebuild_lag (reading version 4 gives lag 1, the only one it had).
///
/// Version 5 ("OCTWALK-CKPT-v5\0", written by periodic tree runs with err_tol_force_acc > 0) is version 3
/// with the results field after the settings:
///
///     F4 results[N]   (float acc xyz, potential; G = 1; caller's order: the last force evaluation's, which
///                      the next step's error control takes as the previous accelerations)
///
/// A rank's checkpoint of a periodic run on several ranks (host/sim/distributed_run.h) holds in results the
/// previous accelerations its last evaluation read, so that the restart evaluates the same forces again; none
/// (version 3) when that evaluation read none (the domains had just been cut again).
///
/// Version 7 ("OCTWALK-CKPT-v7\0", written by pipelined runs that also carry results or their own unwrapped
/// positions: a pipelined periodic run) is version 6 with two optional blocks after the pipeline field:
///
///     uint8 has_results (0 or 1);     [1 only: F4 results[N]]        (as version 5's)
///     uint8 has_state_pos (0 or 1);   [1 only: Vec3d state_pos[N]]   (PipelineFields::statePos, finite)
///
/// Each block has its own flag, since a run may carry either without the other. A pipelined run with
/// neither is written as version 6, so that its files keep the bytes older builds wrote and read.
///
/// The comoving field (host/sim/simulation.cpp: the scale factor and H0, then the settings of
/// host/sim/comoving.h as "name=value" lines) is absent from other runs' checkpoints, which therefore
/// keep their bytes; in a comoving checkpoint vel[] holds the canonical momenta p = a^2 dx/dt.
///
/// Version 2 ("OCTWALK-CKPT-v2\0", read only) is version 3 without the types: its bodies restart as
/// type 1, which is what every set was before types existed.
///
/// Version 1 ("OCTWALK-CKPT-v1\0", read only) stored the parameters as fixed binary fields instead of
/// the direct, zero_net_force and parameters fields above:
///
///     double opening_angle, epsilon_squared, gravitational_constant
///     int32 n_leaf, n_group, mac, use_quadrupole, merge_groups, backend, direct, zero_net_force
///
/// The file knows nothing of how a run uses these numbers (host/sim/simulation.h does).

#include <cstdint>
#include <string>
#include <vector>

#include "host/core/params.h"
#include "host/core/particles.h"

namespace octwalk {

/// The pipelined step's policy state (host/sim/pipeline.h: PipelineCheckpoint, ForceOptions::rebuildEvery).
struct PipelineFields
{
    /// 1: the classic step, no pipeline field in the file.
    int64_t rebuildEvery = 1;
    /// freshInteractions: the interactions of the last walk of a topology built from the positions it walked;
    /// lastInteractions: of the last walk of any other (the foreground policy's state, host/sim/pipeline.h).
    int64_t lastRebuildStep = 0, freshInteractions = 0, lastInteractions = 0, rebuilds = 0;
    int64_t adoptStep = -1;
    /// Steps between a background build's positions and its adoption (version 6; 1 in version 4).
    int64_t rebuildLag = 1;
    std::vector<Vec3d> topologyPos, inFlightPos;
    /// The state's own positions (caller's order) where they differ from state.pos: a pipelined periodic run
    /// keeps its bodies unwrapped between adoptions (host/sim/pipeline.h), and state.pos holds them wrapped
    /// into the box; empty otherwise (versions before 7).
    std::vector<Vec3d> statePos;
};

/// What a checkpoint holds.
struct CheckpointImage
{
    /// Positions, velocities, masses, ids and types (state.time is not stored: it is t0 + step h).
    ParticleSet state;
    /// Steps done, of numSteps equal steps of h from t0.
    int64_t step = 0, numSteps = 0;
    double t0 = 0, h = 0;
    /// The total energy at the start of the run, for the energy error.
    double initialEnergy = 0;
    Parameters parameters;
    /// The force options of the run (see ForceOptions in host/sim/simulation.h).
    bool direct = false, zeroNetForce = false;
    /// The caller's own settings (e.g. output cadences), stored verbatim.
    std::string extra;
    /// The pipeline's state (versions 4, 6 and 7); rebuildEvery 1 otherwise.
    PipelineFields pipeline;
    /// The forces of the state, or on several ranks the previous accelerations (versions 5 and 7; see version
    /// 5), empty in other versions. Empty or one per body.
    std::vector<F4> results;
    /// A comoving run's clock and settings (host/sim/simulation.cpp writes and reads them); empty otherwise.
    std::string comoving;
};

/// Which version writeCheckpoint writes: version 8, or (Previous) the oldest of versions 3, 5, 6 and 7 that
/// holds the image, the bytes the builds before version 8 wrote for it, which those builds can read.
enum class CheckpointVersion
{
    Current,
    Previous
};

/// Writes `image` to `path` through an AtomicFile; an existing file becomes path + ".prev" once the
/// new one is complete and synced. InputError when a field's size does not match the bodies (results and
/// pipeline.statePos: empty or N; statePos only with a pipeline), FormatError when the file cannot be written.
void writeCheckpoint(const std::string& path, const CheckpointImage& image,
                     CheckpointVersion version = CheckpointVersion::Current);

/// Reads a checkpoint of any version. FormatError naming the field and byte offset when the file
/// cannot be read, is not a checkpoint, fails its checksum, is truncated or has trailing bytes, holds
/// an inconsistent step count (step outside [0, numSteps], h not positive, N < 2), a type outside 0..5,
/// a presence flag other than 0 or 1, a force or state position that is not finite, unknown, repeated
/// or missing parameter names or an unreadable parameter value. The parameters' ranges are not
/// checked here (a restart validates them as a fresh run does).
CheckpointImage readCheckpoint(const std::string& path);

} // namespace octwalk

#pragma once
/// @file distributed_mesh.h
/// TreePM's long-range force (host/pm/pm_mesh.h) for bodies spread over ranks: each rank assigns its own
/// bodies' masses to a whole mesh, the meshes are summed, and each rank solves the summed mesh and
/// interpolates to its own bodies.
///
/// The sum is cut by x slabs: rank r adds up, in rank order, every rank's copy of its own range of slabs
/// (MPI_Alltoallv), and the summed slabs then travel to every rank (MPI_Allgatherv). Every cell's sum has one
/// order, so the mesh has the same bits on every rank and at every call with the same bodies on the same
/// ranks, for any thread count. Each rank transforms the whole mesh (host/pm/slab_fft_grid.h): the same
/// memory per rank as one process's mesh, and the same time; only the assignment and the interpolation are
/// divided among the ranks.

#include <cstdint>
#include <vector>

#include "common/vec.h"
#include "host/core/params.h"
#include "host/mpi/communicator.h"
#include "host/pm/pm_mesh.h"

namespace octwalk::mpi {

/// Seconds of the last computeForces on this rank.
struct DistributedMeshTimings
{
    double assign      = 0; ///< this rank's bodies to its mesh (checks and the slab sort included)
    double sum         = 0; ///< the ranks' meshes summed and sent to every rank (waits for slower ranks included)
    double solve       = 0; ///< the transforms and the Green's function
    double interpolate = 0; ///< the fields to this rank's bodies, and the non-pair terms
};

/// The most mesh values a rank receives in one round of the sum: with P ranks' copies of a chunk of its slabs
/// held at once, a larger mesh is summed in more rounds rather than in more memory. A round takes at least one
/// slab from every rank, P n^2 values, which is more than this beyond 2^26 / n^2 ranks.
constexpr int64_t kMeshValuesPerRound = int64_t(1) << 26;

class DistributedMesh
{
public:
    /// The mesh of p (pm_grid cells per side of box_size, asmth, pm_assignment; G = 1: the caller applies
    /// the gravitational constant): ParameterError as PmMesh's. comm must outlive this.
    /// @param valuesPerRound  the sum's bound on a round (kMeshValuesPerRound; smaller in tests, so that a small
    ///                        mesh is summed in many rounds); the sums are the same bits for any bound
    DistributedMesh(const Communicator& comm, const Parameters& p, int64_t valuesPerRound = kMeshValuesPerRound);

    /// Long-range accelerations and potentials (G = 1) of this rank's n bodies from the bodies of all ranks,
    /// indexed like pos. Collective: every rank calls it, with any number of bodies (none too). InputError as
    /// PmMesh::computeForces for this rank's bad bodies, raised on that rank alone before the sum (the others
    /// then wait in it: a run ends the job, host/sim/distributed_run.h).
    void computeForces(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                       std::vector<double>& pot);

    /// computeForces in two parts: the collective one (this rank's bodies assigned, the ranks' meshes summed) and
    /// the local one (the transforms and the interpolation to the same bodies), which calls no MPI and may run on
    /// another thread while this one exchanges essential trees.
    void assignAndSum(const Vec3d* pos, const double* mass, int64_t n);
    void solveAndInterpolate(const double* mass, int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot);

    const PmMesh& mesh() const { return mesh_; }
    const DistributedMeshTimings& timings() const { return timings_; }

private:
    /// The first slab of rank r's range (r = size: the mesh's size).
    int64_t firstSlab(int r) const;
    /// Sums every rank's density() into every rank's density().
    void sumMeshes();

    const Communicator& comm_;
    PmMesh mesh_;
    /// The slabs of this rank's range from every rank, a chunk of slabs at a time (kept from call to call).
    std::vector<double> received_;
    DistributedMeshTimings timings_;
    double totalMass_ = 0; ///< of all ranks' bodies, from assignAndSum
    int64_t valuesPerRound_;
};

} // namespace octwalk::mpi

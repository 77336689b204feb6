#pragma once
/// @file rank_mesh.h
/// TreePM's long-range force (G = 1) for bodies spread over ranks, in two collective parts so that the second may
/// run on a thread of its own beside the walk (host/mpi/distributed_forces.h). Two layouts: the mesh cut into
/// slabs over the ranks' host memory and cores (host/mpi/distributed_mesh.h), or the whole mesh on the first rank,
/// the bodies gathered there (host/mpi/gathered_mesh.h).

#include <cstdint>
#include <vector>

#include "common/vec.h"

namespace octwalk::mpi {

/// Seconds of the last evaluation's parts on this rank (waits for the other ranks included where they exchange).
/// The slabs fill all six; the whole mesh on the first rank fills assign, sum (the bodies gathered there), solve
/// (its mesh, interpolation included), transforms and interpolate (the values sent back), and gives transposes as
/// the bodies' trip there and back (sum + interpolate).
struct RankMeshTimings
{
    double assign      = 0; ///< the bodies checked, sent to their slabs and their masses put on the planes
    double sum         = 0; ///< the planes that clouds reach past a slab added at their owners
    double solve       = 0; ///< the transforms, the transposes and the Green's function
    double transforms  = 0; ///< the transforms and the gradients
    double transposes  = 0; ///< the transposes between slabs of planes and of rows
    double interpolate = 0; ///< the fields to the bodies and their values back to the bodies' ranks
};

class RankMesh
{
public:
    virtual ~RankMesh() = default;

    /// The first part: checks this rank's n bodies (InputError as PmMesh::computeForces, on this rank alone: the
    /// others then wait in the exchange, and a run ends the job) and begins their long range. pos and mass must stay
    /// as they are until solveAndInterpolate returns. Collective on the mesh's own communicator.
    virtual void assignAndSum(const Vec3d* pos, const double* mass, int64_t n) = 0;
    /// The second part: the long-range accelerations and potentials of the same n bodies, indexed like pos.
    /// Collective on the mesh's own communicator.
    virtual void solveAndInterpolate(const double* mass, int64_t n, std::vector<Vec3d>& acc,
                                     std::vector<double>& pot) = 0;

    /// Both parts.
    void computeForces(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                       std::vector<double>& pot)
    {
        assignAndSum(pos, mass, n);
        solveAndInterpolate(mass, n, acc, pot);
    }

    virtual int meshSize() const                   = 0;
    virtual const RankMeshTimings& timings() const = 0;
};

} // namespace octwalk::mpi

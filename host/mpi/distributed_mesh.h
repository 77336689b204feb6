#pragma once
/// @file distributed_mesh.h
/// TreePM's long-range force (the split and the Green's function of host/pm/pm_mesh.h) for bodies spread over
/// ranks, on a mesh cut into x slabs: each rank holds ceil(n / P) planes of the n^3 mesh (the last ranks fewer,
/// or none), so a mesh too large for one process's memory fits on several.
///
/// A step: every body travels to the rank whose slab holds the first plane of its cloud, with its mass; the
/// slab's owner assigns the masses it was sent to its planes and to the width - 1 planes after them, which go to
/// their owners and are added there (host/pm/mesh_planes.h). The transform is serial FFTW plans of each plane
/// (y, z) on OpenMP threads, a transpose to slabs of y rows (MPI_Alltoallw with MPI datatypes on both sides, this
/// rank's own block copied on the threads), serial transforms along x of each row and the Green's function there;
/// back, the potential and the acceleration along x each go back along x and are transposed to planes, where the
/// potential and the accelerations along y and z are transformed over the plane: three transposes a step. Each
/// field in turn lands in the planes that held the masses; each slab's owner receives it on the planes its clouds
/// reach past its last one and interpolates it to the bodies it was sent before the next field (the slab holds
/// one field, not four), then sends their four values back.
///
/// Every sum has one order for a given rank count (a plane's bodies in rank order and index order, the planes
/// that clouds reach from the previous slab added after the slab's own, the transforms serial per plane and
/// row), so the forces have the same bits for any thread count. They differ from one process's mesh only in
/// that order.
///
/// The mesh has a communicator of its own: on the GPU backend its transforms and exchanges run on a host thread
/// beside the essential trees' exchange (host/mpi/distributed_forces.h), which MPI_THREAD_MULTIPLE allows.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/treepm.h"
#include "common/vec.h"
#include "host/core/params.h"
#include "host/mpi/communicator.h"
#include "host/mpi/rank_mesh.h"
#include "host/pm/mesh_planes.h"

namespace octwalk::mpi {

class DistributedMesh final : public RankMesh
{
public:
    /// The mesh of p (pm_grid cells per side of box_size, asmth, pm_assignment, pm_interlace as PmMesh's
    /// interlaced; G = 1: the caller applies the
    /// gravitational constant): ParameterError as PmMesh's; BackendError when the slab's arrays cannot be
    /// allocated or FFTW cannot plan. Collective.
    DistributedMesh(const Communicator& comm, const Parameters& p);
    ~DistributedMesh();
    DistributedMesh(const DistributedMesh&)            = delete;
    DistributedMesh& operator=(const DistributedMesh&) = delete;

    /// The RankMesh parts: the bodies' masses on the slabs, then the transforms and the forces back to the same
    /// bodies. InputError as PmMesh::computeForces for this rank's bad bodies, raised on that rank alone before any
    /// exchange.
    void assignAndSum(const Vec3d* pos, const double* mass, int64_t n) override;
    void solveAndInterpolate(const double* mass, int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot) override;

    int meshSize() const override { return int(n_); }
    /// The first plane of rank r's slab (r = size: the mesh's size).
    int64_t firstPlane(int r) const;
    /// Doubles this rank holds for the mesh (its planes, spectra and fields), for memory reports.
    int64_t heldDoubles() const;
    const RankMeshTimings& timings() const override { return timings_; }

private:
    struct Arrays;
    struct Buffers;
    struct Plans;
    class Transpose;
    /// A plane that clouds reach past the last plane of a slab (a ghost): the slab's rank and the plane's place
    /// there (past its own planes), and the rank that owns the plane and its place in that rank's slab.
    struct GhostPlane
    {
        int rank;
        int64_t heldIndex;
        int owner;
        int64_t ownerIndex;
    };

    /// Every rank's ghost planes for slabs that start at first[r] (first[P] = n) and clouds of `width` planes.
    static std::vector<GhostPlane> ghostPlanes(int64_t n, int width, const std::vector<int64_t>& first);

    /// The slab's geometry for the passes of host/pm/mesh_planes.h.
    PmPlanes planes() const;
    int ownerOf(int64_t plane) const;
    /// The bodies sent to their slabs and their masses on the planes, ghosts summed at their owners.
    void assignOnSlabs(const Vec3d* pos, const double* mass, int64_t n);
    /// The fields from the planes' masses, interpolated to the bodies of the last assignOnSlabs, in acc and pot.
    void solveAndReturn(int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot);
    /// Sends every body to the owner of its cloud's first plane; fills received_ and the routes back.
    void sendBodies(const Vec3d* pos, const double* mass, int64_t n);
    /// Adds the planes past every slab's last one (ghosts) to their owners' planes.
    void sumGhostPlanes();
    /// Sends every slab the field on the planes past its last one.
    void fetchGhostField();
    void transformForward();
    void applyGreensFunction();
    /// The potential's spectrum (alongX false), or the acceleration's along x (true), back along x and transposed
    /// to the planes' spectra.
    void rowsBackToPlanes(bool alongX);
    /// Field `component` (0 the potential, 1-3 the acceleration along x, y, z) transformed back into the slab's
    /// planes, from the planes' spectra of rowsBackToPlanes (alongX for component 1).
    void planesBack(int component);
    /// One plane's spectrum for each thread of the coming parallel regions, with its plans.
    void keepScratchPerThread();
    /// The field on the slab's planes (with its ghosts) interpolated to the received bodies, as their value
    /// `component` in the buffer of values to return.
    void interpolateField(int component);
    /// The received bodies' four values back to their ranks, in their order there.
    void returnValues(int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot);

    Communicator comm_;
    int64_t n_, block_, first_, own_;
    double boxSize_, splitScale_;
    MassAssignment assignment_;
    bool interlaced_;
    /// With interlaced_: the bodies' places on the shifted mesh (pmShiftedPosition), and its fields at them.
    std::vector<Vec3d> shifted_;
    std::vector<Vec3d> shiftedAcc_;
    std::vector<double> shiftedPot_;
    std::vector<double> k_, axisFactor_;
    std::unique_ptr<Arrays> arrays_;
    std::unique_ptr<Buffers> buffers_;
    std::unique_ptr<Plans> plans_;
    std::unique_ptr<Transpose> transpose_;
    std::vector<GhostPlane> ghosts_;

    /// The bodies sent here (positions and masses, in rank order) and, per rank, how many.
    std::vector<Vec3d> receivedPos_;
    std::vector<double> receivedMass_;
    std::vector<int64_t> receivedCounts_;
    /// This rank's bodies in the order they were sent (grouped by owner), and how many to each owner.
    std::vector<int64_t> sendOrder_, sendCounts_;
    std::vector<int32_t> ownerOfBody_; ///< by body index: the rank its mass goes to (kept from step to step)
    PmPlaneOrder order_;
    RankMeshTimings timings_;
    double totalMass_ = 0; ///< of all ranks' bodies, from assignAndSum
};

} // namespace octwalk::mpi

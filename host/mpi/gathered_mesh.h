#pragma once
/// @file gathered_mesh.h
/// TreePM's long-range force for bodies spread over ranks on one whole mesh held by the first rank: each step
/// every rank sends its bodies' positions and masses there (in rank order), the first rank computes the mesh
/// forces of them all, and every rank receives its bodies' accelerations and potentials. On the GPU backend the
/// first rank's mesh is the device's (device/pm_gpu.h, cuFFT): a 512^3 mesh takes it milliseconds where the
/// ranks' host slabs (host/mpi/distributed_mesh.h) take seconds, and the bodies' trip there and back costs two
/// copies of 32 bytes a body. Its limit is one device's memory, about 3 n^3 doubles plus 64 bytes a body of all
/// ranks (pm_backend cpu keeps the slabs for meshes beyond it).
///
/// The host's mesh (host/pm/pm_mesh.h) in its place is the CPU twin: the same gathering and the same results as
/// one process's mesh of the bodies in rank order, bit for bit. The device's mesh assigns the masses in fixed point
/// (order-independent), so its results are those of one process's device mesh for any rank count.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/vec.h"
#include "device/pinned_memory.h"
#include "host/core/params.h"
#include "host/mpi/communicator.h"
#include "host/mpi/rank_mesh.h"

namespace octwalk {
class PmMesh;
class GpuMesh;
} // namespace octwalk

namespace octwalk::mpi {

class GatheredMesh final : public RankMesh
{
public:
    /// The mesh of p (pm_grid, box_size, asmth, pm_assignment, pm_interlace; G = 1) on the first rank of comm, on
    /// its device when onDevice (else its host's cores). Collective: ParameterError as PmMesh's on every rank;
    /// BackendError on every rank, naming the first rank's reason, when it cannot make its mesh (no device, no
    /// memory).
    GatheredMesh(const Communicator& comm, const Parameters& p, bool onDevice);
    ~GatheredMesh() override;
    GatheredMesh(const GatheredMesh&)            = delete;
    GatheredMesh& operator=(const GatheredMesh&) = delete;

    /// Checks the bodies (InputError naming this rank's first bad one) and keeps pos for solveAndInterpolate; no
    /// exchange.
    void assignAndSum(const Vec3d* pos, const double* mass, int64_t n) override;
    /// The bodies gathered on the first rank, its mesh's forces, and each rank's share back.
    void solveAndInterpolate(const double* mass, int64_t n, std::vector<Vec3d>& acc, std::vector<double>& pot) override;

    int meshSize() const override { return meshSize_; }
    const RankMeshTimings& timings() const override { return timings_; }

private:
    /// The first rank's mesh forces of the gathered bodies, into allAcc_ and allPot_.
    void solveOnFirstRank();

    Communicator comm_;
    int meshSize_;
    double boxSize_;
    std::unique_ptr<PmMesh> hostMesh_;
    std::unique_ptr<GpuMesh> deviceMesh_;
    const Vec3d* pos_ = nullptr;
    int64_t n_        = 0;
    /// The first rank's: every rank's bodies in rank order and their results, in page-locked memory so that the
    /// device's copies run at full bus speed.
    PinnedVector<Vec3d> allPos_, allAcc_;
    PinnedVector<double> allMass_, allPot_;
    std::vector<Vec3d> hostAcc_;
    std::vector<double> hostPot_;
    RankMeshTimings timings_;
};

} // namespace octwalk::mpi

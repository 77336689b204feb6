#pragma once
/// @file pm_gpu.h
/// The long-range half of the TreePM force on the device: host/pm/pm_mesh.h's mesh (its CPU twin) with cuFFT.
/// The same stencils, wavenumbers and Green's function (common/pm.h), the same spectral differentiation and
/// interpolation. The assignment, the Green's function and the interpolation's sums are in double precision; the
/// mesh's fields and their transforms in single precision, as GADGET-2's by default, which halves the transforms'
/// memory traffic (the largest part of the mesh's time at 2 N^(1/3) cells) and the mesh's memory. The field holds the
/// masses in units of a power of two near the total |mass|, so its range does not depend on the mass unit. The two
/// differ by
/// about 1e-6 of the largest force, far below the split's error (1e-5 and more) and at the float results' own
/// rounding, to which the tree's forces are summed.
///
/// The mass assignment adds each body's share to its cells with 64-bit integer atomics in fixed point, scaled by a
/// power of two chosen from the bodies' total |mass| so that no cell's sum can overflow (a body of one 2^24th of
/// the mass keeps 37 bits): integer sums do not depend on their order, so the mesh, and every result, is
/// bit-identical from run to run. The transforms are cuFFT's, whose plans are fixed for a mesh size and a device.
/// A plain C++ header: the CUDA types stay in pm_gpu.cu.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/treepm.h"
#include "common/vec.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// Seconds of each part of the last GpuMesh::computeForces or addForcesOnDevice (or its two halves) on the device
/// (CUDA events).
struct GpuMeshTimings
{
    double upload = 0; ///< the bodies to the device, and their check (addForcesOnDevice: 0, its check is in assign)
    /// masses to the mesh, their total, and the mesh to single precision (addForcesOnDevice: after wrapping and checking
    /// the bodies)
    double assign = 0;
    double solve  = 0; ///< one forward and four backward transforms, the Green's function and the gradients
    /// the four fields to the bodies, with the non-pair terms (addForcesOnDevice: and their sum with the results)
    double interpolate = 0;
    double download    = 0; ///< the accelerations and potentials to the host (addForcesOnDevice: 0)

    double total() const { return upload + assign + solve + interpolate + download; }
};

class GpuMesh
{
public:
    /// The parameters as PmMesh's, interlaced too (ParameterError naming the bad one); BackendError without a
    /// device.
    GpuMesh(double boxSize, int meshSize, double asmth, MassAssignment assignment, double G, bool interlaced = false);
    ~GpuMesh();
    GpuMesh(const GpuMesh&)            = delete;
    GpuMesh& operator=(const GpuMesh&) = delete;

    double boxSize() const;
    int meshSize() const;
    double splitScale() const;
    MassAssignment assignment() const;
    bool interlaced() const;

    /// As PmMesh::computeForces: the long-range accelerations and potentials (G applied, both non-pair terms
    /// in the potential) of n bodies on themselves, into acc[i] and pot[i] (room for n each), indexed like pos.
    /// InputError naming the first bad body and its value for a position outside [0, L) or not finite, or a mass
    /// that is not finite; BackendError when the device's memory or a CUDA call fails (naming the array and its
    /// bytes). The copies run at full bus speed where all four arrays are page-locked (device/pinned_memory.h).
    void computeForces(const Vec3d* pos, const double* mass, int64_t n, Vec3d* acc, double* pot);

    /// computeForces' accelerations and potentials of n bodies already on the device, added into their results
    /// there with addMeshTerm (common/treepm.h), with no array copied to or from the host: the same fixed point,
    /// kernels and bits as computeForces for the same bodies in the same order. The results are in the units of
    /// the constructor's G (G = 1 for the tree's G = 1 results).
    /// @param[in]     dPos      n positions (device memory), each taken as wrapPosition(x, L) (common/integrate.h):
    ///                          bodies that drifted out of the box since their last wrapping are put back, one in
    ///                          [0, L) is used as it is
    /// @param[in]     dMass     n masses (device memory)
    /// @param[in,out] dResults  n (acc xyz, potential) (device memory), indexed like dPos
    /// @param[in]     stream    a cudaStream_t (nullptr: the legacy default stream): the arrays are read only
    ///                          after the work queued on it so far; returns once dResults is written, so that
    ///                          work queued on it next sees them
    /// InputError naming the first body whose position or mass is not finite, and its value, with dResults left
    /// as they were; BackendError as computeForces.
    void addForcesOnDevice(const Vec3d* dPos, const double* dMass, int64_t n, F4* dResults, void* stream);

    /// addForcesOnDevice in two halves, so that the mesh runs on the device beside the work queued between them (the
    /// tree's walk and forces, or a step's build on the host). Start queues the mesh's work on the mesh's own stream
    /// once the device reaches `ready` (a cudaEvent_t recorded after the last write to dPos and dMass), waiting only
    /// for the bodies' check; the mesh copies dPos and dMass first, and they may change once the device has reached
    /// inputsCopied(). InputError as addForcesOnDevice, with nothing started. Finish queues on `stream` (a
    /// cudaStream_t) a wait for the mesh and the addition into dResults, and returns once they are done; nothing
    /// when nothing was started. With `order`, the bodies were reordered since the start (device memory, n: result k
    /// is that of the start's body order[k]). Any other call in between discards the start.
    void startForcesOnDevice(const Vec3d* dPos, const double* dMass, int64_t n, void* ready);
    void finishForcesOnDevice(F4* dResults, void* stream, const int32_t* order = nullptr);
    /// The cudaEvent_t that the last start records once it has copied its bodies.
    void* inputsCopied() const;

    /// The mesh's own stream, on which it queues its work.
    GpuStream stream() const;

    /// Seconds of the last computeForces or addForcesOnDevice on the device, by part.
    const GpuMeshTimings& timings() const;

    /// Bytes of device memory the mesh holds: about 20 bytes a cell (the fixed-point masses; one single-precision
    /// field, the masses and then each field in turn; the spectrum and a copy for the backward transforms), cuFFT's
    /// work area, and 64 bytes a body for the most bodies it has been given.
    size_t deviceBytes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace octwalk

#pragma once
/// @file resident_gpu.h
/// The device-resident state of a run: double positions, velocities and masses in tree order on the
/// device, with the pipeline's operations as kernels on the GpuSolver's stream (so they are ordered
/// with its walk): the fused half kick and drift, the closing half kick, the gather into a new tree
/// order, the refit of the kept topology (refit_gpu.h) straight from the resident positions into the
/// arrays the walk reads, the walk and forces (GpuSolver::evaluateResident, results left on the
/// device), and the diagnostics' sums in host/core/parallel.h's fixed blocks (no atomics: the same
/// bits on every run, and those of the CPU twin). The twin of host/cpu/resident_cpu.h, method for
/// method; resident_gpu.cu is compiled without fused multiply-adds (-fmad=false), so every state word
/// equals the twin's for equal accelerations. With a SpanLog that is on, each operation logs its device
/// interval (CUDA events around it, mapped onto the host's clock when the host next waits for the
/// stream, as GpuSolver maps the walk's phases), and the walk's phases by their kPhases names; off, no
/// event is recorded for it. Built from resident_gpu.cu with CUDA, from gpu_none.cpp
/// without (then everything throws BackendError).

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/integrate.h"
#include "common/phases.h"
#include "common/refit.h"
#include "common/span_log.h"
#include "common/tree_view.h"
#include "device/gpu_solver.h"
#include "device/pm_gpu.h"

namespace octwalk {

class ResidentGpu
{
public:
    /// Owns a GpuSolver for the walk (BackendError without a device).
    ResidentGpu();
    ~ResidentGpu();
    ResidentGpu(const ResidentGpu&)            = delete;
    ResidentGpu& operator=(const ResidentGpu&) = delete;

    /// Uploads the state (tree order of the topology given next; caller: as ResidentCpu::setState's) and waits.
    void setState(const Vec3d* pos, const Vec3d* vel, const double* mass, const int32_t* caller, int64_t n);
    /// Downloads the positions and velocities (n each, tree order).
    void getState(Vec3d* pos, Vec3d* vel);
    /// Downloads the positions (the host build reads them).
    void getPositions(Vec3d* pos);
    /// Queues the download of the positions as the stream's work so far leaves them, predicted `ahead`
    /// time on (predictPosition; as they are for ahead = 0), on a copy stream so that the walk and
    /// forces queued next overlap it; the next write of the state (kick, drift, gather, setState) waits
    /// for it.
    /// @param[out] pos  page-locked host memory (device/pinned_memory.h), n
    /// With sortedKeys and sortedIndex (page-locked, n each), also the Morton keys of those positions in
    /// their bounding cube sorted stably on the device, and each key's index (adoptSortedKeys,
    /// host/tree/octree.h: the host's sortBodies of the same positions gives the same order), so that the
    /// host's build starts from sorted keys. The sort runs on the copy stream too, beside the walk queued next.
    /// In a periodic box (boxSize > 0) the keys are those of the wrapped positions in the box's cube (the host's
    /// sortBodies of the wrapped positions in the box); the positions come down as predicted, unwrapped. With
    /// shiftCodes (page-locked, n) in a periodic box, also each of those positions' wrapShiftCode, before the sorted
    /// keys are complete (finishSortedKeysDownload).
    void beginPositionDownload(Vec3d* pos, double ahead, uint64_t* sortedKeys = nullptr, int32_t* sortedIndex = nullptr,
                               double boxSize = 0, uint8_t* shiftCodes = nullptr);
    /// Waits until that download is complete (callable from another thread).
    void finishPositionDownload();
    /// Waits until the sorted keys and indices of that download are on the host (the positions come after
    /// them: a build that starts from the keys need not wait for the positions; callable from another thread).
    void finishSortedKeysDownload();
    /// As ResidentCpu::permute (order and shift: host memory), queued without a wait: page-locked order and shift
    /// must stay unchanged until the stream has copied them (the next evaluation waits for it).
    void permute(const int32_t* order, const uint8_t* shift = nullptr, double boxSize = 0, bool results = false);
    /// As ResidentCpu::setResults (results: host memory).
    void setResults(const F4* results);
    /// TreePM's long-range forces of the resident bodies, computed by mesh on the device (G = 1), added to the
    /// results (GpuMesh::addForcesOnDevice's halves, addMeshTerm): the CPU twin adds the host mesh's. Start, from
    /// refitAndEvaluate's afterRefit, queues the mesh of the positions of that evaluation on the mesh's stream, where
    /// it runs beside the refit, the walk and the tree's forces; finish, after refitAndEvaluate, adds it to their
    /// results (the same sum, in the same order, as one call after the forces).
    void startMeshForces(GpuMesh& mesh);
    void finishMeshForces(GpuMesh& mesh);
    /// startMeshForces of the state as it is now, before the adoption of a step whose topology the host is building
    /// (the pipeline's foreground step): the mesh runs beside that build instead of the walk, and finish adds its
    /// results through the adoption's order. The adoption's permute waits for the mesh's copy of the bodies.
    void startMeshForcesBeforeAdoption(GpuMesh& mesh);
    /// Queues the copies of the adoption to come, permute's order and shift and setTopology's topology (the same
    /// arrays), on the copy stream while the walk goes on: permute and setTopology then take them instead of
    /// copying. Callable from the build's thread between beginPositionDownload and that adoption (the stepping
    /// thread calls nothing of this state meanwhile but the walk's evaluation and the kicks); setState discards it.
    /// The arrays are page-locked and stay unchanged until the adoption.
    void stageAdoption(const int32_t* order, const uint8_t* shift, const RefitView& host, const TreeView& tree);
    /// Uploads a packed tree's topology into the GpuSolver's walk buffers (setResidentTopology: page-locked
    /// arrays without a wait) and keeps the levels and MAC settings of the refit.
    /// @param[in] host    refitView of the packed tree (host memory; topology pointers and sizes read)
    /// @param[in] levels  the internal nodes by level (host memory)
    /// @param[in] tree    the packed tree's view (host memory)
    void setTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree);
    /// Refits on the device from the resident positions, then walks and evaluates the forces; the
    /// results stay on the device. Returns the interaction totals (self included); times receives the
    /// refit (Phase::Packing, CUDA events), the walk and the force phases.
    /// groupTolerance, afterRefit and afterForces as ResidentCpu::refitAndEvaluate's: afterRefit runs once the refit
    /// is queued, before the walk is; afterForces once the forces are queued, before the wait for the walk's counts
    /// (GpuSolver::evaluateResident), so that what it queues (the closing kick) shares that wait.
    InteractionTotals refitAndEvaluate(float eps2, float groupTolerance, PhaseTimes& times,
                                       const std::function<void()>& afterRefit  = {},
                                       const std::function<void()>& afterForces = {});
    /// As ResidentCpu::kickDrift; waits for the range flag.
    bool kickDrift(double G, double halfStep, double h, double boxSize);
    /// kickDrift without the wait: the range flag's copy is queued behind it, and driftInRange waits for it. Until
    /// then, only what cannot go wrong on out-of-range positions may be queued (the adoption's permutation and
    /// topology, the refit): the walk's lists and the host's build must wait for driftInRange.
    void queueKickDrift(double G, double halfStep, double h, double boxSize);
    /// Whether every position of the last queueKickDrift passes positionInRange (true when none is queued).
    bool driftInRange();
    /// As ResidentCpu::kick; waits for the finiteness flag.
    bool kick(double G, double halfStep);
    /// kick without the wait: kickFinite waits for the flag's copy queued behind it.
    void queueKick(double G, double halfStep);
    /// Whether every position and velocity of the last queueKick is finite (true when none is queued).
    bool kickFinite();
    /// As ResidentCpu::diagnosticSums.
    DiagnosticSums diagnosticSums(double G, const StateScale& scale = {});
    /// As ResidentCpu::largestAccelerationSquared, reduced on the device: a block's largest per block, the rest on
    /// the host.
    double largestAccelerationSquared(double G);
    /// As ResidentCpu::radiusOrderStatistics: the radii's patterns sorted on the device (cub), only the ranks' radii
    /// downloaded. beginRadiusOrderStatistics and finishRadiusOrderStatistics, one after the other.
    bool radiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank, std::vector<double>& out);
    /// Queues radiusOrderStatistics: the radii of the current positions on the state's stream, their sort and the
    /// ranks' radii on a stream of their own, so that the next steps' operations may run beside the sort. A pending
    /// begin is finished first (its radii dropped).
    void beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank);
    /// Waits for the last beginRadiusOrderStatistics: its radii into out, or false (out untouched) when a radius
    /// was NaN. std::logic_error without a pending begin.
    bool finishRadiusOrderStatistics(std::vector<double>& out);
    /// Downloads the last evaluation's results (acc xyz, potential; G = 1), tree order.
    void getResults(F4* out);
    /// The interaction lists of the last evaluation (GpuSolver::downloadLists).
    void getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset, std::vector<int32_t>& nodeList,
                  std::vector<int32_t>& leafList);
    int64_t size() const { return n_; }
    /// The walk's solver (kernel variants: GpuSolver::setKernelConfig).
    GpuSolver& solver();
    /// Where the operations log their intervals while log->on (nullptr: nowhere); the log outlives
    /// this object or is reset first. An interval is logged once the host has waited for it: the
    /// positions' download of beginPositionDownload at a later operation's wait.
    void setSpanLog(SpanLog* log);

private:
    /// Starts the mesh of the resident bodies once the device reaches `ready` (a cudaEvent_t).
    void startMesh(GpuMesh& mesh, void* ready);

    struct Impl;
    std::unique_ptr<Impl> impl_;
    int64_t n_ = 0;
};

} // namespace octwalk

// The device backend of a build without CUDA: no GPU is ever available, GpuSolver and every launcher
// throw BackendError.
#include <cstdlib>

#include "common/errors.h"
#include "device/direct_gpu.h"
#include "device/forces_gpu.h"
#include "device/gpu_solver.h"
#include "device/pinned_memory.h"
#include "device/pm_gpu.h"
#include "device/refit_gpu.h"
#include "device/resident_gpu.h"
#include "device/walk_gpu.h"

namespace octwalk {

namespace {

[[noreturn]] void noCuda() { throw BackendError("backend gpu requested, but octwalk was built without CUDA"); }

} // namespace

struct GpuSolver::Impl
{
};

struct GpuRefit::Impl
{
};

struct ResidentGpu::Impl
{
};

struct GpuMesh::Impl
{
};

bool gpuAvailable() { return false; }

// No device to copy to: ordinary memory, 64-byte aligned as the CUDA build's.
void* allocatePinnedHost(size_t bytes)
{
    size_t rounded = (bytes + 63) / 64 * 64;
    void* p        = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) throw std::bad_alloc();
    return p;
}

void freePinnedHost(void* p) noexcept { std::free(p); }

double hostToDeviceBandwidth(size_t, int) { return 0.0; }

std::string gpuDescription() { return "none (built without CUDA)"; }

GpuSolver::GpuSolver() { noCuda(); }

GpuSolver::~GpuSolver() = default;

void GpuSolver::evaluate(const TreeView&, const GroupView&, const BodyView&, const TargetView&, float, GpuEvaluation&)
{
    noCuda();
}

void GpuSolver::direct(const BodyView&, const std::vector<int32_t>&, float, bool, std::vector<F4>&, double&,
                       const DirectKernelConfig&)
{
    noCuda();
}

void GpuSolver::downloadLists(std::vector<int64_t>&, std::vector<int64_t>&, std::vector<int32_t>&,
                              std::vector<int32_t>&)
{
    noCuda();
}

GpuSolver::ResidentTree GpuSolver::setResidentTopology(const TreeView&, const GroupView&, int32_t) { noCuda(); }

void GpuSolver::stageResidentTopology(const TreeView&, const GroupView&, GpuStream) { noCuda(); }

void GpuSolver::dropStagedTopology() { noCuda(); }

bool GpuSolver::holdsStagedTopology(const TreeView&, const GroupView&) const { noCuda(); }

void GpuSolver::evaluateResident(const ResidentTree&, float, GpuEvaluation&, bool, const std::function<void()>&,
                                 const std::function<void()>&)
{
    noCuda();
}

const F4* GpuSolver::residentResults() const { noCuda(); }

F4* GpuSolver::residentResults(int32_t) { noCuda(); }

GpuStream GpuSolver::stream() const { noCuda(); }

void countInteractionsGpu(const TreeView&, const GroupView&, const CountsView&, int32_t*, GpuStream, GpuWalk,
                          const TreeTextures&)
{
    noCuda();
}

size_t scanCountsGpuScratchBytes(int32_t) { noCuda(); }

void scanCountsGpu(const CountsView&, const ListView&, GpuScratch, GpuStream) { noCuda(); }

void writeInteractionsGpu(const TreeView&, const GroupView&, const ListView&, int32_t*, GpuStream, GpuWalk,
                          const TreeTextures&)
{
    noCuda();
}

void countAndStageInteractionsGpu(const TreeView&, const GroupView&, const CountsView&, const WalkStaging&, int32_t*,
                                  GpuStream, const TreeTextures&)
{
    noCuda();
}

void writeStagedInteractionsGpu(const TreeView&, const GroupView&, const CountsView&, const ListView&,
                                const WalkStaging&, int32_t*, GpuStream, const TreeTextures&)
{
    noCuda();
}

void bodyNodeForcesGpu(const TreeView&, const GroupView&, const ListView&, const TargetView&, float, F4*, GpuStream,
                       int, const TreeTextures&, NodeKernelShape)
{
    noCuda();
}

void bodyLeafForcesGpu(const TreeView&, const GroupView&, const ListView&, const BodyView&, const TargetView&, float,
                       const F4*, F4*, GpuStream, int, LeafKernelShape, bool)
{
    noCuda();
}

size_t directScratchBytes(int32_t, int32_t, bool, const DirectKernelConfig&) { noCuda(); }

void directGpu(const BodyView&, const int32_t*, int32_t, float, bool, F4*, void*, GpuStream, const DirectKernelConfig&)
{
    noCuda();
}

void refitGpu(const RefitView&, const RefitLevels&, GpuStream) { noCuda(); }

GpuRefit::GpuRefit() { noCuda(); }

GpuRefit::~GpuRefit() = default;

void GpuRefit::setTopology(const RefitView&, const RefitLevels&) { noCuda(); }

void GpuRefit::setBodies(const Vec3d*, const double*) { noCuda(); }

double GpuRefit::refit() { noCuda(); }

void GpuRefit::download(const RefitView&) { noCuda(); }

ResidentGpu::ResidentGpu() { noCuda(); }

ResidentGpu::~ResidentGpu() = default;

GpuSolver& ResidentGpu::solver() { noCuda(); }

void ResidentGpu::setSpanLog(SpanLog*) { noCuda(); }

void ResidentGpu::setState(const Vec3d*, const Vec3d*, const double*, const int32_t*, int64_t) { noCuda(); }

void ResidentGpu::getState(Vec3d*, Vec3d*) { noCuda(); }

void ResidentGpu::getPositions(Vec3d*) { noCuda(); }

void ResidentGpu::beginPositionDownload(Vec3d*, double, uint64_t*, int32_t*, double, uint8_t*) { noCuda(); }

void ResidentGpu::finishPositionDownload() { noCuda(); }
void ResidentGpu::finishSortedKeysDownload() { noCuda(); }

void ResidentGpu::permute(const int32_t*, const uint8_t*, double, bool) { noCuda(); }

void ResidentGpu::setResults(const F4*) { noCuda(); }

void ResidentGpu::startMeshForces(GpuMesh&) { noCuda(); }
void ResidentGpu::startMeshForcesBeforeAdoption(GpuMesh&) { noCuda(); }

void ResidentGpu::finishMeshForces(GpuMesh&) { noCuda(); }

void ResidentGpu::stageAdoption(const int32_t*, const uint8_t*, const RefitView&, const TreeView&) { noCuda(); }

void ResidentGpu::setTopology(const RefitView&, const RefitLevels&, const TreeView&) { noCuda(); }

InteractionTotals ResidentGpu::refitAndEvaluate(float, float, PhaseTimes&, const std::function<void()>&,
                                                const std::function<void()>&)
{
    noCuda();
}

bool ResidentGpu::kickDrift(double, double, double, double) { noCuda(); }
void ResidentGpu::queueKickDrift(double, double, double, double) { noCuda(); }
bool ResidentGpu::driftInRange() { noCuda(); }
void ResidentGpu::queueKick(double, double) { noCuda(); }
bool ResidentGpu::kickFinite() { noCuda(); }

bool ResidentGpu::kick(double, double) { noCuda(); }

DiagnosticSums ResidentGpu::diagnosticSums(double, const StateScale&) { noCuda(); }
double ResidentGpu::largestAccelerationSquared(double) { noCuda(); }
bool ResidentGpu::radiusOrderStatistics(const Vec3d&, const std::vector<int64_t>&, std::vector<double>&) { noCuda(); }
void ResidentGpu::beginRadiusOrderStatistics(const Vec3d&, const std::vector<int64_t>&) { noCuda(); }
bool ResidentGpu::finishRadiusOrderStatistics(std::vector<double>&) { noCuda(); }

void ResidentGpu::getResults(F4*) { noCuda(); }

void ResidentGpu::getLists(std::vector<int64_t>&, std::vector<int64_t>&, std::vector<int32_t>&, std::vector<int32_t>&)
{
    noCuda();
}

GpuMesh::GpuMesh(double, int, double, MassAssignment, double, bool) { noCuda(); }

GpuMesh::~GpuMesh() = default;

double GpuMesh::boxSize() const { noCuda(); }

int GpuMesh::meshSize() const { noCuda(); }

double GpuMesh::splitScale() const { noCuda(); }

MassAssignment GpuMesh::assignment() const { noCuda(); }

bool GpuMesh::interlaced() const { noCuda(); }

const GpuMeshTimings& GpuMesh::timings() const { noCuda(); }

GpuStream GpuMesh::stream() const { noCuda(); }

size_t GpuMesh::deviceBytes() const { noCuda(); }

void GpuMesh::computeForces(const Vec3d*, const double*, int64_t, Vec3d*, double*) { noCuda(); }

void GpuMesh::addForcesOnDevice(const Vec3d*, const double*, int64_t, F4*, void*) { noCuda(); }

void GpuMesh::startForcesOnDevice(const Vec3d*, const double*, int64_t, void*) { noCuda(); }

void GpuMesh::finishForcesOnDevice(F4*, void*, const int32_t*) { noCuda(); }

void* GpuMesh::inputsCopied() const { noCuda(); }

} // namespace octwalk

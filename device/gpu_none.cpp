// The device backend of a build without CUDA: no GPU is ever available.
#include "device/gravity_gpu.h"

#include "common/errors.h"

namespace octwalk {

struct GpuSolver::Impl
{
};

bool gpuAvailable() { return false; }

std::string gpuDescription() { return "none (built without CUDA)"; }

GpuSolver::GpuSolver() { throw BackendError("backend gpu requested, but octwalk was built without CUDA"); }

GpuSolver::~GpuSolver() = default;

void GpuSolver::evaluate(const TreeView&, const GroupView&, const BodyView&, const TargetView&, float, GpuEvaluation&)
{
    throw BackendError("backend gpu requested, but octwalk was built without CUDA");
}

void GpuSolver::direct(const BodyView&, const std::vector<int32_t>&, float, bool, std::vector<F4>&, double&)
{
    throw BackendError("backend gpu requested, but octwalk was built without CUDA");
}

void GpuSolver::downloadLists(std::vector<int32_t>&, std::vector<int32_t>&, std::vector<int32_t>&,
                              std::vector<int32_t>&)
{
    throw BackendError("backend gpu requested, but octwalk was built without CUDA");
}

} // namespace octwalk

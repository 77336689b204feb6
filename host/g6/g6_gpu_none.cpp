// The device backend of libg6 in a build without CUDA: never available, the constructor throws.
#include "common/errors.h"
#include "device/g6_gpu.h"

namespace octwalk {

struct G6Gpu::Impl
{
};

bool g6GpuAvailable() { return false; }

G6Gpu::G6Gpu(G6Precision) { throw BackendError("libg6: backend gpu requested, but octwalk was built without CUDA"); }

G6Gpu::~G6Gpu() = default;

void G6Gpu::reserve(int) {}
void G6Gpu::setJParticle(int, const G6JParticle&) {}
void G6Gpu::setTime(double) {}
void G6Gpu::flush() {}
void G6Gpu::startForces(const G6IBlock&) {}
void G6Gpu::finishForces(const G6Outputs&) {}
void G6Gpu::neighbourLists(std::vector<int64_t>&, std::vector<int32_t>&) {}
G6GpuTimes G6Gpu::lastTimes() const { return {}; }

} // namespace octwalk

// Pinned host memory with a fallback: each block starts with a header that records how it was
// obtained, so freePinnedHost releases it the same way without asking the driver.
#include "device/pinned_memory.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <algorithm>
#include <cstdlib>

#include "device/cuda_check.cuh"
#include "device/device_buffer.cuh"
#include "device/gpu_solver.h"

namespace octwalk {

namespace {

/// Room before the caller's bytes: keeps them 64-byte aligned (cudaHostAlloc and aligned_alloc
/// return at least that) and holds the block's kind.
constexpr size_t kHeaderBytes = 64;

enum class BlockKind : uint32_t
{
    Pinned   = 0x50494e4e,
    Ordinary = 0x4f524449,
};

} // namespace

void* allocatePinnedHost(size_t bytes)
{
    if (bytes == 0) bytes = 1;
    if (bytes > SIZE_MAX - kHeaderBytes) throw std::bad_alloc();
    size_t total   = kHeaderBytes + bytes;
    void* block    = nullptr;
    BlockKind kind = BlockKind::Pinned;
    if (!gpuAvailable() || cudaHostAlloc(&block, total, cudaHostAllocDefault) != cudaSuccess)
    {
        // A failed page-lock (too much locked memory, or no device) is not an error: ordinary
        // memory only makes the transfer slower. Clear the runtime's error state.
        cudaGetLastError();
        kind  = BlockKind::Ordinary;
        block = std::aligned_alloc(kHeaderBytes, (total + kHeaderBytes - 1) / kHeaderBytes * kHeaderBytes);
        if (!block) throw std::bad_alloc();
    }
    *static_cast<BlockKind*>(block) = kind;
    return static_cast<unsigned char*>(block) + kHeaderBytes;
}

void freePinnedHost(void* p) noexcept
{
    if (!p) return;
    void* block = static_cast<unsigned char*>(p) - kHeaderBytes;
    if (*static_cast<BlockKind*>(block) == BlockKind::Pinned) cudaFreeHost(block);
    else std::free(block);
}

double hostToDeviceBandwidth(size_t bytes, int repeats)
{
    if (!gpuAvailable() || bytes == 0 || repeats < 1) return 0.0;
    PinnedVector<unsigned char> host(bytes, 1);
    DeviceBuffer<unsigned char> device{"bandwidth probe"};
    device.reserve(bytes);
    Stream stream;
    Event start, stop;
    double best = 0.0;
    for (int r = 0; r < repeats; ++r)
    {
        start.record(stream);
        CUDA_CHECK(cudaMemcpyAsync(device.data(), host.data(), bytes, cudaMemcpyHostToDevice, stream.get()));
        stop.record(stream);
        stream.synchronize();
        best = std::max(best, double(bytes) / elapsedSeconds(start, stop));
    }
    return best;
}

} // namespace octwalk

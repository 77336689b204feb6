#pragma once
/// @file pinned_memory.h
/// Host memory that the device reads and writes at full bus speed: page-locked (cudaHostAlloc) when
/// a CUDA device is present, ordinary heap memory otherwise. The packed tree and the device results
/// live in it, so an upload or a download is one DMA transfer with no staging copy on the host.
/// A plain C++ header (no CUDA types): host/ allocates through it.

#include <cstddef>
#include <new>
#include <vector>

namespace octwalk {

/// At least `bytes` bytes aligned to 64; std::bad_alloc when neither pinned nor ordinary memory is left.
void* allocatePinnedHost(size_t bytes);
/// Frees what allocatePinnedHost returned (nullptr is ignored).
void freePinnedHost(void* p) noexcept;

/// Measured host-to-device bandwidth in bytes per second: `bytes` copied from pinned memory
/// `repeats` times, timed with CUDA events (the best of the repeats). 0 without a device.
double hostToDeviceBandwidth(size_t bytes, int repeats);

/// A standard allocator over allocatePinnedHost, for std::vector.
template<class T>
struct PinnedAllocator
{
    using value_type = T;

    PinnedAllocator() = default;
    template<class U>
    PinnedAllocator(const PinnedAllocator<U>&) noexcept
    {}

    T* allocate(size_t n) { return static_cast<T*>(allocatePinnedHost(n * sizeof(T))); }
    void deallocate(T* p, size_t) noexcept { freePinnedHost(p); }

    template<class U>
    bool operator==(const PinnedAllocator<U>&) const noexcept
    {
        return true;
    }
    template<class U>
    bool operator!=(const PinnedAllocator<U>&) const noexcept
    {
        return false;
    }
};

template<class T>
using PinnedVector = std::vector<T, PinnedAllocator<T>>;

} // namespace octwalk

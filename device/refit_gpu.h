#pragma once
/// @file refit_gpu.h
/// The refit on the device: twin of host/cpu/refit_cpu.h, the same common/refit.h functions on views
/// pointing at device memory: the leaves, each internal node as soon as its last child is done (one
/// launch climbs the whole tree), the bodies, the groups. refit_gpu.cu is compiled without fused
/// multiply-adds (-fmad=false), and each node combines its children in octant order as the twin's
/// level-by-level pass does, so every word equals the CPU twin's bit for bit. Built from refit_gpu.cu with CUDA, from
/// gpu_none.cpp without (then everything throws BackendError).

#include <cstdint>
#include <memory>

#include "common/refit.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// The device's working memory of refitGpu: each node's parent, each internal node's number of children
/// and the count of those done (grown as trees grow, kept between refits).
class GpuRefitScratch
{
public:
    GpuRefitScratch();
    ~GpuRefitScratch();
    GpuRefitScratch(const GpuRefitScratch&)            = delete;
    GpuRefitScratch& operator=(const GpuRefitScratch&) = delete;

    struct Impl;
    Impl& impl() { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
};

/// Launches the refit on stream, asynchronously.
/// @param[in,out] deviceView  as for refitCpu, every pointer to device memory
/// @param[in,out] scratch     working memory, not shared with a refit still queued on another stream
void refitGpu(const RefitView& deviceView, GpuStream stream, GpuRefitScratch& scratch);

/// The device buffers of a refit of one packed tree: topology, double positions and masses, working
/// memory and outputs. Tests and benchmarks use it with host copies; the device-resident state of a
/// run will own the positions itself.
class GpuRefit
{
public:
    GpuRefit();
    ~GpuRefit();
    GpuRefit(const GpuRefit&)            = delete;
    GpuRefit& operator=(const GpuRefit&) = delete;

    /// Uploads the topology (children, leafRange, groupRange), keeps theta, the MAC and the
    /// quadrupole switch, and sizes the device arrays; the host view's other pointers are not read.
    void setTopology(const RefitView& host);

    /// Uploads the current positions and masses (numBodies of setTopology's view, tree order).
    void setBodies(const Vec3d* pos, const double* mass);

    /// Refits on the device and waits for it; returns the device time in seconds (CUDA events).
    double refit();

    /// Downloads nodeMac, nodeCom, nodeQuad, bodies, groupCenter and groupHalf into the output
    /// arrays of host (sized as setTopology's view).
    void download(const RefitView& host);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace octwalk

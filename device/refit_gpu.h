#pragma once
/// @file refit_gpu.h
/// The refit on the device: twin of host/cpu/refit_cpu.h, the same common/refit.h functions on views
/// pointing at device memory, one launch per step of the order (leaves with their bodies' float copies,
/// each internal level from the deepest, groups); a team of lanes gathers each node's inputs into shared
/// memory for its first lane. refit_gpu.cu is compiled without fused multiply-adds (-fmad=false),
/// so every word equals the CPU twin's bit for bit. Built from refit_gpu.cu with CUDA, from
/// gpu_none.cpp without (then everything throws BackendError).

#include <cstdint>
#include <memory>

#include "common/refit.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// Launches the refit on stream, asynchronously.
/// @param[in,out] deviceView  as for refitCpu, every pointer to device memory
/// @param[in]     levels      the internal nodes by level, host memory
void refitGpu(const RefitView& deviceView, const RefitLevels& levels, GpuStream stream);

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

    /// Uploads the topology (children, leafRange, groupRange), keeps the levels, theta, MAC and
    /// quadrupole switch, and sizes the device arrays; the host view's other pointers are not read.
    void setTopology(const RefitView& host, const RefitLevels& levels);

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

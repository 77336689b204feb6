#pragma once
/// @file g6_gpu.h
/// The device backend of libg6 behind a plain header (no CUDA types); twin of host/cpu/g6_cpu.h with
/// the same methods. j-particles live on the device; setJParticle stages a particle on the host and
/// marks its address dirty, and only dirty addresses are uploaded (before the next force calculation,
/// or at flush()). All j-particles in use are predicted on the device, in double, when a calculation
/// needs a time or a particle that is not predicted yet. startForces returns once the work is queued;
/// finishForces waits. Built from g6_gpu.cu with CUDA; without CUDA g6GpuAvailable() is false and the
/// constructor throws BackendError. Every CUDA failure throws BackendError.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/hermite.h"

namespace octwalk {

/// True when this build has CUDA and a device is present. Never throws.
bool g6GpuAvailable();

/// Timing of the last force calculation, from CUDA events.
struct G6GpuTimes
{
    double predictSeconds  = 0; ///< upload of dirty j-particles and prediction
    double forceSeconds    = 0; ///< force kernel and the reduction of its partial sums
    double transferSeconds = 0; ///< i-particles to the device and results back
};

class G6Gpu
{
public:
    explicit G6Gpu(G6Precision precision);
    ~G6Gpu();
    G6Gpu(const G6Gpu&)            = delete;
    G6Gpu& operator=(const G6Gpu&) = delete;

    void reserve(int count);
    void setJParticle(int address, const G6JParticle& p);
    void setTime(double ti);
    /// Uploads the staged j-particles now.
    void flush();
    void startForces(const G6IBlock& block);
    void finishForces(const G6Outputs& out);
    void neighbourLists(std::vector<int64_t>& offset, std::vector<int32_t>& list);
    G6GpuTimes lastTimes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace octwalk

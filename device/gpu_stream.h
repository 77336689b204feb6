#pragma once
/// @file gpu_stream.h
/// An opaque CUDA stream for the launchers' plain headers: host/ and tests/ pass it along without
/// seeing a CUDA type. It does not own the stream (device/device_buffer.cuh's Stream does).

namespace octwalk {

struct GpuStream
{
    /// A cudaStream_t; nullptr is the legacy default stream.
    void* handle = nullptr;
};

} // namespace octwalk

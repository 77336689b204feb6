#pragma once
/// @file device_buffer.cuh
/// RAII owners of CUDA resources: grow-only device and pinned host buffers, a stream, an event.
/// Include from .cu files only. Destructors release without throwing (errors there are ignored:
/// nothing useful can be done with them during unwinding).

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "common/phases.h"
#include "device/cuda_check.cuh"

namespace octwalk {

namespace detail {

/// The next capacity for a grow-only buffer: half again the old one, so lists that creep up from
/// one evaluation to the next do not reallocate every time.
inline size_t grownCapacity(size_t needed, size_t capacity)
{
    size_t grown = capacity + capacity / 2;
    return needed > grown ? needed : grown;
}

[[noreturn]] inline void throwAllocationError(const char* what, const char* name, size_t bytes, cudaError_t err)
{
    cudaGetLastError();
    throw BackendError(std::string(what) + " of " + std::to_string(bytes) + " bytes for " + name +
                       " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

/// Allocates the grown capacity, or exactly what is needed when the headroom does not fit.
template<class Alloc>
size_t allocateGrown(Alloc alloc, void** ptr, size_t needed, size_t capacity, size_t elementSize, const char* what,
                     const char* name)
{
    size_t wanted = grownCapacity(needed, capacity);
    if (alloc(ptr, wanted * elementSize) == cudaSuccess) return wanted;
    cudaGetLastError();
    cudaError_t err = alloc(ptr, needed * elementSize);
    if (err != cudaSuccess)
    {
        *ptr = nullptr;
        throwAllocationError(what, name, needed * elementSize, err);
    }
    return needed;
}

} // namespace detail

/// Device array that only grows; its contents are not kept across a growth.
template<class T>
class DeviceBuffer
{
public:
    explicit DeviceBuffer(const char* name) : name_(name) {}
    ~DeviceBuffer() { release(); }
    DeviceBuffer(const DeviceBuffer&)            = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    /// Ensures room for n elements; allocates only when n exceeds the capacity.
    void reserve(size_t n)
    {
        if (n <= capacity_) return;
        release();
        void* ptr = nullptr;
        capacity_ = detail::allocateGrown([](void** p, size_t bytes) { return cudaMalloc(p, bytes); }, &ptr, n,
                                          capacity_, sizeof(T), "cudaMalloc", name_);
        data_     = static_cast<T*>(ptr);
    }

    T* data() const { return data_; }
    size_t capacity() const { return capacity_; }
    /// Exchanges the two buffers' memory (a double buffer's turn).
    void swap(DeviceBuffer& other)
    {
        std::swap(data_, other.data_);
        std::swap(capacity_, other.capacity_);
    }

private:
    void release()
    {
        if (data_) cudaFree(data_);
        data_     = nullptr;
        capacity_ = 0;
    }

    const char* name_;
    T* data_         = nullptr;
    size_t capacity_ = 0;
};

/// Page-locked host array that only grows (asynchronous copies need it); contents not kept on growth.
template<class T>
class PinnedBuffer
{
public:
    explicit PinnedBuffer(const char* name) : name_(name) {}
    ~PinnedBuffer() { release(); }
    PinnedBuffer(const PinnedBuffer&)            = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    void reserve(size_t n)
    {
        if (n <= capacity_) return;
        release();
        void* ptr = nullptr;
        capacity_ = detail::allocateGrown([](void** p, size_t bytes) { return cudaMallocHost(p, bytes); }, &ptr, n,
                                          capacity_, sizeof(T), "cudaMallocHost", name_);
        data_     = static_cast<T*>(ptr);
    }

    T* data() const { return data_; }

private:
    void release()
    {
        if (data_) cudaFreeHost(data_);
        data_     = nullptr;
        capacity_ = 0;
    }

    const char* name_;
    T* data_         = nullptr;
    size_t capacity_ = 0;
};

class Stream
{
public:
    Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
    ~Stream() { cudaStreamDestroy(stream_); }
    Stream(const Stream&)            = delete;
    Stream& operator=(const Stream&) = delete;

    cudaStream_t get() const { return stream_; }
    void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

private:
    cudaStream_t stream_ = nullptr;
};

class Event
{
public:
    Event() { CUDA_CHECK(cudaEventCreate(&event_)); }
    ~Event() { cudaEventDestroy(event_); }
    Event(const Event&)            = delete;
    Event& operator=(const Event&) = delete;

    void record(const Stream& stream) { CUDA_CHECK(cudaEventRecord(event_, stream.get())); }
    cudaEvent_t get() const { return event_; }

private:
    cudaEvent_t event_ = nullptr;
};

/// An executable CUDA graph: the work captured from a stream once (capture), replayed with one call (launch).
class Graph
{
public:
    Graph() = default;
    ~Graph() { reset(); }
    Graph(const Graph&)            = delete;
    Graph& operator=(const Graph&) = delete;

    /// Replaces the graph by what enqueue() queues on stream s (captured, not run).
    template<class Enqueue>
    void capture(cudaStream_t s, Enqueue enqueue)
    {
        reset();
        CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
        cudaGraph_t graph = nullptr;
        try
        {
            enqueue();
        }
        catch (...)
        {
            // The stream leaves capture mode either way; what was captured is dropped with the error.
            if (cudaStreamEndCapture(s, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
            throw;
        }
        CUDA_CHECK(cudaStreamEndCapture(s, &graph));
        const cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0);
        cudaGraphDestroy(graph);
        CUDA_CHECK(made);
    }
    /// Queues the captured work on stream s.
    void launch(cudaStream_t s) const { CUDA_CHECK(cudaGraphLaunch(exec_, s)); }
    bool empty() const { return exec_ == nullptr; }
    void reset()
    {
        if (exec_) cudaGraphExecDestroy(exec_);
        exec_ = nullptr;
    }

private:
    cudaGraphExec_t exec_ = nullptr;
};

/// Seconds from start to stop; both must have completed.
inline double elapsedSeconds(const Event& start, const Event& stop)
{
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    return 1e-3 * double(ms);
}

/// When event completed, on the host's steady clock (steadyClockSeconds()), from an anchor: an event
/// recorded after it that has completed, and the host clock read once the anchor had completed (as late
/// as that read, and so is the result: anchorOnHostClock keeps it within a poll).
inline double hostSecondsOf(const Event& event, const Event& anchor, double anchorOnHost)
{
    return anchorOnHost - elapsedSeconds(event, anchor);
}

/// Records anchor on stream s and returns the host's steady clock read as soon as the anchor has
/// completed, for hostSecondsOf. The caller has just waited for s, so nothing is queued before the
/// anchor and polling it takes only the record's round trip. A clock read after a blocking wait is as
/// late as the waiting thread's wake-up, and every interval mapped from it lies that late: the pipeline's
/// copy lane, mapped so, ended 0.05-2.8 ms after the build thread had seen the copy complete (on an H200 at
/// 2^22), while the host build kept every core busy.
inline double anchorOnHostClock(const Event& anchor, cudaStream_t s)
{
    CUDA_CHECK(cudaEventRecord(anchor.get(), s));
    cudaError_t status = cudaEventQuery(anchor.get());
    while (status == cudaErrorNotReady) status = cudaEventQuery(anchor.get());
    CUDA_CHECK(status);
    return steadyClockSeconds();
}

} // namespace octwalk

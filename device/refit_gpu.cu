#include "device/refit_gpu.h"

#include <vector>

#include "device/device_buffer.cuh"
#include "device/device_util.cuh"

namespace octwalk {

namespace {

constexpr int kRefitBlock = 128;

__global__ void refitLeavesKernel(RefitView v)
{
    const int32_t f = int32_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (f < v.numLeaves) refitLeaf(v, f);
}

__global__ void refitBodiesKernel(RefitView v)
{
    const int32_t k = int32_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < v.numBodies) refitBody(v, k);
}

__global__ void refitLevelKernel(RefitView v, int32_t begin, int32_t end)
{
    const int32_t c = begin + int32_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c < end) refitInternal(v, c);
}

__global__ void refitGroupsKernel(RefitView v)
{
    const int32_t g = int32_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (g < v.numGroups) refitGroup(v, g);
}

template<class T>
void upload(DeviceBuffer<T>& buffer, const T* host, size_t n, cudaStream_t stream)
{
    buffer.reserve(n);
    if (n > 0) CUDA_CHECK(cudaMemcpyAsync(buffer.data(), host, n * sizeof(T), cudaMemcpyHostToDevice, stream));
}

template<class T>
void download(T* host, const DeviceBuffer<T>& buffer, size_t n, cudaStream_t stream)
{
    if (n > 0) CUDA_CHECK(cudaMemcpyAsync(host, buffer.data(), n * sizeof(T), cudaMemcpyDeviceToHost, stream));
}

} // namespace

void refitGpu(const RefitView& v, const RefitLevels& levels, GpuStream stream)
{
    cudaStream_t s = cudaStreamOf(stream);
    if (v.numLeaves > 0)
    {
        refitLeavesKernel<<<blocksFor(v.numLeaves, kRefitBlock), kRefitBlock, 0, s>>>(v);
        CUDA_CHECK_LAUNCH();
    }
    if (v.numBodies > 0)
    {
        refitBodiesKernel<<<blocksFor(v.numBodies, kRefitBlock), kRefitBlock, 0, s>>>(v);
        CUDA_CHECK_LAUNCH();
    }
    // One launch per level: the stream orders them, so a level reads only finished children.
    for (int32_t level = levels.numLevels - 1; level >= 0; --level)
    {
        const int32_t begin = levels.internalFirst[level], end = levels.internalFirst[level + 1];
        if (end == begin) continue;
        refitLevelKernel<<<blocksFor(end - begin, kRefitBlock), kRefitBlock, 0, s>>>(v, begin, end);
        CUDA_CHECK_LAUNCH();
    }
    if (v.numGroups > 0)
    {
        refitGroupsKernel<<<blocksFor(v.numGroups, kRefitBlock), kRefitBlock, 0, s>>>(v);
        CUDA_CHECK_LAUNCH();
    }
}

struct GpuRefit::Impl
{
    Stream stream;
    Event start, stop;
    DeviceBuffer<U4> children{"refit children"};
    DeviceBuffer<I2> leafRange{"refit leafRange"}, groupRange{"refit groupRange"};
    DeviceBuffer<Vec3d> pos{"refit positions"};
    DeviceBuffer<double> mass{"refit masses"};
    DeviceBuffer<Moments> moments{"refit moments"};
    DeviceBuffer<F4> nodeMac{"refit nodeMac"}, nodeCom{"refit nodeCom"}, nodeQuad{"refit nodeQuad"};
    DeviceBuffer<F4> bodies{"refit bodies"}, groupCenter{"refit groupCenter"}, groupHalf{"refit groupHalf"};
    std::vector<int32_t> internalFirst;
    RefitView view{};

    size_t numNodes() const { return size_t(view.numInternal) + size_t(view.numLeaves); }
};

GpuRefit::GpuRefit() : impl_(std::make_unique<Impl>()) {}

GpuRefit::~GpuRefit() = default;

void GpuRefit::setTopology(const RefitView& host, const RefitLevels& levels)
{
    Impl& m           = *impl_;
    cudaStream_t s    = m.stream.get();
    m.view            = host;
    const size_t n    = m.numNodes();
    const size_t nInt = size_t(host.numInternal);
    upload(m.children, host.children, 2 * nInt, s);
    upload(m.leafRange, host.leafRange, size_t(host.numLeaves), s);
    upload(m.groupRange, host.groupRange, size_t(host.numGroups), s);
    m.pos.reserve(size_t(host.numBodies));
    m.mass.reserve(size_t(host.numBodies));
    m.moments.reserve(n);
    m.nodeMac.reserve(n);
    m.nodeCom.reserve(n);
    m.nodeQuad.reserve(2 * n);
    m.bodies.reserve(size_t(host.numBodies));
    m.groupCenter.reserve(size_t(host.numGroups));
    m.groupHalf.reserve(size_t(host.numGroups));
    m.internalFirst.assign(levels.internalFirst, levels.internalFirst + levels.numLevels + 1);

    m.view.children    = m.children.data();
    m.view.leafRange   = m.leafRange.data();
    m.view.groupRange  = m.groupRange.data();
    m.view.pos         = m.pos.data();
    m.view.mass        = m.mass.data();
    m.view.moments     = m.moments.data();
    m.view.nodeMac     = m.nodeMac.data();
    m.view.nodeCom     = m.nodeCom.data();
    m.view.nodeQuad    = m.nodeQuad.data();
    m.view.bodies      = m.bodies.data();
    m.view.groupCenter = m.groupCenter.data();
    m.view.groupHalf   = m.groupHalf.data();
    m.stream.synchronize();
}

void GpuRefit::setBodies(const Vec3d* pos, const double* mass)
{
    Impl& m = *impl_;
    upload(m.pos, pos, size_t(m.view.numBodies), m.stream.get());
    upload(m.mass, mass, size_t(m.view.numBodies), m.stream.get());
    m.stream.synchronize();
}

double GpuRefit::refit()
{
    Impl& m = *impl_;
    m.start.record(m.stream);
    refitGpu(m.view, {m.internalFirst.data(), int32_t(m.internalFirst.size()) - 1}, GpuStream{m.stream.get()});
    m.stop.record(m.stream);
    m.stream.synchronize();
    return elapsedSeconds(m.start, m.stop);
}

void GpuRefit::download(const RefitView& host)
{
    Impl& m        = *impl_;
    cudaStream_t s = m.stream.get();
    const size_t n = m.numNodes();
    octwalk::download(host.nodeMac, m.nodeMac, n, s);
    octwalk::download(host.nodeCom, m.nodeCom, n, s);
    octwalk::download(host.nodeQuad, m.nodeQuad, 2 * n, s);
    octwalk::download(host.bodies, m.bodies, size_t(m.view.numBodies), s);
    octwalk::download(host.groupCenter, m.groupCenter, size_t(m.view.numGroups), s);
    octwalk::download(host.groupHalf, m.groupHalf, size_t(m.view.numGroups), s);
    m.stream.synchronize();
}

} // namespace octwalk

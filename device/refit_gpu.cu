#include "device/refit_gpu.h"

#include <vector>

#include "device/device_buffer.cuh"
#include "device/device_util.cuh"

namespace octwalk {

namespace {

constexpr int kRefitBlock = 128;

__global__ void refitBodiesKernel(RefitView v)
{
    const int32_t k = int32_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < v.numBodies) refitBody(v, k);
}

/// Each node's parent (the root keeps the -1 it was set to), each internal node's number of children, and no
/// arrivals yet.
__global__ void refitLinksKernel(RefitView v, int32_t* parent, int32_t* childCount, unsigned* arrivals)
{
    const int32_t c = int32_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= v.numInternal) return;
    const U4 a = v.children[2 * c], b = v.children[2 * c + 1];
    const uint32_t entries[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    int32_t count             = 0;
    for (uint32_t e : entries)
    {
        if (e == kEmptyChild) continue;
        parent[childNode(e)] = c;
        ++count;
    }
    childCount[c] = count;
    arrivals[c]   = 0;
}

/// A node's moments as another thread's fence left them: read from L2, past this SM's L1, which is not kept
/// coherent with the other SMs' stores within a launch.
__device__ Moments momentsFromL2(const Moments* p)
{
    static_assert(sizeof(Moments) % sizeof(double) == 0, "Moments is a sequence of doubles");
    Moments m;
    const double* from = reinterpret_cast<const double*>(p);
    double* to         = reinterpret_cast<double*>(&m);
    for (size_t k = 0; k < sizeof(Moments) / sizeof(double); ++k) to[k] = __ldcg(from + k);
    return m;
}

/// One thread per leaf refits it, then climbs: at each parent it counts its arrival, and the thread that arrives
/// last (its siblings are done) refits the parent and climbs on. Every internal node is refitted once, from its
/// children in octant order as on the CPU twin, in one launch where one per level waited for the level's slowest
/// node and the launch between them.
__global__ void refitUpwardKernel(RefitView v, const int32_t* parent, const int32_t* childCount, unsigned* arrivals)
{
    const int32_t f = int32_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (f >= v.numLeaves) return;
    refitLeaf(v, f);
    for (int32_t up = parent[v.numInternal + f]; up >= 0; up = parent[up])
    {
        // This thread's moments reach L2 before its arrival is counted.
        __threadfence();
        if (atomicAdd(arrivals + up, 1u) + 1u < unsigned(childCount[up])) return;
        __threadfence();
        refitInternalFrom(v, up, [&](int32_t n) { return momentsFromL2(v.moments + n); });
    }
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

struct GpuRefitScratch::Impl
{
    DeviceBuffer<int32_t> parent{"refit parents"}, childCount{"refit children counts"};
    DeviceBuffer<unsigned> arrivals{"refit arrivals"};
};

GpuRefitScratch::GpuRefitScratch() : impl_(std::make_unique<Impl>()) {}

GpuRefitScratch::~GpuRefitScratch() = default;

void refitGpu(const RefitView& v, GpuStream stream, GpuRefitScratch& scratch)
{
    cudaStream_t s               = cudaStreamOf(stream);
    GpuRefitScratch::Impl& links = scratch.impl();
    const size_t numNodes        = size_t(v.numInternal) + size_t(v.numLeaves);
    links.parent.reserve(numNodes);
    links.childCount.reserve(size_t(v.numInternal));
    links.arrivals.reserve(size_t(v.numInternal));
    if (numNodes > 0) CUDA_CHECK(cudaMemsetAsync(links.parent.data(), 0xff, numNodes * sizeof(int32_t), s));
    if (v.numInternal > 0)
    {
        refitLinksKernel<<<blocksFor(v.numInternal, kRefitBlock), kRefitBlock, 0, s>>>(
            v, links.parent.data(), links.childCount.data(), links.arrivals.data());
        CUDA_CHECK_LAUNCH();
    }
    if (v.numLeaves > 0)
    {
        refitUpwardKernel<<<blocksFor(v.numLeaves, kRefitBlock), kRefitBlock, 0, s>>>(
            v, links.parent.data(), links.childCount.data(), links.arrivals.data());
        CUDA_CHECK_LAUNCH();
    }
    if (v.numBodies > 0)
    {
        refitBodiesKernel<<<blocksFor(v.numBodies, kRefitBlock), kRefitBlock, 0, s>>>(v);
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
    GpuRefitScratch scratch;
    RefitView view{};

    size_t numNodes() const { return size_t(view.numInternal) + size_t(view.numLeaves); }
};

GpuRefit::GpuRefit() : impl_(std::make_unique<Impl>()) {}

GpuRefit::~GpuRefit() = default;

void GpuRefit::setTopology(const RefitView& host)
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
    refitGpu(m.view, GpuStream{m.stream.get()}, m.scratch);
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

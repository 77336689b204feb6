#include "device/refit_gpu.h"

#include <vector>

#include "device/device_buffer.cuh"
#include "device/device_util.cuh"

namespace octwalk {

namespace {

constexpr int kRefitBlock = 128;

/// The refit's kernels are bound by the latency of their loads: a thread that summed a node's children or bodies
/// one after another waited for each. Here the lanes of a team gather one node's inputs into shared memory at
/// once, and the team's first lane refits the node from that copy with the same common/refit.h function, in the
/// same order, so the words are the CPU twin's bit for bit.
/// An internal node: a lane per octant.
constexpr int kChildLanes    = 8;
constexpr int kNodesPerBlock = kRefitBlock / kChildLanes;
/// A leaf: its bodies (at most n_leaf, 16 by default) four at a time; a larger leaf is read in place.
constexpr int kLeafLanes      = 4;
constexpr int kLeavesPerBlock = kRefitBlock / kLeafLanes;
constexpr int kLeafStaged     = 16;
/// A group: its float bodies (at most n_group, 64 by default) a warp at a time; a larger group is read in place.
constexpr int kGroupLanes     = 32;
constexpr int kGroupsPerBlock = kRefitBlock / kGroupLanes;
constexpr int kGroupStaged    = 64;
/// A node's moments as doubles, the form in which shared memory holds them (Moments is not trivially constructible).
constexpr int kMomentWords = int(sizeof(Moments) / sizeof(double));
static_assert(sizeof(Moments) == kMomentWords * sizeof(double), "Moments is a sequence of doubles");
static_assert(32 % kChildLanes == 0 && 32 % kLeafLanes == 0 && kRefitBlock % 32 == 0, "teams within warps");

/// Refits each leaf from its bodies gathered into shared memory, and writes its bodies' float copies (the leaves
/// hold every body once).
__global__ void refitLeavesKernel(RefitView v)
{
    __shared__ Vec3d pos[kLeavesPerBlock][kLeafStaged];
    __shared__ double mass[kLeavesPerBlock][kLeafStaged];
    const int32_t team = int32_t(threadIdx.x) / kLeafLanes, lane = int32_t(threadIdx.x) % kLeafLanes;
    const int32_t f   = int32_t(blockIdx.x) * kLeavesPerBlock + team;
    const I2 range    = f < v.numLeaves ? v.leafRange[f] : I2{0, 0};
    const bool staged = range.y <= kLeafStaged;
    for (int32_t k = lane; k < range.y; k += kLeafLanes)
    {
        refitBody(v, range.x + k);
        if (!staged) continue;
        pos[team][k]  = v.pos[range.x + k];
        mass[team][k] = v.mass[range.x + k];
    }
    __syncwarp();
    if (lane != 0 || f >= v.numLeaves) return;
    if (staged) refitLeafFrom(v, f, pos[team], mass[team], 0);
    else refitLeaf(v, f);
}

/// Refits the internal nodes [begin, end) of one level from their children's moments, each gathered by the lane
/// of its octant into shared memory, in octant order.
__global__ void refitLevelKernel(RefitView v, int32_t begin, int32_t end)
{
    __shared__ double staged[kNodesPerBlock][kChildLanes][kMomentWords];
    const int32_t team = int32_t(threadIdx.x) / kChildLanes, lane = int32_t(threadIdx.x) % kChildLanes;
    const int32_t c = begin + int32_t(blockIdx.x) * kNodesPerBlock + team;
    // The node's eight child words, one a lane in octant order.
    const uint32_t entry     = c < end ? reinterpret_cast<const uint32_t*>(v.children + 2 * c)[lane] : kEmptyChild;
    const unsigned teamShift = unsigned(threadIdx.x % 32) & ~unsigned(kChildLanes - 1);
    const unsigned filled    = (__ballot_sync(0xffffffffu, entry != kEmptyChild) >> teamShift) & 0xffu;
    const int32_t slot       = __popc(filled & ((1u << lane) - 1u));
    if (entry != kEmptyChild)
    {
        const double* from = reinterpret_cast<const double*>(v.moments + childNode(entry));
        for (int32_t w = 0; w < kMomentWords; ++w) staged[team][slot][w] = from[w];
    }
    __syncwarp();
    if (lane != 0 || c >= end) return;
    const int32_t count = __popc(filled);
    const Moments* kids[kChildLanes];
    for (int32_t k = 0; k < count; ++k) kids[k] = reinterpret_cast<const Moments*>(staged[team][k]);
    refitInternalFrom(v, c, kids, count);
}

/// Each group's box from its float bodies gathered into shared memory.
__global__ void refitGroupsKernel(RefitView v)
{
    __shared__ F4 bodies[kGroupsPerBlock][kGroupStaged];
    const int32_t team = int32_t(threadIdx.x) / kGroupLanes, lane = int32_t(threadIdx.x) % kGroupLanes;
    const int32_t g   = int32_t(blockIdx.x) * kGroupsPerBlock + team;
    const I2 range    = g < v.numGroups ? v.groupRange[g] : I2{0, 0};
    const bool staged = range.y <= kGroupStaged;
    if (staged)
    {
        for (int32_t k = lane; k < range.y; k += kGroupLanes) bodies[team][k] = v.bodies[range.x + k];
    }
    __syncwarp();
    if (lane != 0 || g >= v.numGroups) return;
    if (staged) refitGroupFrom(v, g, bodies[team], 0);
    else refitGroup(v, g);
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
        refitLeavesKernel<<<blocksFor(v.numLeaves, kLeavesPerBlock), kRefitBlock, 0, s>>>(v);
        CUDA_CHECK_LAUNCH();
    }
    // One launch per level: the stream orders them, so a level reads only finished children.
    for (int32_t level = levels.numLevels - 1; level >= 0; --level)
    {
        const int32_t begin = levels.internalFirst[level], end = levels.internalFirst[level + 1];
        if (end == begin) continue;
        refitLevelKernel<<<blocksFor(end - begin, kNodesPerBlock), kRefitBlock, 0, s>>>(v, begin, end);
        CUDA_CHECK_LAUNCH();
    }
    if (v.numGroups > 0)
    {
        refitGroupsKernel<<<blocksFor(v.numGroups, kGroupsPerBlock), kRefitBlock, 0, s>>>(v);
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

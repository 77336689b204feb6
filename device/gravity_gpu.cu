// The CUDA device backend: the group walk (count, scan, write) and the body-node and body-leaf
// force kernels, all calling the same common/ functions as the CPU twin (host/walk_cpu.cpp).
//
// Read-only path: kernels take the views by value, whose members cannot carry __restrict__. In the
// walk kernels the reads happen inside common/walk.h, so every pointer those kernels write through
// is __restrict__, which lets nvcc prove the views' arrays unchanged and load them with
// ld.global.nc; the force kernels load explicitly with __ldg (both checked in the PTX).
//
// Timing: each phase is the interval between two CUDA events on the one stream. Upload includes
// the host's copy into pinned staging (overlapped with the transfers); scan includes the read-back
// of the list totals and the growth of the list buffers, since pass 2 cannot start before them.
//
// Determinism: every result is written by exactly one thread and summed in list order; the only
// atomic is an integer max on the overflow flag.
#include "device/gravity_gpu.h"

#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/std/functional>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/gravity.h"
#include "common/sfc.h"
#include "common/walk.h"
#include "device/cuda_check.cuh"
#include "device/device_buffer.cuh"
#include "common/errors.h"

namespace octwalk {

namespace {

/// Threads per block of the walk kernels (one thread per group). Small blocks spread the few
/// thousand groups of a typical tree over all SMs; the walk diverges per thread anyway.
constexpr int kWalkBlock = 32;
/// The walk stack is a local array sized for the deepest tree the host can build.
constexpr int32_t kWalkStackMax = walkStackCapacity(kMaxTreeLevel);
/// Force kernels run one warp per group (kForceWarps groups per block), each lane serving up to
/// kTargetsPerLane targets; larger groups take several passes. Groups average ~18 bodies at
/// n_group = 64 (Plummer, 2^20), so one block of n_group threads per group left most threads idle
/// (measured 1.4x slower on an H200); a warp serves groups of <= 32 bodies with one target per
/// lane and larger ones with two, which share each staged node.
constexpr int kWarp           = 32;
constexpr int kTargetsPerLane = 2;
constexpr int kTargetsPerWarp = kWarp * kTargetsPerLane;
constexpr int kForceWarps     = 4;
constexpr int kForceBlock     = kWarp * kForceWarps;
constexpr int kDirectBlock    = 128;
/// Alignment of each array inside the pinned staging buffers.
constexpr size_t kStagingAlign = 256;

// ---------------------------------------------------------------------------------------------
// Kernels

/// Explicit read-only loads for the force kernels, where nvcc does not always prove it alone.
__device__ inline F4 loadReadOnly(const F4* p)
{
    float4 v = __ldg(reinterpret_cast<const float4*>(p));
    return {v.x, v.y, v.z, v.w};
}

__device__ inline I2 loadReadOnly(const I2* p)
{
    int2 v = __ldg(reinterpret_cast<const int2*>(p));
    return {v.x, v.y};
}

/// Pass 1: one thread per group counts its list entries. overflowGroup receives 1 + the highest
/// group whose walk overflowed its stack (0: none).
__global__ void __launch_bounds__(kWalkBlock)
    countInteractionsKernel(TreeView tree, GroupView groups, int32_t capacity, int32_t* __restrict__ nodeCount,
                            int32_t* __restrict__ leafCount, int64_t* __restrict__ leafBodies,
                            int32_t* __restrict__ overflowGroup)
{
    int32_t g = int32_t(blockIdx.x) * kWalkBlock + int32_t(threadIdx.x);
    if (g >= groups.numGroups) return;
    uint32_t stack[kWalkStackMax];
    CountSink sink{tree.leafRange, tree.numInternal};
    if (walkGroup(tree, groups.center[g], groups.half[g], stack, capacity, sink) != WalkStatus::Ok)
    {
        atomicMax(overflowGroup, g + 1);
    }
    nodeCount[g]  = sink.nodes;
    leafCount[g]  = sink.leaves;
    leafBodies[g] = sink.leafBodies;
}

/// Pass 2: the same walk writes each group's entries at its offsets.
__global__ void __launch_bounds__(kWalkBlock)
    writeInteractionsKernel(TreeView tree, GroupView groups, int32_t capacity, const int64_t* __restrict__ nodeOffset,
                            const int64_t* __restrict__ leafOffset, int32_t* __restrict__ nodeList,
                            int32_t* __restrict__ leafList, int32_t* __restrict__ overflowGroup)
{
    int32_t g = int32_t(blockIdx.x) * kWalkBlock + int32_t(threadIdx.x);
    if (g >= groups.numGroups) return;
    uint32_t stack[kWalkStackMax];
    WriteSink sink{nodeList + nodeOffset[g], leafList + leafOffset[g]};
    if (walkGroup(tree, groups.center[g], groups.half[g], stack, capacity, sink) != WalkStatus::Ok)
    {
        atomicMax(overflowGroup, g + 1);
    }
}

/// The targets one lane serves in one pass of its warp over the group's lists: base + lane + 32 s
/// for slot s. slots is warp-uniform; lanes without a target in a slot compute on a dummy target
/// at the origin (the kernels guard r = 0) and discard the result, so the inner loops do not
/// branch on which lanes have targets.
struct LaneTargets
{
    Vec3f pos[kTargetsPerLane];
    int32_t index[kTargetsPerLane];
    Vec3f acc[kTargetsPerLane];
    float pot[kTargetsPerLane];
    int32_t end;
    int slots;

    __device__ LaneTargets(const F4* targets, int32_t base, int32_t groupEnd, int lane) : end(groupEnd)
    {
        slots = min(kTargetsPerLane, (groupEnd - base + kWarp - 1) / kWarp);
#pragma unroll
        for (int s = 0; s < kTargetsPerLane; ++s)
        {
            index[s] = base + lane + s * kWarp;
            pos[s]   = index[s] < end ? xyz(loadReadOnly(targets + index[s])) : Vec3f{0, 0, 0};
            acc[s]   = {0, 0, 0};
            pot[s]   = 0;
        }
    }

    __device__ bool active(int s) const { return index[s] < end; }
};

/// What the body-node kernel needs of one list entry: centre of mass and mass, and the quadrupole.
struct NodeEntry
{
    F4 com;
    F4 quadA;
    float2 quadB;
};

__device__ inline NodeEntry loadNodeEntry(const TreeView& tree, int32_t n)
{
    F4 b = loadReadOnly(tree.nodeQuad + 2 * n + 1);
    return {loadReadOnly(tree.nodeCom + n), loadReadOnly(tree.nodeQuad + 2 * n), make_float2(b.x, b.y)};
}

/// Body-node forces: one warp per group (see kTargetsPerLane for why). The group's node list is
/// staged through the warp's shared tile 32 entries at a time, and every target sums the whole
/// list in list order, like the CPU twin. Each lane fetches its entry of the next tile before the
/// warp computes on the current one, so the scattered node loads overlap the arithmetic.
__global__ void __launch_bounds__(kForceBlock)
    bodyNodeKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ nodeOffset,
                   const int32_t* __restrict__ nodeList, const F4* __restrict__ targets, float eps2,
                   F4* __restrict__ nodeAcc)
{
    __shared__ NodeEntry sNode[kForceWarps][kWarp];

    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * kForceWarps + warp;
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const I2 range = loadReadOnly(groups.range + g);
    const int64_t listBegin = nodeOffset[g], listEnd = nodeOffset[g + 1];
    NodeEntry* tileNodes = sNode[warp];

    for (int32_t base = range.x; base < range.x + range.y; base += kTargetsPerWarp)
    {
        LaneTargets t(targets, base, range.x + range.y, lane);
        NodeEntry next{};
        if (listBegin + lane < listEnd) next = loadNodeEntry(tree, nodeList[listBegin + lane]);
        for (int64_t tile = listBegin; tile < listEnd; tile += kWarp)
        {
            const int count = int(min(int64_t(kWarp), listEnd - tile));
            __syncwarp();
            tileNodes[lane] = next;
            __syncwarp();
            if (tile + kWarp + lane < listEnd) next = loadNodeEntry(tree, nodeList[tile + kWarp + lane]);
#pragma unroll 4
            for (int k = 0; k < count; ++k)
            {
                NodeEntry e = tileNodes[k];
                SymTensor<float> q{e.quadA.x, e.quadA.y, e.quadA.z, e.quadA.w, e.quadB.x, e.quadB.y};
#pragma unroll
                for (int s = 0; s < kTargetsPerLane; ++s)
                {
                    if (s < t.slots) bodyNode(xyz(e.com) - t.pos[s], e.com.w, q, eps2, t.acc[s], t.pot[s]);
                }
            }
        }
#pragma unroll
        for (int s = 0; s < kTargetsPerLane; ++s)
        {
            if (t.active(s)) nodeAcc[t.index[s]] = {t.acc[s].x, t.acc[s].y, t.acc[s].z, t.pot[s]};
        }
    }
}

/// Index of the leaf holding flattened body f: the last l with leafStart[l] <= f (empty leaves,
/// which share their start with the next one, are skipped by taking the last).
__device__ inline int findLeaf(const int32_t* leafStart, int numLeaves, int32_t f)
{
    int lo = 0, hi = numLeaves - 1;
    while (lo < hi)
    {
        int mid = (lo + hi + 1) / 2;
        if (leafStart[mid] <= f) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/// Body-leaf forces, and the final sum: one warp per group. The leaf list is taken 32 leaves at a
/// time; a warp scan of their body counts flattens them into one sequence of bodies (list order,
/// then tree order within a leaf, like the CPU twin), staged through the warp's shared tile 32
/// bodies at a time. out[i] = nodeAcc[i] + leaf sum, as host/solver.cpp combines them.
__global__ void __launch_bounds__(kForceBlock)
    bodyLeafKernel(TreeView tree, GroupView groups, const int64_t* __restrict__ leafOffset,
                   const int32_t* __restrict__ leafList, const F4* __restrict__ bodies, const F4* __restrict__ targets,
                   bool skipSelf, float eps2, const F4* __restrict__ nodeAcc, F4* __restrict__ out)
{
    using WarpScan = cub::WarpScan<int32_t>;
    __shared__ typename WarpScan::TempStorage scanStorage[kForceWarps];
    __shared__ int32_t sLeafFirst[kForceWarps][kWarp]; // first body (tree order) of each leaf of the chunk
    __shared__ int32_t sLeafStart[kForceWarps][kWarp]; // its position in the chunk's flattened sequence
    __shared__ F4 sBody[kForceWarps][kWarp];
    __shared__ int32_t sBodyIndex[kForceWarps][kWarp];

    const int lane  = int(threadIdx.x) % kWarp;
    const int warp  = int(threadIdx.x) / kWarp;
    const int32_t g = int32_t(blockIdx.x) * kForceWarps + warp;
    if (g >= groups.numGroups) return; // the whole warp: the kernel has no block-wide barrier
    const I2 range = loadReadOnly(groups.range + g);
    const int64_t listBegin = leafOffset[g], listEnd = leafOffset[g + 1];
    int32_t* leafFirst = sLeafFirst[warp];
    int32_t* leafStart = sLeafStart[warp];
    F4* body           = sBody[warp];
    int32_t* bodyIndex = sBodyIndex[warp];

    for (int32_t base = range.x; base < range.x + range.y; base += kTargetsPerWarp)
    {
        LaneTargets t(targets, base, range.x + range.y, lane);
        for (int64_t chunk = listBegin; chunk < listEnd; chunk += kWarp)
        {
            const int numLeaves = int(min(int64_t(kWarp), listEnd - chunk));
            I2 leaf{0, 0};
            if (lane < numLeaves) leaf = loadReadOnly(tree.leafRange + (leafList[chunk + lane] - tree.numInternal));
            int32_t start = 0, chunkBodies = 0;
            __syncwarp();
            WarpScan(scanStorage[warp]).ExclusiveSum(leaf.y, start, chunkBodies);
            leafFirst[lane] = leaf.x;
            leafStart[lane] = start;
            __syncwarp();
            for (int32_t tile = 0; tile < chunkBodies; tile += kWarp)
            {
                const int count = min(kWarp, chunkBodies - tile);
                if (lane < count)
                {
                    int32_t f       = tile + lane;
                    int l           = findLeaf(leafStart, numLeaves, f);
                    int32_t j       = leafFirst[l] + (f - leafStart[l]);
                    body[lane]      = loadReadOnly(bodies + j);
                    bodyIndex[lane] = j;
                }
                __syncwarp();
                for (int k = 0; k < count; ++k)
                {
                    F4 b      = body[k];
                    int32_t j = bodyIndex[k];
#pragma unroll
                    for (int s = 0; s < kTargetsPerLane; ++s)
                    {
                        if (s < t.slots && !(skipSelf && j == t.index[s]))
                        {
                            bodyBody(xyz(b) - t.pos[s], b.w, eps2, t.acc[s], t.pot[s]);
                        }
                    }
                }
                __syncwarp();
            }
        }
#pragma unroll
        for (int s = 0; s < kTargetsPerLane; ++s)
        {
            if (!t.active(s)) continue;
            F4 node = loadReadOnly(nodeAcc + t.index[s]);
            out[t.index[s]] = {node.x + t.acc[s].x, node.y + t.acc[s].y, node.z + t.acc[s].z, node.w + t.pot[s]};
        }
    }
}

/// All-pairs forces on the listed bodies, tiled through shared memory, accumulated in T.
template<class T>
__global__ void __launch_bounds__(kDirectBlock)
    directKernel(const F4* __restrict__ bodies, int32_t numBodies, const int32_t* __restrict__ targetIndex,
                 int32_t numTargets, float eps2, F4* __restrict__ out)
{
    __shared__ F4 sBody[kDirectBlock];
    const int tid      = int(threadIdx.x);
    const int32_t t    = int32_t(blockIdx.x) * kDirectBlock + tid;
    const bool active  = t < numTargets;
    const int32_t self = active ? targetIndex[t] : -1;
    const F4 p         = active ? loadReadOnly(bodies + self) : F4{0, 0, 0, 0};
    const Vec3<T> target{T(p.x), T(p.y), T(p.z)};
    Vec3<T> acc{0, 0, 0};
    T pot = 0;
    for (int32_t tile = 0; tile < numBodies; tile += kDirectBlock)
    {
        const int count = min(kDirectBlock, numBodies - tile);
        if (tid < count) sBody[tid] = loadReadOnly(bodies + tile + tid);
        __syncthreads();
        if (active)
        {
            for (int k = 0; k < count; ++k)
            {
                if (tile + k == self) continue;
                F4 s = sBody[k];
                bodyBody(Vec3<T>{T(s.x), T(s.y), T(s.z)} - target, T(s.w), T(eps2), acc, pot);
            }
        }
        __syncthreads();
    }
    if (active) out[t] = {float(acc.x), float(acc.y), float(acc.z), float(pot)};
}

// ---------------------------------------------------------------------------------------------
// Host helpers

size_t alignStaging(size_t bytes) { return (bytes + kStagingAlign - 1) / kStagingAlign * kStagingAlign; }

int blocksFor(int64_t items, int blockSize) { return int((items + blockSize - 1) / blockSize); }

/// One array moved between host and device through the pinned staging buffer.
struct Transfer
{
    void* dst;
    const void* src;
    size_t bytes;
};

/// Copies each host array into pinned staging and queues its cudaMemcpyAsync at once, so the
/// host copy of the next array overlaps the transfer of this one.
void uploadStaged(const std::vector<Transfer>& transfers, PinnedBuffer<unsigned char>& staging, cudaStream_t stream)
{
    size_t total = 0;
    for (const Transfer& t : transfers) total += alignStaging(t.bytes);
    staging.reserve(total);
    size_t offset = 0;
    for (const Transfer& t : transfers)
    {
        if (t.bytes == 0) continue;
        std::memcpy(staging.data() + offset, t.src, t.bytes);
        CUDA_CHECK(cudaMemcpyAsync(t.dst, staging.data() + offset, t.bytes, cudaMemcpyHostToDevice, stream));
        offset += alignStaging(t.bytes);
    }
}

/// Queues the device-to-staging copies; finishDownload() moves them out once the stream is done.
void enqueueDownload(const std::vector<Transfer>& transfers, PinnedBuffer<unsigned char>& staging, cudaStream_t stream)
{
    size_t total = 0;
    for (const Transfer& t : transfers) total += alignStaging(t.bytes);
    staging.reserve(total);
    size_t offset = 0;
    for (const Transfer& t : transfers)
    {
        if (t.bytes == 0) continue;
        CUDA_CHECK(cudaMemcpyAsync(staging.data() + offset, t.src, t.bytes, cudaMemcpyDeviceToHost, stream));
        offset += alignStaging(t.bytes);
    }
}

void finishDownload(const std::vector<Transfer>& transfers, const PinnedBuffer<unsigned char>& staging)
{
    size_t offset = 0;
    for (const Transfer& t : transfers)
    {
        if (t.bytes == 0) continue;
        std::memcpy(t.dst, staging.data() + offset, t.bytes);
        offset += alignStaging(t.bytes);
    }
}

template<class T>
Transfer toDevice(DeviceBuffer<T>& dst, const T* src, size_t count)
{
    dst.reserve(count);
    return {dst.data(), src, count * sizeof(T)};
}

template<class T>
Transfer toHost(std::vector<T>& dst, const T* src, size_t count)
{
    dst.resize(count);
    return {dst.data(), src, count * sizeof(T)};
}

void throwOverflow(const char* pass, int32_t flag)
{
    throw BackendError(std::string("walk stack overflow in ") + pass + " (group " + std::to_string(flag - 1) +
                       "): the tree is deeper than its recorded depth allows");
}

std::vector<int32_t> narrowOffsets(const std::vector<int64_t>& offsets)
{
    std::vector<int32_t> narrow(offsets.size());
    for (size_t g = 0; g < offsets.size(); ++g)
    {
        if (offsets[g] > std::numeric_limits<int32_t>::max())
        {
            throw BackendError("interaction lists of " + std::to_string(offsets.back()) +
                               " entries do not fit the host's 32-bit list offsets");
        }
        narrow[g] = int32_t(offsets[g]);
    }
    return narrow;
}

} // namespace

// ---------------------------------------------------------------------------------------------

bool gpuAvailable()
{
    int count = 0;
    bool found = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    cudaGetLastError();
    return found;
}

std::string gpuDescription()
{
    if (!gpuAvailable()) return "none";
    int device = 0;
    cudaDeviceProp prop{};
    if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    {
        cudaGetLastError();
        return "none";
    }
    return std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
           std::to_string(prop.multiProcessorCount) + " SMs)";
}

/// The pass-1 totals and the overflow flag, read back in one synchronisation.
struct Readback
{
    int64_t nodeTotal;
    int64_t leafTotal;
    int32_t overflowGroup;
};

struct GpuSolver::Impl
{
    Stream stream;
    Event start, uploaded, counted, scanned, written, nodesDone, leavesDone, downloaded;
    Event directStart, directStop;

    DeviceBuffer<U4> children{"tree children"};
    DeviceBuffer<F4> nodeMac{"node MAC data"}, nodeCom{"node centres of mass"}, nodeQuad{"node quadrupoles"};
    DeviceBuffer<I2> leafRange{"leaf ranges"};
    DeviceBuffer<I2> groupRange{"group ranges"};
    DeviceBuffer<F4> groupCenter{"group centres"}, groupHalf{"group half-sizes"};
    DeviceBuffer<F4> bodies{"bodies"}, targets{"targets"};

    DeviceBuffer<int32_t> nodeCount{"per-group node counts"}, leafCount{"per-group leaf counts"};
    DeviceBuffer<int64_t> leafBodies{"per-group leaf body counts"};
    DeviceBuffer<int64_t> nodeOffset{"node list offsets"}, leafOffset{"leaf list offsets"};
    DeviceBuffer<unsigned char> scanTemp{"scan temporary storage"};
    DeviceBuffer<int32_t> nodeList{"node lists"}, leafList{"leaf lists"};
    DeviceBuffer<int32_t> overflowGroup{"walk overflow flag"};
    DeviceBuffer<F4> nodeAcc{"body-node accelerations"}, acc{"accelerations"};
    DeviceBuffer<int32_t> targetIndex{"direct-sum target indices"};

    PinnedBuffer<unsigned char> uploadStaging{"upload staging"}, downloadStaging{"download staging"};
    PinnedBuffer<Readback> readback{"pass-1 totals"};

    /// Sizes of the lists of the last completed evaluation (-1 groups: none yet).
    int32_t listGroups = -1;
    int64_t nodeTotal = 0, leafTotal = 0;

    TreeView uploadTree(const TreeView& tree, std::vector<Transfer>& transfers);
    GroupView uploadGroups(const GroupView& groups, std::vector<Transfer>& transfers);
    void countInteractions(const TreeView& tree, const GroupView& groups, int32_t capacity);
    void scanCounts(int32_t numGroups);
    void writeInteractions(const TreeView& tree, const GroupView& groups, int32_t capacity);
};

TreeView GpuSolver::Impl::uploadTree(const TreeView& tree, std::vector<Transfer>& transfers)
{
    size_t numInternal = size_t(tree.numInternal), numNodes = numInternal + size_t(tree.numLeaves);
    transfers.push_back(toDevice(children, tree.children, 2 * numInternal));
    transfers.push_back(toDevice(nodeMac, tree.nodeMac, numNodes));
    transfers.push_back(toDevice(nodeCom, tree.nodeCom, numNodes));
    transfers.push_back(toDevice(nodeQuad, tree.nodeQuad, 2 * numNodes));
    transfers.push_back(toDevice(leafRange, tree.leafRange, size_t(tree.numLeaves)));
    // nodeBox stays on the host: no kernel reads it (the MAC radius is already in nodeMac.w).
    return {children.data(), nodeMac.data(),   nodeCom.data(),  nodeQuad.data(), nullptr,
            leafRange.data(), tree.numInternal, tree.numLeaves, tree.rootEntry, tree.depth};
}

GroupView GpuSolver::Impl::uploadGroups(const GroupView& groups, std::vector<Transfer>& transfers)
{
    size_t numGroups = size_t(groups.numGroups);
    transfers.push_back(toDevice(groupRange, groups.range, numGroups));
    transfers.push_back(toDevice(groupCenter, groups.center, numGroups));
    transfers.push_back(toDevice(groupHalf, groups.half, numGroups));
    return {groupRange.data(), groupCenter.data(), groupHalf.data(), groups.numGroups};
}

void GpuSolver::Impl::countInteractions(const TreeView& tree, const GroupView& groups, int32_t capacity)
{
    size_t numGroups = size_t(groups.numGroups);
    // One extra zero count per array makes the exclusive scan's last entry the total.
    nodeCount.reserve(numGroups + 1);
    leafCount.reserve(numGroups + 1);
    leafBodies.reserve(numGroups);
    overflowGroup.reserve(1);
    cudaStream_t s = stream.get();
    CUDA_CHECK(cudaMemsetAsync(nodeCount.data() + numGroups, 0, sizeof(int32_t), s));
    CUDA_CHECK(cudaMemsetAsync(leafCount.data() + numGroups, 0, sizeof(int32_t), s));
    CUDA_CHECK(cudaMemsetAsync(overflowGroup.data(), 0, sizeof(int32_t), s));
    if (numGroups == 0) return;
    countInteractionsKernel<<<blocksFor(groups.numGroups, kWalkBlock), kWalkBlock, 0, s>>>(
        tree, groups, capacity, nodeCount.data(), leafCount.data(), leafBodies.data(), overflowGroup.data());
    CUDA_CHECK_LAUNCH();
}

void GpuSolver::Impl::scanCounts(int32_t numGroups)
{
    int32_t numItems = numGroups + 1;
    nodeOffset.reserve(size_t(numItems));
    leafOffset.reserve(size_t(numItems));
    cudaStream_t s = stream.get();
    // 64-bit offsets: the lists of a large tree can exceed 2^31 entries even though no count does.
    size_t tempBytes = 0;
    CUDA_CHECK(cub::DeviceScan::ExclusiveScan(nullptr, tempBytes, nodeCount.data(), nodeOffset.data(),
                                              cuda::std::plus<>{}, int64_t(0), numItems, s));
    scanTemp.reserve(std::max<size_t>(tempBytes, 1));
    CUDA_CHECK(cub::DeviceScan::ExclusiveScan(scanTemp.data(), tempBytes, nodeCount.data(), nodeOffset.data(),
                                              cuda::std::plus<>{}, int64_t(0), numItems, s));
    CUDA_CHECK(cub::DeviceScan::ExclusiveScan(scanTemp.data(), tempBytes, leafCount.data(), leafOffset.data(),
                                              cuda::std::plus<>{}, int64_t(0), numItems, s));

    readback.reserve(1);
    Readback* r = readback.data();
    CUDA_CHECK(cudaMemcpyAsync(&r->nodeTotal, nodeOffset.data() + numGroups, sizeof(int64_t), cudaMemcpyDeviceToHost,
                               s));
    CUDA_CHECK(cudaMemcpyAsync(&r->leafTotal, leafOffset.data() + numGroups, sizeof(int64_t), cudaMemcpyDeviceToHost,
                               s));
    CUDA_CHECK(cudaMemcpyAsync(&r->overflowGroup, overflowGroup.data(), sizeof(int32_t), cudaMemcpyDeviceToHost, s));
    stream.synchronize();
    if (r->overflowGroup != 0) throwOverflow("pass 1", r->overflowGroup);
    nodeTotal = r->nodeTotal;
    leafTotal = r->leafTotal;
    nodeList.reserve(size_t(nodeTotal));
    leafList.reserve(size_t(leafTotal));
}

void GpuSolver::Impl::writeInteractions(const TreeView& tree, const GroupView& groups, int32_t capacity)
{
    if (groups.numGroups == 0) return;
    writeInteractionsKernel<<<blocksFor(groups.numGroups, kWalkBlock), kWalkBlock, 0, stream.get()>>>(
        tree, groups, capacity, nodeOffset.data(), leafOffset.data(), nodeList.data(), leafList.data(),
        overflowGroup.data());
    CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------

GpuSolver::GpuSolver()
{
    if (!gpuAvailable()) throw BackendError("backend gpu requested, but no CUDA device is available");
    impl_ = std::make_unique<Impl>();
}

GpuSolver::~GpuSolver() = default;

void GpuSolver::evaluate(const TreeView& tree, const GroupView& groups, const BodyView& bodies,
                         const TargetView& targets, float eps2, GpuEvaluation& out)
{
    if (targets.areBodies && targets.numTargets != bodies.numBodies)
    {
        throw std::invalid_argument("GpuSolver::evaluate: targets are the bodies, but there are " +
                                    std::to_string(targets.numTargets) + " targets and " +
                                    std::to_string(bodies.numBodies) + " bodies");
    }
    Impl& m = *impl_;
    cudaStream_t s = m.stream.get();
    // A failed earlier call may have left copies in flight that read the staging buffers.
    m.stream.synchronize();
    m.listGroups = -1;
    int32_t numGroups = groups.numGroups;
    int32_t capacity  = std::min(walkStackCapacity(tree.depth), kWalkStackMax);

    m.start.record(m.stream);
    std::vector<Transfer> transfers;
    TreeView dTree   = m.uploadTree(tree, transfers);
    GroupView dGroups = m.uploadGroups(groups, transfers);
    transfers.push_back(toDevice(m.bodies, bodies.posMass, size_t(bodies.numBodies)));
    const F4* dTargets = m.bodies.data();
    if (!targets.areBodies)
    {
        transfers.push_back(toDevice(m.targets, targets.pos, size_t(targets.numTargets)));
        dTargets = m.targets.data();
    }
    uploadStaged(transfers, m.uploadStaging, s);
    m.uploaded.record(m.stream);

    m.countInteractions(dTree, dGroups, capacity);
    m.counted.record(m.stream);
    m.scanCounts(numGroups);
    // Recorded on the idle stream after the host has read the totals and grown the lists, so the
    // scan phase includes that read-back.
    m.scanned.record(m.stream);
    m.writeInteractions(dTree, dGroups, capacity);
    m.written.record(m.stream);

    size_t numTargets = size_t(targets.numTargets);
    m.nodeAcc.reserve(numTargets);
    m.acc.reserve(numTargets);
    int forceBlocks = blocksFor(numGroups, kForceWarps);
    if (numGroups > 0)
    {
        bodyNodeKernel<<<forceBlocks, kForceBlock, 0, s>>>(dTree, dGroups, m.nodeOffset.data(), m.nodeList.data(),
                                                           dTargets, eps2, m.nodeAcc.data());
        CUDA_CHECK_LAUNCH();
    }
    m.nodesDone.record(m.stream);
    if (numGroups > 0)
    {
        bodyLeafKernel<<<forceBlocks, kForceBlock, 0, s>>>(dTree, dGroups, m.leafOffset.data(), m.leafList.data(),
                                                           m.bodies.data(), dTargets, targets.areBodies, eps2,
                                                           m.nodeAcc.data(), m.acc.data());
        CUDA_CHECK_LAUNCH();
    }
    m.leavesDone.record(m.stream);

    std::vector<int64_t> leafBodies;
    int32_t overflowGroup = 0;
    std::vector<Transfer> downloads{toHost(out.acc, m.acc.data(), numTargets),
                                    toHost(out.nodeCounts, m.nodeCount.data(), size_t(numGroups)),
                                    toHost(out.leafCounts, m.leafCount.data(), size_t(numGroups)),
                                    toHost(leafBodies, m.leafBodies.data(), size_t(numGroups)),
                                    {&overflowGroup, m.overflowGroup.data(), sizeof(int32_t)}};
    enqueueDownload(downloads, m.downloadStaging, s);
    m.downloaded.record(m.stream);
    m.stream.synchronize();
    finishDownload(downloads, m.downloadStaging);
    if (overflowGroup != 0) throwOverflow("pass 2", overflowGroup);

    out.nodeInteractions = 0;
    out.leafInteractions = 0;
    for (int32_t g = 0; g < numGroups; ++g)
    {
        out.nodeInteractions += int64_t(out.nodeCounts[g]) * groups.range[g].y;
        out.leafInteractions += leafBodies[g] * groups.range[g].y;
    }
    PhaseTimes& t = out.times;
    t = PhaseTimes{};
    t[Phase::Upload]    = elapsedSeconds(m.start, m.uploaded);
    t[Phase::WalkCount] = elapsedSeconds(m.uploaded, m.counted);
    t[Phase::Scan]      = elapsedSeconds(m.counted, m.scanned);
    t[Phase::WalkWrite] = elapsedSeconds(m.scanned, m.written);
    t[Phase::BodyNode]  = elapsedSeconds(m.written, m.nodesDone);
    t[Phase::BodyLeaf]  = elapsedSeconds(m.nodesDone, m.leavesDone);
    t[Phase::Download]  = elapsedSeconds(m.leavesDone, m.downloaded);
    m.listGroups = numGroups;
}

void GpuSolver::direct(const BodyView& bodies, const std::vector<int32_t>& targetIndex, float eps2,
                       bool doubleAccumulate, std::vector<F4>& acc, double& seconds)
{
    for (size_t t = 0; t < targetIndex.size(); ++t)
    {
        if (targetIndex[t] < 0 || targetIndex[t] >= bodies.numBodies)
        {
            throw InputError("GpuSolver::direct: target " + std::to_string(t) + " has body index " +
                             std::to_string(targetIndex[t]) + ", outside [0, " + std::to_string(bodies.numBodies) +
                             ")");
        }
    }
    Impl& m = *impl_;
    cudaStream_t s = m.stream.get();
    m.stream.synchronize();
    size_t numTargets = targetIndex.size();
    std::vector<Transfer> transfers{toDevice(m.bodies, bodies.posMass, size_t(bodies.numBodies)),
                                    toDevice(m.targetIndex, targetIndex.data(), numTargets)};
    uploadStaged(transfers, m.uploadStaging, s);
    m.acc.reserve(numTargets);

    m.directStart.record(m.stream);
    if (numTargets > 0)
    {
        int blocks = blocksFor(int64_t(numTargets), kDirectBlock);
        auto kernel = doubleAccumulate ? directKernel<double> : directKernel<float>;
        kernel<<<blocks, kDirectBlock, 0, s>>>(m.bodies.data(), bodies.numBodies, m.targetIndex.data(),
                                               int32_t(numTargets), eps2, m.acc.data());
        CUDA_CHECK_LAUNCH();
    }
    m.directStop.record(m.stream);

    std::vector<Transfer> downloads{toHost(acc, m.acc.data(), numTargets)};
    enqueueDownload(downloads, m.downloadStaging, s);
    m.stream.synchronize();
    finishDownload(downloads, m.downloadStaging);
    seconds = elapsedSeconds(m.directStart, m.directStop);
}

void GpuSolver::downloadLists(std::vector<int32_t>& nodeOffset, std::vector<int32_t>& leafOffset,
                              std::vector<int32_t>& nodeList, std::vector<int32_t>& leafList)
{
    Impl& m = *impl_;
    if (m.listGroups < 0) throw std::logic_error("GpuSolver::downloadLists: no completed evaluation to download");
    size_t numOffsets = size_t(m.listGroups) + 1;
    std::vector<int64_t> nodeOffset64, leafOffset64;
    // Straight into pageable memory: this is a checking path, and staging the lists would keep a
    // pinned buffer of their size alive for the solver's lifetime.
    for (const Transfer& t : {toHost(nodeOffset64, m.nodeOffset.data(), numOffsets),
                              toHost(leafOffset64, m.leafOffset.data(), numOffsets),
                              toHost(nodeList, m.nodeList.data(), size_t(m.nodeTotal)),
                              toHost(leafList, m.leafList.data(), size_t(m.leafTotal))})
    {
        if (t.bytes > 0) CUDA_CHECK(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDeviceToHost, m.stream.get()));
    }
    m.stream.synchronize();
    nodeOffset = narrowOffsets(nodeOffset64);
    leafOffset = narrowOffsets(leafOffset64);
}

} // namespace octwalk

// The device backend's owner: buffers, pinned staging, the stream and the events of an evaluation.
// The kernels are in walk_gpu.cu, forces_gpu.cu and direct_gpu.cu; this file calls their launchers
// in the order of the CPU path (host/solver/solver.cpp evaluateCpu).
//
// Timing: each phase is the interval between two CUDA events on the one stream. Upload includes
// the host's copy into pinned staging (overlapped with the transfers); scan includes the read-back
// of the list totals and the growth of the list buffers, since pass 2 cannot start before them.
// The phases' spans on the host clock (PhaseSpans) are anchored at an event recorded once the host has
// waited for the last one, downloaded, and polled until it completes (anchorOnHostClock: one record's
// round trip, where the wait's own return is as late as the thread's wake-up). Every span is at most
// that poll late, and all of them lie inside the host's wall interval of the evaluation (the first event
// is recorded after it starts).
#include "device/gpu_solver.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "device/cuda_check.cuh"
#include "device/device_buffer.cuh"
#include "device/device_util.cuh"
#include "device/direct_gpu.h"
#include "device/ewald_gpu.h"
#include "device/forces_gpu.h"
#include "device/walk_gpu.h"

namespace octwalk {

namespace {

/// Alignment of each array inside the pinned staging buffers.
constexpr size_t kStagingAlign = 256;
static_assert((kStagingAlign & (kStagingAlign - 1)) == 0 && kStagingAlign >= alignof(F4),
              "staged arrays start at a power-of-two alignment that suits every element type");

size_t alignStaging(size_t bytes) { return (bytes + kStagingAlign - 1) / kStagingAlign * kStagingAlign; }

/// True for host memory the device can reach directly (page-locked: device/pinned_memory.h).
bool isPageLocked(const void* p)
{
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess)
    {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeHost;
}

/// One array moved between host and device: directly when its host side is page-locked, else
/// through the pinned staging buffer.
struct Transfer
{
    void* dst;
    const void* src;
    size_t bytes;
};

/// Bytes of staging the host sides that are not page-locked need (hostSide: the host pointer of a transfer).
template<class HostSide>
size_t stagingBytes(const std::vector<Transfer>& transfers, HostSide hostSide)
{
    size_t total = 0;
    for (const Transfer& t : transfers)
    {
        if (t.bytes > 0 && !isPageLocked(hostSide(t))) total += alignStaging(t.bytes);
    }
    return total;
}

/// Queues each array's cudaMemcpyAsync; an array in ordinary memory is first copied into pinned
/// staging, so the host copy of the next array overlaps the transfer of this one.
void uploadStaged(const std::vector<Transfer>& transfers, PinnedBuffer<unsigned char>& staging, cudaStream_t stream)
{
    staging.reserve(stagingBytes(transfers, [](const Transfer& t) { return t.src; }));
    size_t offset = 0;
    for (const Transfer& t : transfers)
    {
        if (t.bytes == 0) continue;
        const void* src = t.src;
        if (!isPageLocked(src))
        {
            std::memcpy(staging.data() + offset, t.src, t.bytes);
            src = staging.data() + offset;
            offset += alignStaging(t.bytes);
        }
        CUDA_CHECK(cudaMemcpyAsync(t.dst, src, t.bytes, cudaMemcpyHostToDevice, stream));
    }
}

/// Queues the device-to-host copies (into staging for destinations in ordinary memory);
/// finishDownload() moves those out once the stream is done.
void enqueueDownload(const std::vector<Transfer>& transfers, PinnedBuffer<unsigned char>& staging, cudaStream_t stream)
{
    staging.reserve(stagingBytes(transfers, [](const Transfer& t) { return t.dst; }));
    size_t offset = 0;
    for (const Transfer& t : transfers)
    {
        if (t.bytes == 0) continue;
        void* dst = t.dst;
        if (!isPageLocked(dst))
        {
            dst = staging.data() + offset;
            offset += alignStaging(t.bytes);
        }
        CUDA_CHECK(cudaMemcpyAsync(dst, t.src, t.bytes, cudaMemcpyDeviceToHost, stream));
    }
}

void finishDownload(const std::vector<Transfer>& transfers, const PinnedBuffer<unsigned char>& staging)
{
    size_t offset = 0;
    for (const Transfer& t : transfers)
    {
        if (t.bytes == 0 || isPageLocked(t.dst)) continue;
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

template<class T, class A>
Transfer toHost(std::vector<T, A>& dst, const T* src, size_t count)
{
    dst.resize(count);
    return {dst.data(), src, count * sizeof(T)};
}

void throwOverflow(const char* pass, int32_t flag)
{
    throw BackendError(std::string("walk stack overflow in ") + pass + " (group " + std::to_string(flag - 1) +
                       "): the tree is deeper than its recorded depth allows");
}

} // namespace

// ---------------------------------------------------------------------------------------------

bool gpuAvailable()
{
    int count  = 0;
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

/// Writes the pass-1 totals and the overflow flag into the pinned readback. A kernel's stores, not copies: copies
/// would queue on the copy engine behind a large download in flight (the predicted positions a host build downloads
/// for checkpoints, 100 MB at 2^22 bodies), and the walk's second pass waits for this readback.
__global__ void readbackKernel(const int64_t* nodeTotal, const int64_t* leafTotal, const int32_t* overflowGroup,
                               Readback* out)
{
    out->nodeTotal     = *nodeTotal;
    out->leafTotal     = *leafTotal;
    out->overflowGroup = *overflowGroup;
}

struct GpuSolver::Impl
{
    Stream stream;
    Event start, uploaded, counted, scanned, written, nodesDone, leavesDone, downloaded;
    Event leafKernelsDone; ///< before the Ewald correction (periodic), inside Phase::BodyLeaf
    Event directStart, directStop;
    Event anchor; ///< of the phase spans on the host clock (recordSpans)

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
    DeviceBuffer<int32_t> stagedNodePool{"staged node entries"}, stagedLeafPool{"staged leaf entries"};
    DeviceBuffer<int32_t> stagedNodeNext{"staged node chunk links"}, stagedLeafNext{"staged leaf chunk links"};
    DeviceBuffer<int32_t> stagedNodeFirst{"staged node first chunks"}, stagedLeafFirst{"staged leaf first chunks"};
    DeviceBuffer<int32_t> stagedClaimed{"staged chunk counters"};
    DeviceBuffer<F4> nodeAcc{"body-node accelerations"}, acc{"accelerations"};
    DeviceBuffer<int32_t> targetIndex{"direct-sum target indices"};
    DeviceBuffer<unsigned char> directScratch{"direct-sum slice partial sums"};
    /// The Ewald correction table, uploaded once (it is the same for every box: L = 1).
    DeviceBuffer<F4> ewaldTable{"Ewald correction table"};
    const F4* ewaldTableSource = nullptr;
    /// TreePM's pair table (common/treepm.h) of the last evaluation's split and eps^2, uploaded when they change.
    DeviceBuffer<F4> pairTable{"TreePM pair table"};
    std::vector<F4> pairTableHost;
    ShortRangeView pairTableSplit{};
    float pairTableEps2 = 0.0f;
    /// The split with the device's pair table for eps2 attached, the table uploaded on the stream first if it changed.
    ShortRangeView attachPairTable(const ShortRangeView& split, float eps2);
    /// Texture objects over the uploaded tree (GpuKernelConfig::textures), rebound every evaluation.
    LinearTexture childrenTex, nodeMacTex, nodeComTex, nodeQuadTex;

    PinnedBuffer<unsigned char> uploadStaging{"upload staging"}, downloadStaging{"download staging"};
    PinnedBuffer<Readback> readback{"pass-1 totals"};

    /// A resident topology copied ahead on another stream (stageResidentTopology): the second half of a double
    /// buffer of children, leafRange and groupRange, the host arrays it was copied from, and the copies' end.
    struct StagedTopology
    {
        DeviceBuffer<U4> children{"staged tree children"};
        DeviceBuffer<I2> leafRange{"staged leaf ranges"};
        DeviceBuffer<I2> groupRange{"staged group ranges"};
        const void *childrenFrom = nullptr, *leafRangeFrom = nullptr, *groupRangeFrom = nullptr;
        int32_t numInternal = 0, numLeaves = 0, numGroups = 0;
        Event copied;

        bool holds(const TreeView& tree, const GroupView& groups) const
        {
            return childrenFrom != nullptr && childrenFrom == tree.children && leafRangeFrom == tree.leafRange &&
                   groupRangeFrom == groups.range && numInternal == tree.numInternal && numLeaves == tree.numLeaves &&
                   numGroups == groups.numGroups;
        }
    } staged;

    /// Sizes of the lists of the last completed evaluation (-1 groups: none yet).
    int32_t listGroups = -1;
    int64_t nodeTotal = 0, leafTotal = 0;
    /// Groups of the last walk whose totals nodeTotal and leafTotal are (0: none yet): the staged walk's pools
    /// are sized from their means.
    int32_t lastWalkGroups = 0;

    GpuStream gpuStream() const { return {stream.get()}; }
    TreeView uploadTree(const TreeView& tree, std::vector<Transfer>& transfers);
    /// Texture objects over the device tree's arrays (its buffers as uploadTree left them).
    TreeTextures bindTextures(const TreeView& dTree);
    GroupView uploadGroups(const GroupView& groups, std::vector<Transfer>& transfers);
    /// Room for numGroups groups' counts (one more node and leaf count for the scan's total) and offsets.
    CountsView countsView(int32_t numGroups);
    ListView listView(int32_t numGroups);
    /// Pools for the staged walk of numGroups groups: kStagedPoolSlack times the last walk's mean list lengths,
    /// plus a chunk of each kind a group (a first walk has one chunk a group, and pass 2 walks the longer lists).
    WalkStaging walkStaging(int32_t numGroups);
    /// Scans the counts, reads back the totals and the pass-1 overflow flag, and grows the lists.
    void scanAndGrowLists(const CountsView& counts, int32_t numGroups);
    /// The walk phases' spans on the host clock, from the events of a completed evaluation and the host
    /// time at which the anchor, recorded after its last event (downloaded), was seen complete.
    void recordSpans(double anchorOnHost, PhaseSpans& spans) const;

    /// The device arrays an evaluation walks, once its upload (or the refit of a resident tree) is queued.
    struct Inputs
    {
        TreeView tree;
        GroupView groups;
        BodyView bodies;
        TargetView targets;
    };
    /// The sequence of GpuSolver::evaluate and evaluateResident: prepare() queues what the walk reads
    /// and returns the device views of it (timed as the upload); then both walk passes, the scan, the
    /// force kernels and the download of the counts, and of the results when downloadResults.
    /// @param hostRanges  the groups' ranges in host memory for the totals (nullptr: downloaded)
    /// @param idle        whether the stream was idle before prepare (else texture rebinding waits for it)
    template<class Prepare>
    void evaluate(const GpuKernelConfig& config, float eps2, GpuEvaluation& out, const I2* hostRanges,
                  bool downloadResults, bool idle, Prepare prepare, const std::function<void()>& afterForces = {});
};

void GpuSolver::Impl::recordSpans(double anchorOnHost, PhaseSpans& spans) const
{
    // The events bounding each walk phase, in kPhases order: phase k runs from bounds[k] to bounds[k + 1].
    const Event* bounds[] = {&start, &uploaded, &counted, &scanned, &written, &nodesDone, &leavesDone, &downloaded};
    const size_t first    = size_t(Phase::Upload);
    static_assert(size_t(Phase::Download) - size_t(Phase::Upload) + 2 == std::size(bounds),
                  "one event between consecutive walk phases");
    for (size_t k = 0; k + 1 < std::size(bounds); ++k)
    {
        spans.begin[first + k] = hostSecondsOf(*bounds[k], anchor, anchorOnHost);
        spans.end[first + k]   = hostSecondsOf(*bounds[k + 1], anchor, anchorOnHost);
    }
}

ShortRangeView GpuSolver::Impl::attachPairTable(const ShortRangeView& split, float eps2)
{
    const bool same = !pairTableHost.empty() && eps2 == pairTableEps2 && split.cutoff2 == pairTableSplit.cutoff2 &&
                      split.uPerLength == pairTableSplit.uPerLength;
    if (!same)
    {
        pairTableHost.resize(kShortRangePairTableWords);
        fillShortRangePairTable(split, eps2, pairTableHost.data());
        pairTable.reserve(pairTableHost.size());
        // Ordered after the kernels of the previous evaluation on the stream, which may still read the old table.
        CUDA_CHECK(cudaMemcpyAsync(pairTable.data(), pairTableHost.data(), pairTableHost.size() * sizeof(F4),
                                   cudaMemcpyHostToDevice, stream.get()));
        pairTableSplit = split;
        pairTableEps2  = eps2;
    }
    return withShortRangePairTable(split, eps2, pairTable.data());
}

TreeView GpuSolver::Impl::uploadTree(const TreeView& tree, std::vector<Transfer>& transfers)
{
    size_t numInternal = size_t(tree.numInternal), numNodes = numInternal + size_t(tree.numLeaves);
    transfers.push_back(toDevice(children, tree.children, 2 * numInternal));
    transfers.push_back(toDevice(nodeMac, tree.nodeMac, numNodes));
    transfers.push_back(toDevice(nodeCom, tree.nodeCom, numNodes));
    transfers.push_back(toDevice(nodeQuad, tree.nodeQuad, 2 * numNodes));
    transfers.push_back(toDevice(leafRange, tree.leafRange, size_t(tree.numLeaves)));
    PeriodicView periodic = tree.periodic;
    // Under TreePM there is no Ewald correction and no table (common/ewald.h, PeriodicView::shortRange).
    if (periodic.boxSize > 0.0f && periodic.table != nullptr)
    {
        if (ewaldTableSource != periodic.table)
        {
            size_t row = size_t(periodic.tableCells) + 1, count = row * row * row * kEwaldTableWords;
            ewaldTable.reserve(count);
            CUDA_CHECK(cudaMemcpy(ewaldTable.data(), periodic.table, count * sizeof(F4), cudaMemcpyHostToDevice));
            ewaldTableSource = periodic.table;
        }
        periodic.table = ewaldTable.data();
    }
    return {children.data(), nodeMac.data(), nodeCom.data(), nodeQuad.data(), leafRange.data(), tree.numInternal,
            tree.numLeaves,  tree.rootEntry, tree.depth,     periodic,        tree.farField2};
}

TreeTextures GpuSolver::Impl::bindTextures(const TreeView& dTree)
{
    size_t numInternal = size_t(dTree.numInternal), numNodes = numInternal + size_t(dTree.numLeaves);
    childrenTex.bind<unsigned int>(dTree.children, 8 * numInternal);
    nodeMacTex.bind<float4>(dTree.nodeMac, numNodes);
    nodeComTex.bind<float4>(dTree.nodeCom, numNodes);
    nodeQuadTex.bind<float4>(dTree.nodeQuad, 2 * numNodes);
    return {childrenTex.handle(), nodeMacTex.handle(), nodeComTex.handle(), nodeQuadTex.handle()};
}

GroupView GpuSolver::Impl::uploadGroups(const GroupView& groups, std::vector<Transfer>& transfers)
{
    size_t numGroups = size_t(groups.numGroups);
    transfers.push_back(toDevice(groupRange, groups.range, numGroups));
    transfers.push_back(toDevice(groupCenter, groups.center, numGroups));
    transfers.push_back(toDevice(groupHalf, groups.half, numGroups));
    return {groupRange.data(), groupCenter.data(), groupHalf.data(), groups.numGroups};
}

CountsView GpuSolver::Impl::countsView(int32_t numGroups)
{
    nodeCount.reserve(size_t(numGroups) + 1);
    leafCount.reserve(size_t(numGroups) + 1);
    leafBodies.reserve(size_t(numGroups));
    overflowGroup.reserve(1);
    return {nodeCount.data(), leafCount.data(), leafBodies.data(), numGroups};
}

ListView GpuSolver::Impl::listView(int32_t numGroups)
{
    nodeOffset.reserve(size_t(numGroups) + 1);
    leafOffset.reserve(size_t(numGroups) + 1);
    return {nodeOffset.data(), leafOffset.data(), nodeList.data(), leafList.data(), numGroups};
}

WalkStaging GpuSolver::Impl::walkStaging(int32_t numGroups)
{
    const auto chunksFor = [&](int64_t lastTotal, int32_t chunk) {
        const double mean   = lastWalkGroups > 0 ? double(lastTotal) / double(lastWalkGroups) : 0.0;
        const double chunks = std::ceil(double(numGroups) * (kStagedPoolSlack * mean / double(chunk) + 1.0));
        return int32_t(std::min(chunks, double(std::numeric_limits<int32_t>::max() / chunk)));
    };
    const int32_t nodeChunks = chunksFor(nodeTotal, kStagedNodeChunk);
    const int32_t leafChunks = chunksFor(leafTotal, kStagedLeafChunk);
    stagedNodePool.reserve(size_t(nodeChunks) * kStagedNodeChunk);
    stagedLeafPool.reserve(size_t(leafChunks) * kStagedLeafChunk);
    stagedNodeNext.reserve(size_t(nodeChunks));
    stagedLeafNext.reserve(size_t(leafChunks));
    stagedNodeFirst.reserve(size_t(std::max(numGroups, 1)));
    stagedLeafFirst.reserve(size_t(std::max(numGroups, 1)));
    stagedClaimed.reserve(2);
    return {stagedNodePool.data(),
            stagedLeafPool.data(),
            stagedNodeNext.data(),
            stagedLeafNext.data(),
            stagedNodeFirst.data(),
            stagedLeafFirst.data(),
            stagedClaimed.data(),
            nodeChunks,
            leafChunks};
}

void GpuSolver::Impl::scanAndGrowLists(const CountsView& counts, int32_t numGroups)
{
    size_t scratchBytes = scanCountsGpuScratchBytes(numGroups);
    scanTemp.reserve(std::max<size_t>(scratchBytes, 1));
    scanCountsGpu(counts, listView(numGroups), {scanTemp.data(), scratchBytes}, gpuStream());

    readback.reserve(1);
    Readback* r        = readback.data();
    Readback* onDevice = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&onDevice), r, 0));
    readbackKernel<<<1, 1, 0, stream.get()>>>(nodeOffset.data() + numGroups, leafOffset.data() + numGroups,
                                              overflowGroup.data(), onDevice);
    CUDA_CHECK_LAUNCH();
    stream.synchronize();
    if (r->overflowGroup != 0) throwOverflow("pass 1", r->overflowGroup);
    nodeTotal      = r->nodeTotal;
    leafTotal      = r->leafTotal;
    lastWalkGroups = numGroups;
    nodeList.reserve(size_t(nodeTotal));
    leafList.reserve(size_t(leafTotal));
}

// ---------------------------------------------------------------------------------------------

GpuSolver::GpuSolver()
{
    if (!gpuAvailable()) throw BackendError("backend gpu requested, but no CUDA device is available");
    impl_ = std::make_unique<Impl>();
}

GpuSolver::~GpuSolver() = default;

template<class Prepare>
void GpuSolver::Impl::evaluate(const GpuKernelConfig& config, float eps2, GpuEvaluation& out, const I2* hostRanges,
                               bool downloadResults, bool idle, Prepare prepare,
                               const std::function<void()>& afterForces)
{
    cudaStream_t s = stream.get();
    GpuStream gs   = gpuStream();
    listGroups     = -1;

    start.record(stream);
    Inputs in = prepare();
    if (in.tree.periodic.boxSize > 0.0f && shortRangeOn(in.tree.periodic.shortRange))
        in.tree.periodic.shortRange = attachPairTable(in.tree.periodic.shortRange, eps2);
    uploaded.record(stream);
    const int32_t numGroups = in.groups.numGroups;
    // No kernel may still read the old bindings: on an idle stream the upload's copies read none. A tree
    // without internal nodes has no child words to bind: it walks through __ldg.
    TreeTextures textures;
    if (config.textures && in.tree.numInternal > 0)
    {
        if (!idle) stream.synchronize();
        textures = bindTextures(in.tree);
    }

    CountsView dCounts    = countsView(numGroups);
    const bool shortRange = in.tree.periodic.boxSize > 0.0f && shortRangeOn(in.tree.periodic.shortRange);
    const bool staged     = config.walk == GpuWalk::Team && (config.stagedWalk == StagedWalk::On ||
                                                         (config.stagedWalk == StagedWalk::ShortRange && shortRange));
    WalkStaging staging{};
    if (staged)
    {
        staging = walkStaging(numGroups);
        countAndStageInteractionsGpu(in.tree, in.groups, dCounts, staging, overflowGroup.data(), gs, textures);
    }
    else countInteractionsGpu(in.tree, in.groups, dCounts, overflowGroup.data(), gs, config.walk, textures);
    counted.record(stream);
    scanAndGrowLists(dCounts, numGroups);
    // Recorded on the idle stream after the host has read the totals and grown the lists, so the
    // scan phase includes that read-back.
    scanned.record(stream);
    ListView dLists = listView(numGroups);
    if (staged)
    {
        writeStagedInteractionsGpu(in.tree, in.groups, dCounts, dLists, staging, overflowGroup.data(), gs, textures);
    }
    else writeInteractionsGpu(in.tree, in.groups, dLists, overflowGroup.data(), gs, config.walk, textures);
    written.record(stream);

    const size_t numTargets = size_t(in.targets.numTargets);
    nodeAcc.reserve(numTargets);
    acc.reserve(numTargets);
    bodyNodeForcesGpu(in.tree, in.groups, dLists, in.targets, eps2, nodeAcc.data(), gs, config.targetsPerLane, textures,
                      config.node);
    nodesDone.record(stream);
    bodyLeafForcesGpu(in.tree, in.groups, dLists, in.bodies, in.targets, eps2, nodeAcc.data(), acc.data(), gs,
                      config.targetsPerLane, config.leaf, false);
    leafKernelsDone.record(stream);
    // A periodic box adds the groups' Ewald corrections, but not under TreePM (the mesh carries the long range).
    const bool ewald = in.tree.periodic.boxSize > 0.0f && !shortRangeOn(in.tree.periodic.shortRange);
    if (ewald) ewaldGroupCorrectionGpu(in.tree, in.groups, dLists, in.bodies, in.targets, acc.data(), gs);
    leavesDone.record(stream);
    if (afterForces) afterForces();

    std::vector<I2> ranges;
    int32_t overflow = 0;
    std::vector<Transfer> downloads{toHost(out.nodeCounts, nodeCount.data(), size_t(numGroups)),
                                    toHost(out.leafCounts, leafCount.data(), size_t(numGroups)),
                                    toHost(out.leafBodyCounts, leafBodies.data(), size_t(numGroups)),
                                    {&overflow, overflowGroup.data(), sizeof(int32_t)}};
    if (!hostRanges) downloads.push_back(toHost(ranges, groupRange.data(), size_t(numGroups)));
    if (downloadResults) downloads.push_back(toHost(out.acc, acc.data(), numTargets));
    enqueueDownload(downloads, downloadStaging, s);
    downloaded.record(stream);
    stream.synchronize();
    const double anchorOnHost = anchorOnHostClock(anchor, stream.get());
    finishDownload(downloads, downloadStaging);
    if (overflow != 0) throwOverflow("pass 2", overflow);

    const GroupView totalsGroups{hostRanges ? hostRanges : ranges.data(), nullptr, nullptr, numGroups};
    InteractionTotals totals = interactionTotals(
        totalsGroups, {out.nodeCounts.data(), out.leafCounts.data(), out.leafBodyCounts.data(), numGroups});
    out.nodeInteractions = totals.nodes;
    out.leafInteractions = totals.leafBodies;
    PhaseTimes& t        = out.times;
    t                    = PhaseTimes{};
    t[Phase::Upload]     = elapsedSeconds(start, uploaded);
    t[Phase::WalkCount]  = elapsedSeconds(uploaded, counted);
    t[Phase::Scan]       = elapsedSeconds(counted, scanned);
    t[Phase::WalkWrite]  = elapsedSeconds(scanned, written);
    t[Phase::BodyNode]   = elapsedSeconds(written, nodesDone);
    t[Phase::BodyLeaf]   = elapsedSeconds(nodesDone, leavesDone);
    t[Phase::Download]   = elapsedSeconds(leavesDone, downloaded);
    out.ewaldSeconds     = ewald ? elapsedSeconds(leafKernelsDone, leavesDone) : 0.0;
    recordSpans(anchorOnHost, t.spans);
    listGroups = numGroups;
}

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
    // A failed earlier call may have left copies in flight that read the staging buffers.
    m.stream.synchronize();
    m.evaluate(config_, eps2, out, groups.range, true, true, [&] {
        std::vector<Transfer> transfers;
        const TreeView dTree    = m.uploadTree(tree, transfers);
        const GroupView dGroups = m.uploadGroups(groups, transfers);
        transfers.push_back(toDevice(m.bodies, bodies.posMass, size_t(bodies.numBodies)));
        Impl::Inputs in{dTree,
                        dGroups,
                        {m.bodies.data(), bodies.numBodies},
                        {m.bodies.data(), targets.numTargets, targets.areBodies}};
        if (!targets.areBodies)
        {
            transfers.push_back(toDevice(m.targets, targets.pos, size_t(targets.numTargets)));
            in.targets.pos = m.targets.data();
        }
        uploadStaged(transfers, m.uploadStaging, m.stream.get());
        return in;
    });
}

void GpuSolver::direct(const BodyView& bodies, const std::vector<int32_t>& targetIndex, float eps2,
                       bool doubleAccumulate, std::vector<F4>& acc, double& seconds, const DirectKernelConfig& config)
{
    checkDirectConfig(config);
    for (size_t t = 0; t < targetIndex.size(); ++t)
    {
        if (targetIndex[t] < 0 || targetIndex[t] >= bodies.numBodies)
        {
            throw InputError("GpuSolver::direct: target " + std::to_string(t) + " has body index " +
                             std::to_string(targetIndex[t]) + ", outside [0, " + std::to_string(bodies.numBodies) +
                             ")");
        }
    }
    Impl& m        = *impl_;
    cudaStream_t s = m.stream.get();
    m.stream.synchronize();
    size_t numTargets = targetIndex.size();
    std::vector<Transfer> transfers{toDevice(m.bodies, bodies.posMass, size_t(bodies.numBodies)),
                                    toDevice(m.targetIndex, targetIndex.data(), numTargets)};
    uploadStaged(transfers, m.uploadStaging, s);
    m.acc.reserve(numTargets);
    m.directScratch.reserve(directScratchBytes(bodies.numBodies, int32_t(numTargets), doubleAccumulate, config));

    m.directStart.record(m.stream);
    directGpu({m.bodies.data(), bodies.numBodies}, m.targetIndex.data(), int32_t(numTargets), eps2, doubleAccumulate,
              m.acc.data(), m.directScratch.data(), m.gpuStream(), config);
    m.directStop.record(m.stream);

    std::vector<Transfer> downloads{toHost(acc, m.acc.data(), numTargets)};
    enqueueDownload(downloads, m.downloadStaging, s);
    m.stream.synchronize();
    finishDownload(downloads, m.downloadStaging);
    seconds = elapsedSeconds(m.directStart, m.directStop);
}

void GpuSolver::downloadLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset,
                              std::vector<int32_t>& nodeList, std::vector<int32_t>& leafList)
{
    Impl& m = *impl_;
    if (m.listGroups < 0) throw std::logic_error("GpuSolver::downloadLists: no completed evaluation to download");
    size_t numOffsets = size_t(m.listGroups) + 1;
    // Straight into pageable memory: this is a checking path, and staging the lists would keep a
    // pinned buffer of their size alive for the solver's lifetime.
    for (const Transfer& t :
         {toHost(nodeOffset, m.nodeOffset.data(), numOffsets), toHost(leafOffset, m.leafOffset.data(), numOffsets),
          toHost(nodeList, m.nodeList.data(), size_t(m.nodeTotal)),
          toHost(leafList, m.leafList.data(), size_t(m.leafTotal))})
    {
        if (t.bytes > 0) CUDA_CHECK(cudaMemcpyAsync(t.dst, t.src, t.bytes, cudaMemcpyDeviceToHost, m.stream.get()));
    }
    m.stream.synchronize();
}

} // namespace octwalk

namespace octwalk {

GpuSolver::ResidentTree GpuSolver::setResidentTopology(const TreeView& tree, const GroupView& groups, int32_t numBodies)
{
    if (tree.periodic.boxSize > 0.0f && !shortRangeOn(tree.periodic.shortRange))
    {
        throw std::invalid_argument(
            "GpuSolver::setResidentTopology: the device-resident walk is isolated or TreePM's (no Ewald table)");
    }
    Impl& m                  = *impl_;
    const size_t numNodes    = size_t(tree.numInternal) + size_t(tree.numLeaves);
    const size_t numGroups   = size_t(groups.numGroups);
    const bool staged        = m.staged.holds(tree, groups);
    const Transfer sources[] = {{nullptr, tree.children, 2 * size_t(tree.numInternal) * sizeof(U4)},
                                {nullptr, tree.leafRange, size_t(tree.numLeaves) * sizeof(I2)},
                                {nullptr, groups.range, numGroups * sizeof(I2)}};
    const bool pinned        = staged || std::all_of(std::begin(sources), std::end(sources),
                                                     [](const Transfer& t) { return t.bytes == 0 || isPageLocked(t.src); });
    const bool topologyGrows = m.children.capacity() < 2 * size_t(tree.numInternal) ||
                               m.leafRange.capacity() < size_t(tree.numLeaves) || m.groupRange.capacity() < numGroups;
    const bool grows = (!staged && topologyGrows) || m.nodeMac.capacity() < numNodes ||
                       m.nodeCom.capacity() < numNodes || m.nodeQuad.capacity() < 2 * numNodes ||
                       m.groupCenter.capacity() < numGroups || m.groupHalf.capacity() < numGroups ||
                       m.bodies.capacity() < size_t(numBodies);
    // A buffer that grows is reallocated, and the staging of ordinary memory is rewritten: both wait for the work
    // that may still read them. Pinned arrays into buffers large enough queue their copies behind that work
    // instead, so an adoption does not stall the host (the pipeline's topology outlives its copies).
    if (!pinned || grows) m.stream.synchronize();
    m.listGroups = -1;
    if (staged)
    {
        // Copied ahead: the walk takes the staged half once its copies are done; the other half is staged next.
        CUDA_CHECK(cudaStreamWaitEvent(m.stream.get(), m.staged.copied.get(), 0));
        m.children.swap(m.staged.children);
        m.leafRange.swap(m.staged.leafRange);
        m.groupRange.swap(m.staged.groupRange);
    }
    else
    {
        std::vector<Transfer> transfers{toDevice(m.children, tree.children, 2 * size_t(tree.numInternal)),
                                        toDevice(m.leafRange, tree.leafRange, size_t(tree.numLeaves)),
                                        toDevice(m.groupRange, groups.range, numGroups)};
        uploadStaged(transfers, m.uploadStaging, m.stream.get());
    }
    m.staged.childrenFrom = nullptr;
    m.nodeMac.reserve(numNodes);
    m.nodeCom.reserve(numNodes);
    m.nodeQuad.reserve(2 * numNodes);
    m.groupCenter.reserve(numGroups);
    m.groupHalf.reserve(numGroups);
    m.bodies.reserve(size_t(numBodies));
    if (!pinned) m.stream.synchronize();
    ResidentTree r;
    r.tree        = {m.children.data(),  m.nodeMac.data(), m.nodeCom.data(), m.nodeQuad.data(),
                     m.leafRange.data(), tree.numInternal, tree.numLeaves,   tree.rootEntry,
                     tree.depth,         tree.periodic,    tree.farField2};
    r.groups      = {m.groupRange.data(), m.groupCenter.data(), m.groupHalf.data(), groups.numGroups};
    r.bodies      = {m.bodies.data(), numBodies};
    r.nodeMac     = m.nodeMac.data();
    r.nodeCom     = m.nodeCom.data();
    r.nodeQuad    = m.nodeQuad.data();
    r.bodyPosMass = m.bodies.data();
    r.groupCenter = m.groupCenter.data();
    r.groupHalf   = m.groupHalf.data();
    return r;
}

void GpuSolver::stageResidentTopology(const TreeView& tree, const GroupView& groups, GpuStream copies)
{
    Impl::StagedTopology& t = impl_->staged;
    cudaStream_t s          = static_cast<cudaStream_t>(copies.handle);
    t.childrenFrom          = nullptr;
    const size_t words = 2 * size_t(tree.numInternal), leaves = size_t(tree.numLeaves);
    const size_t count = size_t(groups.numGroups);
    // The staged half was last read by the walk before the one now running: that walk is done.
    t.children.reserve(words);
    t.leafRange.reserve(leaves);
    t.groupRange.reserve(count);
    // Directly, not through the staging of ordinary memory, which the stepping thread may be using.
    if (words > 0)
        CUDA_CHECK(cudaMemcpyAsync(t.children.data(), tree.children, words * sizeof(U4), cudaMemcpyHostToDevice, s));
    if (leaves > 0)
        CUDA_CHECK(cudaMemcpyAsync(t.leafRange.data(), tree.leafRange, leaves * sizeof(I2), cudaMemcpyHostToDevice, s));
    if (count > 0)
        CUDA_CHECK(cudaMemcpyAsync(t.groupRange.data(), groups.range, count * sizeof(I2), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaEventRecord(t.copied.get(), s));
    t.leafRangeFrom  = tree.leafRange;
    t.groupRangeFrom = groups.range;
    t.numInternal    = tree.numInternal;
    t.numLeaves      = tree.numLeaves;
    t.numGroups      = groups.numGroups;
    t.childrenFrom   = tree.children;
}

void GpuSolver::dropStagedTopology() { impl_->staged.childrenFrom = nullptr; }

bool GpuSolver::holdsStagedTopology(const TreeView& tree, const GroupView& groups) const
{
    return impl_->staged.holds(tree, groups);
}

void GpuSolver::evaluateResident(const ResidentTree& r, float eps2, GpuEvaluation& out, bool downloadResults,
                                 const std::function<void()>& beforeWalk, const std::function<void()>& afterForces)
{
    // The work that writes the tree (the refit) is timed as the upload it replaces.
    impl_->evaluate(
        config_, eps2, out, nullptr, downloadResults, false,
        [&] {
            if (beforeWalk) beforeWalk();
            return Impl::Inputs{r.tree, r.groups, r.bodies, {r.bodies.posMass, r.bodies.numBodies, true}};
        },
        afterForces);
}

const F4* GpuSolver::residentResults() const { return impl_->acc.data(); }

F4* GpuSolver::residentResults(int32_t numBodies)
{
    impl_->acc.reserve(size_t(numBodies));
    return impl_->acc.data();
}

GpuStream GpuSolver::stream() const { return impl_->gpuStream(); }

} // namespace octwalk

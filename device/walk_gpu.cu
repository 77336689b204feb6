// The group walk on the device (twin: host/cpu/walk_cpu.cpp).
//
// Read-only path: kernels take the views by value, whose members cannot carry __restrict__. The reads
// happen inside common/walk.h, so every pointer these kernels write through is __restrict__, which
// lets nvcc prove the views' arrays unchanged and load them with ld.global.nc (checked in the PTX).
//
// Determinism: every count and entry is written by exactly one thread; the atomics are an integer max on
// the overflow flag and the staged walk's integer chunk counters, which decide where a group's entries wait
// between the passes, not what or in which order its list holds.
#include "device/walk_gpu.h"

#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>

#include <algorithm>

#include "common/sfc.h"
#include "common/walk.h"
#include "device/cuda_check.cuh"
#include "device/device_util.cuh"

namespace octwalk {

namespace {

/// Threads per block of the walk kernels (one thread per group). Small blocks spread the few
/// thousand groups of a typical tree over all SMs; the walk diverges per thread anyway.
constexpr int kWalkBlock = 32;
static_assert(kWalkBlock % 32 == 0 && kWalkBlock <= 1024, "the walk block is whole warps, at most 1024 threads");
/// The walk stack is a local array sized for the deepest tree the host can build.
constexpr int32_t kWalkStackMax = walkStackCapacity(kMaxTreeLevel);
static_assert(kWalkStackMax * sizeof(uint32_t) <= 1024, "the walk stack stays a small per-thread local array");

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

/// The cooperative walk: a team of kTeam lanes walks one group, lane k taking child k of the cell
/// on top of the stack (the eight entries of its two 128-bit child words), so the eight MAC tests
/// of a cell run side by side instead of one after another. The team emits the accepted nodes and
/// leaves and pushes the opened cells in child order (ranks from a ballot), which is exactly the
/// order of walkGroup's loop: the lists equal the CPU twin's entry for entry.
constexpr int kTeam          = 8;
constexpr int kTeamBlock     = 64;
constexpr int kTeamsPerBlock = kTeamBlock / kTeam;
static_assert(kTeam == 2 * 4, "a team lane per entry of a cell's two child words");
static_assert(kTeamBlock % 32 == 0, "the team walk's ballots need whole warps");
static_assert(kTeamsPerBlock * kWalkStackMax * sizeof(uint32_t) <= 16 * 1024, "the teams' stacks fit in shared memory");

/// What a team walk does with what it finds: pass 1 counts; the staged pass 1 counts and stages the entries in
/// chunks (WalkStaging); pass 2 writes them at the group's offsets.
enum class TeamPass
{
    Count,
    Stage,
    Write,
};

/// Where the team walk puts what it finds. Pass 2 with skipStaged walks only the groups the staged pass 1 left.
struct TeamOutputs
{
    int32_t* nodeCount;
    int32_t* leafCount;
    int64_t* leafBodies;
    const int64_t* nodeOffset;
    const int64_t* leafOffset;
    int32_t* nodeList;
    int32_t* leafList;
    WalkStaging staging;
    bool skipStaged;
};

/// Whether the staged pass 1 kept both of group g's lists.
__device__ inline bool groupStaged(const WalkStaging& s, int32_t g)
{
    return s.nodeFirst[g] != kNotStaged && s.leafFirst[g] != kNotStaged;
}

/// One team's chain of chunks in a staging pool (every lane of the team holds the same copy). pos starts at a
/// full chunk, so the first entry claims one.
template<int32_t Chunk>
struct ChunkChain
{
    int32_t chunk = -1, pos = Chunk, first = -1;
    bool exhausted = false;

    /// Stages this step's entries of the team: total of them, this lane's (if mine) at rank. Every lane of the warp
    /// calls it (the claim is broadcast within the team by a shuffle); the chain stays team-uniform.
    __device__ void add(bool mine, int rank, int total, int32_t value, int32_t* pool, int32_t* next, int32_t* claimed,
                        int32_t poolChunks, int member, int lane)
    {
        const bool claim = !exhausted && pos + total > Chunk;
        int32_t fresh    = -1;
        if (claim && member == 0)
        {
            fresh = atomicAdd(claimed, 1);
            if (fresh < poolChunks)
            {
                next[fresh] = -1;
                if (chunk >= 0) next[chunk] = fresh;
            }
        }
        fresh = __shfl_sync(0xFFFFFFFFu, fresh, lane & ~(kTeam - 1));
        if (exhausted) return;
        const int at = pos + rank;
        if (mine && at < Chunk) pool[size_t(chunk) * Chunk + at] = value;
        if (!claim)
        {
            pos += total;
            return;
        }
        if (fresh >= poolChunks)
        {
            exhausted = true;
            return;
        }
        if (mine && at >= Chunk) pool[size_t(fresh) * Chunk + (at - Chunk)] = value;
        if (chunk < 0) first = fresh;
        chunk = fresh;
        pos += total - Chunk;
    }

    /// The group's first chunk as WalkStaging keeps it.
    __device__ int32_t firstOrNotStaged() const { return exhausted ? kNotStaged : first; }
};

/// Word member of cell's two child words.
template<bool Tex>
__device__ inline uint32_t childWord(const TreeView& tree, const TreeTextures& tex, uint32_t cell, int member)
{
    if (Tex) return tex1Dfetch<unsigned int>(cudaTextureObject_t(tex.children), int(kTeam * cell) + member);
    return __ldg(reinterpret_cast<const unsigned int*>(tree.children) + size_t(kTeam) * cell + member);
}

/// The MAC word of an entry's node.
template<bool Tex>
__device__ inline F4 macWord(const TreeView& tree, const TreeTextures& tex, uint32_t entry)
{
    const int32_t node = int32_t(entry & ~kLeafBit);
    if (!Tex) return loadReadOnly(tree.nodeMac + node);
    float4 v = tex1Dfetch<float4>(cudaTextureObject_t(tex.nodeMac), node);
    return {v.x, v.y, v.z, v.w};
}

template<TeamPass Pass, bool Tex>
__global__ void __launch_bounds__(kTeamBlock)
    teamWalkKernel(TreeView tree, GroupView groups, int32_t capacity, TeamOutputs out, TreeTextures tex,
                   int32_t* __restrict__ overflowGroup)
{
    constexpr bool Write = Pass == TeamPass::Write;
    constexpr bool Stage = Pass == TeamPass::Stage;
    __shared__ uint32_t sStack[kTeamsPerBlock][kWalkStackMax];
    const int lane          = int(threadIdx.x) % 32;
    const int member        = lane % kTeam;
    const int team          = int(threadIdx.x) / kTeam;
    const unsigned teamBits = 0xFFu << (lane / kTeam * kTeam);
    const unsigned below    = teamBits & ((1u << lane) - 1u);
    const int32_t g         = int32_t(blockIdx.x) * kTeamsPerBlock + team;
    const bool hasGroup     = g < groups.numGroups && !(Write && out.skipStaged && groupStaged(out.staging, g));
    uint32_t* stack         = sStack[team];
    // No early return: every lane of the warp takes part in every ballot.
    F4 center{}, half{};
    int32_t* nodeOut = nullptr;
    int32_t* leafOut = nullptr;
    if (hasGroup)
    {
        center = groups.center[g];
        half   = groups.half[g];
        if (Write)
        {
            nodeOut = out.nodeList + out.nodeOffset[g];
            leafOut = out.leafList + out.leafOffset[g];
        }
    }
    int32_t top = 0, nodes = 0, leaves = 0;
    int64_t bodies = 0; // this lane's leaves only: summed over the team at the end
    bool failed    = false;
    ChunkChain<kStagedNodeChunk> nodeChain;
    ChunkChain<kStagedLeafChunk> leafChain;
    // The root first, as walkGroup's first visitEntry: member 0 holds it.
    uint32_t entry = tree.rootEntry;
    bool has       = hasGroup && member == 0;
    while (true)
    {
        EntryAction action = EntryAction::Node;
        if (has)
            action = classifyEntry(macWord<Tex>(tree, tex, entry), tree.nodeCom, entry, center, half, tree.periodic);
        const unsigned nodeMask = __ballot_sync(0xFFFFFFFFu, has && action == EntryAction::Node) & teamBits;
        const unsigned leafMask = __ballot_sync(0xFFFFFFFFu, has && action == EntryAction::Leaf) & teamBits;
        const unsigned openMask = __ballot_sync(0xFFFFFFFFu, has && action == EntryAction::Open) & teamBits;
        const int32_t n         = int32_t(entry & ~kLeafBit);
        if (Write)
        {
            if (has && action == EntryAction::Node) nodeOut[__popc(nodeMask & below)] = n;
            if (has && action == EntryAction::Leaf) leafOut[__popc(leafMask & below)] = n;
            nodeOut += __popc(nodeMask);
            leafOut += __popc(leafMask);
        }
        else
        {
            nodes += __popc(nodeMask);
            leaves += __popc(leafMask);
            if (has && action == EntryAction::Leaf) bodies += tree.leafRange[n - tree.numInternal].y;
        }
        if (Stage)
        {
            const WalkStaging& st = out.staging;
            nodeChain.add(has && action == EntryAction::Node, __popc(nodeMask & below), __popc(nodeMask), n,
                          st.nodePool, st.nodeNext, st.claimed, st.nodeChunks, member, lane);
            leafChain.add(has && action == EntryAction::Leaf, __popc(leafMask & below), __popc(leafMask), n,
                          st.leafPool, st.leafNext, st.claimed + 1, st.leafChunks, member, lane);
        }
        const int pushes = __popc(openMask);
        if (top + pushes > capacity) failed = true;
        else
        {
            if (has && action == EntryAction::Open) stack[top + __popc(openMask & below)] = entry;
            top += pushes;
        }
        __syncwarp();
        const bool active = !failed && top > 0;
        if (!__any_sync(0xFFFFFFFFu, active)) break;
        has = false;
        if (active)
        {
            const uint32_t cell = stack[--top];
            entry               = childWord<Tex>(tree, tex, cell, member);
            has                 = entry != kEmptyChild;
        }
        __syncwarp(); // every lane has read the cell before the team pushes over its slot
    }
    if (!Write)
    {
        for (int offset = kTeam / 2; offset > 0; offset /= 2) bodies += __shfl_xor_sync(0xFFFFFFFFu, bodies, offset);
    }
    if (!hasGroup || member != 0) return;
    if (failed) atomicMax(overflowGroup, g + 1);
    if (!Write)
    {
        out.nodeCount[g]  = nodes;
        out.leafCount[g]  = leaves;
        out.leafBodies[g] = bodies;
    }
    if (Stage)
    {
        out.staging.nodeFirst[g] = nodeChain.firstOrNotStaged();
        out.staging.leafFirst[g] = leafChain.firstOrNotStaged();
    }
}

/// Copies count entries of a chain of Chunk-entry chunks starting at first to out, by the lanes of a warp.
template<int32_t Chunk>
__device__ void copyChain(const int32_t* __restrict__ pool, const int32_t* __restrict__ next, int32_t first,
                          int32_t count, int32_t* __restrict__ out, int lane)
{
    int32_t chunk = first;
    for (int32_t done = 0; done < count; done += Chunk)
    {
        const int32_t n        = min(Chunk, count - done);
        const int32_t* entries = pool + size_t(chunk) * Chunk;
        for (int32_t k = lane; k < n; k += 32) out[done + k] = entries[k];
        if (done + Chunk < count) chunk = next[chunk];
    }
}

/// Pass 2 of the staged walk for the groups it kept: one warp a group copies its chunks to its offsets.
__global__ void copyStagedListsKernel(CountsView counts, ListView lists, WalkStaging staging)
{
    const int32_t g = int32_t((size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
    const int lane  = int(threadIdx.x) % 32;
    if (g >= lists.numGroups || !groupStaged(staging, g)) return;
    copyChain<kStagedNodeChunk>(staging.nodePool, staging.nodeNext, staging.nodeFirst[g], counts.nodes[g],
                                lists.nodeList + lists.nodeOffset[g], lane);
    copyChain<kStagedLeafChunk>(staging.leafPool, staging.leafNext, staging.leafFirst[g], counts.leaves[g],
                                lists.leafList + lists.leafOffset[g], lane);
}

/// The stack the kernels use for a tree of this depth: what the CPU twin uses, within the local array.
int32_t stackCapacity(const TreeView& tree) { return std::min(walkStackCapacity(tree.depth), kWalkStackMax); }

/// Both scans of one call: the query (temp == nullptr) and the run take the very same types.
cudaError_t exclusiveScan(void* temp, size_t& tempBytes, int32_t* counts, int64_t* offsets, int32_t numItems,
                          cudaStream_t s)
{
    return cub::DeviceScan::ExclusiveScan(temp, tempBytes, counts, offsets, cuda::std::plus<>{}, int64_t(0), numItems,
                                          s);
}

/// The team walk's launch for one pass, through textures when they are present.
template<TeamPass Pass>
void launchTeamWalk(const TreeView& tree, const GroupView& groups, const TeamOutputs& out, const TreeTextures& textures,
                    int32_t* overflowGroup, cudaStream_t s)
{
    auto kernel = textures.present() ? teamWalkKernel<Pass, true> : teamWalkKernel<Pass, false>;
    kernel<<<blocksFor(groups.numGroups, kTeamsPerBlock), kTeamBlock, 0, s>>>(tree, groups, stackCapacity(tree), out,
                                                                              textures, overflowGroup);
    CUDA_CHECK_LAUNCH();
}

/// Before pass 1: one extra zero count per array makes the exclusive scan's last entry the total; no overflow yet.
void clearPassOneTotals(const CountsView& counts, int32_t* overflowGroup, cudaStream_t s)
{
    const size_t numGroups = size_t(counts.numGroups);
    CUDA_CHECK(cudaMemsetAsync(counts.nodes + numGroups, 0, sizeof(int32_t), s));
    CUDA_CHECK(cudaMemsetAsync(counts.leaves + numGroups, 0, sizeof(int32_t), s));
    CUDA_CHECK(cudaMemsetAsync(overflowGroup, 0, sizeof(int32_t), s));
}

} // namespace

void countInteractionsGpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                          int32_t* overflowGroup, GpuStream stream, GpuWalk walk, const TreeTextures& textures)
{
    cudaStream_t s = cudaStreamOf(stream);
    clearPassOneTotals(counts, overflowGroup, s);
    if (groups.numGroups == 0) return;
    if (walk == GpuWalk::Team)
    {
        TeamOutputs out{counts.nodes, counts.leaves, counts.leafBodies, nullptr, nullptr, nullptr, nullptr, {}, false};
        launchTeamWalk<TeamPass::Count>(tree, groups, out, textures, overflowGroup, s);
        return;
    }
    countInteractionsKernel<<<blocksFor(groups.numGroups, kWalkBlock), kWalkBlock, 0, s>>>(
        tree, groups, stackCapacity(tree), counts.nodes, counts.leaves, counts.leafBodies, overflowGroup);
    CUDA_CHECK_LAUNCH();
}

size_t scanCountsGpuScratchBytes(int32_t numGroups)
{
    size_t tempBytes = 0;
    CUDA_CHECK(exclusiveScan(nullptr, tempBytes, nullptr, nullptr, numGroups + 1, nullptr));
    return tempBytes;
}

void scanCountsGpu(const CountsView& counts, const ListView& lists, GpuScratch scratch, GpuStream stream)
{
    int32_t numItems = counts.numGroups + 1;
    cudaStream_t s   = cudaStreamOf(stream);
    // 64-bit offsets: the lists of a large tree can exceed 2^31 entries even though no count does.
    size_t tempBytes = scratch.bytes;
    CUDA_CHECK(exclusiveScan(scratch.data, tempBytes, counts.nodes, lists.nodeOffset, numItems, s));
    tempBytes = scratch.bytes;
    CUDA_CHECK(exclusiveScan(scratch.data, tempBytes, counts.leaves, lists.leafOffset, numItems, s));
}

void writeInteractionsGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, int32_t* overflowGroup,
                          GpuStream stream, GpuWalk walk, const TreeTextures& textures)
{
    if (groups.numGroups == 0) return;
    if (walk == GpuWalk::Team)
    {
        TeamOutputs out{nullptr,        nullptr, nullptr, lists.nodeOffset, lists.leafOffset, lists.nodeList,
                        lists.leafList, {},      false};
        launchTeamWalk<TeamPass::Write>(tree, groups, out, textures, overflowGroup, cudaStreamOf(stream));
        return;
    }
    writeInteractionsKernel<<<blocksFor(groups.numGroups, kWalkBlock), kWalkBlock, 0, cudaStreamOf(stream)>>>(
        tree, groups, stackCapacity(tree), lists.nodeOffset, lists.leafOffset, lists.nodeList, lists.leafList,
        overflowGroup);
    CUDA_CHECK_LAUNCH();
}

void countAndStageInteractionsGpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                                  const WalkStaging& staging, int32_t* overflowGroup, GpuStream stream,
                                  const TreeTextures& textures)
{
    cudaStream_t s = cudaStreamOf(stream);
    clearPassOneTotals(counts, overflowGroup, s);
    CUDA_CHECK(cudaMemsetAsync(staging.claimed, 0, 2 * sizeof(int32_t), s));
    if (groups.numGroups == 0) return;
    TeamOutputs out{counts.nodes, counts.leaves, counts.leafBodies, nullptr, nullptr, nullptr, nullptr, staging, false};
    launchTeamWalk<TeamPass::Stage>(tree, groups, out, textures, overflowGroup, s);
}

void writeStagedInteractionsGpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                                const ListView& lists, const WalkStaging& staging, int32_t* overflowGroup,
                                GpuStream stream, const TreeTextures& textures)
{
    if (groups.numGroups == 0) return;
    cudaStream_t s        = cudaStreamOf(stream);
    constexpr int kWarps  = 8;
    const unsigned blocks = unsigned((size_t(groups.numGroups) + kWarps - 1) / kWarps);
    copyStagedListsKernel<<<blocks, 32 * kWarps, 0, s>>>(counts, lists, staging);
    CUDA_CHECK_LAUNCH();
    TeamOutputs out{nullptr,        nullptr, nullptr, lists.nodeOffset, lists.leafOffset, lists.nodeList,
                    lists.leafList, staging, true};
    launchTeamWalk<TeamPass::Write>(tree, groups, out, textures, overflowGroup, s);
}

} // namespace octwalk
